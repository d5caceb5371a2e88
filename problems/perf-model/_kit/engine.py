"""Analytical model of the perf-model format (closed forms; see the pack's FORMAT.md).

Counts are sums over time steps and instances of products of per-index quantities; steps are
grouped by the outermost temporal loop that advances, and within a group the digits of
different dimensions are independent, so each sum is a product of per-dimension sums.
"""

from __future__ import annotations

FLAGS: dict = {}  # build-time switches (all off in the solution)


def _flag(name):
    return FLAGS.get(name, False)



from dataclasses import dataclass, field
from math import prod
from typing import Any, Mapping, Sequence

import numpy as np

TENSORS = ("I", "W", "O")
READ_ONLY = ("I", "W")
SHAPES: dict[str, tuple[str, ...]] = {
    "conv": ("N", "K", "C", "P", "Q", "R", "S"),
    "depthwise": ("N", "C", "P", "Q", "R", "S"),
    "gemm": ("M", "N", "K"),
    "bmm": ("B", "G", "H", "M", "N", "K"),
}
WINDOW_DIMS = ("P", "Q", "R", "S")  # conv / depthwise: the dimensions that slide the input window
BIT_KEYS = ("I", "W", "O", "psum")
LEVEL_KEYS = {"name", "capacity_bytes", "fanout", "multiple_buffering", "bytes_per_cycle",
              "read_pj_per_byte", "write_pj_per_byte"}
MAPPING_LEVEL_KEYS = {"temporal", "spatial_x", "spatial_y", "bypass"}

# An axis of a tensor: ("id", dim) or ("win", out_dim, filter_dim, stride, dilation, padding, size).
Axis = tuple


@dataclass(frozen=True)
class Loop:
    dim: str
    factor: int
    level: int
    kind: str  # "x", "y" (spatial) or "t" (temporal)

    @property
    def spatial(self) -> bool:
        return self.kind != "t"


@dataclass(frozen=True)
class Nest:
    shape: str
    dims: tuple[str, ...]
    bounds: Mapping[str, int]
    bits: Mapping[str, int]
    axes: Mapping[str, tuple[Axis, ...]]
    names: tuple[str, ...]
    keeps: tuple[frozenset[str], ...]
    capacity: tuple[Any, ...]  # None (unbounded), int (shared) or {tensor: int}
    fanout: tuple[tuple[int, int], ...]
    buffering: tuple[int, ...]
    loops: tuple[Loop, ...]  # innermost first
    strides: tuple[int, ...]
    # results of pure functions of this nest (the loops of a dim, a tile's extents, the start
    # offsets of a dim's loops and the factors they give for one assignment of roles), computed
    # once: a count walks the same ones many times
    memo: dict[Any, Any] = field(default_factory=dict, init=False, repr=False, compare=False)

    @property
    def depth(self) -> int:
        return len(self.names)

    def relevant(self, tensor: str) -> frozenset[str]:
        out = set()
        for ax in self.axes[tensor]:
            out.update([ax[1]] if ax[0] == "id" else [ax[1], ax[2]])
        return frozenset(out)

    def holders(self, tensor: str) -> list[int]:
        return [lv for lv in range(self.depth) if tensor in self.keeps[lv]]

    def dim_loops(self, dim: str) -> tuple[int, ...]:
        key = ("dim_loops", dim)
        found = self.memo.get(key)
        if found is None:
            found = self.memo[key] = tuple(i for i, lp in enumerate(self.loops) if lp.dim == dim)
        return found

    def extent(self, dim: str, level: int) -> int:
        key = ("extent", dim, level)
        found = self.memo.get(key)
        if found is None:
            found = self.memo[key] = prod(lp.factor for lp in self.loops if lp.dim == dim and lp.level <= level)
        return found

    def arch_instances(self, level: int) -> int:
        return prod(x * y for x, y in self.fanout[level + 1:])

    def used_instances(self, level: int) -> int:
        return prod(lp.factor for lp in self.loops if lp.spatial and lp.level > level)

    @property
    def macs(self) -> int:
        return prod(self.bounds[d] for d in self.dims)

    @property
    def steps(self) -> int:
        return prod(lp.factor for lp in self.loops if not lp.spatial)

    def size(self, tensor: str) -> int:
        """Real elements of a whole tensor (input padding excluded)."""
        total = 1
        for ax in self.axes[tensor]:
            total *= self.bounds[ax[1]] if ax[0] == "id" else ax[6]
        return total


