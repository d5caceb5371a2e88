def _out_size(size, kernel, stride, padding, dilation):
    span = dilation * (kernel - 1) + 1
    return (size + 2 * padding - span) // stride + 1


def _packed_bytes(elements, bits):
    return (elements * bits + 7) // 8


def grouped_conv_accounting(layer: dict, precision: dict) -> dict:
    n, c, k, groups = layer["N"], layer["C"], layer["K"], layer["groups"]
    h, w, r, s = layer["H"], layer["W"], layer["R"], layer["S"]
    stride, pad, dil = layer["stride"], layer["padding"], layer["dilation"]
    p = _out_size(h, r, stride, pad, dil)
    q = _out_size(w, s, stride, pad, dil)
    c_per_group = c // groups
    macs = n * k * p * q * c_per_group * r * s
    return {
        "P": p,
        "Q": q,
        "macs": macs,
        "flops": 2 * macs,
        "input_bytes": _packed_bytes(n * c * h * w, precision["input_bits"]),
        "weight_bytes": _packed_bytes(k * c_per_group * r * s, precision["weight_bits"]),
        "output_bytes": _packed_bytes(n * k * p * q, precision["output_bits"]),
    }
