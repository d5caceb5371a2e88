"""perf-model references and generators: energy, cycles, bandwidth-throttled latency, dataflow
comparison and end-to-end evaluation of a layer on an accelerator.

Every problem takes ``(workload, architecture, mapping)`` in the format of
problems/perf-model/FORMAT.md and, where it needs them, two more tables, each one entry per
architecture level in the same order (innermost first):

* ``energy``: ``{"mac_pj": e, "levels": [{"name", "block_words": {t: n}, "read_pj": {t: e},
  "fill_pj": {t: e}, "update_pj": e}]}`` -- a level moves words of a tensor in blocks of
  ``block_words[t]`` words; the words one level moves of one tensor by one action over the whole
  layer (all instances together) make the fewest blocks that hold them, and each block costs the
  action's energy (``update_pj`` only where the level can hold outputs); every real MAC costs
  ``mac_pj``.
* ``bandwidth``: ``{"levels": [{"name", "read_words_per_cycle", "write_words_per_cycle",
  "shared_words_per_cycle"}]}`` -- the whole level's (all instances together) read port (reads of
  every tensor), write port (fills and updates) and, when not null, both together. Data movement
  overlaps the compute completely: a level needs the fewest whole cycles in which its ports can
  move its words; the layer takes the largest of that and the compute cycles.

Compute cycles (:func:`cycle_stats`): the time steps of the schedule in which at least one MAC
unit has a real MAC (a step with none is skipped: the loop controller cuts a ragged last
iteration short). Counted in closed form: a step has a real MAC exactly when, for every
dimension, its temporal digits with every spatial digit at zero give a real index, so the count
is a product over dimensions of per-dimension counts of temporal digit combinations (likewise
the busy instances of each level and the full steps).

The counts of reads, fills and updates come from :mod:`reference_models.pm_core`. Each generator
draws a small instance (a brute-force simulation finishes) by default and a real one (a named
real layer on a named real architecture) with ``real=True``.
"""

from __future__ import annotations

import copy
from typing import Any, Sequence

import numpy as np

from reference_models import pm_core, pm_shapes

from . import pm_draw, pm_traffic

TENSORS = ("I", "W", "O")
ACTIONS = ("reads", "fills", "updates")
DATAFLOWS = ("input_stationary", "output_stationary", "weight_stationary")

# ------------------------------------------------------------------------------------------
# architectures and their energy / bandwidth tables
# ------------------------------------------------------------------------------------------

# An Eyeriss-like array in four storage levels, after the eyeriss_like design of
# timeloop-accelergy-exercises: a per-PE RF with separate input / weight / partial-sum
# scratchpads, a per-column buffer feeding the 12 PEs of a column (Y), a 128 KiB double-buffered
# global buffer feeding 14 columns (X), DRAM.
EYERISS4: dict[str, Any] = {
    "name": "eyeriss-like-4level",
    "levels": [
        {"name": "RF", "capacity_bytes": {"I": 12, "W": 192, "O": 32}, "fanout": [1, 1]},
        {"name": "ColumnBuffer", "capacity_bytes": 1024, "fanout": [1, 12]},
        {"name": "GLB", "capacity_bytes": 131072, "fanout": [14, 1], "multiple_buffering": 2},
        {"name": "DRAM", "capacity_bytes": None, "fanout": [1, 1]},
    ],
}


def _cost(name: str, tensors: str, block: Any, read: Any, fill: Any, update: float | None = None) -> dict[str, Any]:
    """One level's energy entry; ``block``, ``read``, ``fill`` are one number for every tensor
    listed or a dict per tensor."""
    def per(v: Any) -> dict[str, Any]:
        return {t: (v[t] if isinstance(v, dict) else v) for t in tensors}
    out: dict[str, Any] = {"name": name, "block_words": per(block), "read_pj": per(read), "fill_pj": per(fill)}
    if "O" in tensors:
        out["update_pj"] = update
    return out


# Per-block energies (pJ): the RF, GLB and DRAM figures follow the Accelergy tables the
# eyeriss_like and simba_like examples print (65 nm / 45 nm, LPDDR4 DRAM with a 64-bit port);
# the others are round values of the right order. Illustrative, not measurements.
ENERGY: dict[str, dict[str, Any]] = {
    "eyeriss-like-4level": {"mac_pj": 0.208, "levels": [
        _cost("RF", "IWO", {"I": 2, "W": 2, "O": 1}, {"I": 0.202, "W": 1.977, "O": 0.251},
              {"I": 0.177, "W": 1.882, "O": 0.219}, 0.219),
        _cost("ColumnBuffer", "IWO", 4, 1.35, 1.52, 1.52),
        _cost("GLB", "IWO", 8, 18.184, 14.138, 14.138),
        _cost("DRAM", "IWO", 8, 512.0, 512.0, 512.0),
    ]},
    "eyeriss-like": {"mac_pj": 0.208, "levels": [
        _cost("RF", "IWO", {"I": 2, "W": 2, "O": 1}, {"I": 0.202, "W": 1.977, "O": 0.251},
              {"I": 0.177, "W": 1.882, "O": 0.219}, 0.219),
        _cost("GLB", "IWO", 8, 18.184, 14.138, 14.138),
        _cost("DRAM", "IWO", 8, 512.0, 512.0, 512.0),
    ]},
    "simba-like": {"mac_pj": 0.25, "levels": [
        _cost("WeightReg", "W", 1, 0.05, 0.06),
        _cost("PEBuffer", "WO", {"W": 8, "O": 1}, {"W": 12.14, "O": 3.091}, {"W": 12.08, "O": 2.875}, 2.875),
        _cost("PEInputBuffer", "I", 8, 24.21, 24.15),
        _cost("GlobalBuffer", "IWO", 32, 51.871, 66.311, 66.311),
        _cost("DRAM", "IWO", 8, 512.0, 512.0, 512.0),
    ]},
    "tpu-like": {"mac_pj": 0.2, "levels": [
        _cost("WeightReg", "W", 1, 0.03, 0.03),
        _cost("UnifiedBuffer", "IO", {"I": 32, "O": 8}, {"I": 38.0, "O": 14.0}, {"I": 41.0, "O": 15.5}, 15.5),
        _cost("DRAM", "IWO", 8, 480.0, 480.0, 480.0),
    ]},
    "nvdla-like": {"mac_pj": 0.25, "levels": [
        _cost("WeightReg", "W", 1, 0.04, 0.04),
        _cost("Accumulator", "O", 1, 0.9, 1.0, 1.0),
        _cost("ConvBuffer", "IWO", 32, 28.0, 30.0, 30.0),
        _cost("DRAM", "IWO", 8, 512.0, 512.0, 512.0),
    ]},
}


