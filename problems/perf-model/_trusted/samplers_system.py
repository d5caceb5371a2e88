"""Domain samplers of the perf-model pack for the search, ranking and system problems (F10-F18).

Written from each problem's spec, the pack's FORMAT.md and the problem's ``[[domain]]`` rules
alone, sharing no code with the generators (the validator checks it): a sampler draws everything
the text allows, where a generator draws the traps it knows. The layers, architectures and
mappings here follow FORMAT.md's validity rules directly: several loops of one dimension at one
level (temporal and spatial), factor-1 loops, imperfect factors with ragged tiles and inner loops
that overshoot, bypass at any on-chip level, fan-out at every level, padding, stride and dilation,
partitioned and shared capacities, multiple buffering, odd precisions; sizes are log-uniform from
tiny to the real layers the specs name. ``sample(rng, **options) -> {parameter: value}``.
"""

from __future__ import annotations

import copy
from math import prod
from typing import Any

from .samplers import PROJECTIONS
from .samplers_mapping import draw_bypass

TENSORS = ("I", "W", "O")
DIMS = {
    "conv": ("N", "K", "C", "P", "Q", "R", "S"),
    "depthwise": ("N", "C", "P", "Q", "R", "S"),
    "gemm": ("M", "N", "K"),
    "bmm": ("B", "G", "H", "M", "N", "K"),
}
WINDOW = ("P", "Q", "R", "S")
# which dimensions index each tensor (P, R index I's rows and Q, S its columns for conv shapes)
RELEVANT = {
    "conv": {"I": "NCPQRS", "W": "KCRS", "O": "NKPQ"},
    "depthwise": {"I": "NCPQRS", "W": "CRS", "O": "NCPQ"},
    "gemm": {"I": "MK", "W": "KN", "O": "MN"},
    "bmm": {"I": "BGHMK", "W": "BGKN", "O": "BGHMN"},
}


def _pick(rng: Any, values: Any) -> Any:
    values = list(values)
    return values[int(rng.integers(0, len(values)))]


def _log(rng: Any, lo: int, hi: int) -> int:
    """An integer in lo..hi, log-uniform."""
    if hi <= lo:
        return lo
    return max(lo, min(hi, int(round(2 ** rng.uniform(lo.bit_length() - 1, hi.bit_length())))))


# ------------------------------------------------------------------------------------------
# layers
# ------------------------------------------------------------------------------------------

def _bits(rng: Any) -> dict[str, int]:
    """Precisions: the common ones, and odd ones whose streams end inside a byte."""
    if rng.random() < 0.5:
        o = int(_pick(rng, (8, 16)))
        return {"I": o, "W": o, "O": o, "psum": int(_pick(rng, (o, 24, 32) if o == 8 else (16, 32)))}
    o = int(_pick(rng, (3, 4, 5, 8, 12, 16)))
    return {"I": int(_pick(rng, (1, 3, 4, 5, 6, 7, 8, 12, 16))), "W": int(_pick(rng, (1, 2, 3, 4, 6, 8, 16))),
            "O": o, "psum": int(_pick(rng, sorted({o, o + 1, 20, 24, 28, 32} - {v for v in (20, 24, 28, 32) if v < o})))}


def _window(rng: Any, r: int, out_hint: int) -> tuple[int, int, int, int, int]:
    """One axis of a window: (input size, stride, dilation, padding, outputs)."""
    stride = int(_pick(rng, (1, 1, 1, 2, 2, 3)))
    dil = 1 if r == 1 or rng.random() < 0.7 else int(_pick(rng, (2, 3)))
    span = dil * (r - 1) + 1
    pad = 0 if rng.random() < 0.35 else int(rng.integers(0, span))  # padding up to the span - 1
    size = max(1, span - 2 * pad) + stride * (out_hint - 1) + int(rng.integers(0, stride))
    out = (size + 2 * pad - span) // stride + 1
    return size, stride, dil, pad, out


