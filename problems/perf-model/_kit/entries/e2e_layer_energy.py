def _analysis(workload, architecture, mapping):
    res = analyze(workload, architecture, mapping)
    if FLAGS.get("per_instance"):
        for lv in res["levels"]:
            n = max(1, lv["used_instances"])
            for t in ("I", "W", "O"):
                lv[t] = {k: v // n for k, v in lv[t].items()}
    return res


def layer_energy(workload, architecture, mapping, energy):
    res = _analysis(workload, architecture, mapping)
    per_level = _level_energy(res["levels"], energy)
    cycles = _cycle_stats(workload, architecture, mapping)["cycles"] if _e2e("mac_energy_every_unit") else 0
    mac = _mac_energy(workload, res, cycles, energy)
    return {"level_energy_pj": {lv["name"]: e for lv, e in zip(res["levels"], per_level)},
            "mac_energy_pj": mac, "total_energy_pj": mac + sum(per_level)}
