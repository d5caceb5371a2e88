"""Domain samplers of the perf-model pack for the end-to-end problems (F18).

Written from each problem's spec, the pack's FORMAT.md and the problem's ``[[domain]]`` rules
alone, sharing no code with the generators (the validator checks it). A case is a layer, one of
the named architectures (its levels' names fixed by the domain, their capacities, fanouts and
multiple buffering drawn: the real design's figures, small ones, or anything), any mapping the
format allows (several loops of a dimension at one level, factor-1 loops, ragged tiles,
overshooting outer loops, bypass, spatial loops at every level that fans out), capacities near
what the mapping needs (exact fits, a little short) or anywhere, and any per-block energy and
bandwidth tables. ``sample(rng, **options) -> {parameter: value}``.
"""

from __future__ import annotations

from typing import Any

from .samplers_mapping import (ATTENTION, PROJECTIONS, choice, draw_bandwidth, draw_bits, draw_conv, draw_mapping,
                               estimate_room, log_size, near_capacities)
from .samplers_system import energy_table

TENSORS = ("I", "W", "O")


def _level(name: str, cap: Any, fan: list[int], copies: int = 1) -> dict[str, Any]:
    lv: dict[str, Any] = {"name": name, "capacity_bytes": cap, "fanout": list(fan)}
    if copies != 1:
        lv["multiple_buffering"] = copies
    return lv


def _copies(rng: Any, p: float = 0.3) -> int:
    return int(choice(rng, (1, 2, 2, 3))) if rng.random() < p else 1


def _any_capacity(rng: Any, cap: Any) -> Any:
    """Now and then, any capacity in place of the design's: shared, or partitions (a missing
    one makes the tensor bypass the level)."""
    if rng.random() >= 0.15:
        return cap
    if rng.random() < 0.5:
        return log_size(rng, 1 << 20)
    return {t: log_size(rng, 1 << 16) for t in TENSORS if rng.random() < 0.8} or {"O": log_size(rng, 64)}


def _finish(rng: Any, wl: dict[str, Any], arch: dict[str, Any], bypass_p: float, spatial_p: float) -> dict[str, Any]:
    """A mapping of ``wl`` on ``arch``, capacities near its need or anywhere, the two tables."""
    mapping = draw_mapping(rng, wl, arch, bypass_p=bypass_p, spatial_p=spatial_p)
    if rng.random() < 0.75:
        near_capacities(rng, arch, estimate_room(wl, arch, mapping))
        for lv in arch["levels"][:-1]:  # no capacity of zero bytes
            cap = lv["capacity_bytes"]
            lv["capacity_bytes"] = {t: max(1, c) for t, c in cap.items()} if isinstance(cap, dict) else max(1, cap)
    return {"workload": wl, "architecture": arch, "mapping": mapping, "energy": energy_table(rng, arch),
            "bandwidth": draw_bandwidth(rng, arch)}


# ------------------------------------------------------------------------------------------
# a Llama decode step on a TPU-like or NVDLA-like array
# ------------------------------------------------------------------------------------------

def _decode_workload(rng: Any, real_share: float) -> dict[str, Any]:
    """A projection of 1 to 16 tokens (Llama-2-7B / Llama-3-8B, or small) or an attention product
    against a KV cache (Llama or small: one query token mostly, several query heads per key/value
    head now and then), at any precisions."""
    real = rng.random() < real_share
    if rng.random() < 0.5:
        if real:
            k, n = choice(rng, [p for p in PROJECTIONS if max(p) >= 4096])
            dims = {"M": int(choice(rng, (1, 8, 16))), "N": n, "K": k}
        else:
            dims = {"M": log_size(rng, 16), "N": log_size(rng, int(choice(rng, (8, 40, 300)))),
                    "K": log_size(rng, int(choice(rng, (8, 40, 300))))}
        return {"name": "sampled.gemm", "shape": "gemm", "dims": dims, "bits": draw_bits(rng)}
    if real:
        b, g, h, _, n, k = choice(rng, [a for a in ATTENTION if a[3] == 1 and a[1] != 12])
        kv = int(choice(rng, (1024, 2048, 4096, 8192)))
        b = int(choice(rng, (1, 1, 8, 16))) if b == 1 else b
        n, k = (kv, k) if n > k else (k, kv)
        if rng.random() < 0.5:  # the other product: scores <-> context
            n, k = k, n
        dims = {"B": b, "G": g, "H": h, "M": 1, "N": n, "K": k}
    else:
        dims = {"B": log_size(rng, 4), "G": log_size(rng, 6), "H": log_size(rng, 6) if rng.random() < 0.6 else 1,
                "M": 1 if rng.random() < 0.7 else log_size(rng, 8), "N": log_size(rng, int(choice(rng, (8, 40)))),
                "K": log_size(rng, int(choice(rng, (8, 40))))}
    return {"name": "sampled.bmm", "shape": "bmm", "dims": dims, "bits": draw_bits(rng)}


