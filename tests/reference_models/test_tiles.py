"""Tile-footprint references against brute force: enumerate every point of the loop nest below a
level (the loops of each level in a random order), collect the tensor coordinates it touches and
count them; the bounding box comes from the extremes of the coordinates. Capacity uses Timeloop's
effective-capacity form floor(capacity / multiple_buffering)."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from support import trusted  # noqa: E402
_TRUSTED = trusted("perf-core")
tl = _TRUSTED.submodule("tiles")

N_RANDOM = 300
MAX_POINTS = 400_000
TENSORS = ("input", "weight", "output")


def _coords(levels: list[dict], upto: int, dims: tuple[str, ...], rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Index of every dimension at every point of the loops of levels 0..upto (inner to outer,
    each level's temporal and spatial loops shuffled)."""
    loops = []
    for level in levels[: upto + 1]:
        own = [(d, f) for kind in ("temporal", "spatial") for d, f in level[kind].items() if f > 1]
        rng.shuffle(own)
        loops.extend(own)
    shape = [f for _, f in loops] or [1]
    idx = np.indices(shape).reshape(len(shape), -1)
    coord = {d: np.zeros(idx.shape[1], dtype=np.int64) for d in dims}
    weight = dict.fromkeys(dims, 1)
    for row, (d, f) in zip(idx, loops):
        coord[d] += row * weight[d]
        weight[d] *= f
    return coord


def _distinct(*cols: np.ndarray) -> int:
    key = np.zeros_like(cols[0])
    for c in cols:  # mixed-radix key: one integer per distinct coordinate tuple
        key = key * int(c.max() + 1) + c
    return len(np.unique(key))


def _bbox(*cols: np.ndarray) -> int:
    return math.prod(int(c.max() - c.min() + 1) for c in cols)


def _bytes(e: int, bits: int) -> int:
    return math.ceil(Fraction(e * bits, 8))


def _points(levels, upto, dims):
    return math.prod(level[k][d] for level in levels[: upto + 1] for k in ("temporal", "spatial") for d in dims)


