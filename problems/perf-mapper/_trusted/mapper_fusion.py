"""perf-mapper trusted code: layer fusion across a chain of layers under one global-buffer budget.

A problem gives a ``chain`` of consecutive layers (a MobileNetV2 inverted residual block, a
ResNet-50 bottleneck: ``conv``/``depthwise``; a Llama decoder layer's o_proj, up_proj and
down_proj: ``gemm``) and a two-level accelerator (a ``GLB`` over ``DRAM``). A mapping cuts the
chain into groups of consecutive layers and gives each group a tile of its last layer's output:
``{"groups": [{"layers": n, "tile": {...}}, ...]}``. The groups run one after the other; inside
a group the layers run fused, tile by tile: every intermediate of the group stays in the GLB,
halos of the 3x3 layers are recomputed (nothing survives from one tile to the next), each tile
reads its whole input footprint from DRAM. The semantics are the spec's (our own, in the spirit of
perf-model's fused-layer tiles: exact footprints per axis, padding never held).

* :func:`check` -> the mapping's first broken rule, or None (never raises on hostile data);
* :func:`evaluate_traffic`, :func:`evaluate_latency` -> the evaluators: validity with its reason,
  the objective (DRAM bytes, or roofline cycles) and its breakdown per group;
* :func:`search_traffic`, :func:`search_latency` -> the reference search: exact by decomposition
  (the groups run one after the other, so the objective is a sum over groups and each group's
  room is checked on its own: the best tile of every possible group is found by enumerating every
  tile, vectorised, and the best cut of the chain by trying every cut); ``proven`` true;
* :func:`enumerate_space` -> every mapping one by one (small instances: the brute-force proof);
* the instance generators.
"""

from __future__ import annotations

import itertools
import json
import math
from typing import Any, Iterator, Mapping, Sequence

import numpy as np

from reference_models import pm_shapes

from .mapper import _short, envelope

MAX_BYTES = 4096
MAX_FACTOR = 2 ** 31
CONV_SHAPES = ("conv", "depthwise")


# ------------------------------------------------------------------------------------------
# layers
# ------------------------------------------------------------------------------------------

def _is_gemm(chain: Mapping[str, Any]) -> bool:
    return chain["layers"][0]["shape"] == "gemm"


def out_channels(wl: Mapping[str, Any]) -> int:
    d = wl["dims"]
    return d["N"] if wl["shape"] == "gemm" else d["K"] if wl["shape"] == "conv" else d["C"]


def in_channels(wl: Mapping[str, Any]) -> int:
    d = wl["dims"]
    return d["K"] if wl["shape"] == "gemm" else d["C"]


def weights(wl: Mapping[str, Any]) -> int:
    d = wl["dims"]
    if wl["shape"] == "gemm":
        return d["K"] * d["N"]
    return d["R"] * d["S"] * d["C"] * (d["K"] if wl["shape"] == "conv" else 1)


def macs_per_output(wl: Mapping[str, Any]) -> int:
    d = wl["dims"]
    if wl["shape"] == "gemm":
        return d["K"]
    return d["R"] * d["S"] * (d["C"] if wl["shape"] == "conv" else 1)


def tile_axes(chain: Mapping[str, Any]) -> tuple[str, str]:
    """The tile's keys: output rows and columns (conv chains), or tokens and output features (gemm)."""
    return ("M", "N") if _is_gemm(chain) else ("P", "Q")


def tile_bounds(chain: Mapping[str, Any], last: int) -> tuple[int, int]:
    wl = chain["layers"][last]
    d = wl["dims"]
    return (d["M"], d["N"]) if wl["shape"] == "gemm" else (d["P"], d["Q"])


# ------------------------------------------------------------------------------------------
# the cost of one group (shared by the evaluator and the search)
# ------------------------------------------------------------------------------------------

