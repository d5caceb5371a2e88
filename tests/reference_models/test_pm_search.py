"""The best-tiling search (F16) of ``reference_models.pm_search`` against an independent
brute-force simulator written here from the problem's spec (problems/perf-model/
f16-best-tiling-search/spec.md and FORMAT.md), sharing no code with the reference.

The simulator runs the whole loop nest of every candidate MAC by MAC (every loop of the
mapping, outermost first, each index built from its loops' digits), groups the MACs by the DRAM
iteration they belong to, keeps the GLB's tiles as sets of elements and counts what crosses
DRAM's port; the search, validity, byte rounding and tie rules are written again from the spec.
300 small cases drawn by the problem's own generator, targeted edge cases (ragged tiles, the
first entry of an output, loops of one iteration, multiple buffering, partitions, ties), the
engine of the pack (pm_core) on the mapping each candidate stands for, and the real-size
instances (real layers, 10^4 - 2 x 10^5 candidates, milliseconds).
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from reference_models import pm_core, pm_shapes  # noqa: E402
from support import trusted  # noqa: E402
_TRUSTED = trusted("perf-model")
GENERATORS = _TRUSTED.generators
REFERENCES = _TRUSTED.references

REF = REFERENCES["pm_search.best_tiling_search"]
GEN = GENERATORS["pm_search.best_tiling_search"]
DIMS = ("M", "N", "K")


def _bytes(n: int, bits: int) -> int:
    return (n * bits + 7) // 8


def _nest(wl: dict, option: dict, factors: dict, order: list) -> list:
    """The candidate's loops, outermost first: (level, dimension, factor)."""
    spatial = {d: 1 for d in DIMS}
    for key in ("spatial_x", "spatial_y"):
        for d, f in option[key]:
            spatial[d] = f
    loops = []
    for d in reversed(order):  # DRAM, its list read from the end
        t = 1
        while t * factors[d] * spatial[d] < wl["dims"][d]:
            t += 1
        loops.append(("DRAM", d, t))
    for d in DIMS:
        loops.append(("GLB", d, factors[d]))
    for key in ("spatial_y", "spatial_x"):  # spatial_x is the innermost
        for d, f in option[key]:
            loops.append(("GLB-spatial", d, f))
    return loops


def simulate(wl: dict, arch: dict, option: dict, factors: dict, order: list) -> tuple[int, int, bool]:
    loops = _nest(wl, option, factors, order)
    size, bits = wl["dims"], wl["bits"]
    # weight of each loop's digit: a full run of the loops of its dimension inside it
    weight = []
    for i, (_, d, _) in enumerate(loops):
        w = 1
        for _, e, f in loops[i + 1:]:
            if e == d:
                w *= f
        weight.append(w)
    n_dram = sum(1 for lv, _, _ in loops if lv == "DRAM")
    groups: dict[tuple, list] = {}
    sequence = []
    for digits in itertools.product(*(range(f) for _, _, f in loops)):
        idx = {d: 0 for d in DIMS}
        for (_, d, _), w, x in zip(loops, weight, digits):
            idx[d] += x * w
        key = digits[:n_dram]
        if key not in groups:
            groups[key] = []
            sequence.append(key)
        if all(idx[d] < size[d] for d in DIMS):
            groups[key].append((idx["M"], idx["N"], idx["K"]))
    held = {t: frozenset() for t in "IWO"}
    seen_o: set = set()
    macs_of: dict = {}
    most = {t: 0 for t in "IWO"}
    moved = {"I": 0, "W": 0, "full": 0, "part": 0, "back": 0}

    def leave(outs):
        for o in outs:
            moved["full" if macs_of[o] == size["K"] else "part"] += 1

    for key in sequence:
        macs = groups[key]
        if macs:
            lo = [min(x[j] for x in macs) for j in range(3)]
            hi = [max(x[j] for x in macs) for j in range(3)]
            rm, rn, rk = (range(lo[j], hi[j] + 1) for j in range(3))
            tile = {"I": frozenset(itertools.product(rm, rk)), "W": frozenset(itertools.product(rk, rn)),
                    "O": frozenset(itertools.product(rm, rn))}
        else:
            tile = {t: frozenset() for t in "IWO"}
        moved["I"] += len(tile["I"] - held["I"])
        moved["W"] += len(tile["W"] - held["W"])
        leave(held["O"] - tile["O"])
        for o in tile["O"] - held["O"]:
            if o in seen_o:
                moved["back"] += 1
            seen_o.add(o)
            macs_of.setdefault(o, 0)
        for m, n, k in macs:
            macs_of[(m, n)] += 1
        held = tile
        for t in "IWO":
            most[t] = max(most[t], len(tile[t]))
    leave(held["O"])
    dram = (_bytes(moved["I"], bits["I"]) + _bytes(moved["W"], bits["W"]) + _bytes(moved["full"], bits["O"])
            + _bytes(moved["part"], bits["psum"]) + _bytes(moved["back"], bits["psum"]))
    glb = arch["levels"][0]
    b = glb.get("multiple_buffering", 1)
    room = {t: b * _bytes(most[t], bits["psum"] if t == "O" else bits[t]) for t in "IWO"}
    cap = glb["capacity_bytes"]
    fits = all(room[t] <= cap[t] for t in "IWO") if isinstance(cap, dict) else sum(room.values()) <= cap
    return dram, sum(room.values()), fits