def _conv_shape(rng: Any, shape: str, top: int) -> dict[str, Any]:
    r = int(_pick(rng, (1, 1, 2, 3, 3, 5, 7)))
    s = r if rng.random() < 0.8 else int(_pick(rng, (1, 2, 3, 5)))
    hint = _log(rng, 1, max(1, top))
    h, sh, dh, ph, p = _window(rng, r, hint)
    if rng.random() < 0.7:
        w, sw, dw, pw, q = h, sh, dh, ph, p
        if s != r:
            w, sw, dw, pw, q = _window(rng, s, hint)
    else:
        w, sw, dw, pw, q = _window(rng, s, _log(rng, 1, max(1, top)))
    dims = {"N": _log(rng, 1, 4) if rng.random() < 0.3 else 1, "C": _log(rng, 1, top), "P": p, "Q": q, "R": r, "S": s}
    if shape == "conv":
        dims["K"] = _log(rng, 1, top)
    return {"name": f"sampled.{shape}", "shape": shape, "dims": {d: dims[d] for d in DIMS[shape]},
            "input_hw": [h, w], "stride": [sh, sw], "dilation": [dh, dw], "padding": [ph, pw], "bits": _bits(rng)}


def _real_conv(rng: Any) -> dict[str, Any]:
    """A ResNet-50 convolution or a MobileNetV2 pointwise one (224 x 224 input)."""
    c, k, hw, rs, st, pad = _pick(rng, (
        (3, 64, 224, 7, 2, 3), (64, 64, 56, 1, 1, 0), (64, 64, 56, 3, 1, 1), (64, 256, 56, 1, 1, 0),
        (256, 128, 56, 1, 1, 0), (128, 128, 56, 3, 2, 1), (128, 512, 28, 1, 1, 0), (256, 512, 56, 1, 2, 0),
        (512, 256, 28, 1, 1, 0), (256, 256, 28, 3, 2, 1), (256, 1024, 14, 1, 1, 0), (1024, 256, 14, 1, 1, 0),
        (512, 512, 14, 3, 2, 1), (512, 2048, 7, 1, 1, 0), (2048, 512, 7, 1, 1, 0),
        (32, 16, 112, 1, 1, 0), (96, 24, 56, 1, 1, 0), (144, 24, 56, 1, 1, 0), (144, 32, 28, 1, 1, 0),
        (192, 32, 28, 1, 1, 0), (384, 64, 14, 1, 1, 0), (576, 96, 14, 1, 1, 0), (960, 160, 7, 1, 1, 0),
        (320, 1280, 7, 1, 1, 0), (16, 96, 112, 1, 1, 0)))
    p = (hw + 2 * pad - (rs - 1) - 1) // st + 1
    return {"name": "sampled.real-conv", "shape": "conv",
            "dims": {"N": 1, "K": k, "C": c, "P": p, "Q": p, "R": rs, "S": rs}, "input_hw": [hw, hw],
            "stride": [st, st], "dilation": [1, 1], "padding": [pad, pad], "bits": _bits(rng)}


def _real_gemm(rng: Any) -> dict[str, Any]:
    n, k = _pick(rng, PROJECTIONS)
    m = int(_pick(rng, (1, 8, 16, 128, 512, 2048)))
    return {"name": "sampled.real-gemm", "shape": "gemm", "dims": {"M": m, "N": n, "K": k}, "bits": _bits(rng)}


def _real_bmm(rng: Any) -> dict[str, Any]:
    """Attention products: BERT-base (12 heads of 64), Llama 2 7B (32 of 128), Llama 3 8B (8 groups
    of 4 query heads of 128); scores (K = head dim) or context (N = head dim)."""
    g, h, hd = _pick(rng, ((12, 1, 64), (32, 1, 128), (8, 4, 128)))
    q = int(_pick(rng, (1, 128, 512, 2048)))
    kv = int(_pick(rng, (128, 512, 1024, 2048, 4096, 8192))) if q == 1 else q
    b = int(_pick(rng, (1, 1, 2, 8)))
    n, k = (kv, hd) if rng.random() < 0.5 else (hd, kv)
    return {"name": "sampled.real-bmm", "shape": "bmm", "dims": {"B": b, "G": g, "H": h, "M": q, "N": n, "K": k},
            "bits": _bits(rng)}