def _decode_architecture(rng: Any, big: bool) -> dict[str, Any]:
    """The TPU-like levels (WeightReg, UnifiedBuffer, DRAM) or the NVDLA-like ones (WeightReg,
    Accumulator, ConvBuffer, DRAM): the design's partitions, or any capacity now and then; any
    fanouts (up to a 128 x 128 array); multiple buffering anywhere on chip."""
    top = 128 if big else 6
    dram = _level("DRAM", None, [1, 1])
    reg = {"W": int(choice(rng, (1, 1, 2, 4)))}
    if rng.random() < 0.5:
        fan = [log_size(rng, top), log_size(rng, top)] if rng.random() < 0.85 else [1, log_size(rng, top)]
        levels = [_level("WeightReg", _any_capacity(rng, reg), [1, 1], _copies(rng, 0.5)),
                  _level("UnifiedBuffer", _any_capacity(rng, {"I": log_size(rng, 1 << 24), "O": log_size(rng, 1 << 22)}),
                         fan, _copies(rng)), dram]
        return {"name": "sampled-tpu-like", "levels": levels}
    lanes = [log_size(rng, top), 1] if rng.random() < 0.85 else [log_size(rng, top), log_size(rng, 4)]
    levels = [_level("WeightReg", _any_capacity(rng, reg), [1, 1], _copies(rng, 0.2)),
              _level("Accumulator", _any_capacity(rng, {"O": log_size(rng, 1 << 12)}), lanes, _copies(rng, 0.2)),
              _level("ConvBuffer", _any_capacity(rng, log_size(rng, 1 << 20)), [1, log_size(rng, 32 if big else 6)],
                     _copies(rng)), dram]
    return {"name": "sampled-nvdla-like", "levels": levels}


def sample_llama_decode(rng: Any, real_share: float = 0.2) -> dict[str, Any]:
    """perf-model/f18-llama-decode-end-to-end: a decode projection or attention product (real
    Llama or small, any precisions) on the TPU-like or NVDLA-like levels, any mapping, capacities
    near its need or anywhere, any energy and bandwidth tables."""
    wl = _decode_workload(rng, real_share)
    arch = _decode_architecture(rng, big=rng.random() < 0.4)
    return _finish(rng, wl, arch, bypass_p=0.1, spatial_p=0.8)


# ------------------------------------------------------------------------------------------
# a ResNet-50 convolution on the four Eyeriss-like levels
# ------------------------------------------------------------------------------------------

def sample_resnet_eyeriss(rng: Any, real_share: float = 0.2) -> dict[str, Any]:
    """perf-model/f18-resnet-eyeriss-end-to-end: a convolution (ResNet-50 at a batch of 1 to 256
    images, or small with any stride, dilation and padding, rows and columns apart) on RF
    (partitions), ColumnBuffer (fanning out along Y), GLB (along X) and DRAM, or any fanouts and
    capacities now and then; any mapping, capacities near its need or anywhere, any energy and
    bandwidth tables."""
    real = rng.random() < real_share
    wl = draw_conv(rng, "conv", scale=int(choice(rng, (3, 6, 12))), real_share=1.0 if real else 0.0, groups=("resnet50",))
    if real:  # any batch: the spec names none (one image when served, hundreds when trained)
        wl["dims"]["N"] = int(choice(rng, (1, 1, 2, 4, 8, 16, 32, 64, 128, 256)))
    big = rng.random() < 0.4
    anyfan = rng.random() < 0.2
    fans = ([[1, 1], [1, log_size(rng, 12 if big else 4)], [log_size(rng, 14 if big else 4), 1]] if not anyfan else
            [[log_size(rng, 4), log_size(rng, 4)] if rng.random() < 0.3 else [1, 1],
             [log_size(rng, 8), log_size(rng, 8)], [log_size(rng, 8), log_size(rng, 8)]])
    caps = [{"I": log_size(rng, 64), "W": log_size(rng, 512), "O": log_size(rng, 64)}, log_size(rng, 4096),
            log_size(rng, 1 << 18)]
    levels = [_level(n, _any_capacity(rng, c), f, _copies(rng, 0.5 if n == "GLB" else 0.2))
              for n, c, f in zip(("RF", "ColumnBuffer", "GLB"), caps, fans)]
    arch = {"name": "sampled-eyeriss-like-4level", "levels": levels + [_level("DRAM", None, [1, 1])]}
    return _finish(rng, wl, arch, bypass_p=0.25, spatial_p=0.8)


SAMPLERS = {
    "samplers_e2e.llama_decode": sample_llama_decode,
    "samplers_e2e.resnet_eyeriss": sample_resnet_eyeriss,
}
