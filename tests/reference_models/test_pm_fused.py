"""The fused-layer reference (``pm_fused.fused_layer_tiles``) against an independent brute-force
simulator written from the problem's spec (problems/perf-model/f6-fused-layer-tiles/spec.md).

The simulator here shares no code with the reference: it keeps a boolean mask of every tensor
(channel x row x column) per tile, marks the needed elements by running every MAC of every needed
output element backwards through the chain (padding taps are performed and counted but mark
nothing), and follows the spec literally for reuse, recomputation and the GLB room. The
reference factors everything per axis; the two agree on 300+ small random chains and on the
targeted edge cases below.
"""

from __future__ import annotations


import numpy as np
import pytest

from support import trusted  # noqa: E402
_TRUSTED = trusted("perf-model")
GENERATORS = _TRUSTED.generators
REFERENCES = _TRUSTED.references
pm_fused = _TRUSTED.submodule("pm_fused")

REF = REFERENCES["pm_fused.fused_layer_tiles"]
GEN = GENERATORS["pm_fused.fused_layer_tiles"]


def _bytes(elements: int, bits: int) -> int:
    return (elements * bits + 7) // 8


def simulate(layers: list, architecture: dict, schedule: dict) -> dict:
    n = len(layers)
    last = layers[-1]
    out_ch = last["dims"]["K"] if last["shape"] == "conv" else last["dims"]["C"]
    P, Q = last["dims"]["P"], last["dims"]["Q"]
    tp, tq = schedule["tile"]["P"], schedule["tile"]["Q"]
    tiles_p = [(a, min(a + tp, P)) for a in range(0, P, tp)]
    tiles_q = [(a, min(a + tq, Q)) for a in range(0, Q, tq)]
    # the loop nest over tile axes, innermost first
    axes = {"P": tiles_p, "Q": tiles_q}
    inner, outer = schedule["order"]
    sequence = []
    for o in axes[outer]:
        for i in axes[inner]:
            sequence.append({outer: o, inner: i})

    shapes = [(wl["dims"]["C"], wl["input_hw"][0], wl["input_hw"][1]) for wl in layers]
    prev = [np.zeros(s, dtype=bool) for s in shapes]
    macs = [0] * n
    read = 0
    biggest = [0] * n
    biggest_out = 0
    for t in sequence:
        (p0, p1), (q0, q1) = t["P"], t["Q"]
        need = np.zeros((out_ch, P, Q), dtype=bool)
        need[:, p0:p1, q0:q1] = True
        biggest_out = max(biggest_out, int(need.sum()))
        foot = [None] * n
        for j in range(n - 1, -1, -1):
            wl = layers[j]
            d = wl["dims"]
            if j == n - 1 or not schedule["keep_intermediate"]:
                computed = need
            else:
                computed = need & ~prev[j + 1]
            mask = np.zeros(shapes[j], dtype=bool)
            for k, p, q in zip(*np.nonzero(need)):
                chans = range(d["C"]) if wl["shape"] == "conv" else [k]
                for r in range(d["R"]):
                    h = p * wl["stride"][0] + r * wl["dilation"][0] - wl["padding"][0]
                    for s in range(d["S"]):
                        w = q * wl["stride"][1] + s * wl["dilation"][1] - wl["padding"][1]
                        if 0 <= h < shapes[j][1] and 0 <= w < shapes[j][2]:
                            for c in chans:
                                mask[c, h, w] = True
            per_output = d["R"] * d["S"] * (d["C"] if wl["shape"] == "conv" else 1)
            macs[j] += int(computed.sum()) * per_output
            foot[j] = mask
            need = mask
        read += int((foot[0] & ~prev[0]).sum())
        for j in range(n):
            biggest[j] = max(biggest[j], int(foot[j].sum()))
        prev = foot

    glb = architecture["levels"][0]
    b = glb["multiple_buffering"]
    wbytes = 0
    for wl in layers:
        d = wl["dims"]
        wbytes += _bytes(d["C"] * d["R"] * d["S"] * (d["K"] if wl["shape"] == "conv" else 1), wl["bits"]["W"])
    room = wbytes + b * _bytes(biggest[0], layers[0]["bits"]["I"]) + b * _bytes(biggest_out, last["bits"]["O"])
    for j in range(1, n):
        room += _bytes(biggest[j], layers[j - 1]["bits"]["O"])
    return {"macs": macs, "total_macs": sum(macs),
            "input_read_bytes": _bytes(read, layers[0]["bits"]["I"]),
            "weight_read_bytes": wbytes,
            "output_write_bytes": _bytes(P * Q * out_ch, last["bits"]["O"]),
            "max_input_elements": biggest[0], "max_intermediate_elements": biggest[1:],
            "glb_bytes": room, "fits": room <= glb["capacity_bytes"]}


def _case(layers, tile, order=("Q", "P"), keep=False, cap=1 << 20, b=1):
    return {"layers": layers,
            "architecture": {"name": "t", "levels": [
                {"name": "GLB", "capacity_bytes": cap, "fanout": [1, 1], "multiple_buffering": b},
                {"name": "DRAM", "capacity_bytes": None, "fanout": [1, 1]}]},
            "schedule": {"tile": {"P": tile[0], "Q": tile[1]}, "order": list(order), "keep_intermediate": keep}}


def _conv(c, k, hw, rs, stride=(1, 1), dil=(1, 1), pad=(0, 0), shape="conv", bits=None):
    return pm_fused._layer("t", shape, c, k, hw, rs, stride, dil, pad, bits or dict(pm_fused.INT8))


@pytest.mark.parametrize("seed", range(320))
def test_reference_matches_the_simulator(seed):
    case = GEN(np.random.default_rng([4242, seed]))
    assert REF(**case) == simulate(**case)


