def latency_ranking(workload, architecture, candidates):
    cycles, bound, valid = [], [], []
    for m in candidates:
        res = analyze(workload, architecture, m)
        c, b = _sel_latency(workload, architecture, res)
        cycles.append(c)
        bound.append(b)
        valid.append(_sel_valid(workload, architecture, m, res["levels"]))
    return {"cycles": cycles, "bound": bound, "valid": valid, "ranking": _sel_rank(cycles, valid)}
