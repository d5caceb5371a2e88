"""perf-model reference and generator: a chain of 2 or 3 convolutions executed fused, tile by
tile, on one global buffer over DRAM (problem ``f6-fused-layer-tiles``).

The last layer's output is cut into tiles of ``tile.P`` x ``tile.Q`` output positions (all
channels), visited in ``order`` (innermost first). For a tile, every earlier layer computes
exactly the elements of its output that a later layer's windows read (stride, dilation, padding;
padding is never computed); with ``keep_intermediate`` the previous tile's intermediate elements
stay and only new ones are computed, otherwise everything is recomputed. The first layer's input
is read from DRAM with delta reuse between consecutive tiles.

Model: windows are separable, so the elements a tile needs of every tensor are all its channels
at (needed rows) x (needed columns); the needed rows of a row-tile and the needed columns of a
column-tile are computed once per axis (exact sets, walking the chain backwards), and every sum
over tiles factors into per-axis sums: a tile of the sequence shares with its predecessor the
intersection of their row sets times the intersection of their column sets.
"""

from __future__ import annotations

from typing import Any, Sequence

from reference_models import pm_shapes

INT8 = {"I": 8, "W": 8, "O": 8, "psum": 24}


def _nbytes(elements: int, bits: int) -> int:
    return -(-elements * bits // 8)


def _out_channels(wl: dict[str, Any]) -> int:
    return wl["dims"]["K"] if wl["shape"] == "conv" else wl["dims"]["C"]


def _macs_per_output(wl: dict[str, Any]) -> int:
    d = wl["dims"]
    return d["R"] * d["S"] * (d["C"] if wl["shape"] == "conv" else 1)


def _weights(wl: dict[str, Any]) -> int:
    d = wl["dims"]
    return d["R"] * d["S"] * d["C"] * (d["K"] if wl["shape"] == "conv" else 1)


def _axis_sets(layers: Sequence[dict[str, Any]], axis: int, size: int) -> list[list[frozenset[int]]]:
    """For every tile along one axis (rows: axis 0, columns: axis 1) of the last layer's output,
    the exact set of positions needed of the input of every layer (index j: input of layer j)."""
    out_size = layers[-1]["dims"]["PQ"[axis]]
    win = "RS"[axis]
    tiles = []
    for lo in range(0, out_size, size):
        cur = set(range(lo, min(lo + size, out_size)))
        sets: list[frozenset[int]] = []
        for wl in reversed(layers):
            st, dil, pad = wl["stride"][axis], wl["dilation"][axis], wl["padding"][axis]
            n_in = wl["input_hw"][axis]
            taps = [r * dil - pad for r in range(wl["dims"][win])]
            cur = {o * st + t for o in cur for t in taps}
            cur = {x for x in cur if 0 <= x < n_in}
            sets.append(frozenset(cur))
        sets.reverse()
        tiles.append(sets)
    return tiles


def fused_layer_tiles(layers: list, architecture: dict, schedule: dict) -> dict[str, Any]:
    n = len(layers)
    tp, tq = schedule["tile"]["P"], schedule["tile"]["Q"]
    keep = bool(schedule["keep_intermediate"])
    rows = _axis_sets(layers, 0, tp)
    cols = _axis_sets(layers, 1, tq)
    # the tile sequence: (outer axis tiles, inner axis tiles); inner = order[0]
    inner_is_q = schedule["order"][0] == "Q"
    outer, inner = (rows, cols) if inner_is_q else (cols, rows)
    chans = [wl["dims"]["C"] for wl in layers]  # channels of the input of layer j

    total = [0] * n       # footprint elements summed over tiles (positions only)
    shared = [0] * n      # elements shared with the previous tile (positions only)
    largest = [0] * n
    for j in range(n):
        o_sizes = [len(t[j]) for t in outer]
        i_sizes = [len(t[j]) for t in inner]
        total[j] = sum(o_sizes) * sum(i_sizes)
        largest[j] = max(o_sizes) * max(i_sizes)
        # consecutive tiles inside one run of the inner axis
        i_pairs = sum(len(inner[k][j] & inner[k - 1][j]) for k in range(1, len(inner)))
        # the step from the last inner tile of one outer tile to the first of the next
        wrap = len(inner[0][j] & inner[-1][j])
        o_pairs = sum(len(outer[k][j] & outer[k - 1][j]) for k in range(1, len(outer)))
        shared[j] = sum(o_sizes) * i_pairs + o_pairs * wrap

    input_elements = (total[0] - shared[0]) * chans[0]
    macs = []
    for j in range(n - 1):  # layer j produces the input of layer j + 1
        computed = (total[j + 1] - shared[j + 1]) if keep else total[j + 1]
        macs.append(computed * chans[j + 1] * _macs_per_output(layers[j]))
    last = layers[-1]
    final = last["dims"]["P"] * last["dims"]["Q"] * _out_channels(last)
    macs.append(final * _macs_per_output(last))

    glb = architecture["levels"][0]
    b = glb.get("multiple_buffering", 1)
    weight_bytes = sum(_nbytes(_weights(wl), wl["bits"]["W"]) for wl in layers)
    max_input = largest[0] * chans[0]
    max_inter = [largest[j] * chans[j] for j in range(1, n)]
    out_tile = min(tp, last["dims"]["P"]) * min(tq, last["dims"]["Q"]) * _out_channels(last)
    need = (weight_bytes + b * _nbytes(max_input, layers[0]["bits"]["I"])
            + sum(_nbytes(e, layers[j + 1]["bits"]["I"]) for j, e in enumerate(max_inter))
            + b * _nbytes(out_tile, last["bits"]["O"]))
    return {
        "macs": macs,
        "total_macs": sum(macs),
        "input_read_bytes": _nbytes(input_elements, layers[0]["bits"]["I"]),
        "weight_read_bytes": weight_bytes,
        "output_write_bytes": _nbytes(final, last["bits"]["O"]),
        "max_input_elements": max_input,
        "max_intermediate_elements": max_inter,
        "glb_bytes": need,
        "fits": need <= glb["capacity_bytes"],
    }


# ------------------------------------------------------------------------------------------
# generator
# ------------------------------------------------------------------------------------------

def _pick(rng: Any, values: Sequence[Any]) -> Any:
    return values[int(rng.integers(0, len(values)))]


def _out_size(n_in: int, r: int, st: int, dil: int, pad: int) -> int:
    return (n_in + 2 * pad - dil * (r - 1) - 1) // st + 1


def _layer(name: str, shape: str, c: int, k: int, hw: Sequence[int], rs: Sequence[int],
           stride: Sequence[int], dilation: Sequence[int], padding: Sequence[int],
           bits: dict[str, int]) -> dict[str, Any]:
    p = _out_size(hw[0], rs[0], stride[0], dilation[0], padding[0])
    q = _out_size(hw[1], rs[1], stride[1], dilation[1], padding[1])
    dims = {"N": 1, "K": k, "C": c, "P": p, "Q": q, "R": rs[0], "S": rs[1]}
    if shape == "depthwise":
        del dims["K"]
    return {"name": name, "shape": shape, "dims": dims, "input_hw": list(hw), "stride": list(stride),
            "dilation": list(dilation), "padding": list(padding), "bits": dict(bits)}


def _every_window_touches(layers: Sequence[dict[str, Any]]) -> bool:
    """Every output element of every layer reads at least one existing input element."""
    for wl in layers:
        for axis in (0, 1):
            st, dil, pad = wl["stride"][axis], wl["dilation"][axis], wl["padding"][axis]
            n_in, r = wl["input_hw"][axis], wl["dims"]["RS"[axis]]
            for o in range(wl["dims"]["PQ"[axis]]):
                if not any(0 <= o * st + t * dil - pad < n_in for t in range(r)):
                    return False
    return True


def _small_chain(rng: Any) -> list[dict[str, Any]]:
    while True:
        n = 2 if rng.random() < 0.5 else 3
        hw = [int(rng.integers(3, 11)), int(rng.integers(3, 11))]
        c = int(rng.integers(1, 4))
        bits_chain = [int(_pick(rng, (4, 8, 8, 16))) for _ in range(n + 1)]
        layers, ok = [], True
        for j in range(n):
            shape = "depthwise" if rng.random() < 0.3 else "conv"
            rs = [int(_pick(rng, (1, 3, 3, 2))), int(_pick(rng, (1, 3, 3, 2)))]
            stride = [int(_pick(rng, (1, 1, 2))), int(_pick(rng, (1, 1, 2)))]
            dilation = [int(_pick(rng, (1, 1, 2))) if rs[a] > 1 else 1 for a in (0, 1)]
            padding = [int(rng.integers(0, dilation[a] * (rs[a] - 1) + 1)) for a in (0, 1)]
            k = c if shape == "depthwise" else int(rng.integers(1, 4))
            bits = {"I": bits_chain[j], "W": int(_pick(rng, (4, 8))), "O": bits_chain[j + 1], "psum": 32}
            wl = _layer(f"small.{j}.{shape}", shape, c, k, hw, rs, stride, dilation, padding, bits)
            if wl["dims"]["P"] < 1 or wl["dims"]["Q"] < 1:
                ok = False
                break
            layers.append(wl)
            hw, c = [wl["dims"]["P"], wl["dims"]["Q"]], k
        if ok and _every_window_touches(layers):
            return layers


def _chain(names: Sequence[Any], bits: dict[str, int] = INT8) -> list[dict[str, Any]]:
    """Real layers: a name of pm_shapes, or a tuple (name, shape, C, K, hw, rs, stride, dilation)."""
    out = []
    for x in names:
        if isinstance(x, str):
            out.append(pm_shapes.layer(x, bits))
        else:
            name, shape, c, k, hw, rs, st, dil = x
            pad = dil * (rs - 1) // 2
            out.append(_layer(name, shape, c, k, [hw, hw], [rs, rs], [st, st], [dil, dil], [pad, pad], bits))
    return out


REAL_CHAINS: list[list[Any]] = [
    # MobileNetV2 inverted residual blocks: expand 1x1, depthwise 3x3, project 1x1
    ["mobilenetv2.features.2.expand", "mobilenetv2.features.2.dw", "mobilenetv2.features.2.project"],
    ["mobilenetv2.features.3.expand", "mobilenetv2.features.3.dw",
     ("mobilenetv2.features.3.project", "conv", 144, 24, 56, 1, 1, 1)],
    [("mobilenetv2.features.4.expand", "conv", 24, 144, 56, 1, 1, 1), "mobilenetv2.features.4.dw",
     "mobilenetv2.features.4.project"],
    [("mobilenetv2.features.5.expand", "conv", 32, 192, 28, 1, 1, 1), "mobilenetv2.features.5.dw",
     ("mobilenetv2.features.5.project", "conv", 192, 32, 28, 1, 1, 1)],
    ["mobilenetv2.features.1.dw", "mobilenetv2.features.1.pw"],
    # ResNet-50 bottlenecks (1x1, 3x3, 1x1) and their 3x3 pairs
    ["resnet50.layer1.0.conv1", "resnet50.layer1.0.conv2", "resnet50.layer1.0.conv3"],
    ["resnet50.layer2.0.conv1", "resnet50.layer2.0.conv2",
     ("resnet50.layer2.0.conv3", "conv", 128, 512, 28, 1, 1, 1)],
    ["resnet50.layer1.0.conv2", ("resnet50.layer1.1.conv2", "conv", 64, 64, 56, 3, 1, 1)],
    ["resnet50.layer2.1.conv2", ("resnet50.layer2.2.conv2", "conv", 128, 128, 28, 3, 1, 1)],
    # DeepLabV3's dilated stage 3 (dilation 2) and a pair of its dilated 3x3 convs
    [("deeplabv3.layer3.1.conv1", "conv", 1024, 256, 28, 1, 1, 1), "deeplabv3.layer3.1.conv2",
     ("deeplabv3.layer3.1.conv3", "conv", 256, 1024, 28, 1, 1, 1)],
    ["deeplabv3.layer3.1.conv2", ("deeplabv3.layer3.2.conv2", "conv", 256, 256, 28, 3, 1, 2)],
]

_GLBS = (("eyeriss-like", 131072, [14, 12]), ("simba-like", 65536, [16, 1]),
         ("nvdla-like", 524288, [1, 16]), ("large", 2097152, [16, 16]),
         ("tpu-like", 25165824, [128, 128]))


def _architecture(name: str, cap: int, fanout: list[int], b: int) -> dict[str, Any]:
    return {"name": f"{name}-fused", "levels": [
        {"name": "GLB", "capacity_bytes": cap, "fanout": list(fanout), "multiple_buffering": b},
        {"name": "DRAM", "capacity_bytes": None, "fanout": [1, 1]}]}


def gen_fused_layer_tiles(rng: Any, real: bool = False, large: bool = False) -> dict[str, Any]:
    """A small chain, or with ``real`` a real one; ``large`` redraws real ones until the MACs
    (recomputation included) reach 2^31: DeepLabV3's dilated chains under tiles of a row or two."""
    while large:
        case = gen_fused_layer_tiles(rng, real=True)
        if fused_layer_tiles(**case)["total_macs"] >= 2 ** 31:
            return case
    if real:
        layers = _chain(_pick(rng, REAL_CHAINS))
        name, cap, fanout = _pick(rng, _GLBS)
        last = layers[-1]["dims"]
        tp = int(_pick(rng, [t for t in (1, 2, 4, 7, 8, 14, 16) if t <= last["P"] // 2]))
        tq = int(_pick(rng, [t for t in (1, 2, 4, 7, 8, 14, 16, 28) if t <= last["Q"] // 2]))
        arch = _architecture(name, cap, fanout, int(_pick(rng, (1, 2))))
    else:
        layers = _small_chain(rng)
        last = layers[-1]["dims"]
        tp, tq = int(rng.integers(1, last["P"] + 1)), int(rng.integers(1, last["Q"] + 1))
        arch = _architecture("small", 0, [int(rng.integers(1, 5)), int(rng.integers(1, 5))],
                             int(_pick(rng, (1, 2))))
    schedule = {"tile": {"P": tp, "Q": tq}, "order": ["Q", "P"] if rng.random() < 0.6 else ["P", "Q"],
                "keep_intermediate": bool(rng.random() < 0.5)}
    if not real:  # a capacity near the room the schedule needs: some fit, some do not, a few exactly
        need = fused_layer_tiles(layers, arch, schedule)["glb_bytes"]
        cap = need if rng.random() < 0.15 else max(16, int(need * rng.uniform(0.6, 1.4)) // 16 * 16)
        arch["levels"][0]["capacity_bytes"] = cap
    return {"layers": layers, "architecture": arch, "schedule": schedule}


REFERENCES = {"pm_fused.fused_layer_tiles": fused_layer_tiles}
GENERATORS = {"pm_fused.fused_layer_tiles": gen_fused_layer_tiles}
