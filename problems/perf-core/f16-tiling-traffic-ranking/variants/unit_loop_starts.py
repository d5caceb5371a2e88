RELEVANT = {"I": ("M", "K"), "W": ("K", "N"), "O": ("M", "N")}


def _moves(tile, dram, tensor):
    """Elements of tensor moved between DRAM and the buffer (stationarity rule)."""
    rel = RELEVANT[tensor]
    count = tile[rel[0]] * tile[rel[1]]
    started = False
    for d, bound in dram:  # innermost first
        started = started or d in rel
        if started:
            count *= bound
    return count


def tiling_traffic_ranking(gemm: dict, buffer: dict, candidates: list) -> dict:
    traffic, required, valid = [], [], []
    for cand in candidates:
        tile, dram = cand["tile"], cand["dram"]
        o_writes = _moves(tile, dram, "O")
        o_reads = o_writes - gemm["M"] * gemm["N"]
        traffic.append(_moves(tile, dram, "I") + _moves(tile, dram, "W") + o_writes + o_reads)
        words = sum(tile[a] * tile[b] for a, b in RELEVANT.values())
        if buffer["double_buffered"]:
            words *= 2
        required.append(words)
        valid.append(words <= buffer["capacity_words"])
    ranking = sorted((i for i in range(len(candidates)) if valid[i]), key=lambda i: (traffic[i], i))
    return {"traffic": traffic, "required_words": required, "valid": valid, "ranking": ranking}
