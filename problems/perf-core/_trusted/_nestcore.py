"""Closed-form loop-nest access counts (the engine behind :mod:`reference_models.loopnest`).

The input format and every convention are documented in the docstring of ``loopnest``; this
module parses that format into a normalised nest and computes the counts. Nothing here iterates
over the loop nest: every count is a product or a short sum over loops, so a case takes well
under a millisecond even for large layers.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from math import prod
from typing import Any, Mapping, Sequence

TENSORS = ("I", "W", "O")
READ_ONLY = ("I", "W")
GEMM_DIMS = ("M", "N", "K")
CONV_DIMS = ("N", "K", "C", "P", "Q", "R", "S")
INPUT_REUSE = ("delta", "refetch")
FOOTPRINTS = ("exact", "bbox")

# An axis of a tensor is a sum of (dimension, coefficient) terms: an identity axis has one
# term with coefficient 1; a sliding-window axis (conv input rows) has two.
Axis = tuple[tuple[str, int], ...]


@dataclass(frozen=True)
class Workload:
    kind: str
    dims: tuple[str, ...]
    bounds: Mapping[str, int]
    axes: Mapping[str, tuple[Axis, ...]]  # tensor -> axes

    def relevant(self, tensor: str) -> frozenset[str]:
        return frozenset(d for axis in self.axes[tensor] for d, _ in axis)

    def sliding(self, tensor: str) -> bool:
        return any(len(axis) > 1 or axis[0][1] != 1 for axis in self.axes[tensor])

    @property
    def macs(self) -> int:
        return prod(self.bounds[d] for d in self.dims)

    def size(self, tensor: str) -> int:
        """Elements of a whole tensor (exact footprint of the full iteration space)."""
        return prod(_axis_exact(axis, self.bounds) for axis in self.axes[tensor])


@dataclass(frozen=True)
class Loop:
    dim: str
    factor: int
    level: int
    spatial: bool


@dataclass(frozen=True)
class Nest:
    workload: Workload
    names: tuple[str, ...]
    keeps: tuple[frozenset[str], ...]  # tensors each level holds
    loops: tuple[Loop, ...]  # inner to outer
    strides: tuple[int, ...]  # per loop: product of the factors of inner loops of the same dim

    @property
    def depth(self) -> int:
        return len(self.names)

    def extent(self, dim: str, level: int) -> int:
        """Padded extent of ``dim`` in the tile of ``level`` (loops at that level and below)."""
        return prod(lp.factor for lp in self.loops if lp.dim == dim and lp.level <= level)

    def padded(self, dim: str) -> int:
        return prod(lp.factor for lp in self.loops if lp.dim == dim)

    def instances(self, level: int) -> int:
        return prod(lp.factor for lp in self.loops if lp.spatial and lp.level > level)

    def holders(self, tensor: str) -> list[int]:
        return [lv for lv in range(self.depth) if tensor in self.keeps[lv]]


# ------------------------------------------------------------------------------------------
# parsing
# ------------------------------------------------------------------------------------------

def _int(value: Any, what: str, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"{what} must be an integer >= {minimum}, got {value!r}")
    return value


def parse_workload(workload: Mapping[str, Any]) -> Workload:
    kind = workload.get("kind", "gemm")
    if kind == "gemm":
        bounds = {d: _int(workload[d], f"workload {d}") for d in GEMM_DIMS}
        axes = {
            "I": ((("M", 1),), (("K", 1),)),
            "W": ((("K", 1),), (("N", 1),)),
            "O": ((("M", 1),), (("N", 1),)),
        }
        return Workload("gemm", GEMM_DIMS, bounds, axes)
    if kind == "conv":
        bounds = {d: _int(workload.get(d, 1), f"workload {d}") for d in CONV_DIMS}
        st = _int(workload.get("stride", 1), "stride")
        dil = _int(workload.get("dilation", 1), "dilation")
        axes = {
            "I": ((("N", 1),), (("C", 1),), (("P", st), ("R", dil)), (("Q", st), ("S", dil))),
            "W": ((("K", 1),), (("C", 1),), (("R", 1),), (("S", 1),)),
            "O": ((("N", 1),), (("K", 1),), (("P", 1),), (("Q", 1),)),
        }
        return Workload("conv", CONV_DIMS, bounds, axes)
    raise ValueError(f"workload kind must be 'gemm' or 'conv', got {kind!r}")


def _pairs(items: Any, what: str, dims: Sequence[str]) -> list[tuple[str, int]]:
    out = []
    for item in items or []:
        if not isinstance(item, (list, tuple)) or len(item) != 2:
            raise ValueError(f"{what}: each loop is a [dimension, factor] pair, got {item!r}")
        d, f = item
        if d not in dims:
            raise ValueError(f"{what}: unknown dimension {d!r}")
        out.append((d, _int(f, f"{what} factor of {d}")))
    return out


def build_nest(workload: Mapping[str, Any], architecture: Mapping[str, Any], mapping: Mapping[str, Any]) -> Nest:
    wl = parse_workload(workload)
    arch_levels = architecture["levels"]
    map_levels = mapping["levels"]
    if not arch_levels:
        raise ValueError("the architecture needs at least one level")
    if len(arch_levels) != len(map_levels):
        raise ValueError("architecture and mapping must list the same number of levels")
    names, keeps, loops = [], [], []
    for lv, (arch, mp) in enumerate(zip(arch_levels, map_levels)):
        name = str(arch.get("name", f"L{lv}"))
        bypass = set(arch.get("bypass", []))
        if bypass - set(TENSORS):
            raise ValueError(f"level {name}: unknown tensors in bypass: {sorted(bypass - set(TENSORS))}")
        if lv == len(arch_levels) - 1 and bypass:
            raise ValueError(f"the outermost level {name} holds every tensor (it cannot bypass)")
        names.append(name)
        keeps.append(frozenset(t for t in TENSORS if t not in bypass))
        for d, f in _pairs(mp.get("spatial"), f"level {name} spatial", wl.dims):
            loops.append(Loop(d, f, lv, True))
        for d, f in _pairs(mp.get("temporal"), f"level {name} temporal", wl.dims):
            loops.append(Loop(d, f, lv, False))
    strides, running = [], dict.fromkeys(wl.dims, 1)
    for lp in loops:
        strides.append(running[lp.dim])
        running[lp.dim] *= lp.factor
    nest = Nest(wl, tuple(names), tuple(keeps), tuple(loops), tuple(strides))
    _check_factors(nest)
    return nest


def _check_factors(nest: Nest) -> None:
    wl = nest.workload
    for d in wl.dims:
        bound, total = wl.bounds[d], nest.padded(d)
        if total < bound:
            raise ValueError(f"the factors of {d} multiply to {total} < {bound}")
        if total != bound and wl.kind != "gemm":
            raise ValueError(f"conv mappings must factor every dimension exactly ({d}: {total} != {bound})")


# ------------------------------------------------------------------------------------------
# footprints
# ------------------------------------------------------------------------------------------

@lru_cache(maxsize=4096)
def _axis_set(terms: tuple[tuple[int, int], ...]) -> frozenset[int]:
    """Exact set of values of sum(coef * v) for v in range(extent), per (coef, extent) term."""
    values = {0}
    for coef, extent in terms:
        values = {x + coef * v for x in values for v in range(extent)}
    return frozenset(values)


def _axis_exact(axis: Axis, extents: Mapping[str, int]) -> int:
    if len(axis) == 1:
        return extents[axis[0][0]]
    return len(_axis_set(tuple((c, extents[d]) for d, c in axis)))


def _axis_span(axis: Axis, extents: Mapping[str, int]) -> int:
    return sum(c * (extents[d] - 1) for d, c in axis) + 1


def _axis_size(axis: Axis, extents: Mapping[str, int], footprint: str) -> int:
    return _axis_span(axis, extents) if footprint == "bbox" and len(axis) > 1 else _axis_exact(axis, extents)


def _axis_overlap(axis: Axis, extents: Mapping[str, int], shift: int, footprint: str) -> int:
    """|A intersect (A + shift)| for the per-instance tile set A of one axis."""
    if len(axis) == 1 or footprint == "bbox":
        return max(0, _axis_size(axis, extents, footprint) - abs(shift))
    values = _axis_set(tuple((c, extents[d]) for d, c in axis))
    return sum(1 for v in values if v - shift in values)


def tile_size(nest: Nest, tensor: str, level: int, footprint: str = "bbox") -> int:
    """Elements of ``tensor`` in one instance's tile at ``level`` (edges clipped to the bounds)."""
    wl = nest.workload
    ext = {d: min(nest.extent(d, level), wl.bounds[d]) for d in wl.dims}
    return prod(_axis_size(axis, ext, footprint) for axis in wl.axes[tensor])


