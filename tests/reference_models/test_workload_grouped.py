"""Grouped-convolution accounting against brute force: walk the loop nest of small layers, count
the MACs, the distinct weights and outputs touched, and find the output size by sliding the
dilated window over the padded input."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np

from support import trusted  # noqa: E402
_TRUSTED = trusted("perf-core")
wl = _TRUSTED.submodule("workload")

N_RANDOM = 300


def _positions(size: int, kernel: int, stride: int, pad: int, dil: int) -> int:
    """Window positions that fit entirely inside the padded input."""
    count = 0
    start = 0
    while start + (kernel - 1) * dil <= size + 2 * pad - 1:
        count += 1
        start += stride
    return count


def _brute(layer: dict, precision: dict) -> dict:
    n_, c_, k_, g_ = layer["N"], layer["C"], layer["K"], layer["groups"]
    h_, w_, r_, s_ = layer["H"], layer["W"], layer["R"], layer["S"]
    st, pad, dil = layer["stride"], layer["padding"], layer["dilation"]
    p_ = _positions(h_, r_, st, pad, dil)
    q_ = _positions(w_, s_, st, pad, dil)
    per_group_out, per_group_in = k_ // g_, c_ // g_
    macs = 0
    weights, outputs, inputs = set(), set(), set()
    for n, k, p, q in itertools.product(range(n_), range(k_), range(p_), range(q_)):
        group = k // per_group_out
        outputs.add((n, k, p, q))
        for c, r, s in itertools.product(range(per_group_in), range(r_), range(s_)):
            y, x = p * st + r * dil - pad, q * st + s * dil - pad
            assert -pad <= y < h_ + pad and -pad <= x < w_ + pad
            macs += 1
            weights.add((k, c, r, s))
            if 0 <= y < h_ and 0 <= x < w_:
                inputs.add((n, group * per_group_in + c, y, x))
    nbytes = lambda e, b: math.ceil(Fraction(e * b, 8))  # noqa: E731
    return {"P": p_, "Q": q_, "macs": macs, "flops": 2 * macs,
            "input_bytes": nbytes(n_ * c_ * h_ * w_, precision["input_bits"]),
            "weight_bytes": nbytes(len(weights), precision["weight_bits"]),
            "output_bytes": nbytes(len(outputs), precision["output_bits"]),
            "_inputs_touched": len(inputs)}


def test_worked_example():
    got = wl.grouped_conv_accounting(
        {"N": 1, "C": 8, "K": 16, "H": 9, "W": 9, "R": 3, "S": 3, "stride": 2, "padding": 1, "dilation": 1, "groups": 8},
        {"input_bits": 4, "weight_bits": 8, "output_bits": 16})
    assert got == {"P": 5, "Q": 5, "macs": 3600, "flops": 7200, "input_bytes": 324, "weight_bytes": 144,
                   "output_bytes": 800}


def test_groups_one_matches_dense_conv():
    for i in range(50):
        args = wl.gen_conv_layer(np.random.default_rng([51, i]))
        layer = dict(args["layer"], groups=1)
        assert wl.grouped_conv_accounting(layer, args["precision"]) == wl.conv_layer_accounting(args["layer"], args["precision"])


def test_small_layers_brute_force():
    for i in range(N_RANDOM):
        r = np.random.default_rng([52, i])
        g = int(r.choice([1, 2, 3]))
        layer = {"N": int(r.integers(1, 3)), "C": g * int(r.integers(1, 3)), "K": g * int(r.integers(1, 3)),
                 "H": int(r.integers(3, 9)), "W": int(r.integers(3, 9)), "R": int(r.integers(1, 4)),
                 "S": int(r.integers(1, 4)), "stride": int(r.integers(1, 4)), "padding": int(r.integers(0, 3)),
                 "dilation": int(r.integers(1, 3)), "groups": g}
        if _positions(layer["H"], layer["R"], layer["stride"], layer["padding"], layer["dilation"]) < 1 or \
                _positions(layer["W"], layer["S"], layer["stride"], layer["padding"], layer["dilation"]) < 1:
            continue
        prec = {"input_bits": int(r.choice([4, 8, 16])), "weight_bits": int(r.choice([4, 8])),
                "output_bits": int(r.choice([4, 16, 32]))}
        want = _brute(layer, prec)
        want.pop("_inputs_touched")
        assert wl.grouped_conv_accounting(layer, prec) == want


def test_generator_cases_against_window_sliding():
    depthwise = 0
    for i in range(N_RANDOM):
        args = wl.gen_grouped_conv(np.random.default_rng([53, i]))
        layer, prec = args["layer"], args["precision"]
        got = wl.grouped_conv_accounting(layer, prec)
        assert layer["C"] % layer["groups"] == 0 and layer["K"] % layer["groups"] == 0
        assert got["P"] == _positions(layer["H"], layer["R"], layer["stride"], layer["padding"], layer["dilation"])
        assert got["Q"] == _positions(layer["W"], layer["S"], layer["stride"], layer["padding"], layer["dilation"])
        per_output = (layer["C"] // layer["groups"]) * layer["R"] * layer["S"]
        assert got["macs"] == layer["N"] * layer["K"] * got["P"] * got["Q"] * per_output
        depthwise += layer["groups"] == layer["C"] > 1
    assert depthwise >= N_RANDOM // 5
