"""Domain samplers of the perf-core pack (roofline, tile footprint, loop-nest traffic, access
counts, sliding-window deltas and array edges): inputs drawn from the whole domain a problem
states.

Each sampler is written from its problem's spec and ``[[domain]]`` rules alone and shares no code
with the generators (the validator refuses a shared module). Where the spec bounds no size, a
draw picks one of three scales (small, a real layer's, or far past any real layer, where counts
pass 2^31 and 2^53). ``sample(rng, **options) -> {parameter: value}``, drawn from ``rng`` only.
"""

from __future__ import annotations

from math import gcd
from typing import Any

from .samplers import _log_int, sample_conv_layer_accounting

_BITS = (4, 8, 16, 32)


def _pick(rng: Any, values: Any) -> Any:
    return values[int(rng.integers(len(values)))]


def _scaled(rng: Any, scale: int, small: int = 16, real: int = 4096, huge: int = 1 << 28) -> int:
    """A positive size at one of three scales: small, a real layer's, anything up to `huge`."""
    return _log_int(rng, 1, (small, real, huge)[scale])


def _packed(elements: int, bits: int) -> int:
    return (elements * bits + 7) // 8


# ------------------------------------------------------------------------------------------
# F2: roofline
# ------------------------------------------------------------------------------------------

