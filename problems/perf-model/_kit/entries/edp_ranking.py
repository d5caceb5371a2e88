def edp_ranking(workload, architecture, candidates):
    energy, cycles, edp, valid = [], [], [], []
    for m in candidates:
        res = analyze(workload, architecture, m)
        e = _sel_energy(workload, architecture, res)
        c, _ = _sel_latency(workload, architecture, res)
        energy.append(e)
        cycles.append(c)
        edp.append(e * c)
        valid.append(_sel_valid(workload, architecture, m, res["levels"]))
    metric = energy if FLAGS.get("rank_by_energy") else edp
    return {"energy_pj": energy, "cycles": cycles, "edp": edp, "valid": valid, "ranking": _sel_rank(metric, valid)}
