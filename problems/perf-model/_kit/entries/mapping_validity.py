def _sel_verdict(workload, architecture, mapping):
    dims = list(workload["dims"])
    for d in dims:
        f = 1
        for lv in mapping["levels"]:
            for key in ("temporal", "spatial_x", "spatial_y"):
                for e, x in lv.get(key, []) or []:
                    if e == d:
                        f *= x
        if f < workload["dims"][d] or (FLAGS.get("exact_coverage") and f != workload["dims"][d]):
            return "coverage:" + d, []
    for arch, lv in zip(architecture["levels"], mapping["levels"]):
        fx, fy = arch.get("fanout", [1, 1])
        px = py = 1
        for _, x in lv.get("spatial_x", []) or []:
            px *= x
        for _, x in lv.get("spatial_y", []) or []:
            py *= x
        bad = px * py > fx * fy if FLAGS.get("fanout_total") else (px > fx or py > fy)
        if bad:
            return "fanout:" + arch["name"], []
    levels = _sel_tiles(workload, architecture, mapping)
    over = [r["name"] for r in _sel_requirement(workload, architecture, levels) if not r["fits"]]
    return ("capacity:" + over[0] if over else "valid"), over


def mapping_validity(workload, architecture, candidates):
    verdicts = [_sel_verdict(workload, architecture, m) for m in candidates]
    return {"valid": [v == "valid" for v, _ in verdicts], "reason": [v for v, _ in verdicts],
            "over_capacity": [over for _, over in verdicts]}
