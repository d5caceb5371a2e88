"""Domain samplers of the perf-model pack: any layer, hierarchy and mapping FORMAT.md allows.

Written from the pack's FORMAT.md and the problems' specs and ``[[domain]]`` rules alone, sharing
no code with the generators (the validator checks it). One general sampler of the format's
three inputs, :func:`draw_case`, serves the problems through options:

* workloads of every shape (``conv``, ``depthwise``, ``gemm``, ``bmm``), small ones at several
  scales (log-uniform sizes) and real ones (ResNet-50, MobileNetV2, DeepLabV3, BERT-base, Llama),
  with padding (none, the usual, more than the filter's reach), stride and dilation up to 4;
* hierarchies of any depth, shared or per-tensor capacities, multiple buffering, fan-out along X
  and Y at any level;
* mappings with bypass at any on-chip level, spatial loops at every level with a fan-out (several
  per axis, idle instances left over), zero to three temporal loops of a dimension at each level,
  factor-1 loops, imperfect factors (ragged tiles) and outer loops that overshoot (empty
  iterations), every one valid by FORMAT.md (the factors of a dimension cover its size and the
  last iteration of its outermost loop holds a real index; window dimensions fan out only at or
  below the innermost level holding ``I``).

``sample(rng, **options) -> {parameter: value}``, drawn from ``rng`` only.
"""

from __future__ import annotations

import copy
from math import prod
from typing import Any, Sequence

SHAPE_DIMS = {
    "conv": ("N", "K", "C", "P", "Q", "R", "S"),
    "depthwise": ("N", "C", "P", "Q", "R", "S"),
    "gemm": ("M", "N", "K"),
    "bmm": ("B", "G", "H", "M", "N", "K"),
}
WINDOW = ("P", "Q", "R", "S")
TENSORS = ("I", "W", "O")

# Real layers the specs name, written out here from the networks' published shapes:
# (C, K, input size, filter, stride, padding, dilation); depthwise: K unused.
RESNET50 = ((3, 64, 224, 7, 2, 3, 1), (64, 64, 56, 1, 1, 0, 1), (64, 64, 56, 3, 1, 1, 1), (64, 256, 56, 1, 1, 0, 1),
            (256, 64, 56, 1, 1, 0, 1), (128, 128, 56, 3, 2, 1, 1), (128, 128, 28, 3, 1, 1, 1),
            (256, 512, 56, 1, 2, 0, 1), (512, 128, 28, 1, 1, 0, 1), (256, 256, 14, 3, 1, 1, 1),
            (256, 256, 28, 3, 2, 1, 1), (1024, 256, 14, 1, 1, 0, 1), (512, 512, 7, 3, 1, 1, 1),
            (512, 2048, 7, 1, 1, 0, 1), (1024, 2048, 14, 1, 2, 0, 1), (2048, 512, 7, 1, 1, 0, 1))
DEEPLAB = ((256, 256, 28, 3, 1, 2, 2), (512, 512, 28, 3, 1, 4, 4), (1024, 256, 28, 1, 1, 0, 1),
           (256, 256, 28, 3, 1, 12, 12))
MOBILENET_PW = ((32, 16, 112, 1, 1, 0, 1), (16, 96, 112, 1, 1, 0, 1), (144, 24, 56, 1, 1, 0, 1),
                (192, 32, 28, 1, 1, 0, 1), (384, 64, 14, 1, 1, 0, 1), (960, 320, 7, 1, 1, 0, 1),
                (320, 1280, 7, 1, 1, 0, 1))
MOBILENET_DW = ((32, 112, 1), (96, 112, 2), (144, 56, 1), (144, 56, 2), (192, 28, 1), (384, 14, 1),
                (576, 14, 2), (960, 7, 1))
# GEMMs as (M tokens, K input features, N output features); bmm as (B, G, H, M, N, K).
PROJECTIONS = ((768, 768), (768, 2304), (768, 3072), (3072, 768), (4096, 4096), (4096, 11008),
               (11008, 4096), (4096, 1024), (4096, 14336), (14336, 4096))
TOKENS = (1, 8, 16, 128, 512, 2048)
ATTENTION = ((1, 12, 1, 128, 128, 64), (1, 12, 1, 512, 64, 512), (1, 32, 1, 1, 4096, 128),
             (1, 8, 4, 1, 8192, 128), (1, 8, 4, 2048, 128, 2048), (8, 8, 4, 1, 1024, 128),
             (1, 32, 1, 512, 512, 128))


def choice(rng: Any, values: Sequence[Any]) -> Any:
    return values[int(rng.integers(0, len(values)))]


def log_size(rng: Any, top: int, low: int = 1) -> int:
    """A size in low..top, log-uniform."""
    if top <= low:
        return low
    return max(low, min(top, int(round(2 ** rng.uniform(low.bit_length() - 1, top.bit_length())))))


def draw_bits(rng: Any, wide: bool = False) -> dict[str, int]:
    o = int(choice(rng, (8, 16, 32) if not wide else (8, 16)))
    return {"I": int(choice(rng, (4, 8, 16))), "W": int(choice(rng, (2, 4, 8, 16))), "O": o,
            "psum": int(choice(rng, [b for b in (8, 16, 20, 24, 32, 48) if b >= o]))}