def search(wl: dict, arch: dict, space: dict) -> dict:
    rows = []
    for o, opt in enumerate(space["spatial_options"]):
        for fm in space["factors"]["M"]:
            for fn in space["factors"]["N"]:
                for fk in space["factors"]["K"]:
                    for order in itertools.permutations(DIMS):
                        fac = {"M": fm, "N": fn, "K": fk}
                        dram, glb, fits = simulate(wl, arch, opt, fac, list(order))
                        if fits:
                            rows.append({"dram": dram, "glb": glb, "o": o, "f": (fm, fn, fk), "order": list(order)})
    assert rows, "no valid candidate"
    best = rows[0]
    for r in rows[1:]:  # the tie rules, one by one
        a = (r["dram"], r["glb"], r["o"], r["f"], r["order"])
        b = (best["dram"], best["glb"], best["o"], best["f"], best["order"])
        if a < b:
            best = r
    return {"best_spatial": best["o"], "best_factors": dict(zip(DIMS, best["f"])), "best_order": best["order"],
            "best_dram_bytes": best["dram"], "best_glb_bytes": best["glb"], "valid_candidates": len(rows),
            "optimal_candidates": sum(1 for r in rows if r["dram"] == best["dram"])}


def test_reference_matches_the_simulator_on_300_small_cases():
    for i in range(300):
        case = GEN(np.random.default_rng([168, i]))
        assert REF(**case) == search(*case.values()), (i, case)


def _gemm(m, n, k, bits=None):
    return {"name": "t", "shape": "gemm", "dims": {"M": m, "N": n, "K": k},
            "bits": bits or {"I": 8, "W": 8, "O": 8, "psum": 24}}


def _arch(cap, fanout=(1, 1), buf=1):
    glb = {"name": "GLB", "capacity_bytes": cap, "fanout": list(fanout)}
    if buf != 1:
        glb["multiple_buffering"] = buf
    return {"name": "t", "levels": [glb, {"name": "DRAM", "capacity_bytes": None, "fanout": [1, 1]}]}


NONE = {"spatial_x": [], "spatial_y": []}


def test_ragged_tiles_move_only_real_elements():
    wl = _gemm(5, 3, 2)
    # M tiles of 2 (3 DRAM iterations, the last one of one row), K innermost: every operand once
    dram, glb, fits = simulate(wl, _arch(1000), NONE, {"M": 2, "N": 3, "K": 2}, ["K", "M", "N"])
    assert dram == 10 + 6 + 15 and glb == 2 * 2 + 2 * 3 + 2 * 3 * 3 and fits
    # N innermost and then M: W comes back for every M tile, I stays
    dram, _, _ = simulate(wl, _arch(1000), NONE, {"M": 2, "N": 1, "K": 2}, ["N", "M", "K"])
    assert dram == 10 + 6 * 3 + 15


def test_first_entry_of_an_output_reads_nothing_and_the_last_write_back_is_complete():
    wl = _gemm(2, 2, 3, {"I": 8, "W": 8, "O": 8, "psum": 32})
    # K outermost in 3 iterations around M: each output enters 3 times: 2 read-backs, 2 partial
    # write-backs (4 bytes each) and one complete one (1 byte)
    dram, _, _ = simulate(wl, _arch(1000), NONE, {"M": 1, "N": 2, "K": 1}, ["M", "N", "K"])
    assert dram == 6 + 6 + 4 + 2 * 8 * 4
    want = {"best_spatial": 0, "best_factors": {"M": 1, "N": 2, "K": 1}, "best_order": ["K", "M", "N"]}
    got = REF(wl, _arch(1000), {"spatial_options": [NONE], "factors": {"M": [1], "N": [2], "K": [1]}})
    # K innermost: no partial sums, but W comes back for each of the two M tiles
    assert {k: got[k] for k in want} == want and got["best_dram_bytes"] == 6 + 12 + 4


def test_a_loop_of_one_iteration_never_starts_the_changes():
    wl = _gemm(4, 3, 2)
    # M has one DRAM iteration; N moves inside K: I must not come back for N
    a, _, _ = simulate(wl, _arch(1000), NONE, {"M": 4, "N": 1, "K": 1}, ["M", "N", "K"])
    assert a == 8 + 6 * 1 + 12 + 2 * _bytes(12, 24)  # W once; outputs leave once per K step
    space = {"spatial_options": [NONE], "factors": {"M": [4], "N": [1], "K": [1]}}
    got = REF(wl, _arch(1000), space)
    # no partial sums costs I once per N tile (24) against 144 bytes of partial sums
    assert got["best_order"] == ["K", "M", "N"] and got["best_dram_bytes"] == 24 + 6 + 12
    # the single-iteration M loop can sit anywhere: the 3 orders with K inside N tie
    assert got["optimal_candidates"] == 3


