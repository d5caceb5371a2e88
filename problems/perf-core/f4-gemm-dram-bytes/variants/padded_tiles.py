import math

RELEVANT = {"I": ("M", "K"), "W": ("K", "N"), "O": ("M", "N")}


def _elements(tensor, gemm, dram, tile=None):
    """Elements moved: each full sweep of the relevant loops moves every (clipped) tile once,
    i.e. the whole tensor; irrelevant loops outside the first relevant loop repeat the sweep."""
    rel = RELEVANT[tensor]
    moved = tile[rel[0]] * tile[rel[1]]
    started = False
    for dim, bound in dram:  # innermost first
        if dim in rel and bound > 1:
            started = True
        if started:
            moved *= bound
    return moved


def _bytes(elements, bits):
    return -(-elements * bits // 8)


def gemm_dram_bytes(gemm: dict, mapping: dict, precision: dict) -> dict:
    dram = mapping["dram"]
    tile = mapping["buffer"]
    writes = _elements("O", gemm, dram, tile)
    reads = writes - gemm["M"] * gemm["N"]
    out = {
        "I_bytes": _bytes(_elements("I", gemm, dram, tile), precision["input_bits"]),
        "W_bytes": _bytes(_elements("W", gemm, dram, tile), precision["weight_bits"]),
        "O_write_bytes": _bytes(writes, precision["output_bits"]),
        "O_read_bytes": _bytes(reads, precision["output_bits"]),
    }
    out["total_bytes"] = sum(out.values())
    return out
