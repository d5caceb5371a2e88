RELEVANT = {"I": ("M", "K"), "W": ("K", "N"), "O": ("M", "N")}


def _elements(tensor, gemm, dram):
    """Each full sweep of the relevant loops moves every clipped tile once, i.e. the whole
    tensor; irrelevant loops outside the first relevant loop of bound > 1 repeat the sweep."""
    rel = RELEVANT[tensor]
    moved = gemm[rel[0]] * gemm[rel[1]]
    started = False
    for dim, bound in dram:  # innermost first
        if dim in rel and bound > 1:
            started = True
        elif started and dim not in rel:
            moved *= bound
    return moved


def _ceil8(bits):
    return -(-bits // 8)


def gemm_psum_traffic(gemm: dict, mapping: dict, precision: dict) -> dict:
    dram = mapping["dram"]
    outputs = gemm["M"] * gemm["N"]
    writes = _elements("O", gemm, dram)
    reads = writes - outputs
    out = {
        "O_writes": writes,
        "O_reads": reads,
        "I_bytes": _ceil8(_elements("I", gemm, dram) * precision["input_bits"]),
        "W_bytes": _ceil8(_elements("W", gemm, dram) * precision["weight_bits"]),
        "O_write_bytes": _ceil8(outputs * precision["output_bits"] + (writes - outputs) * precision["psum_bits"]),
        "O_read_bytes": _ceil8(reads * precision["psum_bits"]),
    }
    out["total_bytes"] = out["I_bytes"] + out["W_bytes"] + out["O_write_bytes"] + out["O_read_bytes"]
    return out