def _bw(name: str, read: int, write: int, shared: int | None = None) -> dict[str, Any]:
    return {"name": name, "read_words_per_cycle": read, "write_words_per_cycle": write,
            "shared_words_per_cycle": shared}


# Words per cycle of each whole level (all its instances together): per-instance port widths
# times the instances the design has (RF: 2 words per PE; a 64-bit DRAM port of 8-bit words).
BANDWIDTH: dict[str, dict[str, Any]] = {
    "eyeriss-like-4level": {"levels": [_bw("RF", 336, 336), _bw("ColumnBuffer", 56, 56), _bw("GLB", 16, 16),
                                       _bw("DRAM", 8, 8, 8)]},
    "eyeriss-like": {"levels": [_bw("RF", 336, 336), _bw("GLB", 16, 16), _bw("DRAM", 8, 8, 8)]},
    "simba-like": {"levels": [_bw("WeightReg", 256, 256), _bw("PEBuffer", 512, 512), _bw("PEInputBuffer", 128, 128),
                              _bw("GlobalBuffer", 32, 32, 48), _bw("DRAM", 8, 8, 8)]},
    "tpu-like": {"levels": [_bw("WeightReg", 16384, 16384), _bw("UnifiedBuffer", 256, 256), _bw("DRAM", 32, 32, 32)]},
    "nvdla-like": {"levels": [_bw("WeightReg", 1024, 1024), _bw("Accumulator", 1024, 1024), _bw("ConvBuffer", 128, 128),
                              _bw("DRAM", 32, 32, 32)]},
}


def architecture(name: str) -> dict[str, Any]:
    """A real architecture in the format's fields only (no per-byte energies or bandwidths)."""
    arch = copy.deepcopy(EYERISS4) if name == EYERISS4["name"] else pm_shapes.architecture(name)
    out = {"name": arch["name"], "levels": []}
    for lv in arch["levels"]:
        entry = {"name": lv["name"], "capacity_bytes": lv["capacity_bytes"], "fanout": list(lv.get("fanout", [1, 1]))}
        if lv.get("multiple_buffering", 1) != 1:
            entry["multiple_buffering"] = lv["multiple_buffering"]
        out["levels"].append(entry)
    return out


# ------------------------------------------------------------------------------------------
# the models on top of the counts
# ------------------------------------------------------------------------------------------

