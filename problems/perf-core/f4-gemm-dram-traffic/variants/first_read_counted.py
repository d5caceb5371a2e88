RELEVANT = {"I": ("M", "K"), "W": ("K", "N"), "O": ("M", "N")}


def _moves(tensor, tile, dram):
    rel = RELEVANT[tensor]
    size = tile[rel[0]] * tile[rel[1]]
    started = False
    for dim, bound in dram:  # innermost first
        if dim in rel and bound > 1:
            started = True
        if started:
            size *= bound
    return size


def gemm_dram_traffic(gemm: dict, mapping: dict) -> dict:
    tile, dram = mapping["buffer"], mapping["dram"]
    writes = _moves("O", tile, dram)
    return {
        "I_reads": _moves("I", tile, dram),
        "W_reads": _moves("W", tile, dram),
        "O_writes": writes,
        "O_reads": writes,
    }