# ------------------------------------------------------------------------------------------
# counts
# ------------------------------------------------------------------------------------------

def _temporal_above(nest: Nest, level: int) -> list[int]:
    return [i for i, lp in enumerate(nest.loops) if not lp.spatial and lp.level > level]


def _counted_temporal(nest: Nest, tensor: str, level: int) -> list[int]:
    """Temporal loops above ``level`` from the first non-trivial relevant one outwards."""
    rel = nest.workload.relevant(tensor)
    above = _temporal_above(nest, level)
    for pos, i in enumerate(above):
        lp = nest.loops[i]
        if lp.dim in rel and lp.factor > 1:
            return above[pos:]
    return []


def _valid_tuples(nest: Nest, dim: str, loops: Sequence[int]) -> int:
    """Number of digit tuples of the given loops of ``dim`` whose index offset stays below the
    bound (the block they select holds at least one valid index: every other digit of ``dim``
    is at 0 or free). Equal to the product of the factors when ``dim`` is factored exactly."""
    bound = nest.workload.bounds[dim]
    if nest.padded(dim) == bound:
        return prod(nest.loops[i].factor for i in loops)
    offsets = [0]
    for i in loops:
        step = nest.strides[i]
        offsets = [o + k * step for o in offsets for k in range(nest.loops[i].factor) if o + k * step < bound]
    return len(offsets)


