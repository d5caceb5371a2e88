"""Loop-nest analysis: off-chip traffic, multi-level access counts, sliding windows and spatial
unrolling (families F4, F5, F6 and F7), Timeloop-legacy style.

Input format (plain JSON dicts)
===============================

**workload**

* GEMM ``O[m][n] += I[m][k] * W[k][n]``: ``{"kind": "gemm", "M": 8, "N": 6, "K": 4}``.
* conv ``O[n][k][p][q] += I[n][c][p*stride + r*dilation][q*stride + s*dilation] * W[k][c][r][s]``:
  ``{"kind": "conv", "N": 1, "K": 32, "C": 1, "P": 16, "Q": 1, "R": 3, "S": 1, "stride": 1,
  "dilation": 1}``. Missing dimensions, stride and dilation default to 1, so a conv1d is
  ``{"kind": "conv", "P": 16, "R": 3}``. There is no padding: the input has
  ``(P-1)*stride + (R-1)*dilation + 1`` rows.

Tensors are named ``"I"`` (input), ``"W"`` (weights) and ``"O"`` (outputs). A dimension is
*relevant* to a tensor when it indexes it: GEMM I {M, K}, W {K, N}, O {M, N}; conv I {N, C, P, Q,
R, S}, W {K, C, R, S}, O {N, K, P, Q}.

**architecture**: ``{"levels": [{"name": "RF", "bypass": ["W"]}, {"name": "GB"}, {"name":
"DRAM"}]}``, storage levels listed from the **innermost** (next to the MACs) to the **outermost**.
``bypass`` lists the tensors a level does not hold (default none); the outermost level holds
every tensor.

**mapping**: ``{"levels": [{"temporal": [["K", 4], ["N", 3]], "spatial": [["N", 4]]}, ...]}``,
one entry per architecture level in the same order. ``temporal`` lists the level's loops as
``[dimension, factor]`` pairs **innermost first**; ``spatial`` lists the loops unrolled across the
instances of the level below (for level 0, across MAC units), also innermost first. In the full
loop nest a level's temporal loops enclose its spatial loops, which enclose everything of the
levels below. The factors of a dimension over all levels multiply to its bound. For GEMM they may
overshoot it (imperfect factors, e.g. ``ceil``): the iterations past the bound are skipped, and a
tile is what the valid MACs under it touch, so edge tiles are clipped and an instance whose
share is all padding holds nothing. Conv mappings must factor every dimension exactly.

Conventions
===========

* The tile of a level spans every loop at that level and below (its own temporal and spatial
  loops included); a tensor's tile is its projection. For the conv input rows the tile is either
  the exact set ``{p*stride + r*dilation}`` or its bounding box (``footprint="exact"|"bbox"``;
  Timeloop uses the bounding box).
* A level's tile changes only when a temporal loop above it iterates. **Fills** of a level are the
  elements entering its tile, summed over all its instances; the first tile counts; the outermost
  level has no fills. For the input with ``input_reuse="delta"`` only the elements new to the
  tile are fetched (sliding-window reuse, Timeloop); with ``"refetch"`` the whole tile is fetched
  whenever its set of elements changes (ZigZag). Tensors without sliding windows behave the same
  under both. For GEMM this is the stationarity rule: a tensor's fills are its tile times the
  bounds of the loops above, scanned inner to outer from the first relevant loop of bound > 1.
* **Reads** of a read-only tensor at a level are what its child (the next inner level holding the
  tensor) fetches, counted once per instance of the level even when several child instances
  receive the element (multicast); at the innermost level holding it, one read per distinct
  element the MAC units under an instance use in a time step (so ``MACs`` reads, divided by the
  unrolled dimensions irrelevant to the tensor).
* **Outputs**: updates of the innermost holder are the distinct outputs its MAC units produce per
  time step (spatial reduction merges the partial sums of unrolled reduction dimensions); the
  updates of an outer holder are the write-backs of its child, merged the same way: the child
  instances under one instance of the holder accumulate together, and an element is written back
  when it leaves the union of their tiles (and once more at the final drain).
  ``reads = updates - partition``: every update is a read-modify-write except the first of each
  element at each instance (Timeloop's first-read elision); the partition is the number of
  distinct elements the instances of the level hold over the run. Fills of an output tile are
  the partial sums read back from the parent (the parent's reads).
* Counts are totals over all instances of a level (per-instance counts are these divided by
  ``instances``).

Public functions
================

* :func:`analyze` (workload, architecture, mapping) -> per level per tensor reads/fills/updates.
* :func:`gemm_two_level_traffic` (dims, buffer_tile, dram_loops) -> DRAM traffic of a two-level
  GEMM in elements.
* :func:`tile_footprint` and :func:`stationarity_count` for the building blocks.

The problem references (``ref_*``) and input generators (``gen_*``) below are thin adapters from
each problem's own input shape to these functions; they are registered in :data:`REFERENCES` and
:data:`GENERATORS`. The counting engine lives in :mod:`reference_models._nestcore`; it is checked
against a brute-force trace simulator that executes the loop nest (tests only).
"""