def axis_stats(layers: Sequence[Mapping[str, Any]], axis: int, size: int) -> tuple[list[int], list[int], int]:
    """Rows (axis 0) or columns (axis 1) of a conv group cut into tiles of ``size`` positions of
    its last layer's output: for the input of every layer of the group (index j), the needed
    positions summed over the tiles and the largest over the tiles; and the number of tiles.
    Exact sets, walked back from the last layer (stride, dilation, padding: padding is never
    needed)."""
    n = len(layers)
    out_size = layers[-1]["dims"]["PQ"[axis]]
    win = "RS"[axis]
    total, largest, count = [0] * n, [0] * n, 0
    for lo in range(0, out_size, size):
        count += 1
        cur = set(range(lo, min(lo + size, out_size)))
        for j in range(n - 1, -1, -1):
            wl = layers[j]
            st, dil, pad = wl["stride"][axis], wl["dilation"][axis], wl["padding"][axis]
            n_in = wl["input_hw"][axis]
            taps = [r * dil - pad for r in range(wl["dims"][win])]
            cur = {x for x in (o * st + t for o in cur for t in taps) if 0 <= x < n_in}
            total[j] += len(cur)
            largest[j] = max(largest[j], len(cur))
    return total, largest, count


def residual_pairs(chain: Mapping[str, Any]) -> list[tuple[int, int]]:
    """The chain's shortcuts as (s, e): the input of layer s is added to the output of layer e.
    ``residuals`` lists them; a chain with ``residual`` true has one over the whole chain."""
    if "residuals" in chain:
        return [(int(s), int(e)) for s, e in chain["residuals"]]
    return [(0, len(chain["layers"]) - 1)] if chain.get("residual") else []


def conv_group(chain: Mapping[str, Any], arch: Mapping[str, Any], a: int, b: int,
               rows: tuple, cols: tuple, tp, tq) -> dict[str, Any]:
    """DRAM bytes, room and MACs of conv group a..b with tiles of tp x tq outputs; ``rows`` and
    ``cols`` are :func:`axis_stats` of the group (numpy arrays over tile sizes work too).

    A shortcut (s, e) whose layer e is in the group: when the group also holds layer s, the
    source (the input of s) is in the group's footprints, already held; otherwise every tile reads
    the source at its footprint of e's output from DRAM (``residual_bytes``), with
    ``multiple_buffering`` copies of the largest such read in the room. A shortcut whose source is
    an intermediate of the group (s - 1 and s in it) and whose layer e is in a later group: the
    group also writes the source to DRAM, every element once (``source_bytes``)."""
    layers = chain["layers"]
    glb = arch["levels"][0]
    mb = int(glb.get("multiple_buffering", 1))
    last = layers[b]
    P, Q, K = last["dims"]["P"], last["dims"]["Q"], out_channels(last)
    (sr, mr, _), (sc, mc, _) = rows, cols
    w = sum(weights(layers[j]) for j in range(a, b + 1))
    c_in = in_channels(layers[a])
    out_tile = np.minimum(tp, P) * np.minimum(tq, Q) * K
    input_bytes = sr[0] * sc[0] * c_in
    output_bytes = P * Q * K
    resid_bytes, resid_room, source_bytes = 0, 0, 0
    for s, e in residual_pairs(chain):
        if a <= e <= b and s < a:
            if e == b:
                resid_bytes, resid_room = resid_bytes + output_bytes, resid_room + out_tile
            else:
                i, k = e + 1 - a, out_channels(layers[e])
                resid_bytes, resid_room = resid_bytes + sr[i] * sc[i] * k, resid_room + mr[i] * mc[i] * k
        elif a < s <= b < e:
            hw = layers[s]["input_hw"]
            source_bytes += hw[0] * hw[1] * in_channels(layers[s])
    room = (w + mb * mr[0] * mc[0] * c_in
            + sum(mr[j - a] * mc[j - a] * in_channels(layers[j]) for j in range(a + 1, b + 1))
            + mb * out_tile + mb * resid_room)
    macs = P * Q * K * macs_per_output(last)
    for j in range(a, b):  # layer j computes its footprint of the input of layer j + 1, every tile
        macs = macs + sr[j + 1 - a] * sc[j + 1 - a] * out_channels(layers[j]) * macs_per_output(layers[j])
    return {"dram_bytes": w + input_bytes + output_bytes + resid_bytes + source_bytes, "weight_bytes": w,
            "input_bytes": input_bytes, "output_bytes": output_bytes, "residual_bytes": resid_bytes,
            "source_bytes": source_bytes, "room": room, "macs": macs}