def draw_conv(rng: Any, shape: str = "conv", scale: int = 12, real_share: float = 0.2, dilation: bool = True,
              stride_top: int = 4, groups: Sequence[str] = ("resnet50", "mobilenetv2", "deeplabv3")) -> dict[str, Any]:
    """A conv or depthwise workload: a real layer now and then, else a small or mid-size one with
    any stride, dilation and padding the format allows (rows and columns drawn apart)."""
    if rng.random() < real_share:
        if shape == "depthwise":
            c, hw, st = choice(rng, MOBILENET_DW)
            rows = [hw, hw, 3, st, 1, 1]
            cols = list(rows)
            k = 1
        else:
            pool = [x for g, xs in (("resnet50", RESNET50), ("mobilenetv2", MOBILENET_PW), ("deeplabv3", DEEPLAB))
                    if g in groups for x in xs]
            c, k, hw, rs, st, pad, dil = choice(rng, pool)
            rows = [hw, hw, rs, st, pad, dil]
            cols = list(rows)
        n = int(choice(rng, (1, 1, 1, 2, 4, 8)))
    else:
        c = log_size(rng, scale * 4)
        k = log_size(rng, scale * 4)
        n = int(choice(rng, (1, 1, 1, 2, 3)))
        sides = []
        for _ in range(2):
            rs = int(choice(rng, (1, 1, 2, 3, 3, 5, 7)))
            st = int(rng.integers(1, stride_top + 1)) if rng.random() < 0.5 else 1
            dil = int(rng.integers(2, 5)) if (dilation and rs > 1 and rng.random() < 0.3) else 1
            reach = dil * (rs - 1)
            r = rng.random()
            pad = 0 if r < 0.35 else (reach // 2 if r < 0.7 else int(rng.integers(0, reach + 3)))
            low = max(1, reach + 1 - 2 * pad)
            hw = max(low, log_size(rng, max(scale * 2, low), 1))
            sides.append([hw, hw, rs, st, pad, dil])
        rows, cols = sides
    dims: dict[str, int] = {"N": n, "C": c}
    if shape == "conv":
        dims["K"] = k
    out = []
    for hw, _, rs, st, pad, dil in (rows, cols):
        out.append((hw + 2 * pad - dil * (rs - 1) - 1) // st + 1)
    dims.update({"P": out[0], "Q": out[1], "R": rows[2], "S": cols[2]})
    return {"name": f"sampled.{shape}", "shape": shape, "dims": {d: dims[d] for d in SHAPE_DIMS[shape]},
            "input_hw": [rows[0], cols[0]], "stride": [rows[3], cols[3]], "dilation": [rows[5], cols[5]],
            "padding": [rows[4], cols[4]], "bits": draw_bits(rng)}


def draw_gemm(rng: Any, scale: int = 40, real_share: float = 0.25) -> dict[str, Any]:
    if rng.random() < real_share:
        k, n = choice(rng, PROJECTIONS)
        dims = {"M": int(choice(rng, TOKENS)), "N": n, "K": k}
    else:
        dims = {d: log_size(rng, scale) for d in ("M", "N", "K")}
    return {"name": "sampled.gemm", "shape": "gemm", "dims": dims, "bits": draw_bits(rng)}


def draw_bmm(rng: Any, scale: int = 12, real_share: float = 0.2) -> dict[str, Any]:
    if rng.random() < real_share:
        b, g, h, m, n, k = choice(rng, ATTENTION)
    else:
        b, g, h = log_size(rng, 3), log_size(rng, 4), log_size(rng, 4)
        m, n, k = log_size(rng, scale), log_size(rng, scale), log_size(rng, scale)
    return {"name": "sampled.bmm", "shape": "bmm", "dims": {"B": b, "G": g, "H": h, "M": m, "N": n, "K": k},
            "bits": draw_bits(rng)}


def draw_workload(rng: Any, shapes: Sequence[str], scale: int = 12, real_share: float = 0.2,
                  dilation: bool = True) -> dict[str, Any]:
    shape = str(choice(rng, shapes))
    if shape in ("conv", "depthwise"):
        return draw_conv(rng, shape, scale=scale, real_share=real_share, dilation=dilation)
    if shape == "gemm":
        return draw_gemm(rng, scale=scale * 3, real_share=real_share)
    return draw_bmm(rng, scale=scale, real_share=real_share)


# ------------------------------------------------------------------------------------------
# architectures
# ------------------------------------------------------------------------------------------

def draw_capacity(rng: Any, top: int = 1 << 21, partition_p: float = 0.3, every_tensor: bool = False) -> Any:
    """A shared capacity or per-tensor partitions (``every_tensor``: one for each tensor)."""
    if rng.random() < partition_p:
        return ({t: log_size(rng, top, 1) for t in TENSORS if every_tensor or rng.random() < 0.85}
                or {"O": log_size(rng, top)})
    return log_size(rng, top, 1)


def draw_architecture(rng: Any, depth: int, names: Sequence[str] | None = None, fanout_p: float = 0.6,
                      fanout_top: int = 8, partition_p: float = 0.3, buffering_p: float = 0.3,
                      capacities: Sequence[Any] | None = None, fanouts: Sequence[Any] | None = None,
                      every_tensor: bool = False, top: int = 1 << 21) -> dict[str, Any]:
    """``depth`` levels, innermost first, the last one DRAM. ``capacities`` / ``fanouts``: fixed
    values per level (None: drawn)."""
    names = list(names) if names else [f"L{i}" for i in range(depth - 1)] + ["DRAM"]
    levels = []
    for i in range(depth):
        last = i == depth - 1
        fan = fanouts[i] if fanouts and fanouts[i] is not None else (
            [int(rng.integers(1, fanout_top + 1)) if rng.random() < 0.7 else 1,
             int(rng.integers(1, fanout_top + 1)) if rng.random() < 0.7 else 1]
            if (not last and rng.random() < fanout_p) else [1, 1])
        cap = None if last else (capacities[i] if capacities and capacities[i] is not None
                                 else draw_capacity(rng, top, partition_p, every_tensor))
        lv = {"name": names[i], "capacity_bytes": copy.deepcopy(cap), "fanout": list(fan)}
        if not last and rng.random() < buffering_p:
            lv["multiple_buffering"] = int(choice(rng, (1, 2, 2, 3, 4)))
        levels.append(lv)
    return {"name": "sampled", "levels": levels}


# ------------------------------------------------------------------------------------------
# mappings
# ------------------------------------------------------------------------------------------

def draw_bypass(rng: Any, architecture: dict[str, Any], p: float = 0.3) -> list[list[str]]:
    """Per level, the tensors it does not hold: those without a partition, and others at random
    (the outermost level holds all)."""
    out = []
    levels = architecture["levels"]
    for i, lv in enumerate(levels):
        if i == len(levels) - 1:
            out.append([])
            continue
        cap = lv["capacity_bytes"]
        out.append([t for t in TENSORS if (isinstance(cap, dict) and t not in cap) or rng.random() < p])
    return out


def _spatial(rng: Any, dims: dict[str, int], allowed: Sequence[str], budget: int, most: int) -> list[list[Any]]:
    """Spatial loops of one axis: up to ``most`` loops whose factors multiply to at most ``budget``
    (instances left over are idle; a factor may pass its dimension's size)."""
    loops: list[list[Any]] = []
    for _ in range(int(rng.integers(1, most + 1))):
        if budget < 2 or not allowed:
            break
        d = str(choice(rng, allowed))
        top = min(budget, dims[d] * 2 if rng.random() < 0.2 else max(2, dims[d]))
        f = int(rng.integers(2, top + 1)) if top >= 2 else 1
        if rng.random() < 0.4:  # the largest that fits: full arrays are the common case
            f = min(budget, dims[d]) if dims[d] >= 2 else f
        f = max(1, f)
        loops.append([d, f])
        budget //= f
    return loops


def draw_mapping(rng: Any, workload: dict[str, Any], architecture: dict[str, Any], bypass_p: float = 0.3,
                 spatial_p: float = 0.7, max_loops: int = 3, one_p: float = 0.12, spatial_most: int = 2,
                 bypass: Sequence[Sequence[str]] | None = None, spatial_dims: Sequence[Sequence[str]] | None = None,
                 top_only: Sequence[str] = ()) -> dict[str, Any]:
    """A valid mapping of ``workload`` on ``architecture``. ``bypass``: fixed per level;
    ``spatial_dims``: the dimensions allowed in each level's spatial loops; ``top_only``:
    dimensions whose only loops are at the outermost level."""
    dims = workload["dims"]
    levels = architecture["levels"]
    depth = len(levels)
    bypass = [list(b) for b in bypass] if bypass is not None else draw_bypass(rng, architecture, bypass_p)
    holders_i = [i for i in range(depth) if "I" not in bypass[i]]
    inner_i = holders_i[0]
    conv_like = workload["shape"] in ("conv", "depthwise")
    spatial: list[dict[str, list[list[Any]]]] = []
    for i, lv in enumerate(levels):
        axes: dict[str, list[list[Any]]] = {}
        for key, fan in (("spatial_x", lv["fanout"][0]), ("spatial_y", lv["fanout"][1])):
            if fan < 2 or rng.random() > spatial_p:
                continue
            allowed = [d for d in dims if not (conv_like and d in WINDOW and i > inner_i) and d not in top_only]
            if spatial_dims is not None:
                allowed = [d for d in allowed if d in spatial_dims[i]]
            loops = _spatial(rng, dims, allowed, fan, spatial_most)
            if loops:
                axes[key] = loops
        spatial.append(axes)
    temporal: list[dict[str, list[int]]] = [{} for _ in range(depth)]
    for d, size in dims.items():
        # the slots of d, innermost first: per level its spatial loops, then its temporal loops
        counts = []
        for i in range(depth):
            if d in top_only and i < depth - 1:
                counts.append(0)
                continue
            c = int(choice(rng, (0, 0, 1, 1, 1, 2, 2, 3)[: 3 + 2 * max_loops])) if size > 1 or rng.random() < 0.2 else 0
            counts.append(min(c, max_loops))
        spatial_levels = [i for i in range(depth) for key in ("spatial_x", "spatial_y")
                          for e, _ in spatial[i].get(key, []) if e == d]
        # the outermost loop of d is temporal, at or above its last spatial loop
        low = max(spatial_levels, default=0)
        t_levels = [i for i in range(depth) if counts[i] > 0]
        if not t_levels or max(t_levels) < low:
            top = int(rng.integers(low, depth)) if d not in top_only else depth - 1
            counts[top] = max(counts[top], 1)
        outer = max(i for i in range(depth) if counts[i] > 0)
        covered = 1
        for i in range(depth):
            for key in ("spatial_x", "spatial_y"):
                for e, f in spatial[i].get(key, []):
                    if e == d:
                        covered *= f
            fs = []
            for j in range(counts[i]):
                is_outer = i == outer and j == counts[i] - 1
                left = -(-size // covered)
                if is_outer:
                    f = left if covered < size else 1
                elif left <= 1 or rng.random() < one_p:
                    f = 1 if rng.random() < 0.7 else int(rng.integers(1, 4))
                elif rng.random() < 0.5:
                    divisors = [x for x in range(2, min(left, 64) + 1) if left % x == 0] or [left]
                    f = int(choice(rng, divisors))
                else:
                    f = int(rng.integers(2, min(left, 64) + 1)) if left > 2 else 2
                fs.append(f)
                covered *= f
            temporal[i][d] = fs
    out = []
    for i in range(depth):
        slots = [d for d, fs in temporal[i].items() for _ in fs]
        order = [slots[k] for k in rng.permutation(len(slots))]
        taken = dict.fromkeys(temporal[i], 0)
        loops = []
        for d in order:
            loops.append([d, temporal[i][d][taken[d]]])
            taken[d] += 1
        if rng.random() < one_p:
            loops.insert(int(rng.integers(0, len(loops) + 1)), [str(choice(rng, list(dims))), 1])
        entry: dict[str, Any] = {"temporal": loops}
        entry.update(spatial[i])
        if bypass[i]:
            entry["bypass"] = bypass[i]
        out.append(entry)
    return {"levels": out}


def valid_mapping(workload: dict[str, Any], architecture: dict[str, Any], mapping: dict[str, Any]) -> bool:
    """The validity rules of FORMAT.md, checked here on their own (a sanity net for the sampler)."""
    dims = workload["dims"]
    for lv, arch in zip(mapping["levels"], architecture["levels"]):
        if prod(f for _, f in lv.get("spatial_x", [])) > arch["fanout"][0]:
            return False
        if prod(f for _, f in lv.get("spatial_y", [])) > arch["fanout"][1]:
            return False
    for d, size in dims.items():
        run = 1
        last = None
        for lv in mapping["levels"]:
            for key in ("spatial_x", "spatial_y", "temporal"):
                for e, f in lv.get(key, []):
                    if e == d:
                        last = (run, f)
                        run *= f
        if run < size or (last is not None and last[0] * (last[1] - 1) >= size):
            return False
    return True


def draw_case(rng: Any, shapes: Sequence[str], depth: int | Sequence[int], scale: int = 12, real_share: float = 0.2,
              dilation: bool = True, arch: dict[str, Any] | None = None, **mapping_options: Any) -> dict[str, Any]:
    """A workload, an architecture (``arch``: fixed options of :func:`draw_architecture`) and a
    mapping of the one on the other."""
    wl = draw_workload(rng, shapes, scale=scale, real_share=real_share, dilation=dilation)
    d = depth if isinstance(depth, int) else int(choice(rng, list(depth)))
    architecture = draw_architecture(rng, d, **(arch or {}))
    mapping = draw_mapping(rng, wl, architecture, **mapping_options)
    return {"workload": wl, "architecture": architecture, "mapping": mapping}


# ------------------------------------------------------------------------------------------
# the problems
# ------------------------------------------------------------------------------------------

def _temporal_only(case: dict[str, Any]) -> dict[str, Any]:
    for lv in case["mapping"]["levels"]:
        for key in ("spatial_x", "spatial_y", "bypass"):
            lv.pop(key, None)
    return case


def sample_conv_dram_bytes(rng: Any, real_share: float = 0.25) -> dict[str, Any]:
    """perf-model/f4-conv-dram-bytes: any conv (real or small, any stride, dilation, padding) on a
    buffer and DRAM, temporal loops only, several loops per dimension per level."""
    names = [str(choice(rng, ("Buffer", "GlobalBuffer", "GLB"))), "DRAM"]
    case = draw_case(rng, ("conv",), 2, scale=12, real_share=real_share,
                     arch={"names": names, "fanouts": [[1, 1], [1, 1]], "partition_p": 0.2, "every_tensor": True},
                     bypass=[[], []], spatial_p=0.0)
    return _temporal_only(case)


MATMUL_RELEVANT = {"I": ("B", "G", "H", "M", "K"), "W": ("B", "G", "K", "N"), "O": ("B", "G", "H", "M", "N")}


def matmul_room(workload: dict[str, Any], architecture: dict[str, Any], mapping: dict[str, Any]) -> list[dict[str, int]]:
    """Per on-chip level, per tensor held: the bytes one instance reserves for a GEMM or bmm (its
    first tile is its largest: each index range starts at 0 and runs over the loops at and below
    the level, cut at the dimension's size), outputs at psum bits, times multiple buffering."""
    dims, bits = workload["dims"], workload["bits"]
    out = []
    for i, (arch, lv) in enumerate(zip(architecture["levels"][:-1], mapping["levels"][:-1])):
        room = {}
        for t in TENSORS:
            if t in lv.get("bypass", []):
                continue
            tile = 1
            for d in MATMUL_RELEVANT[t]:
                if d in dims:
                    ext = prod(f for m in mapping["levels"][: i + 1] for key in ("spatial_x", "spatial_y", "temporal")
                               for e, f in m.get(key, []) if e == d)
                    tile *= min(ext, dims[d])
            b = bits["psum"] if t == "O" else bits[t]
            room[t] = arch.get("multiple_buffering", 1) * -(-tile * b // 8)
        out.append(room)
    return out


def near_capacities(rng: Any, architecture: dict[str, Any], rooms: list[dict[str, int]]) -> None:
    """Capacities around what each level needs: exactly it, a little more or less, or far off."""
    def near(n: int) -> int:
        r = rng.random()
        if r < 0.25:
            return n
        if r < 0.45:
            return max(0, n + int(choice(rng, (-2, -1, 1, 2))))
        if r < 0.85:
            return max(0, int(n * 2 ** rng.uniform(-1.5, 1.5)))
        return log_size(rng, 1 << 24)
    for lv, room in zip(architecture["levels"][:-1], rooms):
        cap = lv["capacity_bytes"]
        if isinstance(cap, dict):
            lv["capacity_bytes"] = {t: near(room[t]) if t in room else cap[t] for t in cap}
        else:
            lv["capacity_bytes"] = near(sum(room.values()))


def sample_buffer_requirement(rng: Any, real_share: float = 0.25) -> dict[str, Any]:
    """perf-model/f3-buffer-requirement: a GEMM or bmm (real or small) on two to five levels with
    fan-out, bypass, per-tensor partitions and multiple buffering, capacities around the need
    (exact fits, one byte short) or anywhere."""
    case = draw_case(rng, ("gemm", "bmm"), (2, 3, 4, 5), scale=12, real_share=real_share,
                     arch={"buffering_p": 0.5, "partition_p": 0.35}, bypass_p=0.25, spatial_p=0.75)
    near_capacities(rng, case["architecture"], matmul_room(case["workload"], case["architecture"], case["mapping"]))
    return case


WINDOW_OF = {"P": ("R", 0), "Q": ("S", 1)}


def estimate_room(workload: dict[str, Any], architecture: dict[str, Any], mapping: dict[str, Any]) -> list[dict[str, int]]:
    """Per on-chip level, per tensor held: about the bytes one instance reserves (exact for GEMMs;
    for a window, the first tile's rows and columns without the padding cut), to put capacities
    near what a mapping needs."""
    dims, bits = workload["dims"], workload["bits"]
    conv_like = workload["shape"] in ("conv", "depthwise")
    relevant = ({"I": ("N", "C", "P", "Q"), "W": ("K", "C", "R", "S"), "O": ("N", "K", "P", "Q")} if conv_like
                else MATMUL_RELEVANT)
    out = []
    for i, (arch, lv) in enumerate(zip(architecture["levels"][:-1], mapping["levels"][:-1])):
        def ext(d: str) -> int:
            return min(dims[d], prod(f for m in mapping["levels"][: i + 1] for key in ("spatial_x", "spatial_y", "temporal")
                                     for e, f in m.get(key, []) if e == d))
        room = {}
        for t in TENSORS:
            if t in lv.get("bypass", []):
                continue
            tile = 1
            for d in relevant[t]:
                if d not in dims:
                    continue
                if conv_like and t == "I" and d in WINDOW_OF:
                    r, a = WINDOW_OF[d]
                    span = (ext(d) - 1) * workload["stride"][a] + (ext(r) - 1) * workload["dilation"][a] + 1
                    tile *= min(span, workload["input_hw"][a])
                else:
                    tile *= ext(d)
            b = bits["psum"] if t == "O" else bits[t]
            room[t] = arch.get("multiple_buffering", 1) * -(-tile * b // 8)
        out.append(room)
    return out


def _refit_outer(mapping: dict[str, Any], dims: dict[str, int]) -> None:
    """Give every dimension's outermost loop the factor that just covers it (valid by the format)."""
    for d, size in dims.items():
        where = None
        for lv in mapping["levels"]:
            for key in ("spatial_x", "spatial_y", "temporal"):
                for x in lv.get(key, []):
                    if x[0] == d:
                        where = (key, x)
        if where is None or where[0] != "temporal":
            continue
        others = prod(f for lv in mapping["levels"] for key in ("spatial_x", "spatial_y", "temporal")
                      for x in lv.get(key, []) for e, f in [x] if e == d and x is not where[1])
        where[1][1] = max(1, -(-size // others))


def sample_mapping_validity(rng: Any, real_share: float = 0.25) -> dict[str, Any]:
    """perf-model/f3-mapping-validity: a conv or depthwise layer (real or small; stride, dilation,
    padding) on three to five levels, two to five candidates drawn from the whole format, some
    with a dimension left uncovered (by any amount), some with spatial factors past a level's
    fanout along one axis (the total may still fit), capacities around what one of them needs."""
    wl = draw_workload(rng, ("conv", "depthwise"), scale=10, real_share=real_share)
    arch = draw_architecture(rng, int(choice(rng, (3, 4, 5))), buffering_p=0.4, partition_p=0.3)
    bypass = draw_bypass(rng, arch, 0.25)
    candidates = []
    for _ in range(int(choice(rng, (2, 2, 3, 4, 5)))):
        m = draw_mapping(rng, wl, arch, bypass=bypass if rng.random() < 0.6 else None, spatial_p=0.7)
        r = rng.random()
        if r < 0.2:  # a dimension left uncovered: its outermost temporal loop shrinks
            loops = [x for lv in m["levels"] for x in lv["temporal"] if x[1] >= 2]
            if loops:
                x = loops[int(rng.integers(0, len(loops)))]
                x[1] = int(rng.integers(1, x[1]))
        elif r < 0.4:  # spatial factors past a level's fanout along one axis
            i = int(rng.integers(0, len(m["levels"]) - 1))
            key = str(choice(rng, ("spatial_x", "spatial_y")))
            fan = arch["levels"][i]["fanout"][0 if key == "spatial_x" else 1]
            held = [j for j, lv in enumerate(m["levels"]) if "I" not in lv.get("bypass", [])]
            allowed = [d for d in wl["dims"] if not (d in WINDOW and i > held[0])]
            d = str(choice(rng, allowed))
            used = prod(f for _, f in m["levels"][i].get(key, []))
            extra = fan // used + 1 + int(rng.integers(0, 3))
            m["levels"][i].setdefault(key, []).append([d, extra])
            if not any(e == d for e, _ in m["levels"][-1]["temporal"]):  # d's outermost loop stays temporal
                m["levels"][-1]["temporal"].append([d, 1])
            _refit_outer(m, wl["dims"])
        candidates.append(m)
    pick = candidates[int(rng.integers(0, len(candidates)))]
    try:
        near_capacities(rng, arch, estimate_room(wl, arch, pick))
    except (KeyError, IndexError):
        pass
    for lv, b in zip(arch["levels"][:-1], bypass[:-1]):
        cap = lv["capacity_bytes"]
        if isinstance(cap, dict):  # every candidate must bypass what a level has no partition for
            for t in TENSORS:
                if t not in cap:
                    cap[t] = log_size(rng, 1 << 16)
    return {"workload": wl, "architecture": arch, "candidates": candidates}


def _one_loop(rng: Any, loops: list[list[Any]], dim: str) -> list[list[Any]]:
    """``loops`` with exactly one loop over ``dim`` (the others of ``dim`` merged into it, or a new
    one placed anywhere)."""
    mine = [f for d, f in loops if d == dim]
    rest = [x for x in loops if x[0] != dim]
    at = int(rng.integers(0, len(rest) + 1))
    return rest[:at] + [[dim, prod(mine) if mine else int(rng.integers(1, 5))]] + rest[at:]


def sample_largest_fitting_tile(rng: Any, real_share: float = 0.25) -> dict[str, Any]:
    """perf-model/f3-largest-fitting-tile: any layer shape (real or small, strided, dilated and
    padded windows) on two to five levels with fan-out, bypass, partitions and multiple
    buffering; a target level and a non-window dimension with one loop there and one at DRAM
    (the latter covering the rest), possibly other loops of it elsewhere, spatial ones included."""
    case = draw_case(rng, ("conv", "depthwise", "gemm", "bmm"), (2, 3, 4, 5), scale=12, real_share=real_share,
                     arch={"buffering_p": 0.5, "partition_p": 0.3}, bypass_p=0.2, spatial_p=0.7)
    wl, arch, mapping = case["workload"], case["architecture"], case["mapping"]
    levels = mapping["levels"]
    depth = len(levels)
    dim = str(choice(rng, [d for d in wl["dims"] if d not in WINDOW]))
    level = int(rng.integers(0, depth - 1))
    size = wl["dims"][dim]
    levels[level]["temporal"] = _one_loop(rng, levels[level]["temporal"], dim)
    levels[-1]["temporal"] = _one_loop(rng, levels[-1]["temporal"], dim)
    others = prod(f for i, lv in enumerate(levels) for key in ("spatial_x", "spatial_y", "temporal")
                  for d, f in lv.get(key, []) if d == dim and not (key == "temporal" and i == depth - 1))
    if others * 2 > size * 4 and rng.random() < 0.7:  # keep the target loop's own factor sensible
        for x in levels[level]["temporal"]:
            if x[0] == dim:
                others //= x[1]
                x[1] = int(rng.integers(1, 4))
                others *= x[1]
    for x in levels[-1]["temporal"]:
        if x[0] == dim:
            x[1] = max(1, -(-size // others))
    if wl["shape"] in ("gemm", "bmm"):
        near_capacities(rng, arch, matmul_room(wl, arch, mapping))
    return {**case, "target": {"level": arch["levels"][level]["name"], "dim": dim}}


def _ws_architecture(rng: Any) -> dict[str, Any]:
    """A weight register per MAC unit under a TPU-like or NVDLA-like array (any fanouts), or under
    any hierarchy of one to four more levels."""
    big = rng.random() < 0.3
    top = 128 if big else 8
    r = rng.random()
    reg = {"name": "WeightReg", "capacity_bytes": {"W": int(choice(rng, (1, 2, 4)))}, "fanout": [1, 1]}
    if r < 0.4:
        levels = [reg, {"name": "UnifiedBuffer", "capacity_bytes": {"I": log_size(rng, 1 << 24), "O": log_size(rng, 1 << 22)},
                        "fanout": [log_size(rng, top), log_size(rng, top)]}]
    elif r < 0.8:
        levels = [reg, {"name": "Accumulator", "capacity_bytes": {"O": log_size(rng, 1 << 12)}, "fanout": [log_size(rng, top * 2), 1]},
                  {"name": "ConvBuffer", "capacity_bytes": log_size(rng, 1 << 20), "fanout": [1, log_size(rng, 32 if big else 6)]}]
    else:
        depth = int(choice(rng, (2, 3, 4, 5)))
        rest = draw_architecture(rng, depth, fanout_top=top)["levels"]
        levels = [reg] + rest[1:-1]
        reg["fanout"] = rest[0]["fanout"]
        return {"name": "sampled-ws", "levels": levels + [rest[-1]]}
    return {"name": "sampled-ws", "levels": levels + [{"name": "DRAM", "capacity_bytes": None, "fanout": [1, 1]}]}


def sample_weight_stationary(rng: Any, real_share: float = 0.3) -> dict[str, Any]:
    """perf-model/f5-weight-stationary-gemm: a GEMM (real projection or small) on weight registers
    under a TPU-like, NVDLA-like or other array, any mapping: spatial loops over M, N or K,
    several loops per level, imperfect and overshooting factors, bypass beyond the missing
    partitions now and then, weights held while M streams past or not."""
    wl = draw_gemm(rng, scale=40, real_share=real_share)
    arch = _ws_architecture(rng)
    mapping = draw_mapping(rng, wl, arch, bypass_p=0.1 if rng.random() < 0.3 else 0.0, spatial_p=0.85)
    levels = mapping["levels"]
    if rng.random() < 0.6:  # weight-stationary: M the innermost temporal loop of a level above the registers
        i = int(rng.integers(1, len(levels)))
        ms = [x for x in levels[i]["temporal"] if x[0] == "M"]
        levels[i]["temporal"] = ms + [x for x in levels[i]["temporal"] if x[0] != "M"]
    return {"workload": wl, "architecture": arch, "mapping": mapping}


def sample_depthwise_accesses(rng: Any, real_share: float = 0.25) -> dict[str, Any]:
    """perf-model/f5-depthwise-bypass-accesses: a depthwise layer (MobileNetV2 at a batch, or small
    with any stride, dilation, padding) on three or four levels, bypass of any tensor at any
    on-chip level, fan-out anywhere (window dimensions only at or below the innermost level
    holding I), any mapping."""
    return draw_case(rng, ("depthwise",), (3, 4), scale=10, real_share=real_share, bypass_p=0.35, spatial_p=0.7)


def sample_window_input_traffic(rng: Any, real_share: float = 0.25) -> dict[str, Any]:
    """perf-model/f6-window-input-traffic: a conv or depthwise layer (ResNet-50 strided, DeepLabV3
    dilated, or small with any stride, dilation, padding) on three levels, bypass, fan-out of
    window dimensions under the innermost level holding I, any mapping."""
    return draw_case(rng, ("conv", "depthwise"), 3, scale=10, real_share=real_share, bypass_p=0.3, spatial_p=0.75,
                     arch={"names": ["PEBuffer", "GlobalBuffer", "DRAM"]})


SIMBA_NAMES = ("WeightReg", "PEBuffer", "PEInputBuffer", "GlobalBuffer", "DRAM")


def sample_simba_accesses(rng: Any, real_share: float = 0.3) -> dict[str, Any]:
    """perf-model/f7-simba-fanout-accesses: a conv or GEMM (real or small) on the five Simba-like
    levels, any fanouts and partitions (Simba's own, or any), bypass beyond the missing
    partitions, spatial loops at every level that fans out, any mapping."""
    wl = draw_workload(rng, ("conv", "gemm"), scale=10, real_share=real_share)
    big = rng.random() < 0.3
    if rng.random() < 0.6:  # Simba's own shape: weight registers, PE weight / psum buffers, PE input buffers
        caps = [{"W": int(choice(rng, (1, 2)))}, {"W": log_size(rng, 1 << 15), "O": log_size(rng, 1 << 10)},
                {"I": log_size(rng, 1 << 16)}, log_size(rng, 1 << 17), None]
        fans = [[1, log_size(rng, 4 if big else 3)], [1, log_size(rng, 4 if big else 3)], [1, log_size(rng, 4)],
                [log_size(rng, 16 if big else 4), 1], [1, 1]]
        if rng.random() < 0.3:  # any fanout along either axis
            fans = [[log_size(rng, 4), log_size(rng, 4)] for _ in range(4)] + [[1, 1]]
        arch = draw_architecture(rng, 5, names=SIMBA_NAMES, capacities=caps, fanouts=fans, buffering_p=0.1)
    else:
        arch = draw_architecture(rng, 5, names=SIMBA_NAMES, fanout_top=4, partition_p=0.4)
    mapping = draw_mapping(rng, wl, arch, bypass_p=0.15, spatial_p=0.8)
    return {"workload": wl, "architecture": arch, "mapping": mapping}


def sample_array_cycles(rng: Any, real_share: float = 0.25) -> dict[str, Any]:
    """perf-model/f8-array-cycles-utilization: any layer shape (real or small) on two to five
    levels fanning out along X and Y (often several levels), spatial loops with idle instances
    left over or ragged ones, several loops per dimension per level, overshooting factors."""
    return draw_case(rng, ("conv", "depthwise", "gemm", "bmm"), (2, 3, 4, 5), scale=10, real_share=real_share,
                     arch={"fanout_p": 0.8}, bypass_p=0.2, spatial_p=0.8)


def draw_bandwidth(rng: Any, architecture: dict[str, Any]) -> dict[str, Any]:
    levels = []
    for lv in architecture["levels"]:
        top = int(choice(rng, (4, 64, 1024)))
        entry = {"name": lv["name"], "read_words_per_cycle": log_size(rng, top), "write_words_per_cycle": log_size(rng, top),
                 "shared_words_per_cycle": None}
        if rng.random() < 0.4:
            entry["shared_words_per_cycle"] = log_size(rng, 2 * top)
        levels.append(entry)
    return {"levels": levels}


def sample_throttled_latency(rng: Any, real_share: float = 0.25) -> dict[str, Any]:
    """perf-model/f9-bandwidth-bottleneck: a conv or GEMM (real or small) on two to five levels
    with fan-out and bypass, any mapping, and read, write and shared port limits per level from
    1 word per cycle up (ties between levels and with the compute come from small limits)."""
    case = draw_case(rng, ("conv", "gemm"), (2, 3, 4, 5), scale=10, real_share=real_share,
                     bypass_p=0.25, spatial_p=0.75)
    return {**case, "bandwidth": draw_bandwidth(rng, case["architecture"])}


def _touches_input(size: int, out: int, filt: int, stride: int, dil: int, pad: int) -> bool:
    """Every output row's window touches a row that is not padding."""
    return all(any(0 <= p * stride + r * dil - pad < size for r in range(filt)) for p in range(out))


def _chained(rng: Any, prev: dict[str, Any] | None, shape: str, scale: int, real: Any | None = None) -> dict[str, Any] | None:
    """A conv or depthwise layer reading ``prev``'s output (or the network input): rows and columns
    drawn apart; None when its output would be empty or a window would see padding only."""
    if prev is None:
        hw = [log_size(rng, scale * 4, 2), log_size(rng, scale * 4, 2)]
        chans = log_size(rng, scale)
        ibits = int(choice(rng, (4, 8, 16)))
    else:
        hw = [prev["dims"]["P"], prev["dims"]["Q"]]
        chans = prev["dims"]["K"] if prev["shape"] == "conv" else prev["dims"]["C"]
        ibits = prev["bits"]["O"]
    sides = []
    for a in range(2):
        if real is not None:
            rs, st, pad, dil = real
        else:
            rs = int(choice(rng, (1, 1, 3, 3, 5) if shape == "conv" else (3, 3, 5, 2)))
            st = int(choice(rng, (1, 1, 1, 2, 3)))
            dil = int(choice(rng, (1, 1, 1, 2, 3))) if rs > 1 else 1
            pad = int(choice(rng, (0, (dil * (rs - 1)) // 2, (dil * (rs - 1)) // 2, int(rng.integers(0, dil * (rs - 1) + 1)))))
        out = (hw[a] + 2 * pad - dil * (rs - 1) - 1) // st + 1
        if out < 1 or not _touches_input(hw[a], out, rs, st, dil, pad):
            return None
        sides.append((rs, st, pad, dil, out))
    dims = {"N": 1, "C": chans, "P": sides[0][4], "Q": sides[1][4], "R": sides[0][0], "S": sides[1][0]}
    if shape == "conv":
        dims["K"] = log_size(rng, scale * 2)
    o = int(choice(rng, (4, 8, 16)))
    return {"name": f"sampled.{shape}", "shape": shape, "dims": {d: dims[d] for d in SHAPE_DIMS[shape]},
            "input_hw": hw, "stride": [x[1] for x in sides], "dilation": [x[3] for x in sides],
            "padding": [x[2] for x in sides],
            "bits": {"I": ibits, "W": int(choice(rng, (4, 8, 16))), "O": o, "psum": max(o, 24)}}


def sample_fused_layer_tiles(rng: Any) -> dict[str, Any]:
    """perf-model/f6-fused-layer-tiles: a chain of two or three conv / depthwise layers (any
    filter, stride, dilation and padding whose windows all touch the input; inverted-residual
    and bottleneck shapes among them), any tile of the last output up to the whole of it, either
    order, intermediates kept or not, a GLB with one or two copies and a capacity around the
    room (exactly it, a byte short) or anywhere."""
    while True:
        n = int(choice(rng, (2, 3)))
        scale = int(choice(rng, (4, 8, 16)))
        if rng.random() < 0.3:  # inverted residual: expand, depthwise, project
            shapes = ["conv", "depthwise", "conv"][:n] if n == 3 else ["conv", "depthwise"]
        else:
            shapes = [str(choice(rng, ("conv", "conv", "depthwise"))) for _ in range(n)]
        layers: list[dict[str, Any]] = []
        prev = None
        for sh in shapes:
            wl = _chained(rng, prev, sh, scale)
            if wl is None:
                break
            layers.append(wl)
            prev = wl
        if len(layers) == n:
            break
    last = layers[-1]["dims"]
    tile = {"P": int(rng.integers(1, last["P"] + 1)), "Q": int(rng.integers(1, last["Q"] + 1))}
    if rng.random() < 0.2:
        tile = {"P": last["P"], "Q": last["Q"]} if rng.random() < 0.5 else {"P": 1, "Q": 1}
    schedule = {"tile": tile, "order": ["Q", "P"] if rng.random() < 0.5 else ["P", "Q"],
                "keep_intermediate": bool(rng.random() < 0.5)}
    whole = sum(prod(wl["dims"].values()) // max(1, wl["dims"]["P"] * wl["dims"]["Q"]) * wl["bits"]["W"] // 8
                + wl["input_hw"][0] * wl["input_hw"][1] * wl["dims"]["C"] * wl["bits"]["I"] // 8 for wl in layers)
    cap = max(0, int(whole * 2 ** rng.uniform(-3, 1))) if rng.random() < 0.85 else log_size(rng, 1 << 22)
    glb = {"name": "GLB", "capacity_bytes": cap, "fanout": [log_size(rng, 16), log_size(rng, 16)],
           "multiple_buffering": int(choice(rng, (1, 2)))}
    return {"layers": layers, "architecture": {"name": "sampled-fused", "levels": [
        glb, {"name": "DRAM", "capacity_bytes": None, "fanout": [1, 1]}]}, "schedule": schedule}


def sample_psum_traffic(rng: Any, real_share: float = 0.25) -> dict[str, Any]:
    """perf-model/f4-psum-traffic-bytes: a conv or GEMM (real or small) on three to five levels,
    fan-out at any level, bypass of any tensor at any on-chip level, spatial loops over reduction
    dimensions (outputs completed only where the instances come together), any mapping."""
    return draw_case(rng, ("conv", "gemm"), (3, 4, 5), scale=10, real_share=real_share,
                     bypass_p=0.3, spatial_p=0.75)


SAMPLERS = {
    "samplers_mapping.conv_dram_bytes": sample_conv_dram_bytes,
    "samplers_mapping.psum_traffic": sample_psum_traffic,
    "samplers_mapping.buffer_requirement": sample_buffer_requirement,
    "samplers_mapping.largest_fitting_tile": sample_largest_fitting_tile,
    "samplers_mapping.mapping_validity": sample_mapping_validity,
    "samplers_mapping.weight_stationary": sample_weight_stationary,
    "samplers_mapping.depthwise_accesses": sample_depthwise_accesses,
    "samplers_mapping.window_input_traffic": sample_window_input_traffic,
    "samplers_mapping.simba_accesses": sample_simba_accesses,
    "samplers_mapping.array_cycles": sample_array_cycles,
    "samplers_mapping.throttled_latency": sample_throttled_latency,
    "samplers_mapping.fused_layer_tiles": sample_fused_layer_tiles,
}