from __future__ import annotations

import itertools
from math import prod
from typing import Any, Mapping, Sequence

from ._draw import divisors as _divisors, pick as _pick, shares as _shares
from ._nestcore import (
    FOOTPRINTS,
    INPUT_REUSE,
    TENSORS,
    access_counts,
    build_nest,
    parse_workload,
    tile_size,
)

GEMM_RELEVANT = {"I": ("M", "K"), "W": ("K", "N"), "O": ("M", "N")}


# ------------------------------------------------------------------------------------------
# public building blocks
# ------------------------------------------------------------------------------------------

def analyze(
    workload: Mapping[str, Any],
    architecture: Mapping[str, Any],
    mapping: Mapping[str, Any],
    input_reuse: str = "delta",
    footprint: str = "bbox",
) -> dict[str, Any]:
    """Per-level, per-tensor access counts of a mapped loop nest (see the module docstring).

    Returns ``{"macs", "steps", "mac_units", "levels": [{"name", "instances", "tiles": {t: n},
    "I": {"reads", "fills", "updates"}, "W": {...}, "O": {...}}, ...]}``, levels inner to outer.
    ``steps`` is the number of temporal iterations (padded), ``mac_units`` the product of every
    spatial factor, ``tiles`` the per-instance tile of each tensor the level holds (0 if bypassed).
    """
    nest = build_nest(workload, architecture, mapping)
    counts = access_counts(nest, input_reuse, footprint)
    levels = []
    for lv, name in enumerate(nest.names):
        entry: dict[str, Any] = {
            "name": name,
            "instances": nest.instances(lv),
            "tiles": {t: tile_size(nest, t, lv, footprint) if t in nest.keeps[lv] else 0 for t in TENSORS},
        }
        entry.update({t: dict(counts[lv][t]) for t in TENSORS})
        levels.append(entry)
    return {
        "macs": nest.workload.macs,
        "steps": prod(lp.factor for lp in nest.loops if not lp.spatial),
        "mac_units": prod(lp.factor for lp in nest.loops if lp.spatial),
        "levels": levels,
    }


def tile_footprint(workload: Mapping[str, Any], extents: Mapping[str, int], tensor: str,
                   footprint: str = "bbox") -> int:
    """Elements of ``tensor`` touched by a tile spanning ``extents`` (dimension -> extent,
    missing dimensions 1), clipped to the workload bounds."""
    wl = parse_workload(workload)
    ext = {d: min(int(extents.get(d, 1)), wl.bounds[d]) for d in wl.dims}
    total = 1
    for axis in wl.axes[tensor]:
        if len(axis) == 1:
            total *= ext[axis[0][0]]
        elif footprint == "bbox":
            total *= sum(c * (ext[d] - 1) for d, c in axis) + 1
        else:
            values = {0}
            for d, c in axis:
                values = {x + c * v for x in values for v in range(ext[d])}
            total *= len(values)
    return total


def stationarity_count(relevant: Sequence[str], bounds: Mapping[str, int],
                       outer_loops: Sequence[Sequence[Any]]) -> int:
    """Elements moved into a tile of a tensor with identity projections (GEMM-like), over the
    loops above it (``[dim, factor]`` pairs, inner to outer): the product of the bounds of the
    relevant dimensions times the factors of the irrelevant loops that lie outside the first
    relevant loop of factor > 1. Equal to tile x product-from-first-relevant for perfect factors,
    and exact for clipped edge tiles (ceil factors) as well."""
    rel = set(relevant)
    count = prod(bounds[d] for d in rel)
    started = False
    for d, f in outer_loops:
        if d in rel and f > 1:
            started = True
        if started and d not in rel:
            count *= f
    return count


