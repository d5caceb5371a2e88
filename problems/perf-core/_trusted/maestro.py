"""F14: iteration counts of MAESTRO-style data-centric directives.

A dataflow is a list of directives, outermost first, in a small format of ours:

    {"kind": "TemporalMap", "size": s, "offset": o, "dim": "C"}
    {"kind": "SpatialMap",  "size": s, "offset": o, "dim": "K"}
    {"kind": "Cluster",     "size": n}

A map directive cuts dimension ``dim`` (extent ``E`` at its level) into chunks of ``size`` indices
whose starts are ``offset`` apart (0, o, 2o, ... while the start is < E; the last chunks may run
past the end and are clipped). As in MAESTRO's cost model:

* a TemporalMap walks its chunks one per step: ``ceil(E / o)`` iterations, whatever the size;
* a SpatialMap hands one chunk to each of the level's ``U`` units at once:
  ``ceil(E / (o * U))`` iterations; in an iteration the units whose chunk start is >= E idle.

``Cluster(n)`` splits the list into levels: the directives above it map onto ``num_pes / n``
clusters, those below onto the ``n`` PEs of each cluster. The extent of a dimension at the inner
level is the chunk the outer level hands down, ``min(size, E)`` of the outer directive on that
dimension; every chunk is analysed as a full one (MAESTRO's per-level analysis, no edge case).

Every dimension has exactly one directive per level and every level exactly one SpatialMap.
"""

from __future__ import annotations

from math import prod
from typing import Any