def _exact_counts(nest: Nest, tensor: str, level: int, parent: int | None) -> tuple[int, int]:
    """(elements entering the tiles of all instances of ``level``, the same counted once per
    group of instances under one instance of ``parent``) for a tensor with identity axes.

    A relevant loop always brings a disjoint tile, so relevant dimensions contribute their
    bound (clipped edge tiles included); an irrelevant dimension contributes the valid digit
    tuples of its loops that lie outside the first relevant loop (and of the instances): the
    tile stays put while the loops inside iterate (GEMM has one irrelevant dimension per
    tensor, whose padded iterations only ever come last, so a tile never empties and refills
    in between)."""
    wl = nest.workload
    rel = wl.relevant(tensor)
    counted = _counted_temporal(nest, tensor, level)
    per_inst = per_group = prod(wl.bounds[d] for d in rel)
    for d in wl.dims:
        if d in rel:
            continue
        mine = [i for i in counted if nest.loops[i].dim == d]
        inst = [i for i, lp in enumerate(nest.loops) if lp.dim == d and lp.spatial and lp.level > level]
        group = [i for i in inst if parent is None or nest.loops[i].level > parent]
        per_inst *= _valid_tuples(nest, d, mine + inst)
        per_group *= _valid_tuples(nest, d, mine + group)
    return per_inst, per_group


def _sliding_entries(nest: Nest, tensor: str, level: int, input_reuse: str, footprint: str) -> int:
    """Elements entering one instance's tile at ``level`` over the whole run (perfect factors)."""
    wl = nest.workload
    ext = {d: nest.extent(d, level) for d in wl.dims}
    axes = wl.axes[tensor]
    tile = prod(_axis_size(axis, ext, footprint) for axis in axes)
    above = _temporal_above(nest, level)
    total = tile
    for pos, j in enumerate(above):
        lj = nest.loops[j]
        if lj.factor == 1:
            continue
        times = (lj.factor - 1) * prod(nest.loops[k].factor for k in above[pos + 1:])
        change = dict.fromkeys(wl.dims, 0)
        change[lj.dim] += nest.strides[j]
        for i in above[:pos]:
            li = nest.loops[i]
            change[li.dim] -= (li.factor - 1) * nest.strides[i]
        shifts = [sum(c * change[d] for d, c in axis) for axis in axes]
        if input_reuse == "refetch":
            new = tile if any(shifts) else 0
        else:
            new = tile - prod(_axis_overlap(axis, ext, s, footprint) for axis, s in zip(axes, shifts))
        total += times * new
    return total