def _ceil(a: int, b: int) -> int:
    return -(-a // b)


def _sums(pairs: Sequence[tuple[int, int]]) -> np.ndarray:
    """Every value of sum(digit x stride) over the digits of loops (factor, stride), sorted."""
    s = np.zeros(1, dtype=np.int64)
    for f, st in pairs:
        s = (s[:, None] + np.arange(f, dtype=np.int64)[None, :] * st).ravel()
    return np.sort(s)


def _count_below(a: np.ndarray, b: np.ndarray, bound: int) -> int:
    """Pairs (x in a, y in b) with x + y < bound (b sorted)."""
    return int(np.searchsorted(b, bound - a, side="left").sum())


def cycle_stats(nest: pm_core.Nest) -> dict[str, Any]:
    """Compute cycles (steps with a real MAC), full cycles (steps in which every MAC unit the
    spatial loops reach has a real MAC) and, per level, busy instance-cycles (pairs of a cycle
    and an instance of the level with at least one real MAC under it)."""
    cycles, full = 1, 1
    busy = [1] * nest.depth
    for d in nest.dims:
        mine = nest.dim_loops(d)
        bound = nest.bounds[d]
        temporal = _sums([(nest.loops[i].factor, nest.strides[i]) for i in mine if not nest.loops[i].spatial])
        span = sum((nest.loops[i].factor - 1) * nest.strides[i] for i in mine if nest.loops[i].spatial)
        cycles *= int((temporal < bound).sum())
        full *= int((temporal + span < bound).sum())
        for lv in range(nest.depth):
            above = _sums([(nest.loops[i].factor, nest.strides[i]) for i in mine
                           if nest.loops[i].spatial and nest.loops[i].level > lv])
            busy[lv] *= _count_below(temporal, above, bound)
    return {"cycles": cycles, "full_cycles": full, "busy": busy}


def level_energy(levels: Sequence[dict[str, Any]], energy: dict[str, Any]) -> list[float]:
    """Per level: the sum over tensors and actions of blocks x energy per block."""
    out = []
    for lv, cost in zip(levels, energy["levels"]):
        total = 0.0
        for t in TENSORS:
            for action in ACTIONS:
                words = lv[t][action]
                if not words:
                    continue
                pj = cost["update_pj"] if action == "updates" else cost["read_pj" if action == "reads" else "fill_pj"][t]
                total += _ceil(words, int(cost["block_words"][t])) * float(pj)
        out.append(total)
    return out


def level_traffic(lv: dict[str, Any]) -> tuple[int, int]:
    """(words read, words written) of one level: reads of every tensor; fills and updates."""
    reads = sum(lv[t]["reads"] for t in TENSORS)
    writes = sum(lv[t]["fills"] + lv[t]["updates"] for t in TENSORS)
    return reads, writes


def bandwidth_cycles(levels: Sequence[dict[str, Any]], bandwidth: dict[str, Any]) -> list[int]:
    """Per level: the fewest whole cycles in which its ports move its words."""
    out = []
    for lv, bw in zip(levels, bandwidth["levels"]):
        reads, writes = level_traffic(lv)
        need = max(_ceil(reads, int(bw["read_words_per_cycle"])), _ceil(writes, int(bw["write_words_per_cycle"])))
        if bw.get("shared_words_per_cycle") is not None:
            need = max(need, _ceil(reads + writes, int(bw["shared_words_per_cycle"])))
        out.append(need)
    return out


def throttled(compute: int, level_cycles: Sequence[int], names: Sequence[str]) -> tuple[int, str]:
    """(cycles, bottleneck): the largest of compute and level cycles; "compute" when compute
    reaches it, otherwise the innermost level that does."""
    total = max([compute, *level_cycles])
    if total == compute:
        return total, "compute"
    return total, next(n for n, c in zip(names, level_cycles) if c == total)


def dram_bytes(nest: pm_core.Nest, counts: Sequence[dict[str, Any]]) -> tuple[int, int]:
    """(bytes read from, bytes written to) the outermost level: I, W and partial-sum read-back
    streams each rounded up to a byte on its own; write-backs of complete outputs at O bits and
    of partial sums at psum bits, each rounded on its own."""
    t = pm_core.offchip_traffic(nest, counts)
    return t["I_read"] + t["W_read"] + t["O_read"], t["O_write"]


def evaluate(workload: dict, architecture: dict, mapping: dict) -> dict[str, Any]:
    """Everything the problems of this module need about one mapping."""
    nest = pm_core.parse(workload, architecture, mapping)
    res = pm_core.analysis_of(nest)
    counts = pm_core.access_counts(nest)
    return {"nest": nest, "analysis": res, "counts": counts, "cycles": cycle_stats(nest)}


# ------------------------------------------------------------------------------------------
# references
# ------------------------------------------------------------------------------------------

def _flat(levels: Sequence[dict[str, Any]], action: str) -> dict[str, int]:
    return {f"{lv['name']}.{t}": lv[t][action] for lv in levels for t in TENSORS}


def ref_layer_energy(workload: dict, architecture: dict, mapping: dict, energy: dict) -> dict[str, Any]:
    ev = evaluate(workload, architecture, mapping)
    levels = ev["analysis"]["levels"]
    per_level = level_energy(levels, energy)
    mac = ev["analysis"]["macs"] * float(energy["mac_pj"])
    return {"level_energy_pj": {lv["name"]: e for lv, e in zip(levels, per_level)},
            "mac_energy_pj": mac, "total_energy_pj": mac + sum(per_level)}


def ref_array_cycles(workload: dict, architecture: dict, mapping: dict) -> dict[str, Any]:
    ev = evaluate(workload, architecture, mapping)
    cs, res = ev["cycles"], ev["analysis"]
    return {"cycles": cs["cycles"], "full_cycles": cs["full_cycles"],
            "utilization": res["macs"] / (cs["cycles"] * res["mac_units"]),
            "busy_instance_cycles": {lv["name"]: b for lv, b in zip(res["levels"], cs["busy"])}}


def ref_throttled_latency(workload: dict, architecture: dict, mapping: dict, bandwidth: dict) -> dict[str, Any]:
    ev = evaluate(workload, architecture, mapping)
    res = ev["analysis"]
    compute = ev["cycles"]["cycles"]
    per_level = bandwidth_cycles(res["levels"], bandwidth)
    names = [lv["name"] for lv in res["levels"]]
    total, bottleneck = throttled(compute, per_level, names)
    return {"compute_cycles": compute, "level_cycles": dict(zip(names, per_level)), "cycles": total,
            "bottleneck": bottleneck, "utilization": res["macs"] / (total * res["mac_units"])}


def _first_min(values: dict[str, Any]) -> str:
    best = min(values.values())
    return min(k for k, v in values.items() if v == best)


def ref_dataflow_comparison(workload: dict, architecture: dict, mappings: dict, energy: dict) -> dict[str, Any]:
    energies, cycles = {}, {}
    for name in sorted(mappings):
        res = ref_layer_energy(workload, architecture, mappings[name], energy)
        energies[name] = res["total_energy_pj"]
        cycles[name] = cycle_stats(pm_core.parse(workload, architecture, mappings[name]))["cycles"]
    return {"energy_pj": energies, "cycles": cycles, "lowest_energy": _first_min(energies),
            "fewest_cycles": _first_min(cycles)}


def ref_end_to_end(workload: dict, architecture: dict, mapping: dict, energy: dict, bandwidth: dict) -> dict[str, Any]:
    ev = evaluate(workload, architecture, mapping)
    nest, res, counts = ev["nest"], ev["analysis"], ev["counts"]
    levels = res["levels"]
    names = [lv["name"] for lv in levels]
    read_b, write_b = dram_bytes(nest, counts)
    per_level = level_energy(levels, energy)
    compute = ev["cycles"]["cycles"]
    total, bottleneck = throttled(compute, bandwidth_cycles(levels, bandwidth), names)
    return {
        "reads": _flat(levels, "reads"), "fills": _flat(levels, "fills"), "updates": _flat(levels, "updates"),
        "dram_read_bytes": read_b, "dram_write_bytes": write_b,
        "valid": pm_core.valid(nest),
        "energy_pj": res["macs"] * float(energy["mac_pj"]) + sum(per_level),
        "compute_cycles": compute, "cycles": total, "bottleneck": bottleneck,
        "utilization": res["macs"] / (total * res["mac_units"]),
    }


# ------------------------------------------------------------------------------------------
# drawing: small architectures, tables, bounded small cases
# ------------------------------------------------------------------------------------------

def _pick(rng: Any, values: Sequence[Any]) -> Any:
    return values[int(rng.integers(0, len(values)))]


def _padded(mapping: dict[str, Any]) -> int:
    out = 1
    for lv in mapping["levels"]:
        for key in ("temporal", "spatial_x", "spatial_y"):
            for _, f in lv.get(key, []):
                out *= f
    return out


def _bounded(draw, limit: int) -> dict[str, Any]:
    """Redraw a small case until the padded iteration space of its mapping(s) is at most ``limit``."""
    while True:
        case = draw()
        maps = case["mappings"].values() if "mappings" in case else [case["mapping"]]
        if sum(_padded(m) for m in maps) <= limit:
            return case


def _holdable(cap: Any) -> str:
    if isinstance(cap, dict):
        return "".join(t for t in TENSORS if t in cap)
    return "IWO"


def random_energy(rng: Any, architecture: dict[str, Any]) -> dict[str, Any]:
    """A per-block energy table for a small architecture: blocks of 1 to 8 words (the outer the
    level, the wider), energies in hundredths of a pJ, rising outwards."""
    out: dict[str, Any] = {"mac_pj": int(rng.integers(5, 60)) / 100, "levels": []}
    depth = len(architecture["levels"])
    for i, lv in enumerate(architecture["levels"]):
        tensors = _holdable(lv["capacity_bytes"])
        scale = 10 ** (2 * i / max(1, depth - 1))  # 1 .. 100
        blocks = (1, 1, 2) if i == 0 else (1, 2, 3, 4) if i < depth - 1 else (2, 4, 8)

        def pj() -> float:
            return int(rng.integers(int(10 * scale), int(60 * scale) + 1)) / 100

        block = {t: int(_pick(rng, blocks)) for t in tensors}
        out["levels"].append(_cost(lv["name"], tensors, block, {t: pj() for t in tensors},
                                   {t: pj() for t in tensors}, pj() if "O" in tensors else None))
    return out


def random_bandwidth(rng: Any, architecture: dict[str, Any]) -> dict[str, Any]:
    """Small words-per-cycle figures (1 to 8; the outermost level narrow), a shared limit now
    and then."""
    levels = []
    depth = len(architecture["levels"])
    for i, lv in enumerate(architecture["levels"]):
        top = 3 if i == depth - 1 else 8
        r, w = int(rng.integers(1, top + 1)), int(rng.integers(1, top + 1))
        shared = int(rng.integers(max(r, w), r + w + 1)) if rng.random() < 0.35 else None
        levels.append(_bw(lv["name"], r, w, shared))
    return {"levels": levels}


def _small_eyeriss4(rng: Any) -> dict[str, Any]:
    return {"name": "small-eyeriss-like-4level", "levels": [
        {"name": "RF", "capacity_bytes": {"I": 32, "W": 64, "O": 32}, "fanout": [1, 1]},
        {"name": "ColumnBuffer", "capacity_bytes": 256, "fanout": [1, int(rng.integers(1, 4))]},
        {"name": "GLB", "capacity_bytes": 2048, "fanout": [int(rng.integers(2, 4)), 1], "multiple_buffering": 2},
        {"name": "DRAM", "capacity_bytes": None, "fanout": [1, 1]}]}


def _small_simba(rng: Any) -> dict[str, Any]:
    names = ("WeightReg", "PEBuffer", "PEInputBuffer", "GlobalBuffer", "DRAM")
    fans = ([1, 1], [1, int(rng.integers(1, 4))], [1, int(rng.integers(1, 3))], [int(rng.integers(2, 4)), 1], [1, 1])
    caps = ({"W": 1}, {"W": 64, "O": 16}, {"I": 64}, 256, None)
    return {"name": "small-simba-like", "levels": [{"name": n, "capacity_bytes": c, "fanout": list(f)}
                                                   for n, c, f in zip(names, caps, fans)]}


def _small_array(rng: Any) -> dict[str, Any]:
    """tpu-like (weight registers under an I / O buffer) or nvdla-like (weight registers,
    per-lane accumulators, a shared buffer), small fanouts."""
    if rng.random() < 0.5:
        return {"name": "small-tpu-like", "levels": [
            {"name": "WeightReg", "capacity_bytes": {"W": 2}, "fanout": [1, 1], "multiple_buffering": 2},
            {"name": "UnifiedBuffer", "capacity_bytes": {"I": 256, "O": 256},
             "fanout": [int(rng.integers(2, 5)), int(rng.integers(2, 5))]},
            {"name": "DRAM", "capacity_bytes": None, "fanout": [1, 1]}]}
    return {"name": "small-nvdla-like", "levels": [
        {"name": "WeightReg", "capacity_bytes": {"W": 1}, "fanout": [1, 1]},
        {"name": "Accumulator", "capacity_bytes": {"O": 32}, "fanout": [int(rng.integers(2, 5)), 1]},
        {"name": "ConvBuffer", "capacity_bytes": 512, "fanout": [1, int(rng.integers(2, 4))]},
        {"name": "DRAM", "capacity_bytes": None, "fanout": [1, 1]}]}


def _real_mapping(rng: Any, wl: dict[str, Any], arch: dict[str, Any], fit: bool = True,
                  bypass_p: float = 0.2, **kw: Any) -> dict[str, Any]:
    """A mapping that fits (``fit``), or one drawn with larger tiles that may well not."""
    depth = len(arch["levels"])
    if fit:
        caps = {3: [2, 64, 0], 4: [2, 8, 32, 0], 5: [1, 8, 16, 32, 0]}[depth]
    else:
        caps = {3: [4, 256, 0], 4: [4, 16, 128, 0], 5: [2, 16, 32, 64, 0]}[depth]
    opts = dict(imperfect_p=0.3, inner_cap=caps, spatial_p=0.9, fill_spatial=True)
    opts.update(kw)
    if fit:
        return pm_draw.fitting_mapping(rng, wl, arch, bypass=lambda r: pm_draw.draw_bypass(r, arch, bypass_p), **opts)
    return pm_draw.draw_mapping(rng, wl, arch, pm_draw.draw_bypass(rng, arch, bypass_p), **opts)


# ------------------------------------------------------------------------------------------
# F10: energy on an Eyeriss-like four-level array
# ------------------------------------------------------------------------------------------

def gen_eyeriss_energy(rng: Any, real: bool = False,
                       groups: Sequence[str] = ("resnet50", "mobilenetv2-pw", "deeplabv3-dilated")) -> dict[str, Any]:
    if real:
        wl = pm_draw.real_layer(rng, groups)
        arch = architecture(EYERISS4["name"])
        mapping = _real_mapping(rng, wl, arch, bypass_p=0.25)
        return {"workload": wl, "architecture": arch, "mapping": mapping,
                "energy": copy.deepcopy(ENERGY[arch["name"]])}

    def draw():
        shape = "depthwise" if rng.random() < 0.2 else "conv"
        wl = pm_draw.small_conv(rng, shape, max_pq=5, max_c=3, max_k=3)
        arch = _small_eyeriss4(rng)
        bypass = pm_draw.draw_bypass(rng, arch, 0.3)
        mapping = pm_draw.draw_mapping(rng, wl, arch, bypass, imperfect_p=0.3, spatial_p=0.7)
        return {"workload": wl, "architecture": arch, "mapping": mapping, "energy": random_energy(rng, arch)}
    return _bounded(draw, 1500)


# ------------------------------------------------------------------------------------------
# F10: energy on a Simba-like hierarchy (vector buffers, fan-out at three levels)
# ------------------------------------------------------------------------------------------

def gen_simba_energy(rng: Any, real: bool = False,
                     groups: Sequence[str] = ("resnet50", "mobilenetv2-pw", "bert-base")) -> dict[str, Any]:
    if real:
        wl = pm_draw.real_layer(rng, groups)
        arch = architecture("simba-like")
        mapping = _real_mapping(rng, wl, arch, bypass_p=0.2)
        return {"workload": wl, "architecture": arch, "mapping": mapping, "energy": copy.deepcopy(ENERGY["simba-like"])}

    def draw():
        wl = pm_draw.small_conv(rng, "conv", max_pq=4, max_c=3, max_k=3) if rng.random() < 0.6 else pm_draw.small_gemm(rng, 6)
        arch = _small_simba(rng)
        bypass = pm_draw.draw_bypass(rng, arch, 0.2)
        mapping = pm_draw.draw_mapping(rng, wl, arch, bypass, imperfect_p=0.3, spatial_p=0.8)
        return {"workload": wl, "architecture": arch, "mapping": mapping, "energy": random_energy(rng, arch)}
    return _bounded(draw, 1200)


# ------------------------------------------------------------------------------------------
# F8: compute cycles, full cycles, utilization, busy instances
# ------------------------------------------------------------------------------------------

REAL_ARCHS = ("eyeriss-like-4level", "simba-like", "tpu-like", "nvdla-like")


def gen_array_cycles(rng: Any, real: bool = False,
                     groups: Sequence[str] = ("resnet50", "mobilenetv2-dw", "bert-base", "llama-prefill", "attention-prefill")) -> dict[str, Any]:
    if real:
        wl = pm_draw.real_layer(rng, groups)
        if wl["shape"] == "depthwise":  # a batch of images: millions of MACs
            wl["dims"]["N"] = int(_pick(rng, (4, 8, 16)))
            wl["name"] += f".batch{wl['dims']['N']}"
        arch = architecture(str(_pick(rng, REAL_ARCHS)))
        mapping = _real_mapping(rng, wl, arch, imperfect_p=0.6, fill_spatial=True)
        return {"workload": wl, "architecture": arch, "mapping": mapping}

    def draw():
        kind = rng.random()
        wl = (pm_draw.small_conv(rng, "conv", max_pq=6) if kind < 0.4 else
              pm_draw.small_conv(rng, "depthwise", max_pq=6) if kind < 0.55 else
              pm_draw.small_bmm(rng) if kind < 0.7 else pm_draw.small_gemm(rng, 12))
        arch = pm_draw.small_architecture(rng, int(rng.integers(2, 5)), max_fanout=4)
        bypass = pm_draw.draw_bypass(rng, arch, 0.2)
        mapping = pm_draw.draw_mapping(rng, wl, arch, bypass, imperfect_p=0.6, spatial_p=0.8)
        return {"workload": wl, "architecture": arch, "mapping": mapping}
    return _bounded(draw, 4000)


# ------------------------------------------------------------------------------------------
# F9: bandwidth-throttled latency
# ------------------------------------------------------------------------------------------

def _narrowed(bandwidth: dict[str, Any], top: int) -> dict[str, Any]:
    """``bandwidth`` with every limit capped at ``top`` words per cycle."""
    for lv in bandwidth["levels"]:
        for key in ("read_words_per_cycle", "write_words_per_cycle", "shared_words_per_cycle"):
            if lv[key] is not None:
                lv[key] = min(lv[key], top)
    return bandwidth


def gen_throttled_latency(rng: Any, real: bool = False,
                          groups: Sequence[str] = ("resnet50", "mobilenetv2-pw", "bert-base", "llama-prefill"),
                          archs: Sequence[str] = ("eyeriss-like-4level", "simba-like", "nvdla-like"),
                          narrow_ports: int = 0) -> dict[str, Any]:
    """``narrow_ports`` (real layers): cap every limit of the architecture's table at that many
    words per cycle, so that a level needs billions of cycles (past 2^31)."""
    if real:
        wl = pm_draw.real_layer(rng, groups)
        arch = architecture(str(_pick(rng, archs)))
        mapping = _real_mapping(rng, wl, arch)
        bandwidth = copy.deepcopy(BANDWIDTH[arch["name"]])
        return {"workload": wl, "architecture": arch, "mapping": mapping,
                "bandwidth": _narrowed(bandwidth, narrow_ports) if narrow_ports else bandwidth}

    def draw():
        wl = pm_draw.small_conv(rng, "conv", max_pq=5) if rng.random() < 0.5 else pm_draw.small_gemm(rng, 8)
        r = rng.random()
        arch = _small_eyeriss4(rng) if r < 0.35 else _small_simba(rng) if r < 0.6 else _small_array(rng)
        bypass = pm_draw.draw_bypass(rng, arch, 0.25)
        mapping = pm_draw.draw_mapping(rng, wl, arch, bypass, imperfect_p=0.35, spatial_p=0.8)
        return {"workload": wl, "architecture": arch, "mapping": mapping, "bandwidth": random_bandwidth(rng, arch)}
    case = _bounded(draw, 1500)
    if rng.random() < 0.5:
        _tie(rng, case)
    return case


def _tie(rng: Any, case: dict[str, Any]) -> None:
    """Give one more level exactly the cycles of the slowest of compute and the levels (where its
    traffic allows), so the tie rules of the bottleneck matter."""
    ev = evaluate(case["workload"], case["architecture"], case["mapping"])
    levels = ev["analysis"]["levels"]
    bw = case["bandwidth"]["levels"]
    per = bandwidth_cycles(levels, case["bandwidth"])
    target = max([ev["cycles"]["cycles"], *per])
    options = []
    for j, lv in enumerate(levels):
        reads, writes = level_traffic(lv)
        for port, words in (("read_words_per_cycle", reads), ("write_words_per_cycle", writes)):
            width = _ceil(words, target)
            if per[j] < target and words and (target - 1) * width < words:
                options.append((j, port, width))
    if not options:
        return
    j, port, width = options[int(rng.integers(0, len(options)))]
    other = "write_words_per_cycle" if port == "read_words_per_cycle" else "read_words_per_cycle"
    reads, writes = level_traffic(levels[j])
    words = writes if port == "read_words_per_cycle" else reads
    bw[j][port] = width
    bw[j][other] = max(int(bw[j][other]), _ceil(words, target), 1)
    bw[j]["shared_words_per_cycle"] = None


# ------------------------------------------------------------------------------------------
# F13: weight-, output- and input-stationary mappings of one layer on one array
# ------------------------------------------------------------------------------------------

# per dataflow and shape: (spatial X dims, spatial Y dims, the tensor the RF keeps,
# the dims of the RF's innermost loops (irrelevant to the kept tensor), other RF loops allowed)
_DATAFLOW = {
    "gemm": {
        "weight_stationary": (("N",), ("K",), "W", ("M",), ("K", "N")),
        "output_stationary": (("N",), ("M",), "O", ("K",), ("M", "N")),
        "input_stationary": (("M",), ("K",), "I", ("N",), ("K",)),
    },
    "conv": {
        "weight_stationary": (("K",), ("C",), "W", ("Q", "P"), ("S", "R", "C")),
        "output_stationary": (("Q", "K"), ("P",), "O", ("S", "R", "C"), ("Q",)),
        "input_stationary": (("K",), ("C",), "I", ("K",), ("S",)),
    },
}


def _divisor_at_most(rng: Any, n: int, cap: int) -> int:
    return int(_pick(rng, [d for d in pm_draw._divisors(n) if d <= cap]))


def dataflow_mapping(rng: Any, wl: dict[str, Any], arch: dict[str, Any], kind: str,
                     glb_cap: int = 8, tries: int = 200) -> dict[str, Any]:
    """A mapping of ``wl`` on a three-level array (RF per PE with partitions, a buffer fanning
    out X x Y, DRAM) with the ``kind`` dataflow: the RF keeps only the stationary tensor, the
    array unrolls the dataflow's dimensions (ragged where they do not divide), the RF's innermost
    loops run over dimensions the stationary tensor does not depend on. The first of ``tries``
    draws that fits every level (the last one otherwise)."""
    shape = "gemm" if wl["shape"] == "gemm" else "conv"
    xs, ys, keep, inner, extra = _DATAFLOW[shape][kind]
    bounds = wl["dims"]
    fx, fy = arch["levels"][1]["fanout"]
    mapping = None
    for _ in range(tries):
        placed = dict.fromkeys(bounds, 1)
        levels = [{"temporal": [], "bypass": [t for t in TENSORS if t != keep]},
                  {"temporal": [], "spatial_x": [], "spatial_y": []}, {"temporal": []}]
        rf = []
        for d in list(inner) + [d for d in extra if rng.random() < 0.4]:
            rem = _ceil(bounds[d], placed[d])
            if rem > 1 and not any(lp[0] == d for lp in rf):
                f = _divisor_at_most(rng, rem, 16) if rng.random() < 0.7 else int(rng.integers(1, min(rem, 16) + 1))
                if f > 1:
                    rf.append([d, f])
                    placed[d] *= f
        levels[0]["temporal"] = rf
        for key, dims, room in (("spatial_x", xs, fx), ("spatial_y", ys, fy)):
            for d in dims:
                rem = _ceil(bounds[d], placed[d])
                if rem > 1 and room > 1:
                    f = min(room, rem) if rng.random() < 0.7 else int(rng.integers(2, min(room, rem) + 1))
                    levels[1][key].append([d, f])
                    placed[d] *= f
                    room //= f
        for d in [str(x) for x in rng.permutation(list(bounds))]:
            rem = _ceil(bounds[d], placed[d])
            if rem == 1:
                continue
            if rng.random() < 0.75:
                g = _divisor_at_most(rng, rem, glb_cap) if rng.random() < 0.7 else int(rng.integers(1, min(rem, glb_cap) + 1))
            else:
                g = 1
            if g > 1:
                levels[1]["temporal"].append([d, g])
                placed[d] *= g
            rest = _ceil(bounds[d], placed[d])
            if rest > 1:
                levels[2]["temporal"].append([d, rest])
        for lv in levels[1:]:
            perm = rng.permutation(len(lv["temporal"]))
            lv["temporal"] = [lv["temporal"][i] for i in perm]
        for key in ("spatial_x", "spatial_y"):
            if not levels[1][key]:
                del levels[1][key]
        mapping = {"levels": levels}
        if pm_core.valid(pm_core.parse(wl, arch, mapping)):
            return mapping
    assert mapping is not None
    return mapping


def _small_dataflow_array(rng: Any) -> dict[str, Any]:
    return {"name": "small-eyeriss-like", "levels": [
        {"name": "RF", "capacity_bytes": {"I": 16, "W": 32, "O": 16}, "fanout": [1, 1]},
        {"name": "GLB", "capacity_bytes": 4096, "fanout": [int(rng.integers(2, 5)), int(rng.integers(2, 4))]},
        {"name": "DRAM", "capacity_bytes": None, "fanout": [1, 1]}]}


def _loosened_bypass(rng: Any, wl: dict[str, Any], arch: dict[str, Any], mapping: dict[str, Any],
                     keep: str) -> dict[str, Any]:
    """The mapping with its RF keeping, besides ``keep``, each other tensor with even odds and its
    GLB bypassing each tensor now and then: the first of a few draws that still fits (the mapping
    as it was if none does)."""
    for _ in range(10):
        out = copy.deepcopy(mapping)
        out["levels"][0]["bypass"] = [t for t in TENSORS if t != keep and rng.random() < 0.5]
        glb = [t for t in TENSORS if rng.random() < 0.35]
        if glb:
            out["levels"][1]["bypass"] = glb
        try:
            if pm_core.valid(pm_core.parse(wl, arch, out)):
                return out
        except ValueError:
            continue
    return mapping


def gen_dataflow_comparison(rng: Any, real: bool = False,
                            groups: Sequence[str] = ("resnet50", "mobilenetv2-pw", "bert-base"),
                            loose_bypass: float = 0.0, same_mapping: float = 0.0, split: float = 0.0) -> dict[str, Any]:
    """Options of the small draws: ``loose_bypass``, the odds that a mapping's RF keeps more than
    its stationary tensor and its GLB bypasses tensors (:func:`_loosened_bypass`); ``same_mapping``,
    the odds that one dataflow is given another's mapping (their energies and cycles tie);
    ``split``, the odds that a temporal loop is split into several loops of its dimension at its
    level, an outermost one into two that may overshoot (``pm_traffic._split``). All 0 draw
    exactly as before."""
    def fits(wl: dict[str, Any], arch: dict[str, Any], mappings: dict[str, Any]) -> bool:
        return all(pm_core.valid(pm_core.parse(wl, arch, m)) for m in mappings.values())

    if real:
        while True:  # every mapping fits (the spec says so)
            wl = pm_draw.real_layer(rng, groups)
            arch = architecture("eyeriss-like")
            mappings = {k: dataflow_mapping(rng, wl, arch, k) for k in DATAFLOWS}
            if fits(wl, arch, mappings):
                return {"workload": wl, "architecture": arch, "mappings": mappings,
                        "energy": copy.deepcopy(ENERGY["eyeriss-like"])}

    def draw():
        while True:
            if rng.random() < 0.5:
                wl = pm_draw.small_gemm(rng, 8)
            else:
                wl = pm_draw.small_conv(rng, "conv", max_pq=4, max_c=3, max_k=4)
            arch = _small_dataflow_array(rng)
            mappings = {k: dataflow_mapping(rng, wl, arch, k, glb_cap=3, tries=20) for k in DATAFLOWS}
            if split:
                mappings = {k: pm_traffic._split(rng, wl, arch, m, split) for k, m in mappings.items()}
            if loose_bypass:
                shape = "gemm" if wl["shape"] == "gemm" else "conv"
                mappings = {k: _loosened_bypass(rng, wl, arch, m, _DATAFLOW[shape][k][2]) if rng.random() < loose_bypass
                            else m for k, m in mappings.items()}
            if same_mapping and rng.random() < same_mapping:
                src, dst = (DATAFLOWS[int(i)] for i in rng.permutation(len(DATAFLOWS))[:2])
                mappings[dst] = copy.deepcopy(mappings[src])
            if fits(wl, arch, mappings):
                return {"workload": wl, "architecture": arch, "mappings": mappings,
                        "energy": random_energy(rng, arch)}
    return _bounded(draw, 2400)


# ------------------------------------------------------------------------------------------
# F18: end to end (counts, DRAM bytes, validity, energy, throttled cycles)
# ------------------------------------------------------------------------------------------

def _tight_capacities(rng: Any, wl: dict[str, Any], arch: dict[str, Any], mapping: dict[str, Any]) -> None:
    """Set every on-chip capacity near the mapping's need (a little under or over it), so that
    whether the mapping fits is a real question on small cases."""
    nest = pm_core.parse(wl, arch, mapping)
    req = pm_core.buffer_requirement(nest)
    for lv, r in zip(arch["levels"][:-1], req[:-1]):
        def near(need: int) -> int:
            return max(1, int(round(need * float(rng.uniform(0.75, 1.3)))))
        cap = lv["capacity_bytes"]
        if isinstance(cap, dict):
            lv["capacity_bytes"] = {t: (near(r["bytes"][t]) if r["bytes"][t] else cap[t]) for t in cap}
        else:
            lv["capacity_bytes"] = near(r["total"])


def gen_resnet_eyeriss_e2e(rng: Any, real: bool = False,
                           groups: Sequence[str] = ("resnet50",), batched: bool = False) -> dict[str, Any]:
    """``batched`` (real layers): a layer at a batch of 8 to 256 images, redrawn until some count
    of its answer passes 2^31."""
    def on_eyeriss(wl: dict[str, Any]) -> dict[str, Any]:
        arch = architecture(EYERISS4["name"])
        mapping = _real_mapping(rng, wl, arch, fit=rng.random() < 0.7, bypass_p=0.25)
        return {"workload": wl, "architecture": arch, "mapping": mapping,
                "energy": copy.deepcopy(ENERGY[arch["name"]]), "bandwidth": copy.deepcopy(BANDWIDTH[arch["name"]])}

    if real and batched:
        return pm_traffic._past_int32(
            rng, lambda: on_eyeriss(pm_traffic._batched(rng, pm_draw.real_layer(rng, groups), (8, 16, 32, 64, 128, 256))),
            ref_end_to_end)
    if real:
        return on_eyeriss(pm_draw.real_layer(rng, groups))

    def draw():
        wl = pm_draw.small_conv(rng, "conv", max_pq=5, max_c=3, max_k=3)
        arch = _small_eyeriss4(rng)
        if rng.random() < 0.5:
            arch["levels"][1]["multiple_buffering"] = 2
        bypass = pm_draw.draw_bypass(rng, arch, 0.3)
        mapping = pm_draw.draw_mapping(rng, wl, arch, bypass, imperfect_p=0.3, spatial_p=0.7)
        _tight_capacities(rng, wl, arch, mapping)
        return {"workload": wl, "architecture": arch, "mapping": mapping,
                "energy": random_energy(rng, arch), "bandwidth": random_bandwidth(rng, arch)}
    return _bounded(draw, 1500)


def _decode_bits(rng: Any) -> dict[str, int]:
    """8-bit weights (the one-weight registers hold a byte), 8- or 16-bit activations."""
    a = int(_pick(rng, (8, 16)))
    return {"I": a, "W": 8, "O": a, "psum": 32}


def _psum_stream_mapping(rng: Any, wl: dict[str, Any], arch: dict[str, Any]) -> dict[str, Any]:
    """A projection whose outputs no on-chip level holds: N spread over the fan-outs (each one
    filled or half filled), the rest at DRAM in either order with K outermost, so every partial
    sum goes out to DRAM and comes back once per K."""
    dims, levels, left = wl["dims"], [], wl["dims"]["N"]
    for lv in arch["levels"][:-1]:
        cap = lv["capacity_bytes"]
        entry: dict[str, Any] = {"temporal": [], "bypass": [t for t in TENSORS if t == "O" or (isinstance(cap, dict)
                                                                                              and t not in cap)]}
        for key, fan in zip(("spatial_x", "spatial_y"), lv["fanout"]):
            if fan > 1 and left > 1:
                f = min(fan // int(_pick(rng, (1, 2))), left)
                entry[key] = [["N", f]]
                left = _ceil(left, f)
        levels.append(entry)
    inner = [["N", left], ["M", dims["M"]]]
    levels.append({"temporal": (inner if rng.random() < 0.5 else inner[::-1]) + [["K", dims["K"]]]})
    return {"levels": levels}


def gen_llama_decode_e2e(rng: Any, real: bool = False,
                         groups: Sequence[str] = ("llama-decode", "attention-decode"),
                         archs: Sequence[str] = ("tpu-like", "nvdla-like"), psum_stream: bool = False) -> dict[str, Any]:
    """``psum_stream`` (real layers): a projection of 8 or 16 tokens whose partial sums every
    on-chip level bypasses (:func:`_psum_stream_mapping`), redrawn until DRAM's bytes pass 2^31."""
    if real and psum_stream:
        def big():
            wl = pm_draw.real_layer(rng, [g for g in groups if g == "llama-decode"], _decode_bits(rng))
            arch = architecture(str(_pick(rng, archs)))
            return {"workload": wl, "architecture": arch, "mapping": _psum_stream_mapping(rng, wl, arch),
                    "energy": copy.deepcopy(ENERGY[arch["name"]]), "bandwidth": copy.deepcopy(BANDWIDTH[arch["name"]])}
        return pm_traffic._past_int32(rng, big, ref_end_to_end)
    if real:
        wl = pm_draw.real_layer(rng, groups, _decode_bits(rng))
        arch = architecture(str(_pick(rng, archs)))
        mapping = _real_mapping(rng, wl, arch, fit=rng.random() < 0.7, bypass_p=0.1)
        return {"workload": wl, "architecture": arch, "mapping": mapping,
                "energy": copy.deepcopy(ENERGY[arch["name"]]), "bandwidth": copy.deepcopy(BANDWIDTH[arch["name"]])}

    def draw():
        if rng.random() < 0.5:
            wl = pm_draw.small_gemm(rng, 8)
            wl["dims"]["M"] = int(_pick(rng, (1, 1, 2, 3)))
        else:
            wl = pm_draw.small_bmm(rng)
            wl["dims"]["M"] = 1
        wl["bits"] = _decode_bits(rng)
        arch = _small_array(rng)
        if rng.random() < 0.4:
            arch["levels"][1]["multiple_buffering"] = 2
        bypass = pm_draw.forced_bypass(arch)
        mapping = pm_draw.draw_mapping(rng, wl, arch, bypass, imperfect_p=0.3, spatial_p=0.8)
        _tight_capacities(rng, wl, arch, mapping)
        return {"workload": wl, "architecture": arch, "mapping": mapping,
                "energy": random_energy(rng, arch), "bandwidth": random_bandwidth(rng, arch)}
    return _bounded(draw, 1500)


REFERENCES: dict = {
    "pm_e2e.layer_energy": ref_layer_energy,
    "pm_e2e.array_cycles": ref_array_cycles,
    "pm_e2e.throttled_latency": ref_throttled_latency,
    "pm_e2e.dataflow_comparison": ref_dataflow_comparison,
    "pm_e2e.end_to_end": ref_end_to_end,
}

GENERATORS: dict = {
    "pm_e2e.eyeriss_energy": gen_eyeriss_energy,
    "pm_e2e.simba_energy": gen_simba_energy,
    "pm_e2e.array_cycles": gen_array_cycles,
    "pm_e2e.throttled_latency": gen_throttled_latency,
    "pm_e2e.dataflow_comparison": gen_dataflow_comparison,
    "pm_e2e.resnet_eyeriss_e2e": gen_resnet_eyeriss_e2e,
    "pm_e2e.llama_decode_e2e": gen_llama_decode_e2e,
}