def test_multiple_buffering_rounds_each_tile_before_buffering_and_partitions_are_separate():
    wl = _gemm(3, 1, 1, {"I": 4, "W": 4, "O": 8, "psum": 12})
    # tiles of 3 I (12 bits: 2 bytes), 1 W (1 byte), 3 psums (36 bits: 5 bytes), tripled
    _, glb, fits = simulate(wl, _arch(24, buf=3), NONE, {"M": 3, "N": 1, "K": 1}, ["K", "M", "N"])
    assert glb == 3 * (2 + 1 + 5) and fits
    assert not simulate(wl, _arch(23, buf=3), NONE, {"M": 3, "N": 1, "K": 1}, ["K", "M", "N"])[2]
    part = {"I": 6, "W": 3, "O": 14}
    assert not simulate(wl, _arch(part, buf=3), NONE, {"M": 3, "N": 1, "K": 1}, ["K", "M", "N"])[2]
    part["O"] = 15
    assert simulate(wl, _arch(part, buf=3), NONE, {"M": 3, "N": 1, "K": 1}, ["K", "M", "N"])[2]


def test_ties_go_to_fewer_glb_bytes_then_option_then_factors_then_order():
    wl = _gemm(2, 2, 2)
    opt_n = {"spatial_x": [["N", 2]], "spatial_y": []}
    space = {"spatial_options": [NONE, opt_n], "factors": {"M": [1, 2], "N": [1, 2], "K": [1, 2]}}
    got = REF(wl, _arch(1000, fanout=(2, 1)), space)
    assert got == search(wl, _arch(1000, fanout=(2, 1)), space)
    assert got["best_dram_bytes"] == 4 + 4 + 4
    # the fewest GLB bytes with every operand once: the N tile covers N, so I stays; K inside
    assert got["best_spatial"] == 0 and got["best_factors"] == {"M": 1, "N": 2, "K": 2}
    assert got["best_order"] == ["K", "M", "N"]


def _mapping(wl, option, factors, order):
    s = {d: 1 for d in DIMS}
    for key in ("spatial_x", "spatial_y"):
        for d, f in option[key]:
            s[d] = f
    g = {"temporal": [[d, factors[d]] for d in DIMS], "spatial_x": option["spatial_x"], "spatial_y": option["spatial_y"]}
    top = {"temporal": [[d, -(-wl["dims"][d] // (factors[d] * s[d]))] for d in order]}
    return {"levels": [g, top]}


def test_the_simulator_agrees_with_the_pack_engine():
    rng = np.random.default_rng(169)
    for i in range(60):
        wl, arch, space = GEN(np.random.default_rng([170, i])).values()
        o = int(rng.integers(0, len(space["spatial_options"])))
        fac = {d: int(rng.choice(space["factors"][d])) for d in DIMS}
        order = list(rng.permutation(DIMS))
        nest = pm_core.parse(wl, arch, _mapping(wl, space["spatial_options"][o], fac, order))
        dram, glb, fits = simulate(wl, arch, space["spatial_options"][o], fac, order)
        req = pm_core.buffer_requirement(nest)[0]
        assert (dram, glb, fits) == (sum(pm_core.offchip_traffic(nest).values()), req["total"], req["fits"]), i


def test_real_instances_are_real_and_large():
    names = set(pm_shapes.group("bert-base") + pm_shapes.group("llama-prefill") + pm_shapes.group("llama-decode"))
    archs, orders = set(), set()
    for i in range(10):
        case = GEN(np.random.default_rng([16803, i]), real=True)
        wl, arch, space = case["workload"], case["architecture"], case["space"]
        assert wl["name"] in names and arch["name"] in ("eyeriss-like", "simba-like", "nvdla-like", "tpu-like")
        n = len(space["spatial_options"]) * 6
        for d in DIMS:
            n *= len(space["factors"][d])
        assert 10**4 <= n <= 2 * 10**5
        out = REF(**case)
        assert 0 < out["valid_candidates"] <= n and 1 <= out["optimal_candidates"] <= out["valid_candidates"]
        archs.add(arch["name"])
        orders.add(tuple(out["best_order"]))
    assert len(archs) >= 3


@pytest.mark.parametrize("i", range(3))
def test_small_instances_are_small(i):
    case = GEN(np.random.default_rng([171, i]))
    n = len(case["space"]["spatial_options"]) * 6
    for d in DIMS:
        n *= len(case["space"]["factors"][d])
    assert n <= 6 * 3 * 27
