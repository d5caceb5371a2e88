def dram_traffic_ranking(workload, architecture, candidates):
    moved, valid = [], []
    for m in candidates:
        moved.append(_sel_dram_bytes(workload, architecture, m))
        valid.append(_sel_valid(workload, architecture, m))
    return {"dram_bytes": moved, "valid": valid, "ranking": _sel_rank(moved, valid)}