def test_hidden_seed_cases_match():
    for i in range(60):
        case = GEN(np.random.default_rng([6601, i]))
        assert REF(**case) == simulate(**case), i


# ------------------------------------------------------------------------------------------
# targeted cases: the conventions the spec pins
# ------------------------------------------------------------------------------------------

def test_exact_footprint_not_bounding_box():
    # a 1x1 stride-2 conv after a 1x1 conv: a one-row tile needs one row, tiles skip odd rows
    a = _conv(1, 1, [8, 8], [1, 1])
    b = _conv(1, 1, [8, 8], [1, 1], stride=(2, 2))
    out = REF(**_case([a, b], (2, 2)))
    assert out == simulate(**_case([a, b], (2, 2)))
    assert out["max_intermediate_elements"] == [4]  # rows {0, 2} x cols {0, 2}, not a 3x3 box
    assert out["macs"][0] == 16  # only the even rows and columns of layer 0 are ever computed
    # a dilated window with one-row tiles: three taps, not the five rows that span them
    c = _conv(1, 1, [9, 9], [3, 1], dil=(2, 1), pad=(2, 0))
    d = _conv(1, 1, [9, 9], [1, 1])
    out = REF(**_case([d, c], (1, 9)))
    assert out == simulate(**_case([d, c], (1, 9)))
    assert out["max_intermediate_elements"] == [27]


def test_recompute_against_keep():
    a = _conv(2, 3, [6, 6], [3, 3], pad=(1, 1))
    b = _conv(3, 2, [6, 6], [3, 3], pad=(1, 1))
    redo = REF(**_case([a, b], (2, 2), keep=False))
    kept = REF(**_case([a, b], (2, 2), keep=True))
    assert redo == simulate(**_case([a, b], (2, 2), keep=False))
    assert kept == simulate(**_case([a, b], (2, 2), keep=True))
    assert redo["macs"][0] > kept["macs"][0] >= 6 * 6 * 3 * 2 * 9
    assert redo["macs"][1] == kept["macs"][1] == 6 * 6 * 2 * 3 * 9
    # the input is reused between consecutive tiles either way
    assert redo["input_read_bytes"] == kept["input_read_bytes"]
    # a single tile computes every intermediate element once
    whole = REF(**_case([a, b], (6, 6)))
    assert whole["macs"][0] == 6 * 6 * 3 * 2 * 9


def test_keep_only_the_previous_tile():
    # column-major tiles of one row each over two columns: returning to the top discards rows
    a = _conv(1, 1, [4, 4], [1, 1])
    b = _conv(1, 1, [4, 4], [3, 3], pad=(1, 1))
    case = _case([a, b], (1, 2), order=("P", "Q"), keep=True)
    out = REF(**case)
    assert out == simulate(**case)
    # row-major order on the same tiles keeps a different share
    other = _case([a, b], (1, 2), order=("Q", "P"), keep=True)
    assert REF(**other) == simulate(**other)
    assert REF(**other)["macs"][0] != out["macs"][0]


def test_ragged_last_tiles_and_padding_never_computed():
    a = _conv(1, 2, [5, 7], [3, 3], pad=(1, 1))
    b = _conv(2, 1, [5, 7], [3, 3], stride=(2, 2), pad=(1, 1))
    for tile in [(1, 1), (2, 3), (3, 4), (2, 2)]:
        for order in (("Q", "P"), ("P", "Q")):
            for keep in (False, True):
                case = _case([a, b], tile, order, keep, b=2)
                assert REF(**case) == simulate(**case), (tile, order, keep)
    out = REF(**_case([a, b], (3, 4)))
    assert out["macs"][1] == 3 * 4 * 2 * 9  # the last layer's outputs once each, padding MACs included


def test_depthwise_chain_and_bits():
    bits0 = {"I": 4, "W": 8, "O": 16, "psum": 32}
    bits1 = {"I": 16, "W": 4, "O": 8, "psum": 32}
    bits2 = {"I": 8, "W": 8, "O": 4, "psum": 32}
    a = _conv(2, 4, [7, 7], [1, 1], bits=bits0)
    b = _conv(4, 4, [7, 7], [3, 3], stride=(2, 2), pad=(1, 1), shape="depthwise", bits=bits1)
    c = _conv(4, 3, [4, 4], [1, 1], bits=bits2)
    for keep in (False, True):
        case = _case([a, b, c], (3, 1), keep=keep, cap=300, b=2)
        out = REF(**case)
        assert out == simulate(**case)
    assert out["weight_read_bytes"] == 8 + 18 + 12
    assert out["output_write_bytes"] == (4 * 4 * 3 * 4 + 7) // 8


def test_fits_at_exact_capacity():
    a = _conv(1, 1, [4, 4], [3, 3], pad=(1, 1))
    b = _conv(1, 1, [4, 4], [1, 1])
    need = REF(**_case([a, b], (2, 2)))["glb_bytes"]
    assert REF(**_case([a, b], (2, 2), cap=need))["fits"] is True
    assert REF(**_case([a, b], (2, 2), cap=need - 1))["fits"] is False


def test_real_vectors_are_in_the_domain():
    for i in range(12):
        case = GEN(np.random.default_rng([6603, i]), real=True)
        out = REF(**case)
        layers = case["layers"]
        for x, y in zip(layers, layers[1:]):
            assert y["input_hw"] == [x["dims"]["P"], x["dims"]["Q"]]
            assert y["dims"]["C"] == (x["dims"]["K"] if x["shape"] == "conv" else x["dims"]["C"])
        assert out["total_macs"] > 10_000_000
