"""F8 cycles and utilization against cycle stepping (every PE, every cycle, every MAC executed
exactly once), and F9 throttled latency against an integer formulation and a search for the
shortest feasible schedule."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np

from support import trusted  # noqa: E402
_TRUSTED = trusted("perf-core")
cy = _TRUSTED.submodule("cycles")

N_RANDOM = 300
DIMS = cy.CONV_DIMS


# ------------------------------------------------------------------------------------------
# F8
# ------------------------------------------------------------------------------------------

def _pe_coords(mapping: dict, rows: int, cols: int) -> dict[str, np.ndarray]:
    """Spatial index of every dimension at every PE of the rows x cols grid (row-major), -1 for
    PEs beyond the unrolling (idle for the whole layer)."""
    idx = {d: np.zeros(rows * cols, dtype=np.int64) for d in DIMS}
    valid = np.ones(rows * cols, dtype=bool)
    r, c = np.divmod(np.arange(rows * cols), cols)
    for axis, pos in (("rows", r), ("cols", c)):
        rem = pos.copy()
        for entry in mapping[axis]:  # mixed radix along the axis, first entry fastest
            idx[entry["dim"]] += rem % entry["factor"]
            rem //= entry["factor"]
        valid &= rem == 0
    return idx, valid


def _step(layer: dict, array: dict, mapping: dict, repeat_dims: tuple[str, ...] = ()) -> tuple[int, int]:
    """Cycle stepping: every cycle, every PE; checks that each MAC runs exactly once. Dimensions in
    repeat_dims (not unrolled) are folded into a repeat count instead of being stepped."""
    factor = cy.spatial_factors(mapping)
    idx, valid = _pe_coords(mapping, array["rows"], array["cols"])
    stepped = [d for d in DIMS if d not in repeat_dims]
    repeat = math.prod(layer[d] for d in repeat_dims)
    seen = set()
    cycles = useful = 0
    steps = [range(math.ceil(layer[d] / factor[d])) for d in stepped]
    for t in itertools.product(*steps):
        cycles += 1
        ok = valid.copy()
        glob = {}
        for d, td in zip(stepped, t):
            g = td * factor[d] + idx[d]
            ok &= g < layer[d]
            glob[d] = g
        for pe in np.flatnonzero(ok):
            key = tuple(int(glob[d][pe]) for d in stepped)
            assert key not in seen, "a MAC ran twice"
            seen.add(key)
        useful += int(ok.sum())
    assert len(seen) == math.prod(layer[d] for d in stepped), "a MAC never ran"
    return cycles * repeat, useful * repeat


def _check_pe(args: dict, repeat_dims=()) -> None:
    layer, array, mapping = args["layer"], args["array"], args["mapping"]
    got = cy.pe_array_cycles(layer, array, mapping)
    cycles, useful = _step(layer, array, mapping, repeat_dims)
    pes = array["rows"] * array["cols"]
    assert got["cycles"] == cycles and got["macs"] == useful
    assert math.isclose(got["mac_utilization"], useful / (cycles * pes), rel_tol=1e-12)
    f = cy.spatial_factors(mapping)
    assert got["pes_used"] == math.prod(f.values())
    assert math.isclose(got["spatial_utilization"], got["pes_used"] / pes, rel_tol=1e-12)
    assert math.isclose(got["latency_us"], cycles / array["clock_mhz"], rel_tol=1e-12)


def test_pe_worked_example():
    got = cy.pe_array_cycles({"N": 1, "K": 36, "C": 3, "P": 11, "Q": 6, "R": 1, "S": 1},
                             {"rows": 4, "cols": 16, "clock_mhz": 500},
                             {"rows": [{"dim": "Q", "factor": 4}],
                              "cols": [{"dim": "C", "factor": 2}, {"dim": "P", "factor": 4}]})
    assert got == {"macs": 7128, "cycles": 432, "pes_used": 32, "spatial_utilization": 0.5,
                   "mac_utilization": 0.2578125, "latency_us": 0.864}


def _small_pe(rng: np.random.Generator) -> dict:
    layer = {d: int(rng.integers(1, 5)) for d in DIMS}
    array = {"rows": int(rng.integers(1, 7)), "cols": int(rng.integers(1, 7)), "clock_mhz": int(rng.integers(1, 2000))}
    dims = [str(d) for d in rng.permutation(DIMS)]
    mapping = {"rows": [], "cols": []}
    for axis, size in (("rows", array["rows"]), ("cols", array["cols"])):
        room = size
        for _ in range(int(rng.integers(0, 3))):
            d = dims.pop()
            if layer[d] >= 2 and room >= 2:
                f = int(rng.integers(2, min(room, layer[d]) + 1))
                mapping[axis].append({"dim": d, "factor": f})
                room //= f
    return {"layer": layer, "array": array, "mapping": mapping}


def test_pe_small_layers_cycle_stepped():
    for i in range(N_RANDOM):
        _check_pe(_small_pe(np.random.default_rng([21, i])))


def test_pe_generator_cases_cycle_stepped():
    stepped = 0
    for i in range(N_RANDOM):
        args = cy.gen_pe_array(np.random.default_rng([22, i]))
        f = cy.spatial_factors(args["mapping"])
        for axis, size in (("rows", args["array"]["rows"]), ("cols", args["array"]["cols"])):
            assert math.prod(e["factor"] for e in args["mapping"][axis]) <= size
            assert all(2 <= e["factor"] <= args["layer"][e["dim"]] for e in args["mapping"][axis])
        unrolled = tuple(d for d in DIMS if f[d] > 1)
        folds = math.prod(math.ceil(args["layer"][d] / f[d]) for d in unrolled)
        if folds <= 400:
            _check_pe(args, repeat_dims=tuple(d for d in DIMS if f[d] == 1))
            stepped += 1
    assert stepped >= N_RANDOM // 2


# ------------------------------------------------------------------------------------------
# F9
# ------------------------------------------------------------------------------------------

def _traffic(level: dict) -> tuple[int, int]:
    return sum(level["reads"].values()), sum(level["fills"].values()) + level["updates"]


def _cycles_integer(level: dict, c: int) -> int:
    """Integer formulation: the slowest of compute and each port, ceil-divided."""
    r, w = _traffic(level)
    n = level["instances"]
    out = [c, -(-r // (n * level["read_bandwidth"])), -(-w // (n * level["write_bandwidth"]))]
    if level["shared_bandwidth"] is not None:
        out.append(-(-(r + w) // (n * level["shared_bandwidth"])))
    return max(out)


def _cycles_search(level: dict, c: int) -> int:
    """Shortest whole number of cycles T >= c in which the ports can carry the traffic of one
    instance (an equal share of the totals): found by doubling and bisection."""
    r, w = _traffic(level)
    n = level["instances"]

    def feasible(t: int) -> bool:
        ok = t * n * level["read_bandwidth"] >= r and t * n * level["write_bandwidth"] >= w
        if level["shared_bandwidth"] is not None:
            ok = ok and t * n * level["shared_bandwidth"] >= r + w
        return ok

    hi = c
    while not feasible(hi):
        hi *= 2
    lo = c
    while lo < hi:
        mid = (lo + hi) // 2
        if feasible(mid):
            hi = mid
        else:
            lo = mid + 1
    return lo


def _check_throttled(args: dict) -> dict:
    c, levels = args["compute_cycles"], args["levels"]
    got = cy.throttled_latency(c, args["clock_mhz"], levels)
    want = [_cycles_integer(lv, c) for lv in levels]
    assert got["level_cycles"] == want == [_cycles_search(lv, c) for lv in levels]
    for lv, s in zip(levels, got["slowdown"]):
        r, w = _traffic(lv)
        n = lv["instances"]
        terms = [Fraction(1)]
        if r:
            terms.append(Fraction(lv["read_bandwidth"] * n * c, r))
        if w:
            terms.append(Fraction(lv["write_bandwidth"] * n * c, w))
        if lv["shared_bandwidth"] is not None and r + w:
            terms.append(Fraction(lv["shared_bandwidth"] * n * c, r + w))
        assert s == float(min(terms))
    total = max([c, *want])
    assert got["total_cycles"] == total
    names = [lv["name"] for lv, x in zip(levels, want) if x == total]
    assert got["bottleneck"] == (names[0] if total > c else "compute")
    assert math.isclose(got["latency_us"], total / args["clock_mhz"], rel_tol=1e-12)
    return got


def _level(name, inst, br, bw, bs, reads, fills, updates):
    return {"name": name, "instances": inst, "read_bandwidth": br, "write_bandwidth": bw, "shared_bandwidth": bs,
            "reads": dict(zip(("input", "weight", "output"), reads)),
            "fills": dict(zip(("input", "weight", "output"), fills)), "updates": updates}


def test_throttled_worked_example():
    levels = [
        _level("RF", 64, 2, 1, None, (64000, 32000, 32000), (16000, 16000, 0), 32000),
        _level("GLB", 1, 16, 8, 20, (9000, 4500, 1500), (3000, 2000, 0), 2500),
        _level("DRAM", 1, 4, 2, None, (2100, 1900, 0), (0, 0, 0), 2001),
    ]
    got = cy.throttled_latency(1000, 500, levels)
    assert got["level_cycles"] == [1000, 1125, 1001] and got["total_cycles"] == 1125
    assert got["slowdown"] == [1.0, 8 / 9, 2 / 2.001] and got["bottleneck"] == "GLB" and got["latency_us"] == 2.25


def test_throttled_exact_ceiling_and_ties():
    # 3 * 1000 words at 3 words/cycle over 1000 compute cycles: exactly 1000 cycles, slowdown 1
    lv = _level("A", 1, 3, 1, None, (3000, 0, 0), (0, 0, 0), 0)
    assert cy.throttled_latency(1000, 1, [lv])["level_cycles"] == [1000]
    # 7 words at 3 words/cycle over 1 compute cycle: ceil(7/3) = 3 (floating 1/(3/7) may give 2.333...)
    lv = _level("A", 1, 3, 1, None, (7, 0, 0), (0, 0, 0), 0)
    assert cy.throttled_latency(1, 1, [lv])["level_cycles"] == [3]
    # floating point gets this one wrong: 13 reads at 1 word/cycle over 5 compute cycles:
    # 5 / (1 / (13 / 5)) = 13.000000000000002 in doubles, exactly 13 cycles
    lv = _level("A", 1, 1, 1, None, (0, 13, 0), (0, 0, 0), 0)
    assert cy.throttled_latency(5, 1, [lv])["level_cycles"] == [13]
    # two levels tied: the first is named; nothing throttled: compute
    a = _level("A", 2, 1, 1, None, (4000, 0, 0), (0, 0, 0), 0)
    b = _level("B", 1, 2, 1, None, (4000, 0, 0), (0, 0, 0), 0)
    assert cy.throttled_latency(1000, 1, [a, b])["bottleneck"] == "A"
    assert cy.throttled_latency(1000, 1, [b, a])["bottleneck"] == "B"
    assert cy.throttled_latency(5000, 1, [a, b])["bottleneck"] == "compute"
    # no traffic at all: slowdown 1
    z = _level("Z", 1, 1, 1, 1, (0, 0, 0), (0, 0, 0), 0)
    assert cy.throttled_latency(10, 1, [z])["slowdown"] == [1.0]


def test_throttled_random_against_integer_and_search():
    seen = {"shared": 0, "tie": 0, "compute": 0, "exact": 0}
    for i in range(N_RANDOM):
        args = cy.gen_throttled(np.random.default_rng([23, i]))
        got = _check_throttled(args)
        c = args["compute_cycles"]
        for lv, x in zip(args["levels"], got["level_cycles"]):
            r, w = _traffic(lv)
            n = lv["instances"]
            if lv["shared_bandwidth"] is not None and x > c and x == -(-(r + w) // (n * lv["shared_bandwidth"])) > max(
                    -(-r // (n * lv["read_bandwidth"])), -(-w // (n * lv["write_bandwidth"]))):
                seen["shared"] += 1
            seen["exact"] += any(t > c and t % 1 == 0 for t in (
                Fraction(r, n * lv["read_bandwidth"]), Fraction(w, n * lv["write_bandwidth"])))
        seen["tie"] += got["total_cycles"] > c and got["level_cycles"].count(got["total_cycles"]) > 1
        seen["compute"] += got["bottleneck"] == "compute"
    # the traps appear: shared ports binding, exact multiples, ties, unthrottled cases
    assert seen["shared"] >= 100 and seen["tie"] >= 30 and seen["compute"] >= 15 and seen["exact"] >= 30
