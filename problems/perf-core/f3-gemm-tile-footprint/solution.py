TENSORS = ("input", "weight", "output")


def _packed_bytes(elements, bits):
    return (elements * bits + 7) // 8


def gemm_tile_footprint(gemm: dict, precision: dict, levels: list) -> dict:
    bits = {"input": precision["input_bits"], "weight": precision["weight_bits"],
            "output": precision["psum_bits"]}
    out = {k: [] for k in ("input_tile", "weight_tile", "output_tile", "required_bytes",
                           "fits", "instances", "total_required_bytes")}
    extent = {"M": 1, "N": 1, "K": 1}
    for i, level in enumerate(levels):
        for d in extent:
            extent[d] *= level["temporal"].get(d, 1) * level["spatial"].get(d, 1)
        tiles = {
            "input": extent["M"] * extent["K"],
            "weight": extent["K"] * extent["N"],
            "output": extent["M"] * extent["N"],
        }
        tiles = {t: (tiles[t] if t in level["keeps"] else 0) for t in TENSORS}
        stored = sum(_packed_bytes(tiles[t], bits[t]) for t in TENSORS)
        required = level["multiple_buffering"] * stored
        count = 1
        for above in levels[i + 1:]:
            for f in above["spatial"].values():
                count *= f
        out["input_tile"].append(tiles["input"])
        out["weight_tile"].append(tiles["weight"])
        out["output_tile"].append(tiles["output"])
        out["required_bytes"].append(required)
        out["fits"].append(required <= level["capacity_bytes"])
        out["instances"].append(count)
        out["total_required_bytes"].append(count * required)
    return out
