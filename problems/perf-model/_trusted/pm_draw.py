"""Drawing helpers for the perf-model generators: small instances a brute-force simulation
finishes, and mappings of real layers onto real architectures (reference_models.pm_shapes).

Everything takes a ``numpy.random.Generator`` and returns plain dicts in the format of
problems/perf-model/FORMAT.md. Mappings are valid by construction: the factors of a dimension
multiply to at least its size (imperfect factors when asked), the outermost loop of a dimension
never starts past its size, spatial factors fit the fanouts, spatial loops over the input
window dimensions stay at or below the innermost level holding the input, and partitioned
levels bypass the tensors they have no room for.
"""

from __future__ import annotations

from math import prod
from typing import Any, Sequence

from reference_models import pm_core, pm_shapes

TENSORS = ("I", "W", "O")


def _pick(rng: Any, values: Sequence[Any]) -> Any:
    return values[int(rng.integers(0, len(values)))]


def _divisors(n: int) -> list[int]:
    small = [d for d in range(1, int(n ** 0.5) + 1) if n % d == 0]
    return sorted(set(small + [n // d for d in small]))


# ------------------------------------------------------------------------------------------
# small instances
# ------------------------------------------------------------------------------------------

def small_bits(rng: Any, wide_psum: bool = True) -> dict[str, int]:
    o = int(_pick(rng, (8, 16)))
    return {"I": int(_pick(rng, (4, 8, 16))), "W": int(_pick(rng, (4, 8))), "O": o,
            "psum": int(_pick(rng, (o, 24, 32))) if wide_psum else o}


def small_conv(rng: Any, shape: str = "conv", max_pq: int = 6, max_rs: int = 3, strided: bool = True,
               dilated: bool = True, padded: bool = True, max_c: int = 3, max_k: int = 3) -> dict[str, Any]:
    """A small conv or depthwise layer with stride, dilation and padding."""
    while True:
        r = int(rng.integers(1, max_rs + 1))
        s = int(rng.integers(1, max_rs + 1))
        p, q = int(rng.integers(1, max_pq + 1)), int(rng.integers(1, max_pq + 1))
        st = [int(rng.integers(1, 3)) if strided else 1 for _ in range(2)]
        dil = [int(rng.integers(1, 3)) if dilated else 1 for _ in range(2)]
        pad = [int(rng.integers(0, (dil[0] * (r - 1)) // 2 + 2)) if padded else 0,
               int(rng.integers(0, (dil[1] * (s - 1)) // 2 + 2)) if padded else 0]
        hin = (p - 1) * st[0] + dil[0] * (r - 1) + 1 - 2 * pad[0] + int(rng.integers(0, st[0]))
        win = (q - 1) * st[1] + dil[1] * (s - 1) + 1 - 2 * pad[1] + int(rng.integers(0, st[1]))
        if hin >= 1 and win >= 1:
            break
    dims = {"N": 1 if rng.random() < 0.7 else 2, "C": int(rng.integers(1, max_c + 1)), "P": p, "Q": q, "R": r, "S": s}
    if shape == "conv":
        dims["K"] = int(rng.integers(1, max_k + 1))
        dims = {d: dims[d] for d in pm_core.SHAPES["conv"]}
    return {"name": f"small.{shape}", "shape": shape, "dims": dims, "input_hw": [hin, win], "stride": st,
            "dilation": dil, "padding": pad, "bits": small_bits(rng)}


def small_gemm(rng: Any, max_dim: int = 12) -> dict[str, Any]:
    return {"name": "small.gemm", "shape": "gemm",
            "dims": {d: int(rng.integers(1, max_dim + 1)) for d in ("M", "N", "K")}, "bits": small_bits(rng)}


def small_bmm(rng: Any, max_tokens: int = 6, max_head: int = 4) -> dict[str, Any]:
    dims = {"B": int(rng.integers(1, 3)), "G": int(rng.integers(1, 3)), "H": int(rng.integers(1, 4)),
            "M": int(rng.integers(1, 3)), "N": int(rng.integers(1, max_tokens + 1)), "K": int(rng.integers(1, max_head + 1))}
    if rng.random() < 0.5:  # the context product: K runs over the cached tokens
        dims["N"], dims["K"] = int(rng.integers(1, max_head + 1)), int(rng.integers(1, max_tokens + 1))
    return {"name": "small.bmm", "shape": "bmm", "dims": dims, "bits": small_bits(rng)}


def small_architecture(rng: Any, depth: int, fanouts: Sequence[Sequence[int]] | None = None,
                       partitioned: Sequence[bool] | None = None, max_fanout: int = 3) -> dict[str, Any]:
    """Levels L0 (innermost) .. DRAM; capacities are generous (small problems count traffic)."""
    names = [f"L{i}" for i in range(depth - 1)] + ["DRAM"]
    levels = []
    for lv in range(depth):
        if fanouts is not None:
            fan = [int(x) for x in fanouts[lv]]
        else:
            fan = [int(rng.integers(1, max_fanout + 1)), int(rng.integers(1, max_fanout + 1))] if rng.random() < 0.6 else [1, 1]
        entry: dict[str, Any] = {"name": names[lv]}
        if lv == depth - 1:
            entry["capacity_bytes"] = None
        elif partitioned is not None and partitioned[lv]:
            entry["capacity_bytes"] = {t: 256 * (lv + 1) for t in TENSORS}
        else:
            entry["capacity_bytes"] = 1024 * (lv + 1)
        entry["fanout"] = fan
        levels.append(entry)
    return {"name": f"small-{depth}-level", "levels": levels}


# ------------------------------------------------------------------------------------------
# mappings
# ------------------------------------------------------------------------------------------

def forced_bypass(architecture: dict[str, Any]) -> list[list[str]]:
    """Per level, the tensors a partitioned level has no partition for."""
    out = []
    for lv in architecture["levels"]:
        cap = lv.get("capacity_bytes")
        out.append([t for t in TENSORS if isinstance(cap, dict) and t not in cap])
    return out


def draw_bypass(rng: Any, architecture: dict[str, Any], p: float = 0.3,
                keep_inner: Sequence[str] = ()) -> list[list[str]]:
    """Forced bypasses plus random ones (never at the outermost level; ``keep_inner`` tensors
    stay at level 0 when the architecture allows)."""
    forced = forced_bypass(architecture)
    depth = len(forced)
    out = []
    for lv in range(depth):
        b = list(forced[lv])
        if lv < depth - 1:
            for t in TENSORS:
                if t not in b and not (lv == 0 and t in keep_inner) and rng.random() < p:
                    b.append(t)
        out.append([t for t in TENSORS if t in b])
    return out


def draw_mapping(rng: Any, workload: dict[str, Any], architecture: dict[str, Any],
                 bypass: Sequence[Sequence[str]] | None = None, *, spatial_p: float = 0.6,
                 temporal_p: float = 0.7, imperfect_p: float = 0.25, inner_cap: Sequence[int] | None = None,
                 fill_spatial: bool = False, spatial_dims: Sequence[Sequence[str]] | None = None) -> dict[str, Any]:
    """One random valid mapping.

    ``inner_cap[lv]`` bounds each temporal factor drawn at level ``lv`` below the outermost (keeps
    inner tiles small on real architectures); ``fill_spatial`` prefers spatial factors that use
    the whole fanout; ``spatial_dims[lv]`` restricts the dimensions unrolled at a level.
    """
    dims = pm_core.SHAPES[workload["shape"]]
    bounds = workload["dims"]
    levels = architecture["levels"]
    depth = len(levels)
    bypass = [list(b) for b in (bypass if bypass is not None else forced_bypass(architecture))]
    inner_i = min(lv for lv in range(depth) if "I" not in bypass[lv])
    window = set(pm_core.WINDOW_DIMS) if workload["shape"] in ("conv", "depthwise") else set()
    room = [[int(x) for x in lv.get("fanout", [1, 1])] for lv in levels]
    out = [{"temporal": [], "spatial_x": [], "spatial_y": []} for _ in range(depth)]
    order = [str(d) for d in rng.permutation(list(dims))]
    for d in order:
        bound, placed = bounds[d], 1
        for lv in range(depth):
            rem = -(-bound // placed)
            if rem == 1:
                break
            if lv == depth - 1:
                out[lv]["temporal"].append([d, rem])
                break
            for axis, key in ((0, "spatial_x"), (1, "spatial_y")):
                rem = -(-bound // placed)
                allowed = (spatial_dims is None or d in spatial_dims[lv]) and not (d in window and lv > inner_i)
                if rem > 1 and room[lv][axis] > 1 and allowed and rng.random() < spatial_p:
                    top = min(room[lv][axis], rem)
                    if fill_spatial and rng.random() < 0.7:
                        f = top
                    elif rng.random() < 1 - imperfect_p:
                        f = int(_pick(rng, [x for x in _divisors(rem) if x <= top]))
                    else:
                        f = int(rng.integers(1, top + 1))
                    if f > 1:
                        out[lv][key].append([d, f])
                        room[lv][axis] //= f
                        placed *= f
            rem = -(-bound // placed)
            if rem > 1 and rng.random() < temporal_p:
                cap = rem if inner_cap is None else max(1, min(rem, int(inner_cap[lv])))
                if rng.random() < 1 - imperfect_p:
                    f = int(_pick(rng, [x for x in _divisors(rem) if x <= cap]))
                else:
                    f = int(rng.integers(1, cap + 1))
                if f > 1:
                    out[lv]["temporal"].append([d, f])
                    placed *= f
    for lv in out:  # shuffle each level's temporal loops (one loop per dimension per level)
        perm = rng.permutation(len(lv["temporal"]))
        lv["temporal"] = [lv["temporal"][i] for i in perm]
        if rng.random() < 0.15:  # a factor-1 loop now and then: it never advances
            lv["temporal"].insert(int(rng.integers(0, len(lv["temporal"]) + 1)), [str(_pick(rng, dims)), 1])
    mapping = {"levels": []}
    for lv in range(depth):
        entry: dict[str, Any] = {"temporal": out[lv]["temporal"]}
        for key in ("spatial_x", "spatial_y"):
            if out[lv][key]:
                entry[key] = out[lv][key]
        if bypass[lv]:
            entry["bypass"] = list(bypass[lv])
        mapping["levels"].append(entry)
    return mapping


def split_loops(rng: Any, workload: dict[str, Any], mapping: dict[str, Any], p: float = 0.7) -> dict[str, Any]:
    """The mapping with temporal loops split into several loops of one dimension at one level (as
    FORMAT.md allows), each loop with probability ``p``: a dimension's outermost loop into two whose
    product may overshoot its factor (empty iterations above the level below, and still valid: the
    new outermost loop's last iteration keeps a real index), any other loop into an exact pair of
    divisors. The outer part lands at a random place after the inner one in the level's list."""
    out = {**mapping, "levels": [{**lv, "temporal": [list(x) for x in lv.get("temporal", [])]}
                                 for lv in mapping["levels"]]}
    outermost: dict[str, tuple[int, int]] = {}
    for li, lv in enumerate(out["levels"]):
        for j, (d, _) in enumerate(lv["temporal"]):
            outermost[d] = (li, j)
    for li, lv in enumerate(out["levels"]):
        loops = lv["temporal"]
        j = 0
        while j < len(loops):
            d, f = loops[j]
            last = outermost.get(d) == (li, j)
            if f >= 3 and rng.random() < p:
                if last:
                    a = int(rng.integers(2, f))
                    b = -(-f // a)
                else:
                    divisors = [x for x in _divisors(f) if 1 < x < f]
                    a = int(_pick(rng, divisors)) if divisors else 0
                    b = f // a if a else 0
                if a:
                    loops[j] = [d, a]
                    at = int(rng.integers(j + 1, len(loops) + 1))
                    loops.insert(at, [d, b])
                    if last:
                        outermost[d] = (li, at)
                    for other, (ol, oj) in list(outermost.items()):
                        if other != d and ol == li and oj >= at:
                            outermost[other] = (ol, oj + 1)
            j += 1
    return out


def fitting_mapping(rng: Any, workload: dict[str, Any], architecture: dict[str, Any], tries: int = 400,
                    **kw: Any) -> dict[str, Any]:
    """A random mapping whose tiles fit every level (the first of ``tries`` draws that fits; the
    last draw otherwise). ``bypass`` may be a callable drawing one per try."""
    bypass = kw.pop("bypass", None)
    mapping = None
    for _ in range(tries):
        b = bypass(rng) if callable(bypass) else bypass
        mapping = draw_mapping(rng, workload, architecture, b, **kw)
        if pm_core.valid(pm_core.parse(workload, architecture, mapping)):
            return mapping
    assert mapping is not None
    return mapping


def real_layer(rng: Any, groups: Sequence[str], bits: dict[str, int] | None = None) -> dict[str, Any]:
    names = [n for g in groups for n in pm_shapes.group(g)]
    return pm_shapes.layer(str(_pick(rng, names)), bits)


def macs(workload: dict[str, Any]) -> int:
    return prod(workload["dims"].values())


__all__ = ["draw_bypass", "draw_mapping", "fitting_mapping", "forced_bypass", "macs", "real_layer",
           "small_architecture", "small_bits", "small_bmm", "small_conv", "small_gemm", "split_loops"]
