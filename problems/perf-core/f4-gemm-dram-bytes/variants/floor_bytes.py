import math

RELEVANT = {"I": ("M", "K"), "W": ("K", "N"), "O": ("M", "N")}


def _elements(tensor, gemm, dram):
    """Elements moved: each full sweep of the relevant loops moves every (clipped) tile once,
    i.e. the whole tensor; irrelevant loops outside the first relevant loop repeat the sweep."""
    rel = RELEVANT[tensor]
    moved = gemm[rel[0]] * gemm[rel[1]]
    started = False
    for dim, bound in dram:  # innermost first
        if dim in rel and bound > 1:
            started = True
        elif started and dim not in rel:
            moved *= bound
    return moved


def _bytes(elements, bits):
    return elements * bits // 8


def gemm_dram_bytes(gemm: dict, mapping: dict, precision: dict) -> dict:
    dram = mapping["dram"]
    writes = _elements("O", gemm, dram)
    reads = writes - gemm["M"] * gemm["N"]
    out = {
        "I_bytes": _bytes(_elements("I", gemm, dram), precision["input_bits"]),
        "W_bytes": _bytes(_elements("W", gemm, dram), precision["weight_bits"]),
        "O_write_bytes": _bytes(writes, precision["output_bits"]),
        "O_read_bytes": _bytes(reads, precision["output_bits"]),
    }
    out["total_bytes"] = sum(out.values())
    return out