# ------------------------------------------------------------------------------------------
# parsing and validation
# ------------------------------------------------------------------------------------------

def _int(value: Any, what: str, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"{what} must be an integer >= {minimum}, got {value!r}")
    return value


def _pair(value: Any, what: str, minimum: int) -> tuple[int, int]:
    if not isinstance(value, (list, tuple)) or len(value) != 2:
        raise ValueError(f"{what} must be a [rows, columns] pair, got {value!r}")
    return _int(value[0], f"{what}[0]", minimum), _int(value[1], f"{what}[1]", minimum)


def _check_keys(d: Mapping[str, Any], allowed: set[str], what: str) -> None:
    if not isinstance(d, Mapping):
        raise ValueError(f"{what} must be a dict, got {type(d).__name__}")
    extra = sorted(set(d) - allowed)
    if extra:
        raise ValueError(f"{what}: unknown field(s) {extra}")


def parse_workload(workload: Mapping[str, Any]) -> dict[str, Any]:
    """Validate a workload; return its shape, dims, bounds, bits and tensor axes."""
    shape = workload.get("shape") if isinstance(workload, Mapping) else None
    if shape not in SHAPES:
        raise ValueError(f"workload shape must be one of {sorted(SHAPES)}, got {shape!r}")
    conv_like = shape in ("conv", "depthwise")
    allowed = {"name", "shape", "dims", "bits"} | ({"input_hw", "stride", "dilation", "padding"} if conv_like else set())
    _check_keys(workload, allowed, "workload")
    dims = SHAPES[shape]
    given = workload.get("dims")
    if not isinstance(given, Mapping) or sorted(given) != sorted(dims):
        raise ValueError(f"workload dims of a {shape} must list exactly {list(dims)}, got "
                         f"{sorted(given) if isinstance(given, Mapping) else given!r}")
    bounds = {d: _int(given[d], f"workload dims {d}") for d in dims}
    bits_in = workload.get("bits")
    if not isinstance(bits_in, Mapping) or sorted(bits_in) != sorted(BIT_KEYS):
        raise ValueError(f"workload bits must give exactly {list(BIT_KEYS)}, got {bits_in!r}")
    bits = {k: _int(bits_in[k], f"workload bits {k}") for k in BIT_KEYS}
    if bits["psum"] < bits["O"]:
        raise ValueError("workload bits: psum must be at least as wide as O")
    if conv_like:
        hin, win = _pair(workload.get("input_hw"), "workload input_hw", 1)
        sh, sw = _pair(workload.get("stride", [1, 1]), "workload stride", 1)
        dh, dw = _pair(workload.get("dilation", [1, 1]), "workload dilation", 1)
        ph, pw = _pair(workload.get("padding", [0, 0]), "workload padding", 0)
        for out, filt, size, st, dil, pad, side in (("P", "R", hin, sh, dh, ph, "rows"), ("Q", "S", win, sw, dw, pw, "columns")):
            expect = (size + 2 * pad - dil * (bounds[filt] - 1) - 1) // st + 1
            if expect != bounds[out]:
                raise ValueError(f"workload: {out} = {bounds[out]} but input {side} {size}, padding {pad}, "
                                 f"dilation {dil}, {filt} = {bounds[filt]}, stride {st} give {expect} outputs")
        rows = ("win", "P", "R", sh, dh, ph, hin)
        cols = ("win", "Q", "S", sw, dw, pw, win)
        if shape == "conv":
            axes = {"I": (("id", "N"), ("id", "C"), rows, cols),
                    "W": (("id", "K"), ("id", "C"), ("id", "R"), ("id", "S")),
                    "O": (("id", "N"), ("id", "K"), ("id", "P"), ("id", "Q"))}
        else:
            axes = {"I": (("id", "N"), ("id", "C"), rows, cols),
                    "W": (("id", "C"), ("id", "R"), ("id", "S")),
                    "O": (("id", "N"), ("id", "C"), ("id", "P"), ("id", "Q"))}
    elif shape == "gemm":
        axes = {"I": (("id", "M"), ("id", "K")), "W": (("id", "K"), ("id", "N")), "O": (("id", "M"), ("id", "N"))}
    else:
        axes = {"I": (("id", "B"), ("id", "G"), ("id", "H"), ("id", "M"), ("id", "K")),
                "W": (("id", "B"), ("id", "G"), ("id", "K"), ("id", "N"))
                + ((("id", "H"),) if _flag("gqa_ignored") else ()),
                "O": (("id", "B"), ("id", "G"), ("id", "H"), ("id", "M"), ("id", "N"))}
    return {"shape": shape, "dims": dims, "bounds": bounds, "bits": bits, "axes": axes}