def _check_fit(level: dict, stored: int, required: int, fits: bool) -> None:
    assert required == level["multiple_buffering"] * stored
    assert fits == (stored <= level["capacity_bytes"] // level["multiple_buffering"])


# ------------------------------------------------------------------------------------------
# GEMM
# ------------------------------------------------------------------------------------------

def _check_gemm(args: dict, rng: np.random.Generator) -> bool:
    got = tl.gemm_tile_footprint(args["gemm"], args["precision"], args["levels"])
    levels, prec = args["levels"], args["precision"]
    bits = {"input": prec["input_bits"], "weight": prec["weight_bits"], "output": prec["psum_bits"]}
    brute = True
    for i, level in enumerate(levels):
        if _points(levels, i, tl.GEMM_DIMS) > MAX_POINTS:
            brute = False
            continue
        c = _coords(levels, i, tl.GEMM_DIMS, rng)
        tiles = {"input": _distinct(c["M"], c["K"]), "weight": _distinct(c["K"], c["N"]),
                 "output": _distinct(c["M"], c["N"])}
        assert tiles["input"] == _bbox(c["M"], c["K"])  # GEMM tiles are dense boxes
        tiles = {t: tiles[t] if t in level["keeps"] else 0 for t in TENSORS}
        assert [got[f"{t}_tile"][i] for t in TENSORS] == [tiles[t] for t in TENSORS]
        stored = sum(_bytes(tiles[t], bits[t]) for t in TENSORS)
        _check_fit(level, stored, got["required_bytes"][i], got["fits"][i])
        # instances: distinct spatial index tuples of the levels above
        above = [f for lv in levels[i + 1:] for f in lv["spatial"].values()]
        n_inst = len(np.unique(np.indices(above or [1]).reshape(len(above) or 1, -1), axis=1).T)
        assert got["instances"][i] == n_inst
        assert got["total_required_bytes"][i] == n_inst * got["required_bytes"][i]
    return brute


def test_gemm_worked_example():
    levels = [
        {"name": "RF", "capacity_bytes": 16, "multiple_buffering": 2, "keeps": ["weight", "output"],
         "temporal": {"M": 1, "N": 2, "K": 4}, "spatial": {"M": 1, "N": 1, "K": 1}},
        {"name": "GLB", "capacity_bytes": 1000, "multiple_buffering": 2, "keeps": ["input", "weight", "output"],
         "temporal": {"M": 4, "N": 3, "K": 2}, "spatial": {"M": 2, "N": 2, "K": 1}},
    ]
    got = tl.gemm_tile_footprint({"M": 16, "N": 12, "K": 8},
                                 {"input_bits": 8, "weight_bits": 4, "output_bits": 8, "psum_bits": 24}, levels)
    assert got == {"input_tile": [0, 64], "weight_tile": [8, 96], "output_tile": [2, 96],
                   "required_bytes": [20, 800], "fits": [False, True], "instances": [4, 1],
                   "total_required_bytes": [80, 800]}


def test_gemm_capacity_boundaries():
    level = {"name": "B", "capacity_bytes": 21, "multiple_buffering": 2, "keeps": ["input"],
             "temporal": {"M": 7, "N": 1, "K": 1}, "spatial": {"M": 1, "N": 1, "K": 1}}
    prec = {"input_bits": 4, "weight_bits": 8, "output_bits": 8, "psum_bits": 32}
    got = tl.gemm_tile_footprint({"M": 7, "N": 1, "K": 1}, prec, [level])
    assert got["required_bytes"] == [8]  # 7 x 4 bits -> 4 bytes, double-buffered
    for cap, fits in ((8, True), (7, False), (9, True)):
        assert tl.gemm_tile_footprint({"M": 7, "N": 1, "K": 1}, prec, [dict(level, capacity_bytes=cap)])["fits"] == [fits]


def test_gemm_random_against_brute_force():
    rng = np.random.default_rng(1234)
    full = 0
    for i in range(N_RANDOM):
        full += _check_gemm(tl.gen_gemm_tiles(np.random.default_rng([11, i])), rng)
    assert full >= N_RANDOM // 2


# ------------------------------------------------------------------------------------------
# conv2d
# ------------------------------------------------------------------------------------------

def _check_conv(args: dict, rng: np.random.Generator) -> bool:
    conv, levels, prec = args["conv"], args["levels"], args["precision"]
    got = tl.conv_tile_footprint(conv, prec, levels)
    bits = {"input": prec["input_bits"], "weight": prec["weight_bits"], "output": prec["psum_bits"]}
    brute = True
    for i, level in enumerate(levels):
        if _points(levels, i, tl.CONV_DIMS) > MAX_POINTS:
            brute = False
            continue
        c = _coords(levels, i, tl.CONV_DIMS, rng)
        h = c["P"] * conv["stride"] + c["R"] * conv["dilation"]
        w = c["Q"] * conv["stride"] + c["S"] * conv["dilation"]
        tiles = {"input": _bbox(c["N"], c["C"], h, w), "weight": _distinct(c["K"], c["C"], c["R"], c["S"]),
                 "output": _distinct(c["N"], c["K"], c["P"], c["Q"])}
        exact = _distinct(c["N"], c["C"], h, w)
        keep = level["keeps"]
        tiles = {t: tiles[t] if t in keep else 0 for t in TENSORS}
        assert got["input_tile"][i] == tiles["input"]
        assert got["input_exact"][i] == (exact if "input" in keep else 0)
        assert got["weight_tile"][i] == tiles["weight"] and got["output_tile"][i] == tiles["output"]
        stored = sum(_bytes(tiles[t], bits[t]) for t in TENSORS)
        _check_fit(level, stored, got["required_bytes"][i], got["fits"][i])
    return brute


def _one_level(p: int, r: int, stride: int, dil: int) -> dict:
    one = dict.fromkeys(tl.CONV_DIMS, 1)
    return {"conv": {**one, "P": p, "R": r, "stride": stride, "dilation": dil},
            "precision": {"input_bits": 8, "weight_bits": 8, "psum_bits": 32},
            "levels": [{"name": "B", "capacity_bytes": 100, "multiple_buffering": 1, "keeps": list(TENSORS),
                        "temporal": dict(one, P=p, R=r), "spatial": one}]}


def test_conv_halo_hand_cases():
    # stride 2, P tile 4, R tile 1: exact 4 rows, bounding box 7
    got = tl.conv_tile_footprint(**_one_level(4, 1, 2, 1))
    assert got["input_tile"] == [7] and got["input_exact"] == [4]
    # stride 1, P 4, R 3: 6 rows, no holes
    got = tl.conv_tile_footprint(**_one_level(4, 3, 1, 1))
    assert got["input_tile"] == [6] and got["input_exact"] == [6]
    # stride 2, dilation 2, P 3, R 2: rows {0,2,4,6}: exact 4, box 7 (min(box, P*R) would say 6)
    got = tl.conv_tile_footprint(**_one_level(3, 2, 2, 2))
    assert got["input_tile"] == [7] and got["input_exact"] == [4]
    # stride 3, dilation 1, P 3, R 2: rows {0,1,3,4,6,7}: exact 6, box 8
    got = tl.conv_tile_footprint(**_one_level(3, 2, 3, 1))
    assert got["input_tile"] == [8] and got["input_exact"] == [6]


def test_conv_worked_example():
    one = dict.fromkeys(tl.CONV_DIMS, 1)
    levels = [
        {"name": "RF", "capacity_bytes": 40, "multiple_buffering": 1, "keeps": list(TENSORS),
         "temporal": dict(one, P=4, S=3), "spatial": one},
        {"name": "GLB", "capacity_bytes": 2000, "multiple_buffering": 2, "keeps": list(TENSORS),
         "temporal": dict(one, K=2, C=2, P=2, Q=4, R=3), "spatial": dict(one, K=2)},
    ]
    got = tl.conv_tile_footprint({"N": 1, "K": 4, "C": 2, "P": 16, "Q": 8, "R": 3, "S": 3, "stride": 2, "dilation": 2},
                                 {"input_bits": 8, "weight_bits": 8, "psum_bits": 16}, levels)
    assert got == {"input_tile": [35, 418], "input_exact": [12, 120], "weight_tile": [3, 72],
                   "output_tile": [4, 128], "required_bytes": [46, 1492], "fits": [False, True]}


def test_conv_random_against_brute_force():
    rng = np.random.default_rng(99)
    full = 0
    for i in range(N_RANDOM):
        full += _check_conv(tl.gen_conv_tiles(np.random.default_rng([12, i])), rng)
    assert full >= N_RANDOM // 3


def _small_conv(rng: np.random.Generator) -> dict:
    """Small mappings with any dimension anywhere, spatial factors on every dimension."""
    n_levels = int(rng.integers(1, 3))
    levels = []
    for i in range(n_levels):
        levels.append({
            "name": f"L{i}", "capacity_bytes": int(rng.integers(1, 3000)),
            "multiple_buffering": int(rng.integers(1, 3)),
            "keeps": [t for t in TENSORS if rng.random() < 0.7],
            "temporal": {d: int(rng.choice([1, 1, 1, 2, 3])) for d in tl.CONV_DIMS},
            "spatial": {d: int(rng.choice([1, 1, 1, 2])) if i > 0 else 1 for d in tl.CONV_DIMS},
        })
    extent = {d: math.prod(lv[k][d] for lv in levels for k in ("temporal", "spatial")) for d in tl.CONV_DIMS}
    conv = {**extent, "stride": int(rng.integers(1, 5)), "dilation": int(rng.integers(1, 4))}
    prec = {"input_bits": int(rng.choice([4, 8, 16])), "weight_bits": int(rng.choice([4, 8])),
            "psum_bits": int(rng.choice([16, 24, 32]))}
    return {"conv": conv, "precision": prec, "levels": levels}


def test_conv_small_mappings_fully_brute_forced():
    rng = np.random.default_rng(7)
    for i in range(N_RANDOM):
        assert _check_conv(_small_conv(np.random.default_rng([13, i])), rng)


@pytest.mark.parametrize("gen", [tl.gen_gemm_tiles, tl.gen_conv_tiles])
def test_generators_deterministic_and_factorised(gen):
    dims = tl.GEMM_DIMS if gen is tl.gen_gemm_tiles else tl.CONV_DIMS
    key = "gemm" if gen is tl.gen_gemm_tiles else "conv"
    for i in range(50):
        a, b = gen(np.random.default_rng([14, i])), gen(np.random.default_rng([14, i]))
        assert a == b
        for d in dims:  # the on-chip factors divide the bound
            on_chip = math.prod(lv[k][d] for lv in a["levels"] for k in ("temporal", "spatial"))
            assert a[key][d] % on_chip == 0
