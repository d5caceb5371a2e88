"""F1 workload accounting: output shapes, MACs, FLOPs and tensor sizes of conv2d layers (dense and grouped)."""

from __future__ import annotations

from typing import Any

import numpy as np


def conv_output_size(size: int, kernel: int, stride: int, padding: int, dilation: int) -> int:
    """Output extent of a convolution along one axis (floor rounding, as in PyTorch)."""
    span = dilation * (kernel - 1) + 1
    return (size + 2 * padding - span) // stride + 1


def bytes_for(elements: int, bits: int) -> int:
    """Bytes to store `elements` values of `bits` bits each, packed, rounded up to a whole byte."""
    return -(-elements * bits // 8)


def conv_layer_accounting(layer: dict[str, Any], precision: dict[str, Any]) -> dict[str, int]:
    n, c, k = layer["N"], layer["C"], layer["K"]
    h, w, r, s = layer["H"], layer["W"], layer["R"], layer["S"]
    stride, pad, dil = layer["stride"], layer["padding"], layer["dilation"]
    p = conv_output_size(h, r, stride, pad, dil)
    q = conv_output_size(w, s, stride, pad, dil)
    macs = n * k * p * q * c * r * s
    return {
        "P": p,
        "Q": q,
        "macs": macs,
        "flops": 2 * macs,
        "input_bytes": bytes_for(n * c * h * w, precision["input_bits"]),
        "weight_bytes": bytes_for(k * c * r * s, precision["weight_bits"]),
        "output_bytes": bytes_for(n * k * p * q, precision["output_bits"]),
    }


def _log_uniform(rng: np.random.Generator, bits: int) -> int:
    """An integer in 1..2^bits, log-uniform."""
    return max(1, int(2 ** rng.uniform(0, bits)))


def _conv_corner(rng: np.random.Generator, large: bool, filter_past_input: float) -> dict[str, Any]:
    """A conv layer at a corner of the domain: sizes whose counts pass 2^31 and often 2^53
    (``large``), and with probability ``filter_past_input`` a filter larger than the unpadded input,
    which only the padding makes fit."""
    r = int(rng.choice([1, 2, 3, 5, 7, 11]))
    s = r if rng.random() < 0.7 else int(rng.choice([1, 3, 5, 7]))
    stride = int(rng.choice([1, 1, 2, 3, 5]))
    dil = int(rng.choice([1, 1, 2, 3]))
    if rng.random() < filter_past_input:
        r, s = max(r, 3), max(s, 3)
        h, w = int(rng.integers(1, r)), int(rng.integers(1, s))
        need = max(dil * (r - 1) + 1 - h, dil * (s - 1) + 1 - w)
        pad = -(-need // 2) + int(rng.integers(0, 3))
    else:
        h = _log_uniform(rng, 20) + dil * (r - 1) if large else int(rng.integers(dil * (r - 1) + 1, 65))
        w = h if rng.random() < 0.5 else (_log_uniform(rng, 20) + dil * (s - 1) if large
                                          else int(rng.integers(dil * (s - 1) + 1, 65)))
        w = max(w, dil * (s - 1) + 1)
        pad = int(rng.integers(0, 4))
    if large:
        n, c, k = _log_uniform(rng, 8), _log_uniform(rng, 16), _log_uniform(rng, 16)
    else:
        n, c, k = int(rng.choice([1, 2, 3])), int(rng.choice([1, 3, 16, 64])), int(rng.choice([1, 7, 16, 96]))
    layer = {"N": n, "C": c, "K": k, "H": h, "W": w, "R": r, "S": s, "stride": stride, "padding": pad,
             "dilation": dil}
    bits = [1, 3, 4, 8, 16, 32]
    precision = {name: int(rng.choice(bits)) for name in ("input_bits", "weight_bits", "output_bits")}
    return {"layer": layer, "precision": precision}


def gen_conv_layer(rng: np.random.Generator, max_hw: int = 64, large: bool = False,
                   filter_past_input: float = 0.0) -> dict[str, Any]:
    """A conv layer that exercises the traps: strides that do not divide, padding, dilation,
    odd element counts with sub-byte precisions. ``large`` and ``filter_past_input`` draw the
    corners instead (see _conv_corner)."""
    if large or filter_past_input:
        return _conv_corner(rng, large, filter_past_input)
    while True:
        r = int(rng.choice([1, 2, 3, 5, 7]))
        s = r if rng.random() < 0.7 else int(rng.choice([1, 3, 5]))
        stride = int(rng.choice([1, 1, 2, 2, 3]))
        pad = int(rng.integers(0, 4))
        dil = int(rng.choice([1, 1, 1, 2, 3]))
        h = int(rng.integers(max(r, 3), max_hw + 1))
        w = h if rng.random() < 0.6 else int(rng.integers(max(s, 3), max_hw + 1))
        if conv_output_size(h, r, stride, pad, dil) >= 1 and conv_output_size(w, s, stride, pad, dil) >= 1:
            break
    layer = {
        "N": int(rng.choice([1, 1, 2, 3, 4])),
        "C": int(rng.choice([1, 3, 5, 16, 32, 64])),
        "K": int(rng.choice([1, 7, 16, 24, 64, 96])),
        "H": h, "W": w, "R": r, "S": s,
        "stride": stride, "padding": pad, "dilation": dil,
    }
    bits = [4, 8, 8, 16, 32]
    precision = {
        "input_bits": int(rng.choice(bits)),
        "weight_bits": int(rng.choice(bits)),
        "output_bits": int(rng.choice(bits)),
    }
    return {"layer": layer, "precision": precision}


def grouped_conv_accounting(layer: dict[str, Any], precision: dict[str, Any]) -> dict[str, int]:
    """A grouped convolution: each of `groups` groups maps C/groups input channels to K/groups
    output channels (groups == C is a depthwise convolution)."""
    n, c, k, g = layer["N"], layer["C"], layer["K"], layer["groups"]
    h, w, r, s = layer["H"], layer["W"], layer["R"], layer["S"]
    stride, pad, dil = layer["stride"], layer["padding"], layer["dilation"]
    p = conv_output_size(h, r, stride, pad, dil)
    q = conv_output_size(w, s, stride, pad, dil)
    macs = n * k * p * q * (c // g) * r * s
    return {
        "P": p,
        "Q": q,
        "macs": macs,
        "flops": 2 * macs,
        "input_bytes": bytes_for(n * c * h * w, precision["input_bits"]),
        "weight_bytes": bytes_for(k * (c // g) * r * s, precision["weight_bits"]),
        "output_bytes": bytes_for(n * k * p * q, precision["output_bits"]),
    }


def gen_grouped_conv(rng: np.random.Generator, max_hw: int = 56, large: bool = False,
                     filter_past_input: float = 0.0) -> dict[str, Any]:
    """Grouped, depthwise and ordinary convolutions with strides that do not divide, padding,
    dilation and sub-byte precisions. ``large`` and ``filter_past_input`` draw the corners of
    _conv_corner instead, split into groups."""
    if large or filter_past_input:
        drawn = _conv_corner(rng, large, filter_past_input)
        layer = drawn["layer"]
        g = int(rng.choice([1, 2, 3, 4, 8, layer["C"], layer["C"]]))
        layer["groups"] = g
        layer["C"] = g * max(1, layer["C"] // g)
        layer["K"] = g * max(1, layer["K"] // g)
        return drawn
    kind = rng.choice(("depthwise", "depthwise", "grouped", "grouped", "dense"))
    if kind == "depthwise":
        c = int(rng.choice((3, 5, 8, 15, 16, 24, 27, 32, 96, 144, 192)))
        g, k = c, c * int(rng.choice((1, 1, 1, 2)))
    elif kind == "grouped":
        g = int(rng.choice((2, 3, 4, 8, 32)))
        c = g * int(rng.choice((1, 2, 3, 4, 5, 8)))
        k = g * int(rng.choice((1, 2, 3, 4, 5, 8)))
    else:
        g, c, k = 1, int(rng.choice((3, 16, 32))), int(rng.choice((8, 16, 24)))
    while True:
        r = int(rng.choice((1, 3, 3, 5, 7)))
        s = r if rng.random() < 0.8 else int(rng.choice((1, 3, 5)))
        stride = int(rng.choice((1, 2, 2, 3)))
        pad = int(rng.integers(0, 4))
        dil = int(rng.choice((1, 1, 1, 2)))
        h = int(rng.integers(max(r, 3), max_hw + 1))
        w = h if rng.random() < 0.6 else int(rng.integers(max(s, 3), max_hw + 1))
        if conv_output_size(h, r, stride, pad, dil) >= 1 and conv_output_size(w, s, stride, pad, dil) >= 1:
            break
    layer = {"N": int(rng.choice((1, 1, 2, 3))), "C": c, "K": k, "H": h, "W": w, "R": r, "S": s,
             "stride": stride, "padding": pad, "dilation": dil, "groups": g}
    bits = [4, 4, 8, 8, 16, 32]
    precision = {"input_bits": int(rng.choice(bits)), "weight_bits": int(rng.choice(bits)),
                 "output_bits": int(rng.choice(bits))}
    return {"layer": layer, "precision": precision}


REFERENCES = {
    "workload.conv_layer_accounting": conv_layer_accounting,
    "workload.grouped_conv_accounting": grouped_conv_accounting,
}

GENERATORS = {
    "workload.conv_layer": gen_conv_layer,
    "workload.grouped_conv": gen_grouped_conv,
}