def _loops(items: Any, what: str, dims: Sequence[str]) -> list[tuple[str, int]]:
    if items is None:
        return []
    if not isinstance(items, (list, tuple)):
        raise ValueError(f"{what} must be a list of [dimension, factor] pairs")
    out = []
    for item in items:
        if not isinstance(item, (list, tuple)) or len(item) != 2:
            raise ValueError(f"{what}: each loop is a [dimension, factor] pair, got {item!r}")
        d, f = item
        if d not in dims:
            raise ValueError(f"{what}: unknown dimension {d!r} (this workload has {list(dims)})")
        out.append((d, _int(f, f"{what}: factor of {d}")))
    return out


def _capacity(value: Any, what: str) -> Any:
    if value is None:
        return None
    if isinstance(value, Mapping):
        bad = sorted(set(value) - set(TENSORS))
        if bad:
            raise ValueError(f"{what}: unknown tensors {bad}")
        return {t: _int(v, f"{what} {t}", 0) for t, v in value.items()}
    return _int(value, what, 0)


def parse(workload: Mapping[str, Any], architecture: Mapping[str, Any], mapping: Mapping[str, Any]) -> Nest:
    """Validate the three inputs against FORMAT.md and build the loop nest."""
    wl = parse_workload(workload)
    dims, bounds = wl["dims"], wl["bounds"]
    _check_keys(architecture, {"name", "levels", "mac_pj", "clock_ghz"}, "architecture")
    _check_keys(mapping, {"name", "levels"}, "mapping")
    arch_levels, map_levels = architecture.get("levels"), mapping.get("levels")
    if not isinstance(arch_levels, list) or not arch_levels:
        raise ValueError("architecture levels must be a non-empty list (innermost first)")
    if not isinstance(map_levels, list) or len(map_levels) != len(arch_levels):
        raise ValueError(f"mapping levels must be a list with one entry per architecture level ({len(arch_levels)})")
    names, keeps, caps, fans, bufs, loops = [], [], [], [], [], []
    last = len(arch_levels) - 1
    for lv, (arch, mp) in enumerate(zip(arch_levels, map_levels)):
        _check_keys(arch, LEVEL_KEYS, f"architecture level {lv}")
        name = arch.get("name")
        if not isinstance(name, str) or not name:
            raise ValueError(f"architecture level {lv} needs a name")
        if name in names:
            raise ValueError(f"architecture level name {name!r} is used twice")
        _check_keys(mp, MAPPING_LEVEL_KEYS, f"mapping level {lv} ({name})")
        cap = _capacity(arch.get("capacity_bytes"), f"level {name} capacity_bytes")
        if lv == last and cap is not None:
            raise ValueError(f"the outermost level {name} is unbounded: its capacity_bytes must be null")
        if lv < last and cap is None:
            raise ValueError(f"level {name} needs a capacity_bytes (only the outermost level is unbounded)")
        fx, fy = _pair(arch.get("fanout", [1, 1]), f"level {name} fanout", 1)
        mb = _int(arch.get("multiple_buffering", 1), f"level {name} multiple_buffering")
        bypass = mp.get("bypass", []) or []
        if not isinstance(bypass, list) or set(bypass) - set(TENSORS) or len(set(bypass)) != len(bypass):
            raise ValueError(f"mapping level {name} bypass must list distinct tensors among {list(TENSORS)}, got {bypass!r}")
        if lv == last and bypass:
            raise ValueError(f"the outermost level {name} holds every tensor (it cannot bypass)")
        kept = frozenset(t for t in TENSORS if t not in bypass or _flag("ignore_bypass"))
        if isinstance(cap, dict) and not _flag("ignore_bypass"):
            missing = sorted(t for t in kept if t not in cap)
            if missing:
                raise ValueError(f"level {name} has no partition for {missing} (bypass them or give capacity)")
        sx = _loops(mp.get("spatial_x"), f"level {name} spatial_x", dims)
        sy = _loops(mp.get("spatial_y"), f"level {name} spatial_y", dims)
        tt = _loops(mp.get("temporal"), f"level {name} temporal", dims)
        if _flag("outer_first"):
            tt = tt[::-1]
        if prod(f for _, f in sx) > fx or prod(f for _, f in sy) > fy:
            raise ValueError(f"level {name}: spatial_x uses {prod(f for _, f in sx)} and spatial_y "
                             f"{prod(f for _, f in sy)} instances, its fanout is [{fx}, {fy}]")
        loops += [Loop(d, f, lv, "x") for d, f in sx] + [Loop(d, f, lv, "y") for d, f in sy]
        loops += [Loop(d, f, lv, "t") for d, f in tt]
        names.append(name)
        keeps.append(kept)
        caps.append(cap)
        fans.append((fx, fy))
        bufs.append(mb)
    strides, running = [], dict.fromkeys(dims, 1)
    for lp in loops:
        strides.append(running[lp.dim])
        running[lp.dim] *= lp.factor
    for d in dims:
        mine = [i for i, lp in enumerate(loops) if lp.dim == d]
        total = running[d]
        if total < bounds[d]:
            raise ValueError(f"the factors of {d} multiply to {total}, less than its size {bounds[d]}")
        if mine and strides[mine[-1]] * (loops[mine[-1]].factor - 1) >= bounds[d] and not _flag("outer_first"):
            raise ValueError(f"the outermost loop of {d} overshoots: its last iteration starts at "
                             f"{strides[mine[-1]] * (loops[mine[-1]].factor - 1)} >= {bounds[d]}")
    if _flag("no_ragged"):
        bounds = dict(running)
    nest = Nest(wl["shape"], dims, bounds, wl["bits"], wl["axes"], tuple(names), tuple(keeps), tuple(caps),
                tuple(fans), tuple(bufs), tuple(loops), tuple(strides))
    if wl["shape"] in ("conv", "depthwise") and not _flag("ignore_bypass"):
        inner_i = nest.holders("I")[0]
        for lp in loops:
            if lp.spatial and lp.dim in WINDOW_DIMS and lp.factor > 1 and lp.level > inner_i:
                raise ValueError(f"spatial loop over {lp.dim} at level {names[lp.level]} fans out above "
                                 f"{names[inner_i]}, the innermost level holding I (not supported by the format)")
    return nest