def _ceil(x, y):
    return -(-x // y)


def gemm_group(chain: Mapping[str, Any], arch: Mapping[str, Any], a: int, b: int, tm, tn) -> dict[str, Any]:
    """DRAM bytes, room, MACs and roofline cycles of gemm group a..b with tiles of tm tokens by tn
    output features of layer b (python ints, or numpy arrays of the same shape)."""
    layers = chain["layers"]
    glb = arch["levels"][0]
    mb = int(glb.get("multiple_buffering", 1))
    last = layers[b]["dims"]
    M, Kb, Nb = last["M"], last["K"], last["N"]
    ka = layers[a]["dims"]["K"]
    kn = sum(weights(layers[j]) for j in range(a, b))   # the earlier layers' weights (and MACs per token)
    tm = np.minimum(tm, M)
    tn = np.minimum(tn, Nb)
    nm, nn = _ceil(M, tm), _ceil(Nb, tn)
    rm, rn = M - (nm - 1) * tm, Nb - (nn - 1) * tn
    mpc = int(arch["levels"][0]["fanout"][0]) * int(arch["levels"][0]["fanout"][1])
    bw = int(arch["levels"][1]["bytes_per_cycle"])
    cycles = 0
    for m, cm in ((tm, nm - 1), (rm, 1)):
        for n, cn in ((tn, nn - 1), (rn, 1)):
            macs_t = m * kn + m * Kb * n
            bytes_t = m * ka + kn + Kb * n + m * n
            cycles = cycles + cm * cn * np.maximum(_ceil(macs_t, mpc), _ceil(bytes_t, bw))
    inter = sum(layers[j]["dims"]["K"] for j in range(a + 1, b + 1))
    room = mb * tm * ka + tm * inter + mb * tm * tn
    input_bytes = nn * M * ka
    weight_bytes = nm * nn * kn + nm * Kb * Nb
    output_bytes = M * Nb
    return {"dram_bytes": input_bytes + weight_bytes + output_bytes, "weight_bytes": weight_bytes,
            "input_bytes": input_bytes, "output_bytes": output_bytes, "room": room,
            "macs": M * nn * kn + M * Kb * Nb, "cycles": cycles}


# ------------------------------------------------------------------------------------------
# the host's check of an untrusted mapping
# ------------------------------------------------------------------------------------------

def _schema(mapping: Any, chain: Mapping[str, Any], max_bytes: int) -> str | None:
    why = envelope(mapping, "groups", max_bytes)
    if why:
        return why
    groups = mapping.get("groups")
    n = len(chain["layers"])
    if type(groups) is not list or not 1 <= len(groups) <= n:
        return f"schema: groups must be a list of 1 to {n} groups"
    keys = tile_axes(chain)
    for g, entry in enumerate(groups):
        if type(entry) is not dict or set(entry) != {"layers", "tile"}:
            return f"schema: group {g} must be a dict with exactly the keys layers and tile"
        if type(entry["layers"]) is not int or entry["layers"] < 1:
            return f"schema: group {g}: layers must be a positive integer"
        tile = entry["tile"]
        if type(tile) is not dict or set(tile) != set(keys):
            return f"schema: group {g}: tile must be a dict with exactly the keys {' and '.join(keys)}"
        for k in keys:
            if type(tile[k]) is not int or not 1 <= tile[k] <= MAX_FACTOR:
                return f"schema: group {g}: tile {k} must be an integer from 1, got {_short(tile[k])}"
    return None


def _groups(mapping: Mapping[str, Any]) -> list[tuple[int, int, int, int]]:
    """(first layer, last layer, tile 0, tile 1) of each group of a schema-checked mapping."""
    out, a = [], 0
    for entry in mapping["groups"]:
        b = a + entry["layers"] - 1
        tile = entry["tile"]
        out.append((a, b, tile.get("P", tile.get("M")), tile.get("Q", tile.get("N"))))
        a = b + 1
    return out


def _group_cost(chain: Mapping[str, Any], arch: Mapping[str, Any], a: int, b: int, t0: int, t1: int) -> dict[str, Any]:
    if _is_gemm(chain):
        out = gemm_group(chain, arch, a, b, t0, t1)
    else:
        layers = chain["layers"][a:b + 1]
        out = conv_group(chain, arch, a, b, axis_stats(layers, 0, t0), axis_stats(layers, 1, t1), t0, t1)
    return {k: int(v) for k, v in out.items()}


def check(mapping: Any, chain: Mapping[str, Any], architecture: Mapping[str, Any],
          max_bytes: int = MAX_BYTES) -> str | None:
    """Why the mapping is invalid (its first broken rule), or None when it is valid."""
    why = _schema(mapping, chain, max_bytes)
    if why:
        return why
    n = len(chain["layers"])
    total = sum(e["layers"] for e in mapping["groups"])
    if total != n:
        return f"coverage: the groups hold {total} layers, the chain has {n}"
    cap = int(architecture["levels"][0]["capacity_bytes"])
    for g, (a, b, t0, t1) in enumerate(_groups(mapping)):
        bound = tile_bounds(chain, b)
        keys = tile_axes(chain)
        for k, t, m in zip(keys, (t0, t1), bound):
            if t > m:
                return f"tile: group {g}: tile {k} {t} is larger than the output's {m}"
        room = _group_cost(chain, architecture, a, b, t0, t1)["room"]
        if room > cap:
            return f"capacity at GLB: group {g} (layers {a} to {b}) needs {room} bytes, the GLB has {cap}"
    return None


def compulsory_bytes(chain: Mapping[str, Any]) -> int:
    """The DRAM traffic every mapping pays: the chain's input read once, its output written once,
    every weight read once."""
    layers = chain["layers"]
    first, last = layers[0], layers[-1]
    if first["shape"] == "gemm":
        size_in = first["dims"]["M"] * first["dims"]["K"]
        size_out = last["dims"]["M"] * last["dims"]["N"]
    else:
        size_in = first["input_hw"][0] * first["input_hw"][1] * in_channels(first)
        size_out = last["dims"]["P"] * last["dims"]["Q"] * out_channels(last)
    return size_in + size_out + sum(weights(wl) for wl in layers)


def _evaluate(mapping: Any, chain: Mapping[str, Any], architecture: Mapping[str, Any], objective: str,
              max_bytes: int) -> dict[str, Any]:
    try:
        why = check(mapping, chain, architecture, max_bytes)
    except (TypeError, ValueError, KeyError, OverflowError, RecursionError) as exc:  # never raise on data
        why = f"schema: {type(exc).__name__}"
    if why is not None:
        return {"valid": False, "reason": why, "objective": None, "breakdown": {}}
    groups = []
    for a, b, t0, t1 in _groups(mapping):
        cost = _group_cost(chain, architecture, a, b, t0, t1)
        groups.append({"layers": [a, b], "tile": [t0, t1], **cost})
    dram = sum(g["dram_bytes"] for g in groups)
    if objective == "traffic":
        value = dram - compulsory_bytes(chain)
    else:
        value = sum(g["cycles"] for g in groups)
    return {"valid": True, "reason": "", "objective": float(value),
            "breakdown": {"dram_bytes": dram, "compulsory_bytes": compulsory_bytes(chain),
                          "macs": sum(g["macs"] for g in groups), "groups": groups}}


def evaluate_traffic(mapping: Any, chain: Mapping[str, Any], architecture: Mapping[str, Any],
                     max_bytes: int = MAX_BYTES) -> dict[str, Any]:
    """The DRAM traffic of a returned mapping (bytes), or why the mapping is invalid."""
    return _evaluate(mapping, chain, architecture, "traffic", max_bytes)


def evaluate_latency(mapping: Any, chain: Mapping[str, Any], architecture: Mapping[str, Any],
                     max_bytes: int = MAX_BYTES) -> dict[str, Any]:
    """The roofline latency of a returned mapping (cycles), or why the mapping is invalid."""
    return _evaluate(mapping, chain, architecture, "latency", max_bytes)


# ------------------------------------------------------------------------------------------
# the reference search: exact by decomposition
# ------------------------------------------------------------------------------------------

def cuts(n: int) -> Iterator[list[tuple[int, int]]]:
    """Every way to cut n layers into groups of consecutive layers: lists of (first, last)."""
    for k in range(n):
        for points in itertools.combinations(range(1, n), k):
            edges = (0, *points, n)
            yield [(edges[i], edges[i + 1] - 1) for i in range(k + 1)]


def _conv_grid(chain: Mapping[str, Any], arch: Mapping[str, Any], a: int, b: int) -> dict[str, Any]:
    """:func:`conv_group` of conv group a..b for every tile at once (arrays over rows x columns)."""
    n0, n1 = tile_bounds(chain, b)
    layers = chain["layers"][a:b + 1]
    rows = [axis_stats(layers, 0, t) for t in range(1, n0 + 1)]
    cols = [axis_stats(layers, 1, t) for t in range(1, n1 + 1)]
    k = b - a + 1
    R = [np.asarray([r[x] for r in rows], dtype=np.int64).T.reshape(k, n0, 1) for x in range(2)]
    C = [np.asarray([c[x] for c in cols], dtype=np.int64).T.reshape(k, 1, n1) for x in range(2)]
    tp = np.arange(1, n0 + 1, dtype=np.int64).reshape(n0, 1)
    tq = np.arange(1, n1 + 1, dtype=np.int64).reshape(1, n1)
    return conv_group(chain, arch, a, b, (list(R[0]), list(R[1]), None), (list(C[0]), list(C[1]), None), tp, tq)


def _best_group(chain: Mapping[str, Any], arch: Mapping[str, Any], a: int, b: int,
                objective: str) -> tuple[float, int, int] | None:
    """The least objective of group a..b over every tile that fits, with that tile (first in
    (t0, t1) order on ties), or None when no tile fits."""
    cap = int(arch["levels"][0]["capacity_bytes"])
    n0, n1 = tile_bounds(chain, b)
    best = None
    if _is_gemm(chain):
        t1 = np.arange(1, n1 + 1, dtype=np.int64)
        for t0 in range(1, n0 + 1):
            c = gemm_group(chain, arch, a, b, t0, t1)
            v = np.where(c["room"] <= cap, c["dram_bytes"] if objective == "traffic" else c["cycles"], np.iinfo(np.int64).max)
            i = int(np.argmin(v))
            if c["room"][i] <= cap and (best is None or v[i] < best[0]):
                best = (int(v[i]), t0, i + 1)
        return best
    c = _conv_grid(chain, arch, a, b)
    if objective != "traffic":
        raise ValueError("conv chains are searched for DRAM traffic only")
    v = np.broadcast_to(c["dram_bytes"], (n0, n1))
    room = np.broadcast_to(c["room"], (n0, n1))
    v = np.where(room <= cap, v, np.iinfo(np.int64).max)
    i = int(np.argmin(v))
    i0, i1 = divmod(i, n1)
    if room[i0, i1] <= cap:
        best = (int(v[i0, i1]), i0 + 1, i1 + 1)
    return best


def _search(chain: Mapping[str, Any], architecture: Mapping[str, Any], objective: str) -> tuple[float, dict[str, Any]]:
    """The least objective (DRAM bytes or cycles) over every cut and every tile, and its mapping."""
    n = len(chain["layers"])
    memo: dict[tuple[int, int], Any] = {}
    best_val, best_map = math.inf, None
    keys = tile_axes(chain)
    for groups in cuts(n):
        parts = []
        for a, b in groups:
            if (a, b) not in memo:
                memo[a, b] = _best_group(chain, architecture, a, b, objective)
            parts.append(memo[a, b])
        if any(p is None for p in parts):
            continue
        value = sum(p[0] for p in parts)
        if value < best_val:
            best_val = value
            best_map = {"groups": [{"layers": b - a + 1, "tile": {keys[0]: p[1], keys[1]: p[2]}}
                                   for (a, b), p in zip(groups, parts)]}
    if best_map is None:
        raise ValueError("no valid mapping: the instance is infeasible")
    return float(best_val), best_map


def _record(best: float, mapping: dict[str, Any]) -> dict[str, Any]:
    return {"best": best, "proven": True, "mapping": json.dumps(mapping, sort_keys=True, separators=(",", ":"))}


def search_traffic(chain: Mapping[str, Any], architecture: Mapping[str, Any]) -> dict[str, Any]:
    """The least excess DRAM traffic over every valid mapping (exact by decomposition: proven)."""
    total, mapping = _search(chain, architecture, "traffic")
    return _record(total - compulsory_bytes(chain), mapping)


def search_latency(chain: Mapping[str, Any], architecture: Mapping[str, Any]) -> dict[str, Any]:
    """The least roofline latency over every valid mapping (exact by decomposition: proven)."""
    return _record(*_search(chain, architecture, "latency"))


def enumerate_space(chain: Mapping[str, Any], architecture: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
    """Every mapping the rules allow, one at a time (valid or not: the caller checks): every cut
    of the chain, every tile of every group (small instances only)."""
    keys = tile_axes(chain)
    for groups in cuts(len(chain["layers"])):
        choices = []
        for _, b in groups:
            n0, n1 = tile_bounds(chain, b)
            choices.append(list(itertools.product(range(1, n0 + 1), range(1, n1 + 1))))
        for tiles in itertools.product(*choices):
            yield {"groups": [{"layers": b - a + 1, "tile": {keys[0]: t[0], keys[1]: t[1]}}
                              for (a, b), t in zip(groups, tiles)]}


def space_size(chain: Mapping[str, Any]) -> int:
    """How many mappings the rules allow (valid or not)."""
    total = 0
    for groups in cuts(len(chain["layers"])):
        total += math.prod(math.prod(tile_bounds(chain, b)) for _, b in groups)
    return total


def valid_space_size(chain: Mapping[str, Any], architecture: Mapping[str, Any]) -> int:
    """How many mappings the rules allow whose every group fits the GLB: the valid ones, counted
    exactly (every tile of every group judged at once, then the cuts combined)."""
    cap = int(architecture["levels"][0]["capacity_bytes"])
    n = len(chain["layers"])
    fits = {}
    for a in range(n):
        for b in range(a, n):
            n0, n1 = tile_bounds(chain, b)
            if _is_gemm(chain):
                t1 = np.arange(1, n1 + 1, dtype=np.int64)
                fits[a, b] = sum(int(np.count_nonzero(gemm_group(chain, architecture, a, b, t0, t1)["room"] <= cap))
                                 for t0 in range(1, n0 + 1))
            else:
                room = np.broadcast_to(_conv_grid(chain, architecture, a, b)["room"], (n0, n1))
                fits[a, b] = int(np.count_nonzero(room <= cap))
    return sum(math.prod(fits[g] for g in groups) for groups in cuts(n))


# ------------------------------------------------------------------------------------------
# instance generators
# ------------------------------------------------------------------------------------------

INT8 = {"I": 8, "W": 8, "O": 8, "psum": 24}


def _conv(name: str, shape: str, c: int, k: int, hw: int, rs: int, stride: int = 1) -> dict[str, Any]:
    pad = (rs - 1) // 2
    p = (hw + 2 * pad - rs) // stride + 1
    dims = {"N": 1, "K": k, "C": c, "P": p, "Q": p, "R": rs, "S": rs}
    if shape == "depthwise":
        del dims["K"]
    return {"name": name, "shape": shape, "dims": dims, "input_hw": [hw, hw], "stride": [stride, stride],
            "dilation": [1, 1], "padding": [pad, pad], "bits": dict(INT8)}


def _named(name: str, alias: str | None = None) -> dict[str, Any]:
    wl = pm_shapes.layer(name, INT8)
    if alias:
        wl["name"] = alias
    return wl


def _mbv2(i: int, c: int, e: int, k: int, hw: int, stride: int) -> list[dict[str, Any]]:
    """MobileNetV2's block ``features.i``: 1x1 expand c -> e, 3x3 depthwise (stride), 1x1 project
    e -> k, on an hw x hw input (pm_shapes' shapes; a layer pm_shapes lacks is the same shape
    under its own name)."""
    tag = f"mobilenetv2.features.{i}"
    p = (hw + 2 - 3) // stride + 1
    out = []
    for name, args in ((f"{tag}.expand", ("conv", c, e, hw, 1)), (f"{tag}.dw", ("depthwise", e, e, hw, 3, stride)),
                       (f"{tag}.project", ("conv", e, k, p, 1))):
        try:
            out.append(_named(name))
        except KeyError:
            out.append(_conv(name, *args))
    return out


def mobilenet_blocks() -> list[dict[str, Any]]:
    """Two consecutive MobileNetV2 inverted residual blocks (six layers): features.2 and .3 (56 x 56
    outputs) or features.4 and .5 (28 x 28); the second block of each keeps its shape and adds its
    input to its output."""
    f2, f3 = _mbv2(2, 16, 96, 24, 112, 2), _mbv2(3, 24, 144, 24, 56, 1)
    f4, f5 = _mbv2(4, 24, 144, 32, 56, 2), _mbv2(5, 32, 192, 32, 28, 1)
    return [{"name": "mobilenetv2.features.2-3", "layers": f2 + f3, "residuals": [[3, 5]]},
            {"name": "mobilenetv2.features.4-5", "layers": f4 + f5, "residuals": [[3, 5]]}]


def _bottleneck(stage: int, i: int, c: int, m: int, hw: int) -> list[dict[str, Any]]:
    """ResNet-50's bottleneck ``layer{stage}.{i}`` with an identity shortcut: 1x1 c -> m, 3x3 m -> m,
    1x1 m -> c on hw x hw (pm_shapes' shapes, renamed where pm_shapes has the same shape under
    another block's name)."""
    tag = f"resnet50.layer{stage}"
    out = []
    for conv, args in (("conv1", (c, m, hw, 1)), ("conv2", (m, m, hw, 3)), ("conv3", (m, c, hw, 1))):
        name = f"{tag}.{i}.{conv}"
        for src in (name, f"{tag}.1.{conv}", f"{tag}.0.{conv}"):
            try:
                wl = _named(src, name)
            except KeyError:
                continue
            if (wl["dims"]["C"], wl["dims"]["K"], wl["input_hw"][0], wl["stride"][0]) == (args[0], args[1], hw, 1):
                out.append(wl)
                break
        else:
            out.append(_conv(name, "conv", *args))
    return out


def resnet_blocks() -> list[dict[str, Any]]:
    """Two consecutive ResNet-50 bottlenecks with identity shortcuts (six layers): layer1.1 and
    layer1.2 (56 x 56) or layer2.1 and layer2.2 (28 x 28)."""
    return [{"name": "resnet50.layer1.1-2", "layers": _bottleneck(1, 1, 256, 64, 56) + _bottleneck(1, 2, 256, 64, 56),
             "residuals": [[0, 2], [3, 5]]},
            {"name": "resnet50.layer2.1-2", "layers": _bottleneck(2, 1, 512, 128, 28) + _bottleneck(2, 2, 512, 128, 28),
             "residuals": [[0, 2], [3, 5]]}]


def llama_chains(tokens: int = 512) -> list[dict[str, Any]]:
    """A Llama decoder layer's chain o_proj -> up_proj -> down_proj at prefill (pm_shapes' shapes)."""
    tag = f"prefill{tokens}"
    l3 = [_named(f"llama3-8b.{tag}.o_proj"), _named(f"llama3-8b.{tag}.up_proj"),
          _named(f"llama3-8b.{tag}.down_proj")]
    l2 = [_named(f"llama2-7b.{tag}.q_proj", f"llama2-7b.{tag}.o_proj"),
          _named(f"llama2-7b.{tag}.gate_proj", f"llama2-7b.{tag}.up_proj"), _named(f"llama2-7b.{tag}.down_proj")]
    return [{"name": f"llama3-8b.{tag}", "layers": l3, "residual": False},
            {"name": f"llama2-7b.{tag}", "layers": l2, "residual": False}]


def _arch(cap: int, mb: int, fanout: Sequence[int] = (14, 12), bw: int | None = None) -> dict[str, Any]:
    dram: dict[str, Any] = {"name": "DRAM", "capacity_bytes": None, "fanout": [1, 1]}
    if bw is not None:
        dram["bytes_per_cycle"] = int(bw)
    return {"name": "fused-glb", "levels": [
        {"name": "GLB", "capacity_bytes": int(cap), "fanout": list(fanout), "multiple_buffering": int(mb)}, dram]}


def _least_room(chain: Mapping[str, Any], arch: Mapping[str, Any]) -> int:
    """The room of the smallest mapping: every layer its own group, one-position tiles."""
    return max(_group_cost(chain, arch, j, j, 1, 1)["room"] for j in range(len(chain["layers"])))


def _small_conv_chain(rng: np.random.Generator) -> dict[str, Any]:
    """Two small inverted residual blocks (six layers; the first block of stride 1 on a 2 x 2
    input or of stride 2 on a 3 x 3 one, so every layer after it is 2 x 2), each with its
    shortcut when it keeps its shape (drawn)."""
    stride = int(rng.choice([1, 2]))
    hw = 2 if stride == 1 else 3
    c0, c1 = int(rng.integers(1, 3)), int(rng.integers(1, 3))
    layers, residuals = [], []
    for blk, (cin, cout, st) in enumerate(((c0, c1, stride), (c1, c1, 1))):
        e = int(rng.integers(2, 4))
        layers += [_conv(f"small.{blk}.expand", "conv", cin, e, hw, 1),
                   _conv(f"small.{blk}.dw", "depthwise", e, e, hw, 3, st)]
        p = layers[-1]["dims"]["P"]
        layers.append(_conv(f"small.{blk}.project", "conv", e, cout, p, 1))
        if st == 1 and cin == cout and rng.random() < 0.8:
            residuals.append([3 * blk, 3 * blk + 2])
        hw = p
    return {"name": "small-blocks", "layers": layers, "residuals": residuals}


def gen_conv_fusion(rng: np.random.Generator, *, family: str = "mobilenet", small: bool = False,
                    min_valid: float = 0) -> dict[str, Any]:
    """Two consecutive blocks and a GLB whose capacity makes the fusion and the tiles compete for
    room, log-uniform in ``CAP_RANGE`` times the least room, in whole KiB; drawn again (capacity
    only) while the valid schedules (:func:`valid_space_size`) are fewer than ``min_valid``."""
    if small:
        chain = _small_conv_chain(rng)
        arch = _arch(0, int(rng.choice([1, 2])))
        least = _least_room(chain, arch)
        arch["levels"][0]["capacity_bytes"] = int(least + rng.integers(0, 2 * least + 1))
        return {"chain": chain, "architecture": arch}
    blocks = mobilenet_blocks() if family == "mobilenet" else resnet_blocks()
    chain = blocks[int(rng.integers(0, len(blocks)))]
    arch = _arch(0, int(rng.choice([1, 2])))
    least = _least_room(chain, arch)
    lo, hi = CAP_RANGE[family]
    while True:  # drawn again while the valid schedules are fewer than min_valid
        cap = math.exp(rng.uniform(math.log(lo * least), math.log(hi * least)))
        arch["levels"][0]["capacity_bytes"] = int(math.ceil(cap / 1024)) * 1024
        if not min_valid or valid_space_size(chain, arch) >= min_valid:
            return {"chain": chain, "architecture": arch}


# the GLB's range, in multiples of the least room any schedule needs: below 1.5 few schedules are
# valid; above 24 (MobileNetV2) or 6 (ResNet-50) a whole chain's tile can come near fitting at once
CAP_RANGE = {"mobilenet": (1.5, 24.0), "resnet": (1.5, 6.0)}


def _small_gemm_chain(rng: np.random.Generator) -> dict[str, Any]:
    m = int(rng.integers(2, 5))
    ks = [int(rng.integers(1, 5)) for _ in range(4)]
    layers = [{"name": f"small.gemm{j}", "shape": "gemm", "dims": {"M": m, "N": ks[j + 1], "K": ks[j]},
               "bits": dict(INT8)} for j in range(3)]
    return {"name": "small-chain", "layers": layers, "residual": False}


def gen_gemm_fusion(rng: np.random.Generator, *, small: bool = False) -> dict[str, Any]:
    """A Llama chain and a GLB over DRAM with a MAC array and a DRAM bandwidth (the roofline)."""
    if small:
        chain = _small_gemm_chain(rng)
        arch = _arch(0, int(rng.choice([1, 2])), [int(rng.integers(1, 5)), int(rng.integers(1, 5))],
                     int(rng.integers(1, 9)))
        least = _least_room(chain, arch)
        arch["levels"][0]["capacity_bytes"] = int(least + rng.integers(0, 4 * least + 1))
        return {"chain": chain, "architecture": arch}
    chains = llama_chains(512)
    chain = chains[int(rng.integers(0, len(chains)))]
    fan = [[128, 128], [64, 64], [128, 64]][int(rng.integers(0, 3))]
    cap = math.exp(rng.uniform(math.log(1024), math.log(8192)))  # 1 to 8 MiB, log-uniform, whole KiB
    arch = _arch(int(cap) * 1024, 2, fan, int(rng.choice([16, 32, 64])))
    return {"chain": chain, "architecture": arch}


REFERENCES = {"mapper_fusion.search_traffic": search_traffic, "mapper_fusion.search_latency": search_latency}
GENERATORS = {"mapper_fusion.conv_fusion": gen_conv_fusion, "mapper_fusion.gemm_fusion": gen_gemm_fusion}
EVALUATORS = {"mapper_fusion.evaluate_traffic": evaluate_traffic, "mapper_fusion.evaluate_latency": evaluate_latency}
SPACES = {"mapper_fusion.enumerate_space": enumerate_space}