def workload(rng: Any, shapes: tuple[str, ...], real_share: float = 0.25, tops: tuple[int, ...] = (3, 6, 16, 64)) -> dict[str, Any]:
    """A layer of one of ``shapes``: a real one (ResNet-50, MobileNetV2, BERT-base, Llama) now
    and then, otherwise log-uniform sizes up to a top drawn from ``tops``."""
    shape = str(_pick(rng, shapes))
    if rng.random() < real_share:
        if shape == "conv":
            return _real_conv(rng)
        if shape == "gemm":
            return _real_gemm(rng)
        if shape == "bmm":
            return _real_bmm(rng)
    top = int(_pick(rng, tops))
    if shape in ("conv", "depthwise"):
        return _conv_shape(rng, shape, top)
    dims = {d: _log(rng, 1, top) for d in DIMS[shape]}
    if shape == "bmm":
        for d in ("B", "G", "H"):
            dims[d] = _log(rng, 1, min(top, 8))
    return {"name": f"sampled.{shape}", "shape": shape, "dims": dims, "bits": _bits(rng)}


# ------------------------------------------------------------------------------------------
# architectures
# ------------------------------------------------------------------------------------------

LEVEL_NAMES = ("RF", "Reg", "PEBuf", "LB", "GLB", "L2", "Buffer")