# ------------------------------------------------------------------------------------------
# digit enumeration
# ------------------------------------------------------------------------------------------

def _starts(nest: Nest, dim: str, roles: Mapping[int, str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Start offsets of ``dim`` over the digits of its loops with a role.

    Roles: ``free`` (any digit, the same before and after the step), ``step`` (the loop that
    advances: after = 1..F-1, before = after - 1), ``reset`` (after 0, before F-1), ``zero``
    (0 both), ``group`` (an extra axis of digits, the same before and after). Loops without a role
    are inside the tile. Returns (after, before) over the enumerated digits and the group offsets,
    read-only: they are computed once per nest, dim and roles of the dim's loops.
    """
    key = ("starts", dim, _role_key(nest, dim, roles))
    found = nest.memo.get(key)
    if found is None:
        found = nest.memo[key] = _starts_of(nest, nest.dim_loops(dim), roles)
    return found


def _starts_of(nest: Nest, mine: Sequence[int], roles: Mapping[int, str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    new = np.zeros(1, dtype=np.int64)
    old = np.zeros(1, dtype=np.int64)
    grp = np.zeros(1, dtype=np.int64)
    for i in mine:
        role = roles.get(i)
        if role is None or role == "zero":
            continue
        f, st = nest.loops[i].factor, nest.strides[i]
        if role == "free":
            r = np.arange(f, dtype=np.int64) * st
            new = (new[:, None] + r[None, :]).ravel()
            old = (old[:, None] + r[None, :]).ravel()
        elif role == "step":
            new = (new[:, None] + np.arange(1, f, dtype=np.int64)[None, :] * st).ravel()
            old = (old[:, None] + np.arange(0, f - 1, dtype=np.int64)[None, :] * st).ravel()
        elif role == "reset":
            old = old + (f - 1) * st
        elif role == "group":
            grp = (grp[:, None] + np.arange(f, dtype=np.int64)[None, :] * st).ravel()
        else:  # pragma: no cover
            raise AssertionError(role)
    for a in (new, old, grp):
        a.flags.writeable = False
    return new, old, grp


def _ranges(start: np.ndarray, ext: int, bound: int) -> tuple[np.ndarray, np.ndarray]:
    """[lo, hi] of the valid indices of a range starting at ``start`` spanning ``ext`` (hi < lo: empty)."""
    return start, np.minimum(start + ext, bound) - 1


def _interval_len(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    return np.maximum(0, hi - lo + 1)


def _overlap(lo1, hi1, lo2, hi2) -> np.ndarray:
    return np.maximum(0, np.minimum(hi1, hi2) - np.maximum(lo1, lo2) + 1)


def _kept(nlo, nhi, olo, ohi) -> np.ndarray:
    """Elements of the new range already held (the old range)."""
    if _flag("no_reuse"):
        return np.zeros_like(nlo)
    if _flag("refetch"):
        return np.where((nlo == olo) & (nhi == ohi), _interval_len(nlo, nhi), 0)
    return _overlap(nlo, nhi, olo, ohi)


def _window_box(nest: Nest, ax: Axis, sp: np.ndarray, sr: np.ndarray, ext_p: int, ext_r: int):
    """Rows [lo, hi] of the box a window axis spans, cut to the real input, over (p start, r start)."""
    _, pd, rd, st, dil, pad, size = ax
    plo, phi = _ranges(sp, ext_p, nest.bounds[pd])
    rlo, rhi = _ranges(sr, ext_r, nest.bounds[rd])
    ok = (phi >= plo)[:, None] & (rhi >= rlo)[None, :]
    lo = plo[:, None] * st + rlo[None, :] * dil - pad
    span_st = 1 if _flag("span_ignores_stride") else st
    span_dil = 1 if _flag("span_ignores_dilation") else dil
    hi = lo + (phi - plo)[:, None] * span_st + (rhi - rlo)[None, :] * span_dil + (1 if _flag("halo_plus_one") else 0)
    if not _flag("padded"):
        lo, hi = np.maximum(0, lo), np.minimum(size - 1, hi)
    hi = np.where(ok, hi, lo - 1)
    return lo, hi


def _roles(nest: Nest, level: int, parent: int | None, step: int | None, union: bool,
           rel: frozenset[str]) -> dict[int, str]:
    """Roles of the loops outside ``level`` for one class of steps (``step`` = the advancing loop,
    None for the first step). ``union``: spatial loops of irrelevant dimensions between ``level``
    and ``parent`` are group digits (the child instances under one parent instance)."""
    roles: dict[int, str] = {}
    for i, lp in enumerate(nest.loops):
        if lp.level <= level:
            continue
        if lp.spatial:
            grouped = union and parent is not None and lp.level <= parent and lp.dim not in rel
            roles[i] = "group" if grouped else "free"
        elif step is None:
            roles[i] = "zero"
        elif i < step:
            roles[i] = "reset"
        elif i == step:
            roles[i] = "step"
        else:
            roles[i] = "free"
    return roles


def _class_terms(nest: Nest, tensor: str, level: int, roles: Mapping[int, str], mode: str,
                 first: bool = False) -> int:
    """Sum over the steps and instances of one class of: elements new to a tile (``fills``), new to
    the union of a group's fetches (``multicast``) or entering a group's union (``reduce``).
    ``first``: the first step (nothing was held before it).

    The sums are products over the tensor's axes and the dims irrelevant to it; each factor
    depends only on its dims' roles (and the tile's extents), so it is computed once per nest:
    the classes of a run differ in the roles of a few loops only."""
    rel = nest.relevant(tensor)
    t1, t2 = 1, 1  # sum of |new box| x validity, sum of |new box ^ old box| x validity
    for ax in nest.axes[tensor]:
        a, b = _axis_factors(nest, ax, level, roles)
        t1, t2 = t1 * a, t2 * b
        if t1 == 0:
            return 0
    for d in nest.dims:
        if d in rel:
            continue
        a, b = _reuse_factors(nest, d, roles, mode)
        t1, t2 = t1 * a, t2 * b
        if t1 == 0:
            return 0
    return t1 if first else t1 - t2


def _role_key(nest: Nest, dim: str, roles: Mapping[int, str]) -> tuple[str | None, ...]:
    return tuple(roles.get(i) for i in nest.dim_loops(dim))


def _axis_factors(nest: Nest, ax: Axis, level: int, roles: Mapping[int, str]) -> tuple[int, int]:
    """One axis of a tensor: (sum of |new range|, sum of the part of it already held) over its starts."""
    if ax[0] == "id":
        d = ax[1]
        ext = nest.extent(d, level)
        key = ("axis", ax, ext, _role_key(nest, d, roles))
        found = nest.memo.get(key)
        if found is None:
            new, old, _ = _starts(nest, d, roles)
            nlo, nhi = _ranges(new, ext, nest.bounds[d])
            olo, ohi = _ranges(old, ext, nest.bounds[d])
            found = nest.memo[key] = (int(_interval_len(nlo, nhi).sum()), int(_kept(nlo, nhi, olo, ohi).sum()))
        return found
    _, pd, rd = ax[:3]
    ep, er = nest.extent(pd, level), nest.extent(rd, level)
    key = ("axis", ax, ep, er, _role_key(nest, pd, roles), _role_key(nest, rd, roles))
    found = nest.memo.get(key)
    if found is None:
        pn, po, _ = _starts(nest, pd, roles)
        rn, ro, _ = _starts(nest, rd, roles)
        nlo, nhi = _window_box(nest, ax, pn, rn, ep, er)
        olo, ohi = _window_box(nest, ax, po, ro, ep, er)
        found = nest.memo[key] = (int(_interval_len(nlo, nhi).sum()), int(_kept(nlo, nhi, olo, ohi).sum()))
    return found


def _reuse_factors(nest: Nest, d: str, roles: Mapping[int, str], mode: str) -> tuple[int, int]:
    """A dim irrelevant to the tensor: (valid new steps, those of them that reuse the old tile)."""
    key = ("reuse", d, mode, _role_key(nest, d, roles))
    found = nest.memo.get(key)
    if found is None:
        new, old, grp = _starts(nest, d, roles)
        b = nest.bounds[d]
        vn = (new[:, None] + grp[None, :]) < b
        vo = (old[:, None] + grp[None, :]) < b
        if mode == "fills":
            found = (int(vn.sum()), int((vn & vo).sum()))
        elif mode == "multicast":
            a = vn[:, 0]
            y = (vn & ~vo).any(axis=1)
            found = (int(a.sum()), int((a & ~y).sum()))
        else:  # reduce
            found = (int(vn[:, 0].sum()), int((vn[:, 0] & vo[:, 0]).sum()))
        nest.memo[key] = found
    return found


def _moves(nest: Nest, tensor: str, level: int, parent: int | None, mode: str) -> int:
    """Total over the run of the class terms (first step plus every advancing temporal loop)."""
    rel = nest.relevant(tensor)
    union = mode != "fills"
    total = _class_terms(nest, tensor, level, _roles(nest, level, parent, None, union, rel), mode, first=True)
    for i, lp in enumerate(nest.loops):
        if not lp.spatial and lp.level > level and lp.factor > 1:
            total += _class_terms(nest, tensor, level, _roles(nest, level, parent, i, union, rel), mode)
    return total


def _mac_accesses(nest: Nest, tensor: str, holder: int) -> int:
    """At the innermost holder: per time step and instance, the distinct real elements the valid
    MACs under the instance use (operands multicast to the MAC units, outputs reduced)."""
    rel = nest.relevant(tensor)
    if (tensor != "O" and _flag("no_multicast")) or (tensor == "O" and _flag("no_reduction")):
        return nest.macs

    def split(dim: str) -> tuple[np.ndarray, np.ndarray]:
        roles = {}
        for i in nest.dim_loops(dim):
            lp = nest.loops[i]
            roles[i] = "group" if (lp.spatial and lp.level <= holder) else "free"
        s, _, lanes = _starts(nest, dim, roles)
        return s, lanes

    total = 1
    for ax in nest.axes[tensor]:
        if ax[0] == "id":
            d = ax[1]
            s, lanes = split(d)
            lanes = np.sort(lanes)
            total *= int(np.searchsorted(lanes, nest.bounds[d] - s, side="left").sum())
        else:
            _, pd, rd, st, dil, pad, size = ax
            sp, lp_ = split(pd)
            sr, lr = split(rd)
            p = sp[:, None] + lp_[None, :]  # (np, lanes_p)
            r = sr[:, None] + lr[None, :]
            pv, rv = p < nest.bounds[pd], r < nest.bounds[rd]
            rows = p[:, None, :, None] * st + r[None, :, None, :] * dil - pad
            ok = pv[:, None, :, None] & rv[None, :, None, :]
            if not _flag("padded"):
                ok = ok & (rows >= 0) & (rows < size)
            flat = np.sort(np.where(ok, rows, -1).reshape(len(sp), len(sr), -1), axis=2)
            fresh = np.ones(flat.shape, dtype=bool)
            fresh[:, :, 1:] = flat[:, :, 1:] != flat[:, :, :-1]
            distinct = ((flat >= 0) & fresh).sum(axis=2)
            total *= int(distinct.sum())
        if total == 0:
            return 0
    for d in nest.dims:
        if d not in rel:
            s, _ = split(d)
            total *= int((s < nest.bounds[d]).sum())
    return total


def _valid_instances(nest: Nest, dim: str, level: int) -> int:
    """Combinations of the spatial digits of ``dim`` above ``level`` whose range is not empty."""
    roles = {i: "free" for i in nest.dim_loops(dim) if nest.loops[i].spatial and nest.loops[i].level > level}
    s, _, _ = _starts(nest, dim, roles)
    return int((s < nest.bounds[dim]).sum())


def _contributors(nest: Nest, level: int) -> int:
    """Instances of ``level`` that add into any one output element."""
    rel = nest.relevant("O")
    return prod(_valid_instances(nest, d, level) for d in nest.dims if d not in rel)


def partition(nest: Nest, tensor: str, level: int) -> int:
    """Distinct elements of ``tensor`` the instances of ``level`` hold over the run, summed."""
    rel = nest.relevant(tensor)
    return nest.size(tensor) * prod(_valid_instances(nest, d, level) for d in nest.dims if d not in rel)


def max_tile(nest: Nest, tensor: str, level: int) -> int:
    """The largest tile (real elements) one instance of ``level`` holds at any step."""
    rel = nest.relevant(tensor)
    roles = {i: "free" for i, lp in enumerate(nest.loops) if lp.level > level}
    size = 1
    for ax in nest.axes[tensor]:
        if ax[0] == "id":
            size *= min(nest.extent(ax[1], level), nest.bounds[ax[1]])
        else:
            pn, _, _ = _starts(nest, ax[1], roles)
            rn, _, _ = _starts(nest, ax[2], roles)
            lo, hi = _window_box(nest, ax, pn, rn, nest.extent(ax[1], level), nest.extent(ax[2], level))
            size *= int(_interval_len(lo, hi).max())
    del rel
    return size


# ------------------------------------------------------------------------------------------
# the public API
# ------------------------------------------------------------------------------------------

def access_counts(nest: Nest) -> list[dict[str, dict[str, int]]]:
    """Per level (innermost first), per tensor: reads, fills, updates (and, for O, final_updates:
    the write-backs into the level that carry a complete output), totals over all instances."""
    out = [{t: {"reads": 0, "fills": 0, "updates": 0} for t in TENSORS} for _ in range(nest.depth)]
    for lv in range(nest.depth):
        out[lv]["O"]["final_updates"] = 0
    for t in TENSORS:
        hold = nest.holders(t)
        first = _mac_accesses(nest, t, hold[0])
        if t == "O":
            out[hold[0]]["O"]["updates"] = first
        else:
            out[hold[0]][t]["reads"] = first
        for c, p in zip(hold, hold[1:]):
            if t == "O":
                out[p]["O"]["updates"] = _moves(nest, t, c, p, "fills" if _flag("no_reduction") else "reduce")
                if _contributors(nest, p) == 1:
                    out[p]["O"]["final_updates"] = nest.size("O")
            else:
                out[c][t]["fills"] = _moves(nest, t, c, p, "fills")
                out[p][t]["reads"] = _moves(nest, t, c, p, "fills" if _flag("no_multicast") else "multicast")
        if t == "O":
            for lv in hold:
                elided = 0 if _flag("first_read") else (
                    nest.size("O") if _flag("partition_no_replication") else partition(nest, "O", lv))
                out[lv]["O"]["reads"] = out[lv]["O"]["updates"] - elided
            for c, p in zip(hold, hold[1:]):
                out[c]["O"]["fills"] = out[p]["O"]["reads"]
    return out


def analyze(workload: Mapping[str, Any], architecture: Mapping[str, Any], mapping: Mapping[str, Any]) -> dict[str, Any]:
    """Everything the format defines, in elements.

    Returns ``{"macs", "steps", "mac_units", "used_mac_units", "utilization", "levels": [...]}``
    with levels innermost first, each ``{"name", "instances", "used_instances", "keeps",
    "tile": {t: largest per-instance tile in elements (0 if not held)}, "I": {"reads", "fills",
    "updates"}, "W": {...}, "O": {"reads", "fills", "updates", "final_updates"}}``. ``steps`` is the
    number of temporal iterations (compute cycles at one MAC per unit per cycle), ``mac_units``
    the MAC units the architecture has, ``utilization`` = macs / (steps x mac_units).
    """
    nest = parse(workload, architecture, mapping)
    return analysis_of(nest)


def analysis_of(nest: Nest) -> dict[str, Any]:
    counts = access_counts(nest)
    levels = []
    for lv, name in enumerate(nest.names):
        levels.append({
            "name": name,
            "instances": nest.arch_instances(lv),
            "used_instances": nest.used_instances(lv),
            "keeps": [t for t in TENSORS if t in nest.keeps[lv]],
            "tile": {t: max_tile(nest, t, lv) if t in nest.keeps[lv] else 0 for t in TENSORS},
            **counts[lv],
        })
    mac_units = nest.arch_instances(-1)
    return {
        "macs": nest.macs,
        "steps": nest.steps,
        "mac_units": mac_units,
        "used_mac_units": nest.used_instances(-1),
        "utilization": nest.macs / (nest.steps * mac_units),
        "levels": levels,
    }


def packed_bytes(elements: int, bits: int) -> int:
    """Bytes of ``elements`` values of ``bits`` bits packed densely, rounded up to a whole byte."""
    return -(-elements * bits // 8)


def level_bytes(nest: Nest, counts: Sequence[Mapping[str, Mapping[str, int]]] | None = None) -> list[dict[str, dict[str, int]]]:
    """Per level, per tensor, reads / fills / updates in bytes (each stream rounded up on its own).

    I and W move at their precision. Outputs: every read, fill and update is a partial sum (psum
    bits) except the final_updates, which carry complete outputs (O bits)."""
    counts = counts if counts is not None else access_counts(nest)
    b = nest.bits
    out = []
    for lv in range(nest.depth):
        row = {}
        for t in READ_ONLY:
            c = counts[lv][t]
            row[t] = {k: packed_bytes(c[k], b[t]) for k in ("reads", "fills", "updates")}
        c = counts[lv]["O"]
        row["O"] = {
            "reads": packed_bytes(c["reads"], b["psum"]),
            "fills": packed_bytes(c["fills"], b["psum"]),
            "updates": packed_bytes(c["final_updates"], b["O"]) + packed_bytes(c["updates"] - c["final_updates"], b["psum"]),
        }
        out.append(row)
    return out


def offchip_traffic(nest: Nest, counts: Sequence[Mapping[str, Mapping[str, int]]] | None = None) -> dict[str, int]:
    """Bytes crossing the outermost level's port: I, W read; O written (final and partial) and
    partial sums read back."""
    bts = level_bytes(nest, counts)[-1]
    return {"I_read": bts["I"]["reads"], "W_read": bts["W"]["reads"],
            "O_write": bts["O"]["updates"], "O_read": bts["O"]["reads"]}


def buffer_requirement(nest: Nest) -> list[dict[str, Any]]:
    """Per level (innermost first): bytes one instance needs per tensor (its largest tile, outputs
    at psum precision on every level but the outermost, times the level's multiple buffering),
    the total, and whether it fits the capacity (shared or per-tensor partitions; the outermost
    level always fits)."""
    out = []
    last = nest.depth - 1
    for lv in range(nest.depth):
        mb = nest.buffering[lv]
        need = {}
        for t in TENSORS:
            if t not in nest.keeps[lv]:
                need[t] = 0
                continue
            bits = nest.bits["psum"] if (t == "O" and lv < last) else nest.bits[t]
            need[t] = mb * packed_bytes(max_tile(nest, t, lv), bits)
        cap = nest.capacity[lv]
        if cap is None:
            fits = True
        elif isinstance(cap, dict):
            fits = all(need[t] <= cap.get(t, 0) for t in TENSORS if t in nest.keeps[lv])
        else:
            fits = sum(need.values()) <= cap
        out.append({"name": nest.names[lv], "bytes": need, "total": sum(need.values()), "fits": fits})
    return out


def valid(nest: Nest) -> bool:
    """Every on-chip level's requirement fits its capacity."""
    return all(r["fits"] for r in buffer_requirement(nest))


__all__ = [
    "Loop", "Nest", "SHAPES", "TENSORS", "access_counts", "analysis_of", "analyze", "buffer_requirement",
    "level_bytes", "max_tile", "offchip_traffic", "packed_bytes", "parse", "parse_workload", "partition", "valid",
]
