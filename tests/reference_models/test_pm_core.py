"""pm_core (the perf-model engine) against the brute-force element-level simulator.

The simulator (``pm_tracesim.py``, beside this file) is written from problems/perf-model/FORMAT.md
and shares no code with the engine. Random small cases cover every shape, 2 to 5 levels, bypass,
X and Y fan-out at several levels, imperfect factors (ragged tiles, idle instances, empty tiles),
stride, dilation and padding; counts must agree exactly.
"""

from __future__ import annotations

import sys
from math import prod
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from pm_tracesim import requirement, simulate  # noqa: E402

from reference_models import pm_core  # noqa: E402

N_CASES = 320


def _small_workload(rng, shape: str) -> dict:
    bits = {"I": int(rng.choice([4, 8, 16])), "W": int(rng.choice([4, 8])), "O": 8, "psum": int(rng.choice([8, 16, 24]))}
    if shape == "gemm":
        return {"shape": "gemm", "dims": {d: int(rng.integers(1, 7)) for d in ("M", "N", "K")}, "bits": bits}
    if shape == "bmm":
        dims = {"B": int(rng.integers(1, 3)), "G": int(rng.integers(1, 3)), "H": int(rng.integers(1, 3)),
                "M": int(rng.integers(1, 4)), "N": int(rng.integers(1, 4)), "K": int(rng.integers(1, 4))}
        return {"shape": "bmm", "dims": dims, "bits": bits}
    while True:
        r, s = int(rng.integers(1, 4)), int(rng.integers(1, 3))
        p, q = int(rng.integers(1, 6)), int(rng.integers(1, 4))
        st = [int(rng.integers(1, 3)), int(rng.integers(1, 3))]
        dil = [int(rng.integers(1, 3)), int(rng.integers(1, 2))]
        pad = [int(rng.integers(0, 3)), int(rng.integers(0, 2))]
        hin = (p - 1) * st[0] + dil[0] * (r - 1) + 1 - 2 * pad[0] + int(rng.integers(0, st[0]))
        win = (q - 1) * st[1] + dil[1] * (s - 1) + 1 - 2 * pad[1] + int(rng.integers(0, st[1]))
        if hin >= 1 and win >= 1:
            break
    dims = {"N": int(rng.integers(1, 3)), "C": int(rng.integers(1, 4)), "P": p, "Q": q, "R": r, "S": s}
    if shape == "conv":
        dims["K"] = int(rng.integers(1, 4))
    return {"shape": shape, "dims": dims, "input_hw": [hin, win], "stride": st, "dilation": dil,
            "padding": pad, "bits": bits}


