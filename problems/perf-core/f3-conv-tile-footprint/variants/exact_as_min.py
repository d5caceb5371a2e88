TENSORS = ("input", "weight", "output")
DIMS = ("N", "K", "C", "P", "Q", "R", "S")


def _packed_bytes(elements, bits):
    return (elements * bits + 7) // 8


def _halo(out_tile, filt_tile, stride, dilation):
    return (out_tile - 1) * stride + (filt_tile - 1) * dilation + 1


def _distinct(out_tile, filt_tile, stride, dilation):
    return min(_halo(out_tile, filt_tile, stride, dilation), out_tile * filt_tile)


def conv_tile_footprint(conv: dict, precision: dict, levels: list) -> dict:
    stride, dil = conv["stride"], conv["dilation"]
    bits = {"input": precision["input_bits"], "weight": precision["weight_bits"],
            "output": precision["psum_bits"]}
    out = {k: [] for k in ("input_tile", "input_exact", "weight_tile", "output_tile",
                           "required_bytes", "fits")}
    e = dict.fromkeys(DIMS, 1)
    for level in levels:
        for d in DIMS:
            e[d] *= level["temporal"].get(d, 1) * level["spatial"].get(d, 1)
        rows = _halo(e["P"], e["R"], stride, dil)
        cols = _halo(e["Q"], e["S"], stride, dil)
        exact = e["N"] * e["C"] * _distinct(e["P"], e["R"], stride, dil) * _distinct(e["Q"], e["S"], stride, dil)
        tiles = {
            "input": e["N"] * e["C"] * rows * cols,
            "weight": e["K"] * e["C"] * e["R"] * e["S"],
            "output": e["N"] * e["K"] * e["P"] * e["Q"],
        }
        keeps = level["keeps"]
        tiles = {t: (tiles[t] if t in keeps else 0) for t in TENSORS}
        if "input" not in keeps:
            exact = 0
        stored = sum(_packed_bytes(tiles[t], bits[t]) for t in TENSORS)
        required = level["multiple_buffering"] * stored
        out["input_tile"].append(tiles["input"])
        out["input_exact"].append(exact)
        out["weight_tile"].append(tiles["weight"])
        out["output_tile"].append(tiles["output"])
        out["required_bytes"].append(required)
        out["fits"].append(required <= level["capacity_bytes"])
    return out
