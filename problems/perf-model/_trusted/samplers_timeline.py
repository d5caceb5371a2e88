"""Domain samplers of the perf-model pack for the attention, pipeline and systolic timeline problems
(F11, F15, F17).

Written from each problem's spec, the pack's FORMAT.md and the problem's ``[[domain]]`` rules
alone, sharing no code with the generators (the validator checks it): the layers, hierarchies and
mappings come from the format-wide sampler of :mod:`.samplers_mapping` (several loops of a
dimension per level, factor-1 loops, ragged tiles and overshooting outer loops, bypass and fan-out
at any on-chip level), the attention shapes from the networks the specs name.
``sample(rng, **options) -> {parameter: value}``.
"""

from __future__ import annotations

from typing import Any

from .samplers_mapping import TENSORS, choice, draw_architecture, draw_bypass, draw_case, draw_mapping, draw_workload, log_size


def odd_bits(rng: Any) -> dict[str, int]:
    """Precisions that end inside a byte as often as not (the spec bounds none)."""
    o = int(choice(rng, (3, 4, 5, 7, 8, 12, 16)))
    return {"I": int(choice(rng, (1, 3, 4, 6, 8, 12, 16))), "W": int(choice(rng, (1, 2, 3, 4, 5, 8, 16))), "O": o,
            "psum": int(choice(rng, [b for b in (o, o + 1, 13, 20, 24, 28, 32) if b >= o]))}


# ------------------------------------------------------------------------------------------
# F15: attention with a KV cache (grouped heads), off-chip bytes
# ------------------------------------------------------------------------------------------

def sample_kv_cache_attention_bytes(rng: Any, real_share: float = 0.25) -> dict[str, Any]:
    """perf-model/f15-kv-cache-attention-bytes: a score or context product (BERT-base, Llama-2-7B
    and Llama-3-8B decode against a long cache or prefill, or a small one with several query heads
    per key/value head) at any precisions, on two to five levels with bypass and fan-out at any
    on-chip level, any mapping the format allows."""
    case = draw_case(rng, ("bmm",), (2, 3, 3, 4, 5), scale=int(choice(rng, (6, 12, 24))), real_share=real_share,
                     bypass_p=0.25, spatial_p=0.6)
    if rng.random() < 0.35:
        case["workload"]["bits"] = odd_bits(rng)
    return case


# ------------------------------------------------------------------------------------------
# F17: a layer streamed through a multiple-buffered global buffer
# ------------------------------------------------------------------------------------------

def _one_dram_loop_per_dim(workload: dict[str, Any], mapping: dict[str, Any]) -> None:
    """Leave DRAM at most one loop above 1 per dimension: the first one of a dimension takes the
    fewest iterations that cover its size over the loops below DRAM, the others become 1."""
    levels = mapping["levels"]
    seen = set()
    for loop in levels[-1]["temporal"]:
        d = loop[0]
        if d in seen:
            loop[1] = 1
            continue
        seen.add(d)
        below = 1
        for lv in levels[:-1]:
            for key in ("temporal", "spatial_x", "spatial_y"):
                for e, f in lv.get(key, []):
                    if e == d:
                        below *= f
        loop[1] = -(-workload["dims"][d] // below)


def _dram_iterations(mapping: dict[str, Any]) -> int:
    n = 1
    for _, f in mapping["levels"][-1]["temporal"]:
        n *= f
    return n


def sample_double_buffered_pipeline(rng: Any, real_share: float = 0.2, most_iterations: int = 6000) -> dict[str, Any]:
    """perf-model/f17-double-buffered-pipeline: a conv, depthwise conv or GEMM (ResNet-50,
    MobileNetV2, BERT-base and Llama projections, or small with any stride, dilation, padding and
    precisions) on two to four levels; the global buffer (the level inside DRAM) holds every
    tensor with one, two or three slots, the levels inside it bypass and fan out at will; DRAM has
    a port of 1 to 64 bytes a cycle, no spatial loop and at most one loop above 1 per dimension
    (ragged and single-iteration ones, factor-1 loops beside them). Up to ``most_iterations``
    DRAM iterations (a real layer's schedule, tiled)."""
    for _ in range(400):
        wl = draw_workload(rng, ("conv", "depthwise", "gemm"), scale=int(choice(rng, (3, 5, 8))), real_share=real_share)
        depth = int(choice(rng, (2, 3, 3, 4)))
        arch = draw_architecture(rng, depth, fanout_top=int(choice(rng, (4, 16))))
        glb = arch["levels"][-2]
        if isinstance(glb["capacity_bytes"], dict):  # the global buffer holds I, W and O
            glb["capacity_bytes"] = {t: glb["capacity_bytes"].get(t, log_size(rng, 1 << 20)) for t in TENSORS}
        glb["multiple_buffering"] = int(choice(rng, (1, 2, 3)))
        arch["levels"][-1]["bytes_per_cycle"] = log_size(rng, 64)
        if rng.random() < 0.2:  # fields that change nothing here
            for lv in arch["levels"][:-1]:
                lv["bytes_per_cycle"] = log_size(rng, 256)
        bypass = draw_bypass(rng, arch, 0.3)
        bypass[-2] = []
        mapping = draw_mapping(rng, wl, arch, bypass=bypass, spatial_p=0.6)
        dram = mapping["levels"][-1]
        for key in ("spatial_x", "spatial_y"):
            dram.pop(key, None)
        _one_dram_loop_per_dim(wl, mapping)
        if _dram_iterations(mapping) <= most_iterations:
            return {"workload": wl, "architecture": arch, "mapping": mapping}
    raise AssertionError("no schedule short enough drawn")  # pragma: no cover


SAMPLERS = {
    "samplers_timeline.kv_cache_attention_bytes": sample_kv_cache_attention_bytes,
    "samplers_timeline.double_buffered_pipeline": sample_double_buffered_pipeline,
}