import numpy as np


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def split_levels(dataflow: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """The map directives of each level, outermost level first (Cluster directives separate them)."""
    levels: list[list[dict[str, Any]]] = [[]]
    for d in dataflow:
        if d["kind"] == "Cluster":
            levels.append([])
        else:
            levels[-1].append(d)
    return levels


def level_units(dataflow: list[dict[str, Any]], num_pes: int) -> list[int]:
    """Units each level's SpatialMap spreads over: clusters at the top, PEs at the bottom."""
    sizes = [d["size"] for d in dataflow if d["kind"] == "Cluster"]
    units = []
    remaining = num_pes
    for n in sizes:
        units.append(remaining // n)
        remaining = n
    units.append(remaining)
    return units


def map_iterations(d: dict[str, Any], extent: int, units: int) -> int:
    if d["kind"] == "TemporalMap":
        return ceil_div(extent, d["offset"])
    if d["kind"] == "SpatialMap":
        return ceil_div(extent, d["offset"] * units)
    raise ValueError(f"not a map directive: {d!r}")


def spatial_busy(d: dict[str, Any], extent: int, units: int) -> list[int]:
    """Busy units in each iteration of a SpatialMap, in order."""
    chunks = ceil_div(extent, d["offset"])
    iters = ceil_div(extent, d["offset"] * units)
    return [min(units, chunks - i * units) for i in range(iters)]


def analyse(dims: dict[str, int], dataflow: list[dict[str, Any]], num_pes: int) -> dict[str, Any]:
    levels = split_levels(dataflow)
    units = level_units(dataflow, num_pes)
    extents = dict(dims)
    per_level = []
    for directives, u in zip(levels, units):
        its, busy = [], []
        for d in directives:
            e = extents[d["dim"]]
            its.append(map_iterations(d, e, u))
            if d["kind"] == "SpatialMap":
                busy = spatial_busy(d, e, u)
        util = sum(busy) / (len(busy) * u)
        per_level.append({"units": u, "iterations": its, "busy": busy, "utilization": util,
                          "extents": dict(extents)})
        extents = {d["dim"]: min(d["size"], extents[d["dim"]]) for d in directives}
    return {"levels": per_level}


# ------------------------------------------------------------------------------------------
# references
# ------------------------------------------------------------------------------------------

def directive_iterations(dims: dict[str, Any], dataflow: list[dict[str, Any]], num_pes: int) -> dict[str, Any]:
    """F14 easy: one level (no Cluster) on num_pes PEs."""
    lvl = analyse(dims, dataflow, num_pes)["levels"][0]
    return {
        "iterations": lvl["iterations"],
        "total_steps": prod(lvl["iterations"]),
        "busy_pes": lvl["busy"],
        "utilization": lvl["utilization"],
    }


def cluster_iterations(dims: dict[str, Any], dataflow: list[dict[str, Any]], num_pes: int) -> dict[str, Any]:
    """F14 medium: two levels separated by one Cluster(n)."""
    outer, inner = analyse(dims, dataflow, num_pes)["levels"]
    outer_steps = prod(outer["iterations"])
    inner_steps = prod(inner["iterations"])
    return {
        "num_clusters": outer["units"],
        "inner_extents": inner["extents"],
        "iterations": outer["iterations"] + inner["iterations"],
        "outer_steps": outer_steps,
        "inner_steps": inner_steps,
        "total_steps": outer_steps * inner_steps,
        "utilization": outer["utilization"] * inner["utilization"],
    }


# ------------------------------------------------------------------------------------------
# generators
# ------------------------------------------------------------------------------------------

_DIMS = ["K", "C", "P", "Q", "R", "S"]
_SMALL = {"R", "S"}


def _extent(rng: np.random.Generator, name: str) -> int:
    if name in _SMALL:
        return int(rng.choice([1, 3, 3, 5, 7]))
    return int(rng.choice([int(rng.integers(1, 9)), int(rng.integers(9, 65))]))


def _map(rng: np.random.Generator, kind: str, dim: str, extent: int, coarse: bool) -> dict[str, Any]:
    """A map directive with size >= offset: tiles (size == offset), overlapping windows
    (size > offset), whole-dimension chunks (size >= extent), and offsets that do not divide.
    Coarse maps (an outer level handing chunks down) use larger offsets."""
    if kind == "SpatialMap":
        offsets = [1, 2, 2, 3, 4] if coarse else [1, 1, 1, 2, 3]
    else:
        offsets = [2, 3, 4, 4, 5, 8, 16] if coarse else [1, 1, 2, 3, 4, 5, 8]
    offset = int(rng.choice(offsets))
    u = rng.random()
    if u < 0.4:
        size = offset
    elif u < 0.75:
        size = offset + int(rng.integers(1, 4))
    else:
        size = max(offset, extent + int(rng.integers(0, 3)))
        if kind == "TemporalMap" and rng.random() < 0.7:
            offset = size
    return {"kind": kind, "size": int(size), "offset": int(offset), "dim": dim}


def _level(rng: np.random.Generator, dims: dict[str, int], coarse: bool = False) -> list[dict[str, Any]]:
    """One directive per dimension in a random order; the SpatialMap goes on the largest dimension
    most of the time, else on any dimension longer than 1."""
    names = list(dims)
    order = [names[i] for i in rng.permutation(len(names))]
    big = [n for n in order if dims[n] > 1] or order
    if rng.random() < 0.6:
        spatial = max(big, key=lambda n: dims[n])
    else:
        spatial = str(rng.choice(big))
    return [_map(rng, "SpatialMap" if n == spatial else "TemporalMap", n, dims[n], coarse) for n in order]


def gen_single_level(rng: np.random.Generator, large: bool = False) -> dict[str, Any]:
    """Three to five dimensions, one directive each, one SpatialMap, on 2..64 PEs. ``large``
    draws the extents log-uniform in 2^14..2^24 (step counts past 2^31 and 2^53), the
    SpatialMap's within 64 indices per PE, halving the largest temporal extent until the total
    steps are under 2^62 (an int64)."""
    names = [_DIMS[i] for i in sorted(rng.choice(len(_DIMS), size=int(rng.integers(3, 6)), replace=False))]
    if large:
        dims = {n: int(2 ** rng.uniform(14, 24)) for n in names}
    else:
        dims = {n: _extent(rng, n) for n in names}
    num_pes = int(rng.choice([2, 3, 4, 5, 6, 8, 12, 16, 32, 64]))
    dataflow = _level(rng, dims)
    if large:  # the SpatialMap's extent within 64 chunks of one index per PE: busy_pes stays short
        for d in dataflow:
            if d["kind"] == "SpatialMap":
                dims[d["dim"]] = min(dims[d["dim"]], num_pes * 64)
        units = {d["dim"]: d["offset"] * (num_pes if d["kind"] == "SpatialMap" else 1) for d in dataflow}
        temporal = [d["dim"] for d in dataflow if d["kind"] == "TemporalMap"]
        while prod(ceil_div(dims[n], units[n]) for n in dims) >= 1 << 62:  # total_steps stays an int64
            big = max(temporal, key=lambda n: dims[n])
            dims[big] //= 2
    return {"dims": dims, "dataflow": dataflow, "num_pes": num_pes}


def _shrink_large(dims: dict[str, int], outer: list[dict[str, Any]], inner: list[dict[str, Any]],
                  n: int, clusters: int) -> None:
    """Keep a large two-level draw within what its outputs can carry: each SpatialMap within 64
    chunks of one index per unit (busy lists stay short), and each level's steps under 2^62
    (an int64), halving the largest extent of dims until they are."""
    for d in outer:
        if d["kind"] == "SpatialMap":
            dims[d["dim"]] = min(dims[d["dim"]], clusters * 64)
    inner_spatial = next(d["dim"] for d in inner if d["kind"] == "SpatialMap")
    for d in outer:
        if d["dim"] == inner_spatial and d["size"] > n * 64:
            d["size"] = max(d["offset"], n * 64)

    def steps(directives: list[dict[str, Any]], extents: dict[str, int], units: int) -> int:
        return prod(map_iterations(d, extents[d["dim"]], units) for d in directives)

    while True:
        inner_dims = {d["dim"]: min(d["size"], dims[d["dim"]]) for d in outer}
        if steps(outer, dims, clusters) < 1 << 62 and steps(inner, inner_dims, n) < 1 << 62:
            return
        big = max(dims, key=lambda k: dims[k])
        dims[big] = max(1, dims[big] // 2)


def gen_two_levels(rng: np.random.Generator, large: bool = False) -> dict[str, Any]:
    """Outer directives, Cluster(n), inner directives. Outer sizes below, at and above the extent
    (so inner extents are clipped), sizes differing from offsets, partial spatial iterations.
    ``large`` draws the extents log-uniform in 2^14..2^24 (step counts past 2^31 and 2^53),
    then shrinks them as :func:`_shrink_large` says."""
    names = [_DIMS[i] for i in sorted(rng.choice(len(_DIMS), size=int(rng.integers(3, 5)), replace=False))]
    if large:
        dims = {n: int(2 ** rng.uniform(14, 24)) for n in names}
    else:
        dims = {n: _extent(rng, n) for n in names}
    n = int(rng.choice([2, 3, 4, 6, 8, 16]))
    clusters = int(rng.choice([2, 3, 4, 5, 8]))
    outer = _level(rng, dims, coarse=True)
    inner_dims = {d["dim"]: min(d["size"], dims[d["dim"]]) for d in outer}
    inner = _level(rng, inner_dims)
    if large:
        _shrink_large(dims, outer, inner, n, clusters)
    return {"dims": dims, "dataflow": outer + [{"kind": "Cluster", "size": n}] + inner, "num_pes": n * clusters}


REFERENCES = {
    "maestro.directive_iterations": directive_iterations,
    "maestro.cluster_iterations": cluster_iterations,
}

GENERATORS = {
    "maestro.single_level": gen_single_level,
    "maestro.two_levels": gen_two_levels,
}
