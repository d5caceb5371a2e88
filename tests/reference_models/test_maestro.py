"""The MAESTRO-style directive references (F14) against an explicit enumeration of the iteration space.

The enumerator never divides: it lists every chunk start of every map with a while loop, deals
the chunks of a SpatialMap round-robin to its units, walks every step of the loop nest (the
Cartesian product of the temporal chunks and the spatial rounds), instantiates the inner level
once per busy cluster, and counts steps and busy PEs one step at a time.
"""

from __future__ import annotations

import itertools
import json
import random

import numpy as np
import pytest

from support import trusted  # noqa: E402
_TRUSTED = trusted("perf-core")
GENERATORS = _TRUSTED.generators
REFERENCES = _TRUSTED.references
MA = _TRUSTED.submodule("maestro")

N_CASES = 300


# ------------------------------------------------------------------------------------------
# the enumerator
# ------------------------------------------------------------------------------------------

def _starts(extent, offset):
    out, s = [], 0
    while s < extent:
        out.append(s)
        s += offset
    return out


def _rounds(extent, offset, units):
    """Spatial rounds: round i lists the (unit, chunk start) pairs active in it."""
    per_unit = {u: [] for u in range(units)}
    for idx, start in enumerate(_starts(extent, offset)):
        per_unit[idx % units].append(start)
    rounds = []
    i = 0
    while any(len(v) > i for v in per_unit.values()):
        rounds.append([(u, v[i]) for u, v in per_unit.items() if len(v) > i])
        i += 1
    return rounds


def _level_space(directives, extents, units):
    """Every step of one level as a tuple of per-directive choices; the spatial choice is a round."""
    axes = []
    for d in directives:
        e = extents[d["dim"]]
        if d["kind"] == "TemporalMap":
            axes.append([("t", s) for s in _starts(e, d["offset"])])
        else:
            axes.append([("s", r) for r in _rounds(e, d["offset"], units)])
    return axes


def enumerate_single(dims, dataflow, num_pes):
    axes = _level_space(dataflow, dims, num_pes)
    steps, busy_sum = 0, 0
    for step in itertools.product(*axes):
        steps += 1
        busy_sum += sum(len(v) for kind, v in step if kind == "s")
    spatial_axis = next(a for a, d in zip(axes, dataflow) if d["kind"] == "SpatialMap")
    return {
        "iterations": [len(a) for a in axes],
        "total_steps": steps,
        "busy_pes": [len(r) for _, r in spatial_axis],
        "utilization": busy_sum / (steps * num_pes),
    }


def enumerate_two_levels(dims, dataflow, num_pes):
    cut = next(i for i, d in enumerate(dataflow) if d["kind"] == "Cluster")
    n = dataflow[cut]["size"]
    outer, inner = dataflow[:cut], dataflow[cut + 1:]
    clusters = num_pes // n
    assert clusters * n == num_pes

    outer_axes = _level_space(outer, dims, clusters)
    # the chunk a cluster receives: `size` indices of each dimension, clipped to the dimension
    # length; its inner analysis uses the full chunk (min(size, extent)) even when the chunk
    # starts near the end of the dimension
    inner_extents = {d["dim"]: len(range(0, min(d["size"], dims[d["dim"]]))) for d in outer}
    inner_axes = _level_space(inner, inner_extents, n)

    outer_steps = inner_steps_seen = total = 0
    busy_sum = 0
    for ostep in itertools.product(*outer_axes):
        outer_steps += 1
        busy_clusters = [u for kind, v in ostep if kind == "s" for u, _ in v]
        inner_count = 0
        for istep in itertools.product(*inner_axes):
            inner_count += 1
            total += 1
            busy_pes_per_cluster = sum(len(v) for kind, v in istep if kind == "s")
            busy_sum += sum(busy_pes_per_cluster for _ in busy_clusters)
        inner_steps_seen = inner_count
    return {
        "num_clusters": clusters,
        "inner_extents": inner_extents,
        "iterations": [len(a) for a in outer_axes] + [len(a) for a in inner_axes],
        "outer_steps": outer_steps,
        "inner_steps": inner_steps_seen,
        "total_steps": total,
        "utilization": busy_sum / (total * num_pes),
    }


# ------------------------------------------------------------------------------------------
# random small dataflows (independent of the module's generators)
# ------------------------------------------------------------------------------------------