def random_case(rng, shape: str | None = None, max_depth: int = 5, spatial_p: float = 0.4) -> dict:
    shape = shape or str(rng.choice(list(pm_core.SHAPES)))
    wl = _small_workload(rng, shape)
    depth = int(rng.integers(2, max_depth + 1))
    busy = spatial_p > 0.5
    fan = [[int(rng.integers(1, 4)), int(rng.integers(1, 4))] if busy or rng.random() < 0.6 else [1, 1]
           for _ in range(depth)]
    bypass = [[t for t in ("I", "W", "O") if lv < depth - 1 and rng.random() < 0.3] for lv in range(depth)]
    inner_i = min(lv for lv in range(depth) if "I" not in bypass[lv])
    levels = [{"temporal": [], "spatial_x": [], "spatial_y": [], "bypass": bypass[lv]} for lv in range(depth)]
    room = [list(f) for f in fan]
    window = {"P", "Q", "R", "S"} if shape in ("conv", "depthwise") else set()
    for d in rng.permutation(list(wl["dims"])):
        d = str(d)
        bound, placed = wl["dims"][d], 1
        for lv in range(depth):
            remaining = -(-bound // placed)
            if lv == depth - 1:
                # the outermost loop finishes the dimension (ceil): maybe split in two loops
                if remaining > 1 and rng.random() < 0.3:
                    f1 = int(rng.integers(1, remaining + 1))
                    levels[lv]["temporal"].append([d, f1])
                    placed *= f1
                    remaining = -(-bound // placed)
                if remaining > 1 or rng.random() < 0.3:
                    levels[lv]["temporal"].append([d, remaining])
                break
            for axis, key in ((0, "spatial_x"), (1, "spatial_y")):
                if room[lv][axis] > 1 and rng.random() < spatial_p and not (d in window and lv > inner_i):
                    f = int(rng.integers(1, min(room[lv][axis], remaining) + 1)) if remaining > 1 else 1
                    if f > 1 or rng.random() < 0.2:
                        levels[lv][key].append([d, f])
                        room[lv][axis] //= max(f, 1)
                        placed *= f
                        remaining = -(-bound // placed)
            for _ in range(int(rng.integers(0, 3))):
                if remaining > 1 and rng.random() < 0.6:
                    f = int(rng.integers(1, remaining + 1))
                    levels[lv]["temporal"].append([d, f])
                    placed *= f
                    remaining = -(-bound // placed)
    for lv in levels:
        order = rng.permutation(len(lv["temporal"]))
        lv["temporal"] = [lv["temporal"][i] for i in order]
    arch_levels = []
    for lv in range(depth):
        entry = {"name": f"L{lv}", "fanout": fan[lv]}
        if lv < depth - 1:
            if rng.random() < 0.3:
                entry["capacity_bytes"] = {t: int(rng.integers(0, 40)) for t in ("I", "W", "O")}
            else:
                entry["capacity_bytes"] = int(rng.integers(0, 100))
            entry["multiple_buffering"] = int(rng.integers(1, 3))
        else:
            entry["capacity_bytes"] = None
        arch_levels.append(entry)
    return {"workload": wl, "architecture": {"levels": arch_levels}, "mapping": {"levels": levels}}


def _padded_work(case) -> int:
    return prod(f for lv in case["mapping"]["levels"] for key in ("temporal", "spatial_x", "spatial_y")
                for _, f in lv[key])


def cases(seed: int, n: int = N_CASES, limit: int = 500, **kw):
    rng = np.random.default_rng(seed)
    made = 0
    while made < n:
        case = random_case(rng, **kw)
        if _padded_work(case) > limit:
            continue
        try:
            pm_core.parse(*_args(case))
        except ValueError:  # a shuffled outer level can put an overshooting loop outermost
            continue
        made += 1
        yield case


def _args(case):
    return case["workload"], case["architecture"], case["mapping"]


@pytest.mark.parametrize("shape", sorted(pm_core.SHAPES))
def test_engine_matches_the_simulator(shape):
    for case in cases(100 + sorted(pm_core.SHAPES).index(shape), n=N_CASES // 4 + 10, shape=shape):
        got = pm_core.analyze(*_args(case))
        want = simulate(*_args(case))
        assert got == want, case


def test_spatial_heavy_cases_match_the_simulator():
    """Fan-out at most levels: multicast, spatial reduction, idle instances at ragged edges."""
    multicast = 0
    for case in cases(11, n=100, spatial_p=0.9):
        got = pm_core.analyze(*_args(case))
        assert got == simulate(*_args(case)), case
        lv = got["levels"]
        nest = pm_core.parse(*_args(case))
        multicast += any(lv[p][t]["reads"] < lv[c][t]["fills"]
                         for t in ("I", "W") for c, p in zip(nest.holders(t), nest.holders(t)[1:]))
    assert multicast >= 25


def test_buffer_requirement_matches_the_simulator():
    for case in cases(7, n=120):
        nest = pm_core.parse(*_args(case))
        assert pm_core.buffer_requirement(nest) == requirement(*_args(case)), case


def test_random_cases_exercise_the_traps():
    seen = {"ragged": 0, "padding": 0, "empty": 0, "multicast": 0, "reduction": 0, "bypass": 0, "xy": 0}
    for case in cases(100, n=150):
        nest = pm_core.parse(*_args(case))
        for d in nest.dims:
            if prod(lp.factor for lp in nest.loops if lp.dim == d) > nest.bounds[d]:
                seen["ragged"] += 1
                break
        wl = case["workload"]
        if wl["shape"] in ("conv", "depthwise") and any(wl["padding"]):
            seen["padding"] += 1
        levels = case["mapping"]["levels"]
        seen["bypass"] += any(lv["bypass"] for lv in levels)
        seen["xy"] += sum(bool(lv["spatial_x"]) or bool(lv["spatial_y"]) for lv in levels) >= 2
        res = pm_core.analysis_of(nest)
        lv_ = res["levels"]
        seen["multicast"] += any(
            lv_[p][t]["reads"] < lv_[c][t]["fills"]
            for t in ("I", "W") for c, p in zip(nest.holders(t), nest.holders(t)[1:]))
        seen["reduction"] += any(lp.spatial and lp.dim not in nest.relevant("O") and lp.factor > 1 for lp in nest.loops)
        seen["empty"] += res["utilization"] < 0.5
    assert all(v >= 10 for v in seen.values()), seen
    print(seen)


# ------------------------------------------------------------------------------------------
# hand-checked cases (Timeloop's conv1d tutorial numbers, the stationarity examples)
# ------------------------------------------------------------------------------------------

def _conv1d(P=16, R=3, K=1):
    return {"shape": "conv", "dims": {"N": 1, "K": K, "C": 1, "P": P, "Q": 1, "R": R, "S": 1},
            "input_hw": [P + R - 1, 1], "bits": {"I": 8, "W": 8, "O": 8, "psum": 8}}


def _two_level():
    return {"levels": [{"name": "Buffer", "capacity_bytes": 1 << 20}, {"name": "DRAM", "capacity_bytes": None}]}


@pytest.mark.parametrize("buffer, dram, k, expect", [
    ([["P", 16]], [["R", 3]], 1, {"W": 3, "I": 18, "Ou": 16}),
    ([["R", 3]], [["P", 16]], 1, {"W": 3, "I": 18, "Ou": 16}),
    ([["R", 3]], [["P", 16], ["K", 32]], 32, {"W": 96, "I": 576, "Ou": 512}),
    ([["R", 3], ["K", 2]], [["P", 16], ["K", 16]], 32, {"W": 96, "I": 288, "Ou": 512}),
])
def test_timeloop_conv1d_numbers(buffer, dram, k, expect):
    mapping = {"levels": [{"temporal": buffer}, {"temporal": dram}]}
    res = pm_core.analyze(_conv1d(K=k), _two_level(), mapping)
    dram_lv = res["levels"][1]
    assert dram_lv["W"]["reads"] == expect["W"]
    assert dram_lv["I"]["reads"] == expect["I"]
    assert dram_lv["O"]["updates"] == expect["Ou"]


def test_padding_is_never_moved():
    wl = {"shape": "conv", "dims": {"N": 1, "K": 1, "C": 1, "P": 4, "Q": 1, "R": 3, "S": 1},
          "input_hw": [4, 1], "padding": [1, 0], "bits": {"I": 8, "W": 8, "O": 8, "psum": 8}}
    mapping = {"levels": [{"temporal": [["R", 3]]}, {"temporal": [["P", 4]]}]}
    res = pm_core.analyze(wl, _two_level(), mapping)
    # windows rows -1..1, 0..2, 1..3, 2..4 cut to 0..3: 2 + 1 + 1 + 0 real rows arrive
    assert res["levels"][1]["I"]["reads"] == 4
    assert res["levels"][0]["I"]["reads"] == 10  # 12 MAC operands, 2 of them padding


def test_gemm_stationarity_examples():
    wl = {"shape": "gemm", "dims": {"M": 8, "N": 6, "K": 4}, "bits": {"I": 8, "W": 8, "O": 8, "psum": 8}}
    res = pm_core.analyze(wl, _two_level(), {"levels": [{"temporal": [["K", 4], ["N", 3]]},
                                                       {"temporal": [["N", 2], ["M", 8]]}]})
    d = res["levels"][1]
    assert (d["I"]["reads"], d["W"]["reads"], d["O"]["updates"], d["O"]["reads"]) == (32, 192, 48, 0)
    res = pm_core.analyze(wl, _two_level(), {"levels": [{"temporal": [["N", 3], ["K", 2]]},
                                                       {"temporal": [["M", 8], ["K", 2], ["N", 2]]}]})
    d = res["levels"][1]
    assert (d["I"]["reads"], d["W"]["reads"], d["O"]["updates"], d["O"]["reads"]) == (64, 24, 96, 48)


@pytest.mark.parametrize("bad, message", [
    ({"workload": {"shape": "gemm", "dims": {"M": 2, "N": 2}, "bits": {"I": 8, "W": 8, "O": 8, "psum": 8}}}, "exactly"),
    ({"mapping": {"levels": [{"temporal": [["M", 2]]}, {"temporal": [["N", 2]]}]}}, "less than its size"),
    ({"mapping": {"levels": [{"temporal": [["M", 2], ["N", 2], ["K", 2]]}, {"temporal": [["M", 3]]}]}},
     "overshoots"),
    ({"mapping": {"levels": [{"spatial_x": [["M", 2]], "temporal": [["N", 2], ["K", 2]]}, {}]}}, "fanout"),
    ({"mapping": {"levels": [{"temporal": [["M", 2], ["N", 2], ["K", 2]]}, {"bypass": ["I"]}]}}, "cannot bypass"),
])
def test_invalid_inputs_are_refused_with_a_reason(bad, message):
    base = {"workload": {"shape": "gemm", "dims": {"M": 2, "N": 2, "K": 2}, "bits": {"I": 8, "W": 8, "O": 8, "psum": 8}},
            "architecture": _two_level(),
            "mapping": {"levels": [{"temporal": [["M", 2], ["N", 2], ["K", 2]]}, {}]}}
    base.update(bad)
    with pytest.raises(ValueError, match=message):
        pm_core.parse(base["workload"], base["architecture"], base["mapping"])
