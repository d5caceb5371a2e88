def energy_ranking(workload, architecture, candidates):
    energy, valid = [], []
    for m in candidates:
        res = analyze(workload, architecture, m)
        energy.append(_sel_energy(workload, architecture, res))
        valid.append(_sel_valid(workload, architecture, m, res["levels"]))
    return {"energy_pj": energy, "valid": valid, "ranking": _sel_rank(energy, valid)}