def _rand_map(rnd, kind, dim, extent):
    offset = rnd.randint(1, 4)
    size = rnd.choice([offset, offset + rnd.randint(1, 3), max(offset, extent + rnd.randint(0, 2))])
    return {"kind": kind, "size": size, "offset": offset, "dim": dim}


def _rand_level(rnd, dims):
    names = list(dims)
    rnd.shuffle(names)
    spatial = rnd.choice(names)
    return [_rand_map(rnd, "SpatialMap" if d == spatial else "TemporalMap", d, dims[d]) for d in names]


def _rand_dims(rnd, lo, hi):
    names = rnd.sample(["K", "C", "P", "Q", "R", "S"], rnd.randint(lo, hi))
    return {d: rnd.randint(1, 12) for d in names}


def _single_cases(seed):
    rnd = random.Random(seed)
    for _ in range(N_CASES):
        dims = _rand_dims(rnd, 2, 4)
        yield dims, _rand_level(rnd, dims), rnd.randint(1, 9)


def _two_level_cases(seed):
    rnd = random.Random(seed)
    for _ in range(N_CASES):
        dims = _rand_dims(rnd, 2, 3)
        n, clusters = rnd.randint(1, 6), rnd.randint(1, 5)
        outer = _rand_level(rnd, dims)
        inner_dims = {d["dim"]: min(d["size"], dims[d["dim"]]) for d in outer}
        inner = _rand_level(rnd, inner_dims)
        yield dims, outer + [{"kind": "Cluster", "size": n}] + inner, n * clusters


# ------------------------------------------------------------------------------------------
# tests
# ------------------------------------------------------------------------------------------

def _same(ref, brute):
    assert ref.keys() == brute.keys()
    for key, value in brute.items():
        if isinstance(value, float):
            assert ref[key] == pytest.approx(value, rel=1e-12), key
        else:
            assert ref[key] == value, key


def test_single_level_matches_enumeration():
    ref = REFERENCES["maestro.directive_iterations"]
    for dims, dataflow, num_pes in _single_cases(41):
        _same(ref(dims, dataflow, num_pes), enumerate_single(dims, dataflow, num_pes))


def test_two_levels_match_enumeration():
    ref = REFERENCES["maestro.cluster_iterations"]
    for dims, dataflow, num_pes in _two_level_cases(42):
        _same(ref(dims, dataflow, num_pes), enumerate_two_levels(dims, dataflow, num_pes))


def test_module_generators_match_enumeration():
    """The problems' own inputs, as far as they stay small enough to enumerate."""
    checked = 0
    for i in range(120):
        args = GENERATORS["maestro.single_level"](np.random.default_rng([1401, i]))
        ref = REFERENCES["maestro.directive_iterations"](**args)
        if ref["total_steps"] <= 20_000:
            _same(ref, enumerate_single(**args))
            checked += 1
        args = GENERATORS["maestro.two_levels"](np.random.default_rng([1411, i]))
        ref = REFERENCES["maestro.cluster_iterations"](**args)
        if ref["total_steps"] <= 20_000:
            _same(ref, enumerate_two_levels(**args))
            checked += 1
    assert checked >= 150


def _t(s, o, d):
    return {"kind": "TemporalMap", "size": s, "offset": o, "dim": d}


def _s(s, o, d):
    return {"kind": "SpatialMap", "size": s, "offset": o, "dim": d}


def test_maestro_iteration_formulas():
    # MAESTRO's cost model: temporal ceil(size / offset), spatial ceil(size / (offset * cluster))
    assert MA.map_iterations(_t(3, 2, "C"), 7, 4) == 4
    assert MA.map_iterations(_t(64, 64, "C"), 128, 4) == 2
    assert MA.map_iterations(_s(1, 1, "K"), 10, 4) == 3
    assert MA.map_iterations(_s(2, 3, "K"), 20, 2) == 4
    assert MA.spatial_busy(_s(1, 1, "K"), 10, 4) == [4, 4, 2]


