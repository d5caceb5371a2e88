"""perf-model references and generators: off-chip traffic and multi-level accounting.

Every problem takes ``(workload, architecture, mapping)`` in the format of
problems/perf-model/FORMAT.md; the counts come from :mod:`reference_models.pm_core`. Each
generator draws a small instance (a brute-force simulation finishes) by default and a real one
(a named real layer on a named real architecture) with ``real=True``.

Output keys of per-level maps are ``"<level name>.<tensor>"`` (every level, every tensor; 0
where a level bypasses the tensor) or the level name alone.
"""

from __future__ import annotations

from typing import Any, Sequence

from reference_models import pm_core, pm_shapes

from . import pm_draw

TENSORS = ("I", "W", "O")


def _nbytes(elements: int, bits: int) -> int:
    return -(-elements * bits // 8)


def _o_write_bytes(lv: dict[str, Any], bits: dict[str, int]) -> int:
    final = lv["O"]["final_updates"]
    return _nbytes(final, bits["O"]) + _nbytes(lv["O"]["updates"] - final, bits["psum"])


def _flat(res: dict[str, Any], action: str) -> dict[str, int]:
    return {f"{lv['name']}.{t}": lv[t][action] for lv in res["levels"] for t in TENSORS}


def _strip(arch: dict[str, Any], keep: Sequence[str] = ()) -> dict[str, Any]:
    """The architecture with only the fields a traffic problem uses."""
    out = {"name": arch["name"], "levels": []}
    for lv in arch["levels"]:
        entry = {"name": lv["name"], "capacity_bytes": lv["capacity_bytes"], "fanout": list(lv.get("fanout", [1, 1]))}
        for k in keep:
            if k in lv:
                entry[k] = lv[k]
        out["levels"].append(entry)
    return out


def _two_level(rng: Any) -> dict[str, Any]:
    cap, name = pm_draw._pick(rng, ((65536, "simba-like"), (131072, "eyeriss-like"), (524288, "nvdla-like"),
                                    (2097152, "large")))
    return {"name": f"{name}-buffer", "levels": [{"name": "GlobalBuffer", "capacity_bytes": cap, "fanout": [1, 1]},
                                                {"name": "DRAM", "capacity_bytes": None, "fanout": [1, 1]}]}


def _small_two_level() -> dict[str, Any]:
    return {"name": "small-2-level", "levels": [{"name": "Buffer", "capacity_bytes": 4096, "fanout": [1, 1]},
                                               {"name": "DRAM", "capacity_bytes": None, "fanout": [1, 1]}]}


def _bounded(rng: Any, draw, limit: int) -> dict[str, Any]:
    """Redraw a small case until its padded iteration space is at most ``limit``."""
    while True:
        case = draw()
        padded = 1
        for lv in case["mapping"]["levels"]:
            for key in ("temporal", "spatial_x", "spatial_y"):
                for _, f in lv.get(key, []):
                    padded *= f
        if padded <= limit:
            return case


def _largest_int(value: Any) -> int:
    if isinstance(value, dict):
        return max((_largest_int(v) for v in value.values()), default=0)
    if isinstance(value, (list, tuple)):
        return max((_largest_int(v) for v in value), default=0)
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _side_draw(rng: Any) -> float:
    """A uniform draw from a stream spawned off ``rng``: the case's own draws from ``rng`` stay as
    they were, so an option decided by it replaces some vectors and leaves the others alone."""
    return float(rng.spawn(1)[0].random())


def _split(rng: Any, wl: dict[str, Any], arch: dict[str, Any], mapping: dict[str, Any], p: float) -> dict[str, Any]:
    """``pm_draw.split_loops`` redrawn until the split mapping is valid (a split outermost loop
    can overshoot past spatial loops above it); the mapping as it was if none is."""
    for _ in range(20):
        out = pm_draw.split_loops(rng, wl, mapping, p)
        try:
            pm_core.parse(wl, arch, out)
        except ValueError:
            continue
        return out
    return mapping


def _past_int32(rng: Any, draw, reference, tries: int = 400) -> dict[str, Any]:
    """Redraw a case until some count of its answer reaches 2^31 (where 32-bit arithmetic breaks;
    the last draw otherwise)."""
    case: dict[str, Any] = {}
    for _ in range(tries):
        case = draw()
        if _largest_int(reference(**case)) >= 1 << 31:
            return case
    return case


def _batched(rng: Any, wl: dict[str, Any], batches: Sequence[int] = (1, 2, 4, 8)) -> dict[str, Any]:
    """A real conv layer at a batch of ``batches`` images (1 to 8 by default)."""
    if wl["shape"] in ("conv", "depthwise"):
        wl["dims"]["N"] = int(pm_draw._pick(rng, batches))
        wl["name"] += f".batch{wl['dims']['N']}"
    return wl


def _large_real(rng: Any, arch: dict[str, Any], groups: Sequence[str], reference, bypass_p: float = 0.2,
                imperfect_p: float = 0.35, spatial_p: float = 0.8) -> dict[str, Any]:
    """A real layer of ``groups`` (a conv at a batch of 1 to 8) on ``arch`` under any mapping,
    redrawn until some count of its answer reaches 2^31."""
    def big():
        wl = _batched(rng, pm_draw.real_layer(rng, groups))
        bypass = pm_draw.draw_bypass(rng, arch, bypass_p)
        return {"workload": wl, "architecture": arch,
                "mapping": pm_draw.draw_mapping(rng, wl, arch, bypass, imperfect_p=imperfect_p, spatial_p=spatial_p)}
    return _past_int32(rng, big, reference)


# ------------------------------------------------------------------------------------------
# F4: GEMM DRAM traffic on a buffer + DRAM hierarchy (elements)
# ------------------------------------------------------------------------------------------

def ref_gemm_dram_traffic(workload: dict, architecture: dict, mapping: dict) -> dict[str, int]:
    res = pm_core.analyze(workload, architecture, mapping)
    d = res["levels"][-1]
    return {"I_reads": d["I"]["reads"], "W_reads": d["W"]["reads"],
            "O_updates": d["O"]["updates"], "O_reads": d["O"]["reads"]}


def gen_gemm_dram_traffic(rng: Any, real: bool = False, groups: Sequence[str] = ("bert-base", "llama-prefill", "llama-decode"),
                          max_dim: int = 12, split: float = 0.0) -> dict[str, Any]:
    """``split``: the probability of splitting each temporal loop of a small instance into several
    loops of its dimension at its level (outer ones that overshoot: empty DRAM iterations)."""
    if real:
        wl = pm_draw.real_layer(rng, groups)
        arch = _two_level(rng)
        mapping = pm_draw.fitting_mapping(rng, wl, arch, imperfect_p=0.35, inner_cap=[512, 0])
        return {"workload": wl, "architecture": arch, "mapping": mapping}

    def draw():
        wl = pm_draw.small_gemm(rng, max_dim)
        arch = _small_two_level()
        mapping = pm_draw.draw_mapping(rng, wl, arch, imperfect_p=0.4)
        if split:
            mapping = _split(rng, wl, arch, mapping, split)
        return {"workload": wl, "architecture": arch, "mapping": mapping}
    return _bounded(rng, draw, 2000)


# ------------------------------------------------------------------------------------------
# F4: conv DRAM bytes (delta reuse, padding, partial sums) on a buffer + DRAM hierarchy
# ------------------------------------------------------------------------------------------

def ref_conv_dram_bytes(workload: dict, architecture: dict, mapping: dict) -> dict[str, int]:
    nest = pm_core.parse(workload, architecture, mapping)
    t = pm_core.offchip_traffic(nest)
    return {"I_read_bytes": t["I_read"], "W_read_bytes": t["W_read"],
            "O_write_bytes": t["O_write"], "O_read_bytes": t["O_read"]}


def gen_conv_dram_bytes(rng: Any, real: bool = False, groups: Sequence[str] = ("resnet50", "mobilenetv2-pw"),
                        split: float = 0.0, dilated: bool = False, large: float = 0.0) -> dict[str, Any]:
    """``split``: the probability of splitting each temporal loop of a small instance into several
    loops of its dimension at its level (outer ones may overshoot); ``dilated``: small layers
    may be dilated; ``large`` (with ``real``): the probability of a real layer (batch 1 to 8) under
    any mapping instead, one whose byte counts reach 2^31."""
    if real and large and _side_draw(rng) < large:
        arch = _two_level(rng)

        def big():
            wl = _batched(rng, pm_draw.real_layer(rng, groups))
            return {"workload": wl, "architecture": arch, "mapping": pm_draw.draw_mapping(rng, wl, arch, imperfect_p=0.3)}
        return _past_int32(rng, big, ref_conv_dram_bytes)
    if real:
        wl = pm_draw.real_layer(rng, groups)
        arch = _two_level(rng)
        mapping = pm_draw.fitting_mapping(rng, wl, arch, imperfect_p=0.2, inner_cap=[64, 0])
        return {"workload": wl, "architecture": arch, "mapping": mapping}

    def draw():
        wl = pm_draw.small_conv(rng, "conv", max_pq=6, dilated=dilated)
        arch = _small_two_level()
        mapping = pm_draw.draw_mapping(rng, wl, arch, imperfect_p=0.3)
        if split:
            mapping = _split(rng, wl, arch, mapping, split)
        return {"workload": wl, "architecture": arch, "mapping": mapping}
    return _bounded(rng, draw, 2000)


# ------------------------------------------------------------------------------------------
# F6: input tiles, fills and reads of strided / dilated convs on three levels
# ------------------------------------------------------------------------------------------

def ref_window_input_traffic(workload: dict, architecture: dict, mapping: dict) -> dict[str, Any]:
    res = pm_core.analyze(workload, architecture, mapping)
    lv = res["levels"]
    return {"I_tile": {x["name"]: x["tile"]["I"] for x in lv},
            "I_fills": {x["name"]: x["I"]["fills"] for x in lv},
            "I_reads": {x["name"]: x["I"]["reads"] for x in lv}}


def gen_window_input_traffic(rng: Any, real: bool = False,
                             groups: Sequence[str] = ("resnet50-strided", "deeplabv3-dilated"),
                             split: float = 0.0, large: float = 0.0) -> dict[str, Any]:
    """``split``: the probability of splitting each temporal loop of a small instance into several
    loops of its dimension at its level (outer ones may overshoot: empty iterations); ``large``
    (with ``real``): the probability of a real layer under any mapping instead, one whose counts
    reach 2^31."""
    if real and large and _side_draw(rng) < large:
        return _large_real(rng, _strip(pm_shapes.architecture("eyeriss-like")), groups, ref_window_input_traffic,
                           bypass_p=0.25, imperfect_p=0.25)
    if real:
        wl = pm_draw.real_layer(rng, groups)
        arch = _strip(pm_shapes.architecture("eyeriss-like"))
        mapping = pm_draw.fitting_mapping(
            rng, wl, arch, bypass=lambda r: pm_draw.draw_bypass(r, arch, 0.25),
            imperfect_p=0.2, inner_cap=[4, 16, 0], spatial_p=0.8)
        return {"workload": wl, "architecture": arch, "mapping": mapping}

    def draw():
        shape = "depthwise" if rng.random() < 0.25 else "conv"
        wl = pm_draw.small_conv(rng, shape, max_pq=5, max_c=2, max_k=2)
        arch = pm_draw.small_architecture(rng, 3, fanouts=[[1, 1], [int(rng.integers(1, 4)), int(rng.integers(1, 3))], [1, 1]])
        arch["levels"][0]["name"], arch["levels"][1]["name"] = "PEBuffer", "GlobalBuffer"
        bypass = pm_draw.draw_bypass(rng, arch, 0.25)
        mapping = pm_draw.draw_mapping(rng, wl, arch, bypass, imperfect_p=0.25)
        if split:
            mapping = _split(rng, wl, arch, mapping, split)
        return {"workload": wl, "architecture": arch, "mapping": mapping}
    return _bounded(rng, draw, 1500)


# ------------------------------------------------------------------------------------------
# F5: every count of a depthwise conv on a hierarchy with bypass
# ------------------------------------------------------------------------------------------

def ref_level_accesses(workload: dict, architecture: dict, mapping: dict) -> dict[str, Any]:
    res = pm_core.analyze(workload, architecture, mapping)
    return {"reads": _flat(res, "reads"), "fills": _flat(res, "fills"), "updates": _flat(res, "updates")}


def gen_depthwise_accesses(rng: Any, real: bool = False, groups: Sequence[str] = ("mobilenetv2-dw",),
                           archs: Sequence[str] = ("eyeriss-like", "nvdla-like"), split: float = 0.0) -> dict[str, Any]:
    """``split``: the probability of splitting each temporal loop of a small instance into several
    loops of its dimension at its level (outer ones may overshoot: empty iterations)."""
    if real:
        wl = pm_draw.real_layer(rng, groups)
        wl["dims"]["N"] = int(pm_draw._pick(rng, (4, 8, 16)))
        wl["name"] += f".batch{wl['dims']['N']}"
        arch = _strip(pm_shapes.architecture(str(pm_draw._pick(rng, archs))))
        caps = {3: [4, 32, 0], 4: [1, 4, 32, 0]}[len(arch["levels"])]
        mapping = pm_draw.fitting_mapping(
            rng, wl, arch, bypass=lambda r: pm_draw.draw_bypass(r, arch, 0.3),
            imperfect_p=0.2, inner_cap=caps, spatial_p=0.8)
        return {"workload": wl, "architecture": arch, "mapping": mapping}

    def draw():
        wl = pm_draw.small_conv(rng, "depthwise", max_pq=5, max_c=4)
        depth = int(rng.integers(3, 5))
        arch = pm_draw.small_architecture(rng, depth)
        bypass = pm_draw.draw_bypass(rng, arch, 0.35)
        mapping = pm_draw.draw_mapping(rng, wl, arch, bypass, imperfect_p=0.25)
        if split:
            mapping = _split(rng, wl, arch, mapping, split)
        return {"workload": wl, "architecture": arch, "mapping": mapping}
    return _bounded(rng, draw, 1500)


# ------------------------------------------------------------------------------------------
# F7: a five-level Simba-like hierarchy with X and Y fan-out at three levels
# ------------------------------------------------------------------------------------------

def _small_simba(rng: Any) -> dict[str, Any]:
    names = ("WeightReg", "PEBuffer", "PEInputBuffer", "GlobalBuffer", "DRAM")
    fans = ([1, 1], [1, int(rng.integers(1, 4))], [1, int(rng.integers(1, 3))], [int(rng.integers(2, 4)), 1], [1, 1])
    caps = ({"W": 1}, {"W": 64, "O": 16}, {"I": 64}, 256, None)
    return {"name": "small-simba-like", "levels": [{"name": n, "capacity_bytes": c, "fanout": list(f)}
                                                   for n, c, f in zip(names, caps, fans)]}


def gen_simba_accesses(rng: Any, real: bool = False,
                       groups: Sequence[str] = ("resnet50", "mobilenetv2-pw", "bert-base"),
                       split: float = 0.0, large: float = 0.0) -> dict[str, Any]:
    """``split``: the probability of splitting each temporal loop of a small instance into several
    loops of its dimension at its level (outer ones may overshoot: empty iterations); ``large``
    (with ``real``): the probability of a real layer (a ResNet-50 conv at batch 1 to 8, a Llama
    prefill projection) under any mapping instead, one whose counts reach 2^31."""
    if real and large and _side_draw(rng) < large:
        return _large_real(rng, _strip(pm_shapes.architecture("simba-like")), ("resnet50", "llama-prefill"),
                           ref_level_accesses, imperfect_p=0.25)
    if real:
        wl = pm_draw.real_layer(rng, groups)
        arch = _strip(pm_shapes.architecture("simba-like"))
        mapping = pm_draw.fitting_mapping(
            rng, wl, arch, bypass=lambda r: pm_draw.draw_bypass(r, arch, 0.2),
            imperfect_p=0.2, inner_cap=[1, 8, 16, 32, 0], spatial_p=0.9, fill_spatial=True)
        return {"workload": wl, "architecture": arch, "mapping": mapping}

    def draw():
        wl = pm_draw.small_conv(rng, "conv", max_pq=4, max_c=3, max_k=3) if rng.random() < 0.6 else pm_draw.small_gemm(rng, 6)
        arch = _small_simba(rng)
        bypass = pm_draw.draw_bypass(rng, arch, 0.2)
        mapping = pm_draw.draw_mapping(rng, wl, arch, bypass, imperfect_p=0.25, spatial_p=0.8)
        if split:
            mapping = _split(rng, wl, arch, mapping, split)
        return {"workload": wl, "architecture": arch, "mapping": mapping}
    return _bounded(rng, draw, 1200)


# ------------------------------------------------------------------------------------------
# F4: partial-sum traffic in bytes at every level that holds outputs
# ------------------------------------------------------------------------------------------

def ref_psum_traffic(workload: dict, architecture: dict, mapping: dict) -> dict[str, Any]:
    res = pm_core.analyze(workload, architecture, mapping)
    bits = workload["bits"]
    holders = [x for x in res["levels"] if "O" in x["keeps"]]
    lv = holders[1:]  # the levels outputs are written back into
    return {"O_complete": {x["name"]: x["O"]["final_updates"] for x in lv},
            "O_update_bytes": {x["name"]: _o_write_bytes(x, bits) for x in lv},
            "O_read_bytes": {x["name"]: _nbytes(x["O"]["reads"], bits["psum"]) for x in lv}}


def gen_psum_traffic(rng: Any, real: bool = False, groups: Sequence[str] = ("resnet50", "bert-base", "llama-prefill"),
                     archs: Sequence[str] = ("nvdla-like", "tpu-like", "simba-like"), split: float = 0.0,
                     large: float = 0.0) -> dict[str, Any]:
    """``split``: the probability of splitting each temporal loop of a small instance into several
    loops of its dimension at its level (outer ones may overshoot); ``large`` (with ``real``): the
    probability of a real layer under any mapping instead, one whose byte counts reach 2^31."""
    if real and large and _side_draw(rng) < large:
        arch = _strip(pm_shapes.architecture(str(pm_draw._pick(rng, archs))))

        def big():
            wl = _batched(rng, pm_draw.real_layer(rng, ("resnet50", "llama-prefill")))
            wl["bits"]["psum"] = int(pm_draw._pick(rng, (24, 32)))
            bypass = pm_draw.draw_bypass(rng, arch, 0.2)
            return {"workload": wl, "architecture": arch,
                    "mapping": pm_draw.draw_mapping(rng, wl, arch, bypass, imperfect_p=0.35, spatial_p=0.8)}
        return _past_int32(rng, big, ref_psum_traffic)
    if real:
        wl = pm_draw.real_layer(rng, groups)
        wl["bits"]["psum"] = int(pm_draw._pick(rng, (24, 32)))
        arch = _strip(pm_shapes.architecture(str(pm_draw._pick(rng, archs))))
        depth = len(arch["levels"])
        caps = {3: [1, 32, 0], 4: [1, 16, 64, 0], 5: [1, 8, 16, 32, 0]}[depth]
        mapping = pm_draw.fitting_mapping(
            rng, wl, arch, bypass=lambda r: pm_draw.draw_bypass(r, arch, 0.2),
            imperfect_p=0.35, inner_cap=caps, spatial_p=0.9, fill_spatial=True)
        return {"workload": wl, "architecture": arch, "mapping": mapping}

    def draw():
        wl = pm_draw.small_gemm(rng, 8) if rng.random() < 0.5 else pm_draw.small_conv(rng, "conv", max_pq=4)
        arch = pm_draw.small_architecture(rng, int(rng.integers(3, 5)))
        bypass = pm_draw.draw_bypass(rng, arch, 0.25)
        mapping = pm_draw.draw_mapping(rng, wl, arch, bypass, imperfect_p=0.45, spatial_p=0.7)
        if split:
            mapping = _split(rng, wl, arch, mapping, split)
        return {"workload": wl, "architecture": arch, "mapping": mapping}
    return _bounded(rng, draw, 1500)


# ------------------------------------------------------------------------------------------
# F5: weight-stationary projection GEMMs on systolic / NVDLA-like arrays
# ------------------------------------------------------------------------------------------

def ref_weight_stationary(workload: dict, architecture: dict, mapping: dict) -> dict[str, Any]:
    res = pm_core.analyze(workload, architecture, mapping)
    lv = res["levels"]
    return {"W_fills": {x["name"]: x["W"]["fills"] for x in lv},
            "I_reads": {x["name"]: x["I"]["reads"] for x in lv},
            "O_updates": {x["name"]: x["O"]["updates"] for x in lv},
            "O_reads": {x["name"]: x["O"]["reads"] for x in lv}}


def _weight_stationary(mapping: dict[str, Any], rng: Any) -> dict[str, Any]:
    """Make M the innermost temporal loop above the weight registers (weights stay while the
    rows of the activations stream past)."""
    levels = mapping["levels"]
    for lv in levels[1:]:
        ms = [lp for lp in lv["temporal"] if lp[0] == "M"]
        if ms and rng.random() < 0.85:
            lv["temporal"] = ms + [lp for lp in lv["temporal"] if lp[0] != "M"]
            break
    return mapping


def _small_array(rng: Any) -> dict[str, Any]:
    if rng.random() < 0.5:  # tpu-like: weight registers under an I / O buffer feeding an array
        return {"name": "small-tpu-like", "levels": [
            {"name": "WeightReg", "capacity_bytes": {"W": 2}, "fanout": [1, 1]},
            {"name": "UnifiedBuffer", "capacity_bytes": {"I": 1024, "O": 1024},
             "fanout": [int(rng.integers(2, 5)), int(rng.integers(2, 5))]},
            {"name": "DRAM", "capacity_bytes": None, "fanout": [1, 1]}]}
    return {"name": "small-nvdla-like", "levels": [
        {"name": "WeightReg", "capacity_bytes": {"W": 1}, "fanout": [1, 1]},
        {"name": "Accumulator", "capacity_bytes": {"O": 64}, "fanout": [int(rng.integers(2, 5)), 1]},
        {"name": "ConvBuffer", "capacity_bytes": 2048, "fanout": [1, int(rng.integers(2, 4))]},
        {"name": "DRAM", "capacity_bytes": None, "fanout": [1, 1]}]}


def gen_weight_stationary(rng: Any, real: bool = False, groups: Sequence[str] = ("bert-base", "llama-prefill", "llama-decode"),
                          archs: Sequence[str] = ("tpu-like", "nvdla-like"), split: float = 0.0) -> dict[str, Any]:
    """``split``: the probability of splitting each temporal loop of a small instance into several
    loops of its dimension at its level (outer ones may overshoot: empty iterations)."""
    if real:
        wl = pm_draw.real_layer(rng, groups)
        arch = _strip(pm_shapes.architecture(str(pm_draw._pick(rng, archs))))
        depth = len(arch["levels"])
        caps = {3: [1, 64, 0], 4: [1, 16, 64, 0]}[depth]
        spatial = {3: [[], ["N", "K"], []], 4: [[], ["K"], ["N"], []]}[depth]
        mapping = pm_draw.fitting_mapping(
            rng, wl, arch, imperfect_p=0.2, inner_cap=caps, spatial_p=0.95, fill_spatial=True, spatial_dims=spatial)
        return {"workload": wl, "architecture": arch, "mapping": _weight_stationary(mapping, rng)}

    def draw():
        wl = pm_draw.small_gemm(rng, 8)
        arch = _small_array(rng)
        depth = len(arch["levels"])
        spatial = {3: [[], ["N", "K", "M"], []], 4: [[], ["K", "M"], ["N", "M"], []]}[depth]
        mapping = pm_draw.draw_mapping(rng, wl, arch, pm_draw.forced_bypass(arch), imperfect_p=0.3,
                                       spatial_p=0.8, spatial_dims=spatial)
        if split:
            mapping = _split(rng, wl, arch, mapping, split)
        return {"workload": wl, "architecture": arch, "mapping": _weight_stationary(mapping, rng)}
    return _bounded(rng, draw, 1500)


# ------------------------------------------------------------------------------------------
# F15: attention with a KV cache (grouped heads), off-chip bytes
# ------------------------------------------------------------------------------------------

def gen_attention_dram_bytes(rng: Any, real: bool = False, groups: Sequence[str] = ("attention-decode", "attention-prefill"),
                             archs: Sequence[str] = ("tpu-like", "nvdla-like", "simba-like"),
                             split: float = 0.0, odd_bits: bool = False, large: bool = False) -> dict[str, Any]:
    """``split``: as for :func:`gen_conv_dram_bytes` (small instances); ``odd_bits``: outputs and
    partial sums at precisions that end inside a byte; ``large`` (with ``real``): redrawn until
    some byte count reaches 2^31."""
    def bits() -> dict[str, int]:
        if odd_bits:
            o = int(pm_draw._pick(rng, (3, 5, 12)))
            return {"I": 16, "W": int(pm_draw._pick(rng, (4, 8, 16))), "O": o, "psum": int(pm_draw._pick(rng, (o + 1, 20, 28)))}
        return {"I": 16, "W": int(pm_draw._pick(rng, (8, 16))), "O": 16, "psum": 32}
    if real:
        def real_case():
            wl = pm_draw.real_layer(rng, groups, bits())
            arch = _strip(pm_shapes.architecture(str(pm_draw._pick(rng, archs))))
            depth = len(arch["levels"])
            caps = {3: [1, 64, 0], 4: [1, 16, 64, 0], 5: [1, 8, 16, 32, 0]}[depth]
            mapping = pm_draw.fitting_mapping(
                rng, wl, arch, bypass=lambda r: pm_draw.draw_bypass(r, arch, 0.15),
                imperfect_p=0.25, inner_cap=caps, spatial_p=0.9, fill_spatial=True)
            return {"workload": wl, "architecture": arch, "mapping": mapping}
        return _past_int32(rng, real_case, ref_conv_dram_bytes) if large else real_case()

    def draw():
        wl = pm_draw.small_bmm(rng)
        wl["bits"] = bits()
        arch = pm_draw.small_architecture(rng, int(rng.integers(2, 4)))
        bypass = pm_draw.draw_bypass(rng, arch, 0.2)
        mapping = pm_draw.draw_mapping(rng, wl, arch, bypass, imperfect_p=0.3)
        if split:
            mapping = _split(rng, wl, arch, mapping, split)
        return {"workload": wl, "architecture": arch, "mapping": mapping}
    return _bounded(rng, draw, 1500)


REFERENCES: dict = {
    "pm_traffic.gemm_dram_traffic": ref_gemm_dram_traffic,
    "pm_traffic.conv_dram_bytes": ref_conv_dram_bytes,
    "pm_traffic.window_input_traffic": ref_window_input_traffic,
    "pm_traffic.level_accesses": ref_level_accesses,
    "pm_traffic.psum_traffic": ref_psum_traffic,
    "pm_traffic.weight_stationary": ref_weight_stationary,
    "pm_traffic.attention_dram_bytes": ref_conv_dram_bytes,
}

GENERATORS: dict = {
    "pm_traffic.gemm_dram_traffic": gen_gemm_dram_traffic,
    "pm_traffic.conv_dram_bytes": gen_conv_dram_bytes,
    "pm_traffic.window_input_traffic": gen_window_input_traffic,
    "pm_traffic.depthwise_accesses": gen_depthwise_accesses,
    "pm_traffic.simba_accesses": gen_simba_accesses,
    "pm_traffic.psum_traffic": gen_psum_traffic,
    "pm_traffic.weight_stationary": gen_weight_stationary,
    "pm_traffic.attention_dram_bytes": gen_attention_dram_bytes,
}