def architecture(rng: Any, depth: int, *, fanout_top: int = 16, outer_fanout: bool = True,
                 partition_p: float = 0.3, buffering_p: float = 0.3, caps: tuple[int, ...] = (16, 64, 256, 1024, 16384, 262144),
                 energies: bool = False, bandwidth: bool = False) -> dict[str, Any]:
    """``depth`` levels innermost first (the last is DRAM): shared or partitioned capacities
    (a partition may be missing: that tensor must bypass the level), fan-out at any level (the
    outermost one too), multiple buffering; optional energies and bandwidths."""
    names = [str(n) for n in rng.permutation(list(LEVEL_NAMES))[: depth - 1]] + ["DRAM"]
    levels = []
    for i in range(depth):
        lv: dict[str, Any] = {"name": names[i]}
        if i == depth - 1:
            lv["capacity_bytes"] = None
        elif rng.random() < partition_p:
            part = {t: int(_pick(rng, caps)) // int(_pick(rng, (1, 2, 4))) + int(rng.integers(0, 3)) for t in TENSORS}
            if rng.random() < 0.2:
                del part[str(_pick(rng, TENSORS))]
            lv["capacity_bytes"] = part
        else:
            lv["capacity_bytes"] = int(_pick(rng, caps)) + int(rng.integers(0, 5))
        if i < depth - 1 or outer_fanout or rng.random() < 0.2:
            fx = 1 if rng.random() < 0.3 else _log(rng, 1, fanout_top)
            fy = 1 if rng.random() < 0.4 else _log(rng, 1, fanout_top)
        else:
            fx, fy = 1, 1
        lv["fanout"] = [fx, fy]
        if i < depth - 1 and rng.random() < buffering_p:
            lv["multiple_buffering"] = int(_pick(rng, (1, 2, 2, 3)))
        if energies:
            scale = 4 ** i
            lv["read_pj_per_byte"] = int(rng.integers(1, 17)) * scale / 16
            lv["write_pj_per_byte"] = int(rng.integers(1, 17)) * scale / 16
        if bandwidth and rng.random() < 0.8:
            lv["bytes_per_cycle"] = int(_pick(rng, (1, 2, 3, 4, 8, 16, 64)))
        levels.append(lv)
    arch: dict[str, Any] = {"name": f"sampled-{depth}-level", "levels": levels}
    if energies:
        arch["mac_pj"] = int(rng.integers(1, 17)) / 16
    return arch


# ------------------------------------------------------------------------------------------
# mappings
# ------------------------------------------------------------------------------------------

def _free_factor(rng: Any, left: int) -> int:
    """A temporal factor that is not the last loop of its dimension (``left``: what the loops
    inside have not covered yet, at least 1)."""
    u = rng.random()
    if left <= 1 or u < 0.12:
        return 1 if rng.random() < 0.7 else int(rng.integers(2, 4))
    if u < 0.5:
        divisors = [d for d in range(2, min(left, 64) + 1) if left % d == 0] or [left]
        return int(_pick(rng, divisors))
    return int(rng.integers(2, min(left, 64) + 1)) if left > 2 else 2


def mapping(rng: Any, wl: dict[str, Any], arch: dict[str, Any], *, bypass_p: float = 0.2,
            spatial_p: float = 0.5, top_dims: list[str] | None = None, top_spatial: bool = True,
            counts: tuple[int, ...] = (0, 0, 1, 1, 1, 2, 3), noop_p: float = 0.1,
            byp: list[list[str]] | None = None) -> dict[str, Any]:
    """Any valid mapping of ``wl`` on ``arch`` by FORMAT.md.

    ``top_dims``: when given, the outermost level has exactly one temporal loop over each of these
    dimensions, with a factor of at least 2, and none over the others (no factor-1 loop there)."""
    dims = wl["dims"]
    names = DIMS[wl["shape"]]
    depth = len(arch["levels"])
    top = depth - 1
    for _ in range(200):
        by = byp if byp is not None else draw_bypass(rng, arch, bypass_p)
        inner_i = min(i for i in range(depth) if "I" not in by[i])
        conv = wl["shape"] in ("conv", "depthwise")
        # spatial loops: per level and axis, a few loops whose factors multiply within the fan-out
        spatial: list[dict[str, list[list[Any]]]] = []
        for lv in range(depth):
            per: dict[str, list[list[Any]]] = {"spatial_x": [], "spatial_y": []}
            for ax, key in ((0, "spatial_x"), (1, "spatial_y")):
                budget = arch["levels"][lv]["fanout"][ax]
                if (lv == top and not top_spatial) or rng.random() > spatial_p:
                    continue
                allowed = [d for d in names if not (conv and d in WINDOW and lv > inner_i)]
                if top_dims is not None and lv == top:
                    allowed = []
                for _k in range(int(_pick(rng, (1, 1, 1, 2, 3)))):
                    if not allowed:
                        break
                    d = str(_pick(rng, allowed))
                    if budget >= 2 and rng.random() < 0.9:
                        cap = budget if rng.random() < 0.3 else min(budget, max(2, dims[d]))
                        f = int(rng.integers(2, cap + 1)) if rng.random() < 0.6 else cap
                    else:
                        f = 1
                    if f > budget:
                        break
                    per[key].append([d, f])
                    budget //= f
            spatial.append(per)
        # temporal loops per dimension, innermost level first
        temporal: list[dict[str, list[int]]] = [{d: [] for d in names} for _ in range(depth)]
        ok = True
        for d in names:
            size = dims[d]
            at_top = top_dims is not None and d in top_dims
            ks = []
            for lv in range(depth):
                if lv == top and top_dims is not None:
                    ks.append(1 if at_top else 0)
                elif size == 1 and rng.random() < 0.7:
                    ks.append(0)
                else:
                    ks.append(int(_pick(rng, counts)))
            slots = []  # (level, fixed factor or None), innermost first
            for lv in range(depth):
                for key in ("spatial_x", "spatial_y"):
                    slots += [(lv, f) for e, f in spatial[lv][key] if e == d]
                slots += [(lv, None)] * ks[lv]
            if not slots and size == 1 and rng.random() < 0.5:
                continue  # a dimension of size 1 needs no loop
            if not slots or slots[-1][1] is not None:  # end with a temporal loop, where allowed
                low = slots[-1][0] if slots else 0
                high = top if top_dims is None else top - 1
                if low > high:
                    ok = False
                    break
                lv = int(rng.integers(low, high + 1))
                slots.append((lv, None))
            covered = 1
            got: list[int] = []
            for j, (lv, fixed) in enumerate(slots):
                if fixed is not None:
                    f = fixed
                elif j == len(slots) - 1:
                    f = max(1, -(-size // covered))
                elif at_top and j == len(slots) - 2:  # the last inner loop: leave work for the top
                    left = -(-size // covered)
                    f = int(rng.integers(1, left)) if left > 2 else 1
                else:
                    f = _free_factor(rng, -(-size // covered))
                    if at_top:  # the top loop must still have two or more iterations
                        f = min(f, max(1, (size - 1) // covered))
                got.append(f)
                covered *= f
            last_stride = covered // got[-1]
            if covered < size or last_stride * (got[-1] - 1) >= size or (at_top and got[-1] < 2):
                ok = False
                break
            for (lv, fixed), f in zip(slots, got):
                if fixed is None:
                    temporal[lv][d].append(f)
        if not ok:
            continue
        levels = []
        for lv in range(depth):
            slots = [d for d in names for _ in temporal[lv][d]]
            order = [slots[i] for i in rng.permutation(len(slots))]
            taken = dict.fromkeys(names, 0)
            loops = []
            for d in order:
                loops.append([d, temporal[lv][d][taken[d]]])
                taken[d] += 1
            if rng.random() < noop_p and not (top_dims is not None and lv == top):
                loops.insert(int(rng.integers(0, len(loops) + 1)), [str(_pick(rng, names)), 1])
            entry: dict[str, Any] = {"temporal": loops}
            for key in ("spatial_x", "spatial_y"):
                if spatial[lv][key] or rng.random() < 0.1:
                    entry[key] = spatial[lv][key]
            if by[lv] or (lv < top and rng.random() < 0.1):
                entry["bypass"] = list(by[lv])
            levels.append(entry)
        if top_dims is not None:
            for key in ("spatial_x", "spatial_y", "bypass"):
                levels[top].pop(key, None)
        return {"levels": levels}
    raise AssertionError("no valid mapping drawn")  # pragma: no cover


# ------------------------------------------------------------------------------------------
# F16: the best order of the outermost loops
# ------------------------------------------------------------------------------------------

def sample_best_dram_order(rng: Any, real_share: float = 0.25) -> dict[str, Any]:
    """perf-model/f16-best-dram-order: a conv, gemm or bmm layer (small to real size) on two to
    five levels, any mapping whose outermost level has three to five loops over distinct
    dimensions with factors >= 2, the other levels anything the format allows."""
    for _ in range(500):
        wl = workload(rng, ("conv", "gemm", "bmm"), real_share)
        big = [d for d, v in wl["dims"].items() if v >= 2]
        if len(big) < 3:
            continue
        n = int(_pick(rng, [k for k in (3, 3, 3, 4, 4, 5) if k <= len(big)]))
        tops = [str(d) for d in rng.permutation(big)[:n]]
        arch = architecture(rng, int(_pick(rng, (2, 2, 3, 3, 4, 5))))
        return {"workload": wl, "architecture": arch, "mapping": mapping(rng, wl, arch, top_dims=tops)}
    raise AssertionError("no layer with three dimensions above 1")  # pragma: no cover


# ------------------------------------------------------------------------------------------
# F10: layer energy on a named hierarchy (per-block energies)
# ------------------------------------------------------------------------------------------

# DeepLabV3's dilated convolutions at a 28 x 28 feature map: (C, K, filter, padding = dilation).
DILATED = ((256, 256, 3, 2), (512, 512, 3, 4), (256, 256, 3, 6), (256, 256, 3, 12), (2048, 256, 3, 18))


def _real_dilated(rng: Any) -> dict[str, Any]:
    c, k, rs, dil = _pick(rng, DILATED)
    hw = int(_pick(rng, (28, 33, 65)))
    return {"name": "sampled.real-dilated", "shape": "conv",
            "dims": {"N": 1, "K": k, "C": c, "P": hw, "Q": hw, "R": rs, "S": rs}, "input_hw": [hw, hw],
            "stride": [1, 1], "dilation": [dil, dil], "padding": [dil, dil], "bits": _bits(rng)}


def _holds(cap: Any) -> tuple[str, ...]:
    return tuple(t for t in TENSORS if t in cap) if isinstance(cap, dict) else TENSORS


def energy_table(rng: Any, arch: dict[str, Any]) -> dict[str, Any]:
    """Per-block energies for ``arch``: blocks of 1 to 64 words per tensor (often all alike),
    read, fill and update energies from hundredths of a pJ to hundreds, any order between
    levels; an update energy wherever the level can hold O."""
    depth = len(arch["levels"])

    def pj(i: int) -> float:
        if rng.random() < 0.2:
            return float(int(_pick(rng, (1, 2, 4, 8, 512))))
        return int(rng.integers(1, 100_000)) / 1000 * (10 ** (2 * i / max(1, depth - 1)) if rng.random() < 0.7 else 1)

    levels = []
    for i, lv in enumerate(arch["levels"]):
        held = _holds(lv["capacity_bytes"])
        one = rng.random() < 0.5
        b0 = int(_pick(rng, (1, 2, 3, 4, 8, 16, 32, 64)))
        entry: dict[str, Any] = {
            "name": lv["name"],
            "block_words": {t: b0 if one else int(_pick(rng, (1, 1, 2, 3, 4, 5, 8, 16, 32, 64))) for t in held},
            "read_pj": {t: pj(i) for t in held},
            "fill_pj": {t: pj(i) for t in held},
        }
        if "O" in held:
            entry["update_pj"] = pj(i)
        levels.append(entry)
    return {"mac_pj": int(rng.integers(1, 2000)) / 1000, "levels": levels}


EYERISS_LEVELS = ("RF", "ColumnBuffer", "GLB", "DRAM")
SIMBA_LEVELS = ("WeightReg", "PEBuffer", "PEInputBuffer", "GlobalBuffer", "DRAM")


def _named_architecture(rng: Any, names: tuple[str, ...], caps: list[Any], fans: list[list[int]]) -> dict[str, Any]:
    """``names`` levels with the given capacities and fanouts, or (now and then) any fanout at any
    on-chip level and any capacity, partitions possibly missing a tensor; multiple buffering."""
    levels = []
    anyfan = rng.random() < 0.25
    for i, n in enumerate(names):
        last = i == len(names) - 1
        fan = [1, 1] if last else ([_log(rng, 1, 8), _log(rng, 1, 8)] if anyfan else list(fans[i]))
        cap = None if last else caps[i]
        if not last and rng.random() < 0.15:
            cap = ({t: _log(rng, 1, 1 << 16) for t in TENSORS if rng.random() < 0.8} or {"O": 64}) if rng.random() < 0.5 \
                else _log(rng, 1, 1 << 18)
        lv: dict[str, Any] = {"name": n, "capacity_bytes": cap, "fanout": fan}
        if not last and rng.random() < 0.25:
            lv["multiple_buffering"] = int(_pick(rng, (1, 2, 2, 3)))
        levels.append(lv)
    return {"name": "sampled-" + names[0].lower(), "levels": levels}


def sample_eyeriss_energy(rng: Any, real_share: float = 0.25) -> dict[str, Any]:
    """perf-model/f10-eyeriss-layer-energy: a conv or depthwise layer (ResNet-50, MobileNetV2
    pointwise, DeepLabV3 dilated, or small with any stride, dilation and padding) on the four
    Eyeriss-like levels (RF partitions, column buffers along Y, GLB along X, or any fanout and
    capacity), bypass anywhere on chip, any mapping, any per-block energy table."""
    r = rng.random()
    if r < real_share * 0.25:
        wl = _real_dilated(rng)
    else:
        wl = workload(rng, ("conv", "conv", "depthwise"), real_share)
    big = rng.random() < 0.5
    caps = [{"I": _log(rng, 1, 64), "W": _log(rng, 1, 512), "O": _log(rng, 1, 64)}, _log(rng, 1, 4096),
            _log(rng, 1, 1 << 18)]
    fans = [[1, 1], [1, _log(rng, 1, 12 if big else 4)], [_log(rng, 1, 14 if big else 4), 1]]
    arch = _named_architecture(rng, EYERISS_LEVELS, caps, fans)
    return {"workload": wl, "architecture": arch, "mapping": mapping(rng, wl, arch, bypass_p=0.25, spatial_p=0.8),
            "energy": energy_table(rng, arch)}


def sample_simba_energy(rng: Any, real_share: float = 0.25) -> dict[str, Any]:
    """perf-model/f10-simba-vector-energy: a conv or matrix product (ResNet-50, MobileNetV2,
    BERT-base or Llama projections, or small with any window) on the five Simba-like levels
    (weight registers, PE weight / psum buffers, PE input buffers, a global buffer, DRAM; their
    partitions and fanouts, or any), bypass beyond the missing partitions, spatial loops at
    every level that fans out, any mapping, any per-block energy table."""
    wl = workload(rng, ("conv", "gemm"), real_share)
    big = rng.random() < 0.5
    caps = [{"W": _log(rng, 1, 4)}, {"W": _log(rng, 1, 1 << 15), "O": _log(rng, 1, 1 << 10)},
            {"I": _log(rng, 1, 1 << 16)}, _log(rng, 1, 1 << 17)]
    fans = [[1, _log(rng, 1, 4)], [1, _log(rng, 1, 8 if big else 3)], [1, _log(rng, 1, 8 if big else 4)],
            [_log(rng, 1, 16 if big else 4), 1]]
    arch = _named_architecture(rng, SIMBA_LEVELS, caps, fans)
    return {"workload": wl, "architecture": arch, "mapping": mapping(rng, wl, arch, bypass_p=0.15, spatial_p=0.85),
            "energy": energy_table(rng, arch)}


# ------------------------------------------------------------------------------------------
# F13: three dataflows of one layer on one array
# ------------------------------------------------------------------------------------------

# BERT-base's projections (N, K): query / key / value / attention output, the fused QKV, the
# intermediate and the output one; up to 512 tokens (its longest sequence)
BERT_BASE = ((768, 768), (2304, 768), (3072, 768), (768, 3072))
STATIONARY = {"input_stationary": "I", "output_stationary": "O", "weight_stationary": "W"}


def _whole_bytes(wl: dict[str, Any]) -> dict[str, int]:
    """Per tensor, the bytes of the whole tensor (the input with its padding): a capacity that
    holds any tile of it."""
    d = wl["dims"]
    if wl["shape"] == "gemm":
        words = {"I": d["M"] * d["K"], "W": d["K"] * d["N"], "O": d["M"] * d["N"]}
    else:
        h, w = wl["input_hw"]
        ph, pw = wl["padding"]
        words = {"I": d["N"] * d["C"] * (h + 2 * ph) * (w + 2 * pw), "W": d["K"] * d["C"] * d["R"] * d["S"],
                 "O": d["N"] * d["K"] * d["P"] * d["Q"]}
    return {t: -(-words[t] * (wl["bits"]["psum"] if t == "O" else wl["bits"][t]) // 8) for t in TENSORS}


def sample_dataflow_comparison(rng: Any, real_share: float = 0.25) -> dict[str, Any]:
    """perf-model/f13-dataflow-energy-cycles: a conv (any window) or matrix product (small to a
    real ResNet-50, MobileNetV2 pointwise or BERT-base one: the largest the spec names) on RF
    (partitions), GLB (any fanout) and DRAM with capacities every mapping fits; per dataflow any
    mapping, its RF mostly keeping only the stationary tensor (sometimes more, sometimes
    bypassing at the GLB too), and any per-block energy table. Now and then two dataflows get the
    same mapping (ties)."""
    wl = workload(rng, ("conv", "gemm"), real_share)
    if wl["name"] == "sampled.real-gemm":  # the spec promises BERT-base projections, no larger
        n, k = _pick(rng, BERT_BASE)
        wl["dims"] = {"M": int(_pick(rng, (1, 8, 16, 128, 384, 512))), "N": n, "K": k}
    whole = _whole_bytes(wl)
    fan = [_log(rng, 1, 16), _log(rng, 1, 16)] if rng.random() < 0.8 else [1, _log(rng, 1, 16)]
    arch = {"name": "sampled-eyeriss-like", "levels": [
        {"name": "RF", "capacity_bytes": {t: whole[t] + int(rng.integers(0, 3)) for t in TENSORS}, "fanout": [1, 1]},
        {"name": "GLB", "capacity_bytes": sum(whole.values()) + int(rng.integers(0, 1 << 10)), "fanout": fan},
        {"name": "DRAM", "capacity_bytes": None, "fanout": [1, 1]}]}
    mappings: dict[str, Any] = {}
    for kind in sorted(STATIONARY):
        if mappings and rng.random() < 0.1:
            mappings[kind] = mappings[str(_pick(rng, sorted(mappings)))]
            continue
        keep = STATIONARY[kind]
        rf = [t for t in TENSORS if t != keep] if rng.random() < 0.7 else [t for t in TENSORS if rng.random() < 0.3]
        glb = [t for t in TENSORS if rng.random() < 0.15]
        mappings[kind] = mapping(rng, wl, arch, byp=[rf, glb, []], spatial_p=0.85)
    mappings = {k: copy.deepcopy(v) for k, v in mappings.items()}
    return {"workload": wl, "architecture": arch, "mappings": mappings, "energy": energy_table(rng, arch)}


SAMPLERS = {
    "samplers_system.best_dram_order": sample_best_dram_order,
    "samplers_system.eyeriss_energy": sample_eyeriss_energy,
    "samplers_system.simba_energy": sample_simba_energy,
    "samplers_system.dataflow_comparison": sample_dataflow_comparison,
}