def sample_roofline_gemm(rng: Any) -> dict[str, Any]:
    """perf-core/f2-roofline-gemm: any GEMM and machine with positive integers and bit widths of
    4, 8, 16 or 32. A third of the draws sit exactly on the ridge point: the bandwidth and the
    compute peak are chosen so that MACs * GB/s * 1000 = MACs/cycle * MHz * bytes."""
    scale = int(rng.integers(0, 3))
    gemm = {"M": _scaled(rng, scale), "N": _scaled(rng, scale), "K": _scaled(rng, scale),
            "input_bits": _pick(rng, _BITS), "weight_bits": _pick(rng, _BITS),
            "output_bits": _pick(rng, _BITS)}
    if rng.random() < 0.35:
        macs = gemm["M"] * gemm["N"] * gemm["K"]
        nbytes = (_packed(gemm["M"] * gemm["K"], gemm["input_bits"])
                  + _packed(gemm["K"] * gemm["N"], gemm["weight_bits"])
                  + _packed(gemm["M"] * gemm["N"], gemm["output_bits"]))
        g = gcd(nbytes, 1000 * macs)
        t = _log_int(rng, 1, 64)
        bandwidth = nbytes // g * t
        peak_macs_per_us = 1000 * macs // g * t           # macs_per_cycle * clock_mhz
        clock = gcd(peak_macs_per_us, _log_int(rng, 1, 4096))
        hw = {"macs_per_cycle": peak_macs_per_us // clock, "clock_mhz": clock, "dram_gb_per_s": bandwidth}
    else:
        hw = {"macs_per_cycle": _log_int(rng, 1, 1 << (14 if rng.random() < 0.8 else 40)),
              "clock_mhz": _log_int(rng, 1, 4000 if rng.random() < 0.8 else 1 << 30),
              "dram_gb_per_s": _log_int(rng, 1, 8000 if rng.random() < 0.8 else 1 << 40)}
    return {"gemm": gemm, "hw": hw}


_UNITS = ("GB/s", "GiB/s", "B/cycle")
_LEVEL_NAMES = ("RF", "L1", "L2", "L3", "LLC", "SRAM", "HBM", "DRAM")
_TENSORS = ("input", "weight", "output")


def _bytes_per_s(level: dict[str, Any], clock_mhz: int) -> int:
    unit = level["unit"]
    per = {"GB/s": 10**9, "GiB/s": 2**30}.get(unit)
    return level["bandwidth"] * (per if per is not None else clock_mhz * 10**6)


def _traffic_bytes(entry: dict[str, int], bits: dict[str, int]) -> int:
    return sum(_packed(entry[f"{t}_elements"], bits[t]) for t in _TENSORS)


def _elements_within(rng: Any, cap: int, bits: dict[str, int]) -> dict[str, int]:
    """Element counts of the three tensors, at least one element, at most `cap` bytes (cap >= 4)."""
    while True:
        entry = {f"{t}_elements": (0 if rng.random() < 0.25 else _log_int(rng, 1, max(1, cap * 8 // bits[t] // 3)))
                 for t in _TENSORS}
        if sum(entry.values()) >= 1 and _traffic_bytes(entry, bits) <= cap:
            return entry


def _elements_exact(rng: Any, total: int, bits: dict[str, int], exact: str) -> dict[str, int]:
    """Element counts whose packed bytes add up to exactly `total`; `exact` (4 or 8 bits) takes the rest."""
    entry = {f"{t}_elements": 0 for t in _TENSORS}
    for t in _TENSORS:
        if t != exact and total > 8 and rng.random() < 0.5:
            entry[f"{t}_elements"] = _log_int(rng, 1, max(1, (total // 2) * 8 // bits[t]))
    rest = total - _traffic_bytes(entry, bits)
    entry[f"{exact}_elements"] = rest * 8 // bits[exact]
    return entry


def sample_hierarchical_roofline(rng: Any) -> dict[str, Any]:
    """perf-core/f2-hierarchical-roofline: any kernel on one to six memory levels, each in any of
    the three bandwidth units, names not necessarily distinct, element counts that may be zero
    for some tensors (never for a whole level). Modes: random traffic; a level's time equal to
    the compute time exactly (the rest no slower); two levels sharing the largest time exactly
    (slower than compute, the rest no slower)."""
    scale = int(rng.integers(0, 3))
    n = _log_int(rng, 1, 6)
    names = [_pick(rng, _LEVEL_NAMES) for _ in range(n)]
    hw = {"macs_per_cycle": _log_int(rng, 1, (64, 16384, 1 << 30)[scale]),
          "clock_mhz": _log_int(rng, 1, (100, 4000, 1 << 20)[scale]),
          "levels": [{"name": name, "bandwidth": _log_int(rng, 1, (64, 4096, 1 << 40)[scale]),
                      "unit": _pick(rng, _UNITS)} for name in names]}
    bits = {t: _pick(rng, _BITS) for t in _TENSORS}
    bws = [_bytes_per_s(lv, hw["clock_mhz"]) for lv in hw["levels"]]
    peak_macs = hw["macs_per_cycle"] * hw["clock_mhz"] * 10**6       # MACs per second
    mode = rng.random()
    if mode < 0.3 or (mode < 0.6 and n < 2):
        # compute time == level j's time == the largest level time: macs / peak_macs = bytes_j / bw_j
        exact = _pick(rng, _TENSORS)
        bits[exact] = _pick(rng, (4, 8))
        j = int(rng.integers(n))
        g = gcd(bws[j], peak_macs)
        k = _log_int(rng, 1, (64, 1 << 20, 1 << 40)[scale])
        k = max([k] + [-(-4 * g // bw) for bw in bws])
        macs = peak_macs // g * k
        traffic = [_elements_exact(rng, bws[j] // g * k, bits, exact) if i == j
                   else _elements_within(rng, k * bw // g, bits) for i, bw in enumerate(bws)]
    elif mode < 0.6:
        # levels i < j share the largest time exactly, slower than compute
        exact = _pick(rng, _TENSORS)
        bits[exact] = _pick(rng, (4, 8))
        i, j = sorted(int(x) for x in rng.choice(n, size=2, replace=False))
        g = gcd(bws[i], bws[j])
        k = _log_int(rng, 1, (64, 1 << 20, 1 << 40)[scale])
        k = max([k] + [-(-4 * g // bw) for bw in bws] + [-(-2 * g // peak_macs)])
        # level time k / g; compute time macs / peak_macs must stay below it
        macs = _log_int(rng, 1, max(1, (k * peak_macs - 1) // g))
        traffic = [_elements_exact(rng, bws[x] // g * k, bits, exact) if x in (i, j)
                   else _elements_within(rng, k * bw // g, bits) for x, bw in enumerate(bws)]
    else:
        macs = _log_int(rng, 1, (1 << 12, 1 << 40, 1 << 62)[scale])
        top = (1 << 10, 1 << 30, 1 << 60)[scale]
        traffic = []
        for _ in range(n):
            entry = {f"{t}_elements": 0 if rng.random() < 0.2 else _log_int(rng, 1, top) for t in _TENSORS}
            if sum(entry.values()) == 0:
                entry[f"{_pick(rng, _TENSORS)}_elements"] = _log_int(rng, 1, top)
            traffic.append(entry)
    kernel = {"macs": macs, "input_bits": bits["input"], "weight_bits": bits["weight"],
              "output_bits": bits["output"],
              "traffic": [{"level": name, **entry} for name, entry in zip(names, traffic)]}
    return {"kernel": kernel, "hw": hw}



# ------------------------------------------------------------------------------------------
# F1: grouped convolution
# ------------------------------------------------------------------------------------------

def sample_grouped_conv_accounting(rng: Any) -> dict[str, Any]:
    """perf-core/f1-grouped-conv-accounting: any conv2d layer the spec admits (the ungrouped
    layer sampler: three scales, filters past the unpadded input, any stride, dilation, padding
    and bit widths), split into groups: depthwise (groups = C, K a multiple of C), grouped
    (groups from 2 to C, C and K rounded to multiples of it) or dense (groups = 1)."""
    drawn = sample_conv_layer_accounting(rng)
    layer = drawn["layer"]
    kind = rng.random()
    if kind < 0.3:
        layer["groups"] = layer["C"]
        layer["K"] = layer["C"] * (1 if rng.random() < 0.5 else _log_int(rng, 1, 8))
    elif kind < 0.75:
        g = _log_int(rng, 2, max(2, layer["C"]))
        layer["groups"] = g
        layer["C"] = g * max(1, layer["C"] // g)
        layer["K"] = g * max(1, layer["K"] // g)
    else:
        layer["groups"] = 1
    return drawn



# ------------------------------------------------------------------------------------------
# F3: tile footprint
# ------------------------------------------------------------------------------------------

def _factor(rng: Any, scale: int, p_one: float = 0.4) -> int:
    return 1 if rng.random() < p_one else _log_int(rng, 2, (8, 64, 1 << 14)[scale])


def _keeps(rng: Any) -> list[str]:
    """Any subset of the three tensors, in any order; all three half the time, none sometimes."""
    u = rng.random()
    if u < 0.5:
        return list(_TENSORS)
    if u < 0.55:
        return []
    kept = [t for t in _TENSORS if rng.random() < 0.5]
    return [kept[int(x)] for x in rng.permutation(len(kept))]


def _capacity_near(rng: Any, stored: int, buffering: int) -> int:
    """A capacity at the fit boundary (exactly the requirement, one byte short, enough for one
    buffer only) or anywhere from far too small to far too large."""
    required = buffering * stored
    u = rng.random()
    if u < 0.2:
        cap = required
    elif u < 0.35:
        cap = required - 1
    elif u < 0.5 and buffering == 2 and stored >= 1:
        cap = _log_int(rng, stored, max(stored, required - 1))
    else:
        cap = _log_int(rng, 1, max(2, 4 * required))
    return max(1, cap)


def sample_gemm_tile_footprint(rng: Any) -> dict[str, Any]:
    """perf-core/f3-gemm-tile-footprint: one to five on-chip levels, each with temporal and
    spatial factors for M, N and K (spatial fan-out at any level, the innermost included), any
    keeps list (all, none, any subset in any order), single or double buffering, capacities at
    and around the fit boundary; any positive bit widths; a DRAM factor on top."""
    scale = int(rng.integers(0, 3))
    n = _log_int(rng, 1, 5)
    bits = {"input_bits": _log_int(rng, 1, 32), "weight_bits": _log_int(rng, 1, 32),
            "output_bits": _log_int(rng, 1, 32), "psum_bits": _log_int(rng, 1, 64)}
    levels = []
    extent = {"M": 1, "N": 1, "K": 1}
    for i in range(n):
        temporal = {d: _factor(rng, scale) for d in "MNK"}
        spatial = {d: (_factor(rng, scale, 0.6) if rng.random() < 0.5 else 1) for d in "MNK"}
        for d in "MNK":
            extent[d] *= temporal[d] * spatial[d]
        keeps = _keeps(rng)
        elements = {"input": extent["M"] * extent["K"], "weight": extent["K"] * extent["N"],
                    "output": extent["M"] * extent["N"]}
        width = {"input": bits["input_bits"], "weight": bits["weight_bits"], "output": bits["psum_bits"]}
        stored = sum(_packed(elements[t], width[t]) for t in set(keeps))
        buffering = 1 if rng.random() < 0.4 else 2
        levels.append({"name": f"L{i}", "capacity_bytes": _capacity_near(rng, stored, buffering),
                       "multiple_buffering": buffering, "keeps": keeps,
                       "temporal": temporal, "spatial": spatial})
    gemm = {d: extent[d] * _factor(rng, scale) for d in "MNK"}
    return {"gemm": gemm, "precision": bits, "levels": levels}



_CONV_DIMS = ("N", "K", "C", "P", "Q", "R", "S")


def sample_conv_tile_footprint(rng: Any) -> dict[str, Any]:
    """perf-core/f3-conv-tile-footprint: one to four on-chip levels with temporal and spatial
    factors for every conv dimension (fan-out at any level, filter rows split over levels), any
    keeps list, single or double buffering, capacities at and around the fit boundary, any
    stride and dilation (coprime, sharing a factor, larger than the filter); N, K and C reach
    2^14 per level at the largest scale, while the output and filter rows stay small enough for
    the exact footprint to be enumerated."""
    scale = int(rng.integers(0, 3))
    n = _log_int(rng, 1, 4)
    stride = _log_int(rng, 1, 8 if rng.random() < 0.9 else 64)
    dilation = 1 if rng.random() < 0.3 else _log_int(rng, 1, 8 if rng.random() < 0.9 else 64)
    bits = {"input_bits": _log_int(rng, 1, 32), "weight_bits": _log_int(rng, 1, 32),
            "psum_bits": _log_int(rng, 1, 64)}
    width = {"input": bits["input_bits"], "weight": bits["weight_bits"], "output": bits["psum_bits"]}
    levels = []
    e = dict.fromkeys(_CONV_DIMS, 1)
    for i in range(n):
        temporal, spatial = {}, {}
        for d in _CONV_DIMS:
            if d in "NKC":
                temporal[d] = _factor(rng, scale, 0.5)
                spatial[d] = _factor(rng, scale, 0.8)
            else:   # output and filter rows: small, so the exact footprint stays cheap to count
                temporal[d] = 1 if rng.random() < 0.4 else _log_int(rng, 2, 7)
                spatial[d] = 1 if rng.random() < 0.8 else _log_int(rng, 2, 4)
            e[d] *= temporal[d] * spatial[d]
        rows = (e["P"] - 1) * stride + (e["R"] - 1) * dilation + 1
        cols = (e["Q"] - 1) * stride + (e["S"] - 1) * dilation + 1
        keeps = _keeps(rng)
        elements = {"input": e["N"] * e["C"] * rows * cols, "weight": e["K"] * e["C"] * e["R"] * e["S"],
                    "output": e["N"] * e["K"] * e["P"] * e["Q"]}
        stored = sum(_packed(elements[t], width[t]) for t in set(keeps))
        buffering = 1 if rng.random() < 0.4 else 2
        levels.append({"name": f"L{i}", "capacity_bytes": _capacity_near(rng, stored, buffering),
                       "multiple_buffering": buffering, "keeps": keeps,
                       "temporal": temporal, "spatial": spatial})
    conv = {d: e[d] * (_factor(rng, scale) if d in "NKC" else _log_int(rng, 1, 4)) for d in _CONV_DIMS}
    conv.update(stride=stride, dilation=dilation)
    return {"conv": conv, "precision": bits, "levels": levels}



# ------------------------------------------------------------------------------------------
# F4: DRAM traffic of a two-level GEMM
# ------------------------------------------------------------------------------------------

_GEMM = ("M", "N", "K")


def _small_divisors(n: int, limit: int = 1 << 16) -> list[int]:
    """Divisors of n found by trial division up to `limit` (with their cofactors)."""
    out = set()
    i = 1
    while i * i <= n and i <= limit:
        if n % i == 0:
            out.update((i, n // i))
        i += 1
    return sorted(out)


def _factorize(rng: Any, total: int, parts: int) -> list[int]:
    """`parts` positive factors whose product is `total`, each a random divisor of what is left."""
    out = []
    for _ in range(parts - 1):
        f = _pick(rng, _small_divisors(total))
        out.append(f)
        total //= f
    out.append(total)
    return [out[int(i)] for i in rng.permutation(parts)]


def _dram_loops(rng: Any, counts: dict[str, int], max_parts: int = 4) -> list[list[Any]]:
    """DRAM loops whose bounds multiply to counts[d] per dimension: one to `max_parts` loops per
    dimension (bound-1 loops included, a dimension with one tile often absent), in any order."""
    loops = []
    for d, f in counts.items():
        parts = _log_int(rng, 1, max_parts) if f > 1 else (0 if rng.random() < 0.5 else _log_int(rng, 1, 2))
        for b in _factorize(rng, f, parts) if parts else []:
            loops.append([d, b])
    return [loops[int(i)] for i in rng.permutation(len(loops))]


def _ragged_gemm_mapping(rng: Any, scale: int) -> tuple[dict[str, int], dict[str, Any]]:
    """A GEMM and a two-level mapping whose tiles need not divide the sizes (the DRAM bounds of a
    dimension multiply to ceil(size / tile))."""
    gemm = {d: _log_int(rng, 1, (24, 4096, 1 << 28)[scale]) for d in _GEMM}
    buffer = {}
    for d in _GEMM:
        u = rng.random()
        buffer[d] = gemm[d] if u < 0.15 else (1 if u < 0.25 else _log_int(rng, 1, gemm[d]))
    counts = {d: -(-gemm[d] // buffer[d]) for d in _GEMM}
    return gemm, {"buffer": buffer, "dram": _dram_loops(rng, counts)}


def sample_gemm_dram_bytes(rng: Any) -> dict[str, Any]:
    """perf-core/f4-gemm-dram-bytes: any GEMM (three scales), any tile from 1 to the size (ragged
    edge tiles), the DRAM bounds of a dimension split over up to four loops in any order, bound-1
    loops listed, any positive bit widths."""
    scale = int(rng.integers(0, 3))
    gemm, mapping = _ragged_gemm_mapping(rng, scale)
    precision = {k: _log_int(rng, 1, 32 if rng.random() < 0.9 else 256)
                 for k in ("input_bits", "weight_bits", "output_bits")}
    return {"gemm": gemm, "mapping": mapping, "precision": precision}



def _exact_gemm_mapping(rng: Any, scale: int) -> tuple[dict[str, int], dict[str, int], dict[str, int]]:
    """A GEMM tiled exactly: a tile extent and a DRAM bound per dimension (either may be 1)."""
    top = (16, 256, 1 << 22)[scale]
    buffer = {d: 1 if rng.random() < 0.15 else _log_int(rng, 1, top) for d in _GEMM}
    bounds = {d: 1 if rng.random() < 0.2 else _log_int(rng, 1, top) for d in _GEMM}
    return {d: buffer[d] * bounds[d] for d in _GEMM}, buffer, bounds


def sample_gemm_dram_traffic(rng: Any) -> dict[str, Any]:
    """perf-core/f4-gemm-dram-traffic: any GEMM tiled exactly (three scales), at most one DRAM loop
    per dimension in any order; a dimension with bound 1 is listed or left out."""
    gemm, buffer, bounds = _exact_gemm_mapping(rng, int(rng.integers(0, 3)))
    loops = [[d, b] for d, b in bounds.items() if b > 1 or rng.random() < 0.5]
    return {"gemm": gemm, "mapping": {"buffer": buffer, "dram": [loops[int(i)] for i in rng.permutation(len(loops))]}}



def sample_gemm_psum_traffic(rng: Any) -> dict[str, Any]:
    """perf-core/f4-gemm-psum-traffic: the mappings of f4-gemm-dram-bytes (ragged tiles, split
    dimensions, bound-1 loops, any order, three scales) with partial sums at least as wide as
    the final outputs (equal widths included)."""
    scale = int(rng.integers(0, 3))
    gemm, mapping = _ragged_gemm_mapping(rng, scale)
    output_bits = _log_int(rng, 1, 32)
    precision = {"input_bits": _log_int(rng, 1, 32), "weight_bits": _log_int(rng, 1, 32),
                 "psum_bits": output_bits if rng.random() < 0.2 else output_bits + _log_int(rng, 1, 40),
                 "output_bits": output_bits}
    return {"gemm": gemm, "mapping": mapping, "precision": precision}



def sample_dram_loop_order_sweep(rng: Any) -> dict[str, Any]:
    """perf-core/f4-dram-loop-order-sweep: any GEMM tiled exactly (three scales), DRAM bounds of 1
    included (which make loop orders tie)."""
    gemm, buffer, bounds = _exact_gemm_mapping(rng, int(rng.integers(0, 3)))
    return {"gemm": gemm, "tiling": {"buffer": buffer, "dram": bounds}}



# ------------------------------------------------------------------------------------------
# F5: reads, fills and updates of a multi-level hierarchy
# ------------------------------------------------------------------------------------------

def _level_loops(rng: Any, shares: dict[str, int], scale: int) -> list[list[Any]]:
    """The temporal loops of one level: each dimension's share split over one to three loops,
    bound-1 loops listed now and then, in any order."""
    loops = []
    for d, f in shares.items():
        parts = (_log_int(rng, 1, 3) if f > 1 else int(rng.random() < 0.3))
        for b in _factorize(rng, f, parts) if parts else []:
            loops.append([d, b])
    return [loops[int(i)] for i in rng.permutation(len(loops))]


def _bypass(rng: Any) -> list[str]:
    u = rng.random()
    if u < 0.4:
        return []
    if u < 0.45:
        return ["I", "W", "O"]
    return [t for t in ("I", "W", "O") if rng.random() < 0.4]


def _hierarchy(rng: Any, names: tuple[str, ...], scale: int) -> tuple[dict[str, int], dict[str, Any]]:
    top = (6, 24, 1 << 10)[scale]
    gemm = dict.fromkeys(_GEMM, 1)
    hierarchy = {}
    for name in names:
        shares = {d: 1 if rng.random() < 0.35 else _log_int(rng, 2, top) for d in _GEMM}
        for d in _GEMM:
            gemm[d] *= shares[d]
        hierarchy[name] = {"loops": _level_loops(rng, shares, scale)}
        if name != "DRAM":
            hierarchy[name]["bypass"] = _bypass(rng)
    return gemm, hierarchy


def sample_three_level_accesses(rng: Any) -> dict[str, Any]:
    """perf-core/f5-three-level-accesses: RF, GB and DRAM, each dimension's share of a level split
    over up to three loops (bound-1 loops included, any order), any bypass list at RF and GB
    (none, some, all three), sizes at three scales."""
    gemm, hierarchy = _hierarchy(rng, ("RF", "GB", "DRAM"), int(rng.integers(0, 3)))
    return {"gemm": gemm, "hierarchy": hierarchy}


def sample_pe_array_accesses(rng: Any) -> dict[str, Any]:
    """perf-core/f5-pe-array-accesses: RF, L1, GB and DRAM as in f5-three-level-accesses, plus
    zero to four spatial loops at the GB (a dimension may be unrolled by several, bound-1 spatial
    loops included), so multicast, spatial reduction and per-PE copies all show up."""
    scale = int(rng.integers(0, 3))
    gemm, hierarchy = _hierarchy(rng, ("RF", "L1", "GB", "DRAM"), scale)
    spatial = []
    for _ in range(int(rng.integers(0, 5))):
        d = _pick(rng, _GEMM)
        b = 1 if rng.random() < 0.15 else _log_int(rng, 2, (4, 16, 256)[scale])
        spatial.append([d, b])
        gemm[d] *= b
    hierarchy["GB"]["spatial"] = spatial
    return {"gemm": gemm, "hierarchy": hierarchy}



# ------------------------------------------------------------------------------------------
# F6: sliding-window input traffic
# ------------------------------------------------------------------------------------------

_CONV6 = ("C", "K", "P", "Q", "R", "S")


def _loops_of(rng: Any, d: str, f: int, max_parts: int, p_unit: float) -> list[list[Any]]:
    parts = _log_int(rng, 1, max_parts) if f > 1 else int(rng.random() < p_unit)
    return [[d, b] for b in _factorize(rng, f, parts)] if parts else []


def _window_conv(rng: Any, max_dram_iterations: int = 4096) -> tuple[dict[str, int], dict[str, Any]]:
    """Conv sizes and a buffer / DRAM mapping: the buffer share of each dimension (channels up to
    2^40 and output channels up to 2^30 at the largest scale, rows and filters small enough for
    the exact footprint to be counted) over one or two loops; the DRAM share over up to three
    loops, with at most `max_dram_iterations` DRAM iterations in all; bound-1 loops listed,
    every order; a third of the layers are one-dimensional (Q = S = 1)."""
    scale = int(rng.integers(0, 3))
    one_d = rng.random() < 0.3
    buffer_top = {"C": (4, 64, 1 << 40)[scale], "K": (4, 64, 1 << 30)[scale], "P": (8, 32, 256)[scale],
                  "Q": (8, 32, 256)[scale], "R": (3, 7, 16)[scale], "S": (3, 7, 16)[scale]}
    while True:
        conv, buffer, dram = {}, [], []
        for d in _CONV6:
            if one_d and d in ("Q", "S"):
                conv[d] = 1
                continue
            share = 1 if rng.random() < 0.3 else _log_int(rng, 1, buffer_top[d])
            outer = 1 if rng.random() < 0.35 else _log_int(rng, 2, 8 if d in "RSC" else 16)
            conv[d] = share * outer
            buffer += _loops_of(rng, d, share, 2, 0.1)
            dram += _loops_of(rng, d, outer, 3, 0.2)
        iterations = 1
        for _, b in dram:
            iterations *= b
        if iterations <= max_dram_iterations:
            break
    mapping = {"buffer": [buffer[int(i)] for i in rng.permutation(len(buffer))],
               "dram": [dram[int(i)] for i in rng.permutation(len(dram))]}
    return conv, mapping


def sample_conv_input_delta(rng: Any) -> dict[str, Any]:
    """perf-core/f6-conv-halo-delta: any unit-stride conv layer and buffer / DRAM mapping (see
    _window_conv): filter loops at DRAM, windows that reset when an outer loop wraps, channel
    and output-channel loops anywhere, split DRAM dimensions."""
    conv, mapping = _window_conv(rng)
    return {"conv": conv, "mapping": mapping}


def sample_strided_input_delta(rng: Any) -> dict[str, Any]:
    """perf-core/f6-strided-input-delta: the mappings of f6-conv-halo-delta with any stride and
    dilation (equal, coprime, sharing a factor, larger than the filter)."""
    conv, mapping = _window_conv(rng)
    conv["stride"] = 1 if rng.random() < 0.2 else _log_int(rng, 1, 8)
    conv["dilation"] = 1 if rng.random() < 0.3 else _log_int(rng, 1, 8)
    return {"conv": conv, "mapping": mapping}



# ------------------------------------------------------------------------------------------
# F7: a GEMM on a PE array
# ------------------------------------------------------------------------------------------

def sample_gemm_array_accesses(rng: Any) -> dict[str, Any]:
    """perf-core/f7-gemm-array-multicast: any array shape, rows and cols unrolling any dimension
    (the same one twice included, bound 1 included, not filling the array), the rest of each
    dimension split over GB and DRAM loops (several per dimension, bound-1 loops, any order),
    sizes at three scales."""
    scale = int(rng.integers(0, 3))
    side_top = (4, 32, 1 << 10)[scale]
    array = {"rows": _log_int(rng, 1, side_top), "cols": _log_int(rng, 1, side_top)}
    mapping = {}
    gemm = dict.fromkeys(_GEMM, 1)
    for side in ("rows", "cols"):
        d = _pick(rng, _GEMM)
        b = array[side] if rng.random() < 0.4 else _log_int(rng, 1, array[side])
        mapping[side] = [d, b]
        gemm[d] *= b
    gb, dram = [], []
    for d in _GEMM:
        top = (6, 64, 1 << 12)[scale]
        share_gb = 1 if rng.random() < 0.3 else _log_int(rng, 2, top)
        share_dram = 1 if rng.random() < 0.3 else _log_int(rng, 2, top)
        gemm[d] *= share_gb * share_dram
        gb += _loops_of(rng, d, share_gb, 3, 0.2)
        dram += _loops_of(rng, d, share_dram, 3, 0.2)
    mapping["gb"] = [gb[int(i)] for i in rng.permutation(len(gb))]
    mapping["dram"] = [dram[int(i)] for i in rng.permutation(len(dram))]
    return {"gemm": gemm, "array": array, "mapping": mapping}


def sample_array_edge_accounting(rng: Any, max_work: int = 20000) -> dict[str, Any]:
    """perf-core/f7-array-edge-accounting: any array shape and unrolling (the same dimension on
    rows and cols, bound 1, an array not filled), RF, GB and DRAM loops whose bounds multiply to
    at least each size: ragged edge tiles, loops that overshoot (whole iterations past the size,
    idle PEs), several loops of one dimension at a level, bound-1 loops, any RF bypass list. The
    simulated work (PEs times steps) stays below `max_work`."""
    while True:
        array = {"rows": _log_int(rng, 1, 8), "cols": _log_int(rng, 1, 8)}
        gemm = {d: _log_int(rng, 1, 48) for d in _GEMM}
        mapping: dict[str, Any] = {}
        cover = dict.fromkeys(_GEMM, 1)
        for side in ("rows", "cols"):
            d = _pick(rng, _GEMM)
            b = array[side] if rng.random() < 0.4 else _log_int(rng, 1, array[side])
            mapping[side] = [d, b]
            cover[d] *= b
        levels: dict[str, list[list[Any]]] = {"rf": [], "gb": [], "dram": []}
        for d in _GEMM:
            for level in ("rf", "gb", "dram"):
                for _ in range(int(rng.integers(0, 3))):
                    left = -(-gemm[d] // cover[d])
                    b = 1 if rng.random() < 0.15 else _log_int(rng, 1, max(1, left))
                    levels[level].append([d, b])
                    cover[d] *= b
            left = -(-gemm[d] // cover[d])
            if left > 1 or rng.random() < 0.3:
                b = left + (0 if rng.random() < 0.6 else _log_int(rng, 1, max(1, left)))
                levels[_pick(rng, ("rf", "gb", "dram"))].append([d, b])
        steps = 1
        for loops in levels.values():
            for _, b in loops:
                steps *= b
        if steps * mapping["rows"][1] * mapping["cols"][1] <= max_work:
            break
    for level, loops in levels.items():
        levels[level] = [loops[int(i)] for i in rng.permutation(len(loops))]
    mapping["rf"] = {"bypass": _bypass(rng), "loops": levels["rf"]}
    mapping["gb"], mapping["dram"] = levels["gb"], levels["dram"]
    return {"gemm": gemm, "array": array, "mapping": mapping}


SAMPLERS = {
    "samplers_f1_f7.roofline_gemm": sample_roofline_gemm,
    "samplers_f1_f7.hierarchical_roofline": sample_hierarchical_roofline,
    "samplers_f1_f7.grouped_conv_accounting": sample_grouped_conv_accounting,
    "samplers_f1_f7.gemm_tile_footprint": sample_gemm_tile_footprint,
    "samplers_f1_f7.conv_tile_footprint": sample_conv_tile_footprint,
    "samplers_f1_f7.gemm_dram_bytes": sample_gemm_dram_bytes,
    "samplers_f1_f7.gemm_dram_traffic": sample_gemm_dram_traffic,
    "samplers_f1_f7.gemm_psum_traffic": sample_gemm_psum_traffic,
    "samplers_f1_f7.dram_loop_order_sweep": sample_dram_loop_order_sweep,
    "samplers_f1_f7.pe_array_accesses": sample_pe_array_accesses,
    "samplers_f1_f7.three_level_accesses": sample_three_level_accesses,
    "samplers_f1_f7.conv_input_delta": sample_conv_input_delta,
    "samplers_f1_f7.strided_input_delta": sample_strided_input_delta,
    "samplers_f1_f7.gemm_array_accesses": sample_gemm_array_accesses,
    "samplers_f1_f7.array_edge_accounting": sample_array_edge_accounting,
}