def _mac_level(nest: Nest, tensor: str, holder: int) -> int:
    """Accesses at the innermost level holding ``tensor``: per time step and per instance of the
    holder, the distinct elements the MAC units under it touch (multicast / spatial reduction)."""
    wl = nest.workload
    rel = wl.relevant(tensor)
    if not wl.sliding(tensor):
        count = prod(wl.bounds[d] for d in rel)
        for d in wl.dims:
            if d not in rel:
                count *= _valid_tuples(nest, d, [i for i, lp in enumerate(nest.loops)
                                                 if lp.dim == d and (not lp.spatial or lp.level > holder)])
        return count
    steps = prod(lp.factor for lp in nest.loops if not lp.spatial)
    outer = prod(lp.factor for lp in nest.loops if lp.spatial and lp.level > holder)
    distinct = 1
    for axis in wl.axes[tensor]:
        values = {0}
        for d, coef in axis:
            for i, lp in enumerate(nest.loops):
                if lp.dim == d and lp.spatial and lp.level <= holder:
                    values = {x + coef * nest.strides[i] * v for x in values for v in range(lp.factor)}
        distinct *= len(values)
    return steps * outer * distinct


def _partition(nest: Nest, tensor: str, level: int) -> int:
    """Distinct elements of ``tensor`` the instances of ``level`` hold over the run (summed)."""
    wl = nest.workload
    rel = wl.relevant(tensor)
    n = wl.size(tensor)
    for d in wl.dims:
        if d not in rel:
            n *= _valid_tuples(nest, d, [i for i, lp in enumerate(nest.loops)
                                         if lp.dim == d and lp.spatial and lp.level > level])
    return n


def access_counts(nest: Nest, input_reuse: str = "delta", footprint: str = "bbox") -> list[dict[str, dict[str, int]]]:
    """Per level (inner to outer), per tensor: reads, fills and updates, totals over instances."""
    if input_reuse not in INPUT_REUSE:
        raise ValueError(f"input_reuse must be one of {INPUT_REUSE}")
    if footprint not in FOOTPRINTS:
        raise ValueError(f"footprint must be one of {FOOTPRINTS}")
    wl = nest.workload
    out = [{t: {"reads": 0, "fills": 0, "updates": 0} for t in TENSORS} for _ in range(nest.depth)]
    for t in TENSORS:
        holders = nest.holders(t)
        sliding = wl.sliding(t)
        key = "updates" if t == "O" else "reads"
        out[holders[0]][t][key] = _mac_level(nest, t, holders[0])
        for c, p in zip(holders, holders[1:]):
            if sliding:
                for lp in nest.loops:
                    if lp.spatial and c < lp.level <= p and any(
                        lp.dim == d for axis in wl.axes[t] if len(axis) > 1 for d, _ in axis
                    ):
                        raise NotImplementedError(
                            f"spatial unrolling of {lp.dim} between two levels holding {t} "
                            "(overlapping sliding windows across instances)"
                        )
                entries = _sliding_entries(nest, t, c, input_reuse, footprint)
                rel = wl.relevant(t)
                per_inst = entries * nest.instances(c)
                per_group = entries * prod(
                    lp.factor for lp in nest.loops
                    if lp.spatial and lp.level > c and (lp.level > p or lp.dim in rel)
                )
            else:
                per_inst, per_group = _exact_counts(nest, t, c, p)
            if t == "O":
                out[p][t]["updates"] = per_group
            else:
                out[c][t]["fills"] = per_inst
                out[p][t]["reads"] = per_group
        if t == "O":
            for lv in holders:
                out[lv][t]["reads"] = out[lv][t]["updates"] - _partition(nest, t, lv)
            for c, p in zip(holders, holders[1:]):
                out[c][t]["fills"] = out[p][t]["reads"]
    return out