def gemm_two_level_traffic(dims: Mapping[str, int], buffer_tile: Mapping[str, int],
                           dram_loops: Sequence[Sequence[Any]]) -> dict[str, int]:
    """DRAM traffic of a GEMM on a buffer + DRAM hierarchy, in elements.

    ``dims`` = {"M", "N", "K"}; ``buffer_tile`` = the buffer's tile extent per dimension;
    ``dram_loops`` = the DRAM-level loops, ``[dim, factor]`` inner to outer, whose factors per
    dimension multiply to ``ceil(dim / tile)`` (edge tiles are clipped). Returns ``I_reads``,
    ``W_reads``, ``O_writes`` (write-backs, final ones included) and ``O_reads`` (partial-sum
    read-backs = O_writes - M*N, the first read of every output elided).
    """
    for d in ("M", "N", "K"):
        tile = int(buffer_tile[d])
        f = prod(int(x) for dd, x in dram_loops if dd == d)
        if tile < 1 or f != -(-int(dims[d]) // tile):
            raise ValueError(f"DRAM factors of {d} multiply to {f}, expected ceil({dims[d]}/{tile})")
    counts = {t: stationarity_count(GEMM_RELEVANT[t], dims, dram_loops) for t in TENSORS}
    return {
        "I_reads": counts["I"],
        "W_reads": counts["W"],
        "O_writes": counts["O"],
        "O_reads": counts["O"] - int(dims["M"]) * int(dims["N"]),
    }


# ------------------------------------------------------------------------------------------
# shared helpers of the problem references and generators
# ------------------------------------------------------------------------------------------

def _packed_bytes(elements: int, bits: int) -> int:
    return -(-elements * bits // 8)


def _pairs(loops: Sequence[Sequence[Any]]) -> list[list[Any]]:
    return [[str(d), int(f)] for d, f in loops]


def _split(rng: Any, total: int, parts: int) -> list[int]:
    """An exact ordered factorization of ``total`` into ``parts`` factors."""
    out = []
    for _ in range(parts - 1):
        f = int(rng.choice(_divisors(total)))
        out.append(f)
        total //= f
    out.append(total)
    return out


_COMPOSITE = (1, 2, 3, 4, 6, 8, 9, 12, 16, 18, 24, 27, 32, 36, 48, 64, 72, 96, 128)


def _gemm_dims(rng: Any, values: Sequence[int] = _COMPOSITE) -> dict[str, int]:
    return {d: int(_pick(rng, values)) for d in ("M", "N", "K")}


# ------------------------------------------------------------------------------------------
# F4: DRAM traffic of a two-level GEMM
# ------------------------------------------------------------------------------------------

def ref_gemm_dram_traffic(gemm: dict[str, Any], mapping: dict[str, Any]) -> dict[str, int]:
    return gemm_two_level_traffic(gemm, mapping["buffer"], mapping["dram"])


def gen_gemm_dram_traffic(rng: Any, values: Sequence[int] = _COMPOSITE) -> dict[str, Any]:
    """Perfect tilings; DRAM loops in every order, bound-1 loops listed on purpose (a relevant
    loop of bound 1 inside an irrelevant one must not start the count)."""
    gemm = _gemm_dims(rng, values)
    tile, dram = {}, []
    for d in ("M", "N", "K"):
        if rng.random() < 0.25:
            tile[d] = gemm[d]
        else:
            tile[d] = int(_pick(rng, _divisors(gemm[d])[:-1] or [1]))
        f = gemm[d] // tile[d]
        if f > 1 or rng.random() < 0.6:
            dram.append([d, f])
    order = rng.permutation(len(dram))
    return {"gemm": gemm, "mapping": {"buffer": tile, "dram": [dram[i] for i in order]}}


def _ragged_mapping(rng: Any, gemm: dict[str, int], max_splits: int = 2) -> dict[str, Any]:
    """Buffer tiles that need not divide the bounds; the DRAM factors of each dimension multiply
    to ceil(bound / tile), split over up to ``max_splits`` loops, bound-1 loops included."""
    tile, dram = {}, []
    for d in ("M", "N", "K"):
        b = gemm[d]
        if rng.random() < 0.2:
            tile[d] = b
        else:
            tile[d] = int(rng.integers(1, b + 1))
        f = -(-b // tile[d])
        parts = int(rng.integers(1, max_splits + 1)) if f > 1 else 1
        for x in _split(rng, f, parts):
            if x > 1 or rng.random() < 0.4:
                dram.append([d, x])
    order = rng.permutation(len(dram))
    return {"buffer": tile, "dram": [dram[i] for i in order]}


def _ragged_dims(rng: Any, low: int = 3, high: int = 100) -> dict[str, int]:
    return {d: int(rng.integers(low, high + 1)) if rng.random() < 0.85 else 1 for d in ("M", "N", "K")}


def ref_gemm_dram_bytes(gemm: dict[str, Any], mapping: dict[str, Any], precision: dict[str, Any]) -> dict[str, int]:
    t = gemm_two_level_traffic(gemm, mapping["buffer"], mapping["dram"])
    out = {
        "I_bytes": _packed_bytes(t["I_reads"], precision["input_bits"]),
        "W_bytes": _packed_bytes(t["W_reads"], precision["weight_bits"]),
        "O_write_bytes": _packed_bytes(t["O_writes"], precision["output_bits"]),
        "O_read_bytes": _packed_bytes(t["O_reads"], precision["output_bits"]),
    }
    out["total_bytes"] = sum(out.values())
    return out


_BITS = (3, 4, 5, 6, 8, 12, 16, 20, 32)


def gen_gemm_dram_bytes(rng: Any, high: int = 100) -> dict[str, Any]:
    gemm = _ragged_dims(rng, 3, high)
    return {
        "gemm": gemm,
        "mapping": _ragged_mapping(rng, gemm),
        "precision": {k: int(_pick(rng, _BITS)) for k in ("input_bits", "weight_bits", "output_bits")},
    }


def ref_gemm_psum_traffic(gemm: dict[str, Any], mapping: dict[str, Any], precision: dict[str, Any]) -> dict[str, int]:
    t = gemm_two_level_traffic(gemm, mapping["buffer"], mapping["dram"])
    outputs = int(gemm["M"]) * int(gemm["N"])
    partial = t["O_writes"] - outputs
    out = {
        "O_writes": t["O_writes"],
        "O_reads": t["O_reads"],
        "I_bytes": _packed_bytes(t["I_reads"], precision["input_bits"]),
        "W_bytes": _packed_bytes(t["W_reads"], precision["weight_bits"]),
        "O_write_bytes": -(-(outputs * precision["output_bits"] + partial * precision["psum_bits"]) // 8),
        "O_read_bytes": _packed_bytes(t["O_reads"], precision["psum_bits"]),
    }
    out["total_bytes"] = out["I_bytes"] + out["W_bytes"] + out["O_write_bytes"] + out["O_read_bytes"]
    return out


def gen_gemm_psum_traffic(rng: Any, high: int = 100) -> dict[str, Any]:
    gemm = _ragged_dims(rng, 3, high)
    out_bits = int(_pick(rng, (3, 4, 5, 8, 16)))
    psum_bits = out_bits + int(_pick(rng, (0, 4, 7, 8, 12, 16)))
    mapping = _ragged_mapping(rng, gemm, max_splits=3)
    ks = [i for i, (d, f) in enumerate(mapping["dram"]) if d == "K" and f > 1]
    if ks and rng.random() < 0.5:  # a reduction loop outside the output loops: partial sums
        mapping["dram"].append(mapping["dram"].pop(ks[int(rng.integers(0, len(ks)))]))
    return {
        "gemm": gemm,
        "mapping": mapping,
        "precision": {
            "input_bits": int(_pick(rng, _BITS)),
            "weight_bits": int(_pick(rng, _BITS)),
            "psum_bits": psum_bits,
            "output_bits": out_bits,
        },
    }


def ref_dram_loop_order_sweep(gemm: dict[str, Any], tiling: dict[str, Any]) -> dict[str, Any]:
    traffic = {}
    for order in itertools.permutations(("M", "N", "K")):
        loops = [[d, int(tiling["dram"].get(d, 1))] for d in order]
        t = gemm_two_level_traffic(gemm, tiling["buffer"], loops)
        traffic["".join(order)] = t["I_reads"] + t["W_reads"] + t["O_writes"] + t["O_reads"]
    best = min(sorted(traffic), key=lambda k: traffic[k])
    return {"traffic": traffic, "best_order": best, "best_traffic": traffic[best]}


def gen_dram_loop_order_sweep(rng: Any, values: Sequence[int] = _COMPOSITE) -> dict[str, Any]:
    gemm = _gemm_dims(rng, values)
    tile, dram = {}, {}
    for d in ("M", "N", "K"):
        tile[d] = gemm[d] if rng.random() < 0.25 else int(_pick(rng, _divisors(gemm[d])))
        dram[d] = gemm[d] // tile[d]
    return {"gemm": gemm, "tiling": {"buffer": tile, "dram": dram}}


# ------------------------------------------------------------------------------------------
# F5: multi-level reads / fills / updates with bypass
# ------------------------------------------------------------------------------------------

LEVEL_KEYS = ("I_reads", "I_fills", "W_reads", "W_fills", "O_reads", "O_fills", "O_updates")


def _hierarchy_counts(gemm: Mapping[str, Any], hierarchy: Mapping[str, Any], names: Sequence[str]) -> dict[str, Any]:
    workload = {"kind": "gemm", **{d: int(gemm[d]) for d in ("M", "N", "K")}}
    arch = {"levels": [{"name": n, "bypass": list(hierarchy[n].get("bypass", []))} for n in names]}
    mapping = {"levels": [{"temporal": _pairs(hierarchy[n].get("loops", [])),
                           "spatial": _pairs(hierarchy[n].get("spatial", []))} for n in names]}
    result = analyze(workload, arch, mapping)
    out: dict[str, Any] = {}
    for name, level in zip(names, result["levels"]):
        out[name] = {f"{t}_{a}": level[t][a] for t in TENSORS for a in ("reads", "fills")}
        out[name]["O_updates"] = level["O"]["updates"]
        out[name] = {k: out[name][k] for k in LEVEL_KEYS}
    return out


def ref_three_level_accesses(gemm: dict[str, Any], hierarchy: dict[str, Any]) -> dict[str, Any]:
    return _hierarchy_counts(gemm, hierarchy, ("RF", "GB", "DRAM"))


def _level_loops(rng: Any, shares: Mapping[str, int], split_prob: float = 0.25) -> list[list[Any]]:
    """The loops of one level: each dimension's share, sometimes split in two, sometimes an
    explicit bound-1 loop, in a random order."""
    loops = []
    for d, f in shares.items():
        if f > 1 and rng.random() < split_prob and len(_divisors(f)) > 2:
            loops += [[d, x] for x in _split(rng, f, 2)]
        elif f > 1 or rng.random() < 0.15:
            loops.append([d, f])
    order = rng.permutation(len(loops))
    return [loops[i] for i in order]


def _bypass(rng: Any, p: float) -> list[str]:
    return [t for t in TENSORS if rng.random() < p]


def gen_three_level_accesses(rng: Any, values: Sequence[int] = (2, 3, 4, 6, 8, 12, 16, 24, 32)) -> dict[str, Any]:
    gemm = _gemm_dims(rng, values)
    split = {d: _shares(rng, gemm[d], 3) for d in gemm}
    hierarchy = {}
    for lv, name in enumerate(("RF", "GB", "DRAM")):
        hierarchy[name] = {"loops": _level_loops(rng, {d: split[d][lv] for d in ("M", "N", "K")})}
        if name != "DRAM":
            hierarchy[name]["bypass"] = _bypass(rng, 0.35 if name == "RF" else 0.25)
    return {"gemm": gemm, "hierarchy": hierarchy}


def ref_pe_array_accesses(gemm: dict[str, Any], hierarchy: dict[str, Any]) -> dict[str, Any]:
    out = _hierarchy_counts(gemm, hierarchy, ("RF", "L1", "GB", "DRAM"))
    out["pes"] = prod(int(f) for _, f in hierarchy["GB"].get("spatial", []))
    return out


def gen_pe_array_accesses(rng: Any, values: Sequence[int] = (2, 4, 6, 8, 12, 16, 24, 32), max_pes: int = 64,
                          no_fanout: float = 0.0, split_spatial: float = 0.0) -> dict[str, Any]:
    """Four levels, a PE array fanned out below the GB (each PE has an L1 and an RF), bypass
    lists everywhere: multicast, spatial reduction and per-PE replication all show up. With
    probability ``no_fanout`` there is no spatial loop (one PE); ``split_spatial`` is the chance
    that a spatial factor is split over two loops of its dimension."""
    gemm = _gemm_dims(rng, values)
    dims = ("M", "N", "K")
    unrolled = [d for d in dims if rng.random() < 0.6] or [_pick(rng, dims)]
    if no_fanout and rng.random() < no_fanout:
        unrolled = []
    spatial, pes = [], 1
    for d in unrolled:
        options = [f for f in _divisors(gemm[d]) if 1 < f and pes * f <= max_pes]
        if options:
            f = int(_pick(rng, options))
            if split_spatial and rng.random() < split_spatial and len(_divisors(f)) > 2:
                spatial += [[d, x] for x in _split(rng, f, 2)]
            else:
                spatial.append([d, f])
            pes *= f
    rest = {d: gemm[d] // prod(f for dd, f in spatial if dd == d) for d in dims}
    split = {d: _shares(rng, rest[d], 4) for d in dims}
    hierarchy = {}
    for lv, name in enumerate(("RF", "L1", "GB", "DRAM")):
        hierarchy[name] = {"loops": _level_loops(rng, {d: split[d][lv] for d in dims}, split_prob=0.15)}
        if name != "DRAM":
            hierarchy[name]["bypass"] = _bypass(rng, {"RF": 0.35, "L1": 0.4, "GB": 0.2}[name])
    order = rng.permutation(len(spatial))
    hierarchy["GB"]["spatial"] = [spatial[i] for i in order]
    return {"gemm": gemm, "hierarchy": hierarchy}


# ------------------------------------------------------------------------------------------
# F6: conv sliding-window input traffic
# ------------------------------------------------------------------------------------------

CONV_PARAMS = ("C", "K", "P", "Q", "R", "S")


def _conv_input_traffic(conv: Mapping[str, Any], mapping: Mapping[str, Any], footprint: str) -> dict[str, int]:
    workload = {"kind": "conv", "N": 1, **{d: int(conv[d]) for d in CONV_PARAMS},
                "stride": int(conv.get("stride", 1)), "dilation": int(conv.get("dilation", 1))}
    arch = {"levels": [{"name": "buffer"}, {"name": "DRAM"}]}
    maps = {"levels": [{"temporal": _pairs(mapping["buffer"])}, {"temporal": _pairs(mapping["dram"])}]}
    result = analyze(workload, arch, maps, input_reuse="delta", footprint=footprint)
    buffer, dram = result["levels"]
    return {"input_tile": buffer["tiles"]["I"], "input_reads": dram["I"]["reads"]}


def ref_conv_input_delta(conv: dict[str, Any], mapping: dict[str, Any]) -> dict[str, int]:
    return _conv_input_traffic(conv, mapping, "exact")


def ref_strided_input_delta(conv: dict[str, Any], mapping: dict[str, Any]) -> dict[str, int]:
    return _conv_input_traffic(conv, mapping, "exact")


def _conv_mapping(rng: Any, conv: Mapping[str, int], max_dram_iters: int) -> dict[str, Any] | None:
    buffer, dram = [], []
    for d in CONV_PARAMS:
        b = conv[d]
        share = b if rng.random() < 0.2 else int(_pick(rng, _divisors(b)))
        if share > 1 or rng.random() < 0.1:
            buffer.append([d, share])
        rest = b // share
        if rest > 1 and d in ("P", "Q", "R") and rng.random() < 0.3 and len(_divisors(rest)) > 2:
            dram += [[d, x] for x in _split(rng, rest, 2)]
        elif rest > 1 or rng.random() < 0.15:
            dram.append([d, rest])
    if prod(f for _, f in dram) > max_dram_iters:
        return None
    return {"buffer": [buffer[i] for i in rng.permutation(len(buffer))],
            "dram": [dram[i] for i in rng.permutation(len(dram))]}


def _small(values: Sequence[int], limit: int) -> list[int]:
    return [v for v in values if v <= limit] or [1]


def _with_big_channels(rng: Any, drawn: dict[str, Any], big_channels: int) -> dict[str, Any]:
    """Multiply C by ``big_channels``, held whole by one more buffer loop at a random position
    (tiles and reads then pass 2^31 and 2^53)."""
    if big_channels > 1:
        drawn["conv"]["C"] *= big_channels
        buffer = drawn["mapping"]["buffer"]
        buffer.insert(int(rng.integers(0, len(buffer) + 1)), ["C", int(big_channels)])
    return drawn


def gen_conv_input_delta(rng: Any, max_pq: int = 16, max_ck: int = 16, max_rs: int = 5,
                         max_dram_iters: int = 2048, big_channels: int = 1) -> dict[str, Any]:
    """Unit stride: the halo overlap between consecutive tiles, window resets when an outer loop
    wraps, filter loops at DRAM (R/S tiles), channel and filter loops in between
    (``big_channels``: see _with_big_channels)."""
    while True:
        one_d = rng.random() < 0.3
        conv = {
            "C": int(_pick(rng, _small((1, 1, 2, 3, 4, 8), max_ck))),
            "K": int(_pick(rng, _small((1, 2, 4, 8, 16), max_ck))),
            "P": int(_pick(rng, _small((2, 3, 4, 6, 8, 9, 12, 16), max_pq))),
            "Q": 1 if one_d else int(_pick(rng, _small((2, 3, 4, 6, 8, 12, 16), max_pq))),
            "R": int(_pick(rng, _small((1, 2, 3, 3, 5), max_rs))),
            "S": 1 if one_d else int(_pick(rng, _small((1, 2, 3, 3, 5), max_rs))),
        }
        mapping = _conv_mapping(rng, conv, max_dram_iters)
        if mapping is not None:
            return _with_big_channels(rng, {"conv": conv, "mapping": mapping}, big_channels)


def gen_strided_input_delta(rng: Any, max_pq: int = 12, max_ck: int = 8, max_rs: int = 5,
                            max_dram_iters: int = 2048, big_channels: int = 1) -> dict[str, Any]:
    """Strides and dilations that leave gaps inside a tile (exact footprint < bounding box)
    (``big_channels``: see _with_big_channels)."""
    while True:
        one_d = rng.random() < 0.4
        conv = {
            "C": int(_pick(rng, _small((1, 1, 2, 3, 4), max_ck))),
            "K": int(_pick(rng, _small((1, 2, 4, 8), max_ck))),
            "P": int(_pick(rng, _small((2, 3, 4, 6, 8, 12), max_pq))),
            "Q": 1 if one_d else int(_pick(rng, _small((2, 3, 4, 6, 8), max_pq))),
            "R": int(_pick(rng, _small((1, 2, 3, 3, 5), max_rs))),
            "S": 1 if one_d else int(_pick(rng, _small((1, 2, 3), max_rs))),
            "stride": int(_pick(rng, (1, 2, 2, 3, 3, 4))),
            "dilation": int(_pick(rng, (1, 1, 2, 3))),
        }
        mapping = _conv_mapping(rng, conv, max_dram_iters)
        if mapping is not None:
            return _with_big_channels(rng, {"conv": conv, "mapping": mapping}, big_channels)


# ------------------------------------------------------------------------------------------
# F7: spatial unrolling, multicast and reduction
# ------------------------------------------------------------------------------------------

def ref_gemm_array_accesses(gemm: dict[str, Any], array: dict[str, Any], mapping: dict[str, Any]) -> dict[str, Any]:
    workload = {"kind": "gemm", **{d: int(gemm[d]) for d in ("M", "N", "K")}}
    arch = {"levels": [{"name": "GB"}, {"name": "DRAM"}]}
    maps = {"levels": [
        {"temporal": _pairs(mapping["gb"]), "spatial": _pairs([mapping["cols"], mapping["rows"]])},
        {"temporal": _pairs(mapping["dram"])},
    ]}
    result = analyze(workload, arch, maps)
    gb, dram = result["levels"]
    pes = result["mac_units"]
    return {
        "pes_used": pes,
        "utilization": pes / (int(array["rows"]) * int(array["cols"])),
        "I_reads": gb["I"]["reads"],
        "W_reads": gb["W"]["reads"],
        "O_updates": gb["O"]["updates"],
        "O_reads": gb["O"]["reads"],
        "dram_I_reads": dram["I"]["reads"],
        "dram_W_reads": dram["W"]["reads"],
        "dram_O_writes": dram["O"]["updates"],
        "dram_O_reads": dram["O"]["reads"],
    }


def gen_gemm_array_accesses(rng: Any, values: Sequence[int] = (4, 6, 8, 12, 16, 24, 32, 48, 64),
                            sides: Sequence[int] = (2, 4, 8, 16)) -> dict[str, Any]:
    dims = ("M", "N", "K")
    gemm = _gemm_dims(rng, values)
    array = {"rows": int(_pick(rng, sides)), "cols": int(_pick(rng, sides))}
    left = dict(gemm)
    unroll = {}
    for side in ("rows", "cols"):
        d = str(_pick(rng, dims))
        options = [f for f in _divisors(left[d]) if f <= array[side]]
        f = int(_pick(rng, options[1:] or options))
        unroll[side] = [d, f]
        left[d] //= f
    split = {d: _shares(rng, left[d], 2) for d in dims}
    return {
        "gemm": gemm,
        "array": array,
        "mapping": {
            "rows": unroll["rows"],
            "cols": unroll["cols"],
            "gb": _level_loops(rng, {d: split[d][0] for d in dims}),
            "dram": _level_loops(rng, {d: split[d][1] for d in dims}),
        },
    }


RF_KEYS = ("I_reads", "I_fills", "W_reads", "W_fills", "O_reads", "O_fills", "O_updates")
GB_KEYS = ("I_reads", "W_reads", "O_updates", "O_reads")


def ref_array_edge_accounting(gemm: dict[str, Any], array: dict[str, Any], mapping: dict[str, Any]) -> dict[str, Any]:
    workload = {"kind": "gemm", **{d: int(gemm[d]) for d in ("M", "N", "K")}}
    arch = {"levels": [{"name": "RF", "bypass": list(mapping["rf"].get("bypass", []))}, {"name": "GB"}, {"name": "DRAM"}]}
    maps = {"levels": [
        {"temporal": _pairs(mapping["rf"].get("loops", []))},
        {"temporal": _pairs(mapping["gb"]), "spatial": _pairs([mapping["cols"], mapping["rows"]])},
        {"temporal": _pairs(mapping["dram"])},
    ]}
    result = analyze(workload, arch, maps)
    rf, gb, _ = result["levels"]
    steps = result["steps"]
    return {
        "pes_used": result["mac_units"],
        "steps": steps,
        "utilization": result["macs"] / (steps * int(array["rows"]) * int(array["cols"])),
        "gb": {"I_reads": gb["I"]["reads"], "W_reads": gb["W"]["reads"],
               "O_updates": gb["O"]["updates"], "O_reads": gb["O"]["reads"]},
        "rf": {f"{t}_{a}": rf[t][a] for t in TENSORS for a in ("reads", "fills")} | {"O_updates": rf["O"]["updates"]},
    }


def gen_array_edge_accounting(rng: Any, low: int = 3, high: int = 40, sides: Sequence[int] = (2, 3, 4, 6, 8),
                              max_work: int = 20000) -> dict[str, Any]:
    """Sizes that the array and the tiles do not divide: ceil factors everywhere, idle PEs on
    the edge folds, RF bypass lists."""
    dims = ("M", "N", "K")
    while True:
        gemm = {d: int(rng.integers(low, high + 1)) for d in dims}
        array = {"rows": int(_pick(rng, sides)), "cols": int(_pick(rng, sides))}
        unroll = {side: [str(_pick(rng, dims)), 1] for side in ("cols", "rows")}
        rf_loops, gb_loops, dram_loops = [], [], []
        for d in dims:
            rem = gemm[d]
            share = int(rng.integers(1, min(rem, 4) + 1)) if rng.random() < 0.5 else 1
            rem = -(-rem // share)
            if share > 1:
                rf_loops.append([d, share])
            for side in ("cols", "rows"):
                if unroll[side][0] == d:
                    f = int(rng.integers(2, array[side] + 1)) if array[side] > 1 else 1
                    unroll[side][1] = f
                    rem = -(-rem // f)
            share = int(rng.integers(1, rem + 1)) if rng.random() < 0.6 else 1
            rem = -(-rem // share)
            if share > 1 or rng.random() < 0.1:
                gb_loops.append([d, share])
            if rem > 1 and rng.random() < 0.25 and len(_divisors(rem)) > 2:
                dram_loops += [[d, x] for x in _split(rng, rem, 2)]
            elif rem > 1 or rng.random() < 0.1:
                dram_loops.append([d, rem])
        steps = prod(f for _, f in rf_loops + gb_loops + dram_loops)
        pes = unroll["rows"][1] * unroll["cols"][1]
        if steps * pes <= max_work:
            break
    return {
        "gemm": gemm,
        "array": array,
        "mapping": {
            "rows": unroll["rows"],
            "cols": unroll["cols"],
            "rf": {"bypass": _bypass(rng, 0.35), "loops": [rf_loops[i] for i in rng.permutation(len(rf_loops))]},
            "gb": [gb_loops[i] for i in rng.permutation(len(gb_loops))],
            "dram": [dram_loops[i] for i in rng.permutation(len(dram_loops))],
        },
    }


__all__ = [
    "FOOTPRINTS",
    "INPUT_REUSE",
    "analyze",
    "gemm_two_level_traffic",
    "stationarity_count",
    "tile_footprint",
]

REFERENCES: dict = {
    "loopnest.gemm_dram_traffic": ref_gemm_dram_traffic,
    "loopnest.gemm_dram_bytes": ref_gemm_dram_bytes,
    "loopnest.gemm_psum_traffic": ref_gemm_psum_traffic,
    "loopnest.dram_loop_order_sweep": ref_dram_loop_order_sweep,
    "loopnest.three_level_accesses": ref_three_level_accesses,
    "loopnest.pe_array_accesses": ref_pe_array_accesses,
    "loopnest.conv_input_delta": ref_conv_input_delta,
    "loopnest.strided_input_delta": ref_strided_input_delta,
    "loopnest.gemm_array_accesses": ref_gemm_array_accesses,
    "loopnest.array_edge_accounting": ref_array_edge_accounting,
}

GENERATORS: dict = {
    "loopnest.gemm_dram_traffic": gen_gemm_dram_traffic,
    "loopnest.gemm_dram_bytes": gen_gemm_dram_bytes,
    "loopnest.gemm_psum_traffic": gen_gemm_psum_traffic,
    "loopnest.dram_loop_order_sweep": gen_dram_loop_order_sweep,
    "loopnest.three_level_accesses": gen_three_level_accesses,
    "loopnest.pe_array_accesses": gen_pe_array_accesses,
    "loopnest.conv_input_delta": gen_conv_input_delta,
    "loopnest.strided_input_delta": gen_strided_input_delta,
    "loopnest.gemm_array_accesses": gen_gemm_array_accesses,
    "loopnest.array_edge_accounting": gen_array_edge_accounting,
}