def test_spec_worked_examples():
    r = REFERENCES["maestro.directive_iterations"]({"K": 10, "C": 7, "R": 3},
                                                   [_t(3, 2, "C"), _s(1, 1, "K"), _t(3, 3, "R")], 4)
    assert r["iterations"] == [4, 3, 1] and r["total_steps"] == 12 and r["busy_pes"] == [4, 4, 2]
    assert r["utilization"] == pytest.approx(10 / 12)

    df = [_s(2, 2, "K"), _t(4, 4, "C"), _t(12, 12, "P"), {"kind": "Cluster", "size": 4},
          _t(1, 1, "K"), _t(1, 1, "C"), _s(2, 2, "P")]
    r = REFERENCES["maestro.cluster_iterations"]({"K": 14, "C": 6, "P": 10}, df, 12)
    assert r["num_clusters"] == 3 and r["inner_extents"] == {"K": 2, "C": 4, "P": 10}
    assert r["iterations"] == [3, 2, 1, 2, 4, 2]
    assert (r["outer_steps"], r["inner_steps"], r["total_steps"]) == (6, 16, 96)
    assert r["utilization"] == pytest.approx(35 / 72)


def test_nvdla_like_dataflow_by_hand():
    # 256 PEs in clusters of 64: K across 4 clusters, C across the 64 PEs of a cluster
    df = [_s(1, 1, "K"), _t(64, 64, "C"), {"kind": "Cluster", "size": 64}, _t(1, 1, "K"), _s(1, 1, "C")]
    r = REFERENCES["maestro.cluster_iterations"]({"K": 64, "C": 64}, df, 256)
    assert r["num_clusters"] == 4 and r["inner_extents"] == {"K": 1, "C": 64}
    assert r["iterations"] == [16, 1, 1, 1] and r["total_steps"] == 16 and r["utilization"] == 1.0
    # 102 filters and 40 channels: the last K round keeps 2 of 4 clusters, C fills 40 of 64 PEs
    r = REFERENCES["maestro.cluster_iterations"]({"K": 102, "C": 40}, df, 256)
    assert r["iterations"] == [26, 1, 1, 1]
    assert r["utilization"] == pytest.approx((102 / 104) * (40 / 64))


@pytest.mark.parametrize("key", ["maestro.single_level", "maestro.two_levels"])
def test_generators_are_deterministic_and_well_formed(key):
    gen = GENERATORS[key]
    a = [gen(np.random.default_rng([9, i])) for i in range(100)]
    b = [gen(np.random.default_rng([9, i])) for i in range(100)]
    assert json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)
    for args in a:
        levels = MA.split_levels(args["dataflow"])
        clusters = [d for d in args["dataflow"] if d["kind"] == "Cluster"]
        assert len(levels) == (1 if key == "maestro.single_level" else 2)
        for lvl in levels:
            assert sorted(d["dim"] for d in lvl) == sorted(args["dims"])
            assert sum(d["kind"] == "SpatialMap" for d in lvl) == 1
            assert all(d["size"] >= d["offset"] >= 1 for d in lvl)
        for c in clusters:
            assert args["num_pes"] % c["size"] == 0


def test_generators_produce_the_traps():
    singles = [GENERATORS["maestro.single_level"](np.random.default_rng([1401, i])) for i in range(80)]
    overlapping = [d for a in singles for d in a["dataflow"]
                   if d["kind"] == "TemporalMap" and d["size"] > d["offset"] and a["dims"][d["dim"]] > d["size"]]
    assert len(overlapping) >= 10
    refs = [REFERENCES["maestro.directive_iterations"](**a) for a in singles]
    assert sum(r["busy_pes"][-1] < a["num_pes"] for r, a in zip(refs, singles)) >= 10
    assert sum(len(r["busy_pes"]) > 1 for r in refs) >= 10

    doubles = [GENERATORS["maestro.two_levels"](np.random.default_rng([1411, i])) for i in range(90)]
    clipped = sum(any(d["size"] > a["dims"][d["dim"]] for d in MA.split_levels(a["dataflow"])[0]) for a in doubles)
    assert clipped >= 10
    size_not_offset = sum(any(d["size"] != d["offset"] and d["size"] < a["dims"][d["dim"]]
                              for d in MA.split_levels(a["dataflow"])[0]) for a in doubles)
    assert size_not_offset >= 10
    refs = [REFERENCES["maestro.cluster_iterations"](**a) for a in doubles]
    assert sum(r["num_clusters"] != c["size"] for r, a in zip(refs, doubles)
               for c in a["dataflow"] if c["kind"] == "Cluster") >= 50
