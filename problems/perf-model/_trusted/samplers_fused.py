"""Domain sampler of the perf-model pack for the fused-layer problem (F6,
``f6-fused-layer-tiles``).

Written from the problem's spec and ``[[domain]]`` rules alone, sharing no code with the
generator (the validator checks it): small chains come from the format-wide chained-layer sampler
of :mod:`.samplers_mapping` (any filter, stride, dilation and padding whose windows touch the
input), real chains are written out here from the networks the spec names (MobileNetV2 inverted
residual blocks, ResNet-50 bottlenecks and pairs of their 3x3 convolutions, DeepLabV3's dilated
stages), with any tile of the last output, either order, intermediates kept or not.
``sample(rng, **options) -> {parameter: value}``.
"""

from __future__ import annotations

from typing import Any

from .samplers_mapping import choice, log_size, sample_fused_layer_tiles as sample_small_chain

# MobileNetV2 inverted residual blocks (expansion 6): (input channels, output channels, input
# size, stride of the depthwise 3x3); features.1 (depthwise then pointwise, no expansion) apart.
MOBILENET_BLOCKS = ((16, 24, 112, 2), (24, 24, 56, 1), (24, 32, 56, 2), (32, 32, 28, 1), (32, 64, 28, 2),
                    (64, 64, 14, 1), (64, 96, 14, 1), (96, 160, 14, 2), (160, 160, 7, 1), (160, 320, 7, 1))
# ResNet-50 bottlenecks (1x1, 3x3 with the stage's stride, 1x1): (input channels, width, output
# channels, input size, stride); DeepLabV3 (output stride 8) keeps stride 1 and dilates its last
# two stages: (input channels, width, output channels, size, dilation).
RESNET_BOTTLENECKS = ((64, 64, 256, 56, 1), (256, 64, 256, 56, 1), (256, 128, 512, 56, 2), (512, 128, 512, 28, 1),
                      (512, 256, 1024, 28, 2), (1024, 256, 1024, 14, 1), (1024, 512, 2048, 14, 2),
                      (2048, 512, 2048, 7, 1))
DEEPLAB_BOTTLENECKS = ((512, 256, 1024, 28, 2), (1024, 256, 1024, 28, 2), (1024, 512, 2048, 28, 4),
                       (2048, 512, 2048, 28, 4))


def _conv(shape: str, c: int, k: int, hw: int, rs: int, stride: int, dilation: int, bits: dict[str, int]) -> dict[str, Any]:
    """A square layer with the usual 'same' padding of its filter's reach."""
    pad = dilation * (rs - 1) // 2
    out = (hw + 2 * pad - dilation * (rs - 1) - 1) // stride + 1
    dims = {"N": 1, "K": k, "C": c, "P": out, "Q": out, "R": rs, "S": rs}
    if shape == "depthwise":
        del dims["K"]
    return {"name": f"real.{shape}", "shape": shape, "dims": dims, "input_hw": [hw, hw],
            "stride": [stride, stride], "dilation": [dilation, dilation], "padding": [pad, pad], "bits": dict(bits)}


def _chain_bits(rng: Any, n: int) -> list[dict[str, int]]:
    """Per layer precisions, each layer's I the previous layer's O: int8 mostly, else any."""
    if rng.random() < 0.6:
        return [{"I": 8, "W": 8, "O": 8, "psum": 24} for _ in range(n)]
    acts = [int(choice(rng, (4, 6, 8, 12, 16))) for _ in range(n + 1)]
    return [{"I": acts[j], "W": int(choice(rng, (2, 3, 4, 8))), "O": acts[j + 1], "psum": 32} for j in range(n)]


def real_chain(rng: Any) -> list[dict[str, Any]]:
    """A chain of 3 real layers (or 2 of them: its first two or its last two)."""
    kind = choice(rng, ("mobilenet", "mobilenet", "resnet", "deeplab", "pair"))
    if kind == "mobilenet":
        if rng.random() < 0.15:  # features.1: depthwise 3x3 then pointwise, no expansion
            specs = [("depthwise", 32, 32, 112, 3, 1, 1), ("conv", 32, 16, 112, 1, 1, 1)]
        else:
            c, k, hw, st = choice(rng, MOBILENET_BLOCKS)
            out = (hw - 1) // st + 1
            specs = [("conv", c, 6 * c, hw, 1, 1, 1), ("depthwise", 6 * c, 6 * c, hw, 3, st, 1),
                     ("conv", 6 * c, k, out, 1, 1, 1)]
    elif kind in ("resnet", "deeplab"):
        if kind == "resnet":
            c, w, k, hw, st = choice(rng, RESNET_BOTTLENECKS)
            dil = 1
        else:
            c, w, k, hw, dil = choice(rng, DEEPLAB_BOTTLENECKS)
            st = 1
        out = (hw - 1) // st + 1
        specs = [("conv", c, w, hw, 1, 1, 1), ("conv", w, w, hw, 3, st, dil), ("conv", w, k, out, 1, 1, 1)]
    else:  # two or three 3x3 convolutions of one stage
        w, hw, dil = choice(rng, ((64, 56, 1), (128, 28, 1), (256, 14, 1), (512, 7, 1), (256, 28, 2), (512, 28, 4)))
        specs = [("conv", w, w, hw, 3, 1, dil)] * 3
    if len(specs) == 3 and rng.random() < 0.4:
        specs = specs[:2] if rng.random() < 0.5 else specs[1:]
    bits = _chain_bits(rng, len(specs))
    return [_conv(sh, c, k, hw, rs, st, dil, b) for (sh, c, k, hw, rs, st, dil), b in zip(specs, bits)]


def sample_fused_layer_tiles(rng: Any, real_share: float = 0.3) -> dict[str, Any]:
    """perf-model/f6-fused-layer-tiles: a small chain of 2 or 3 conv / depthwise layers (any
    filter, stride, dilation and padding, rows and columns apart) or, with ``real_share``, a real
    inverted residual block, bottleneck or pair of 3x3 convolutions (some dilated) at int8 or
    other precisions; any tile of the last output from 1 x 1 to the whole of it, either order,
    intermediates kept or not, one or two copies, a capacity anywhere around the room."""
    case = sample_small_chain(rng)
    if rng.random() >= real_share:
        return case
    layers = real_chain(rng)
    last = layers[-1]["dims"]
    r = rng.random()
    if r < 0.15:
        tile = {"P": 1, "Q": 1}
    elif r < 0.25:
        tile = {"P": last["P"], "Q": last["Q"]}
    else:
        tile = {"P": log_size(rng, last["P"]), "Q": log_size(rng, last["Q"])}
    case["layers"] = layers
    case["schedule"]["tile"] = tile
    weights = sum(wl["dims"]["R"] * wl["dims"]["S"] * wl["dims"]["C"] * wl["dims"].get("K", 1) for wl in layers)
    case["architecture"]["levels"][0]["capacity_bytes"] = log_size(rng, 4 * weights, max(1, weights // 8))
    return case


SAMPLERS = {
    "samplers_fused.fused_layer_tiles": sample_fused_layer_tiles,
}
