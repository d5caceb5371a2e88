"""Domain samplers of the perf-core pack for the cycle, energy, systolic, dataflow, MAESTRO,
attention, ranking and pipeline problems (F8-F17).

Each sampler is written from its problem's spec and ``[[domain]]`` rules alone and shares no
code with the generators: it draws everything the text allows, at several scales (sizes far past
any real layer where the spec sets no bound), so a corner no generator reaches still shows up in
the validator's coverage and adequacy checks. ``sample(rng, **options) -> {parameter: value}``,
drawn from ``rng`` only.
"""

from __future__ import annotations

from math import prod as _prod
from typing import Any

from .samplers import _log_int

CONV_DIMS = ("N", "K", "C", "P", "Q", "R", "S")


def _scale_top(rng: Any, tops: tuple[int, ...]) -> int:
    return int(tops[int(rng.integers(0, len(tops)))])


def _unroll_axis(rng: Any, layer: dict[str, int], free: list[str], size: int, most: int) -> list[dict[str, Any]]:
    """Up to ``most`` distinct dimensions unrolled along an axis of ``size`` PEs, each factor in
    2..its bound, the factors' product within ``size``; a factor often fills what is left."""
    out = []
    room = size
    for _ in range(int(rng.integers(0, most + 1))):
        cands = [d for d in free if layer[d] >= 2]
        if room < 2 or not cands:
            break
        d = cands[int(rng.integers(0, len(cands)))]
        cap = min(room, layer[d])
        f = cap if rng.random() < 0.3 else _log_int(rng, 2, cap)
        out.append({"dim": d, "factor": f})
        free.remove(d)
        room //= f
    return out


def sample_pe_array_cycles(rng: Any) -> dict[str, Any]:
    """perf-core/f8-pe-array-cycles: any conv loop nest, any array, any spatial unrolling the
    spec admits (zero to three dimensions per axis, factors anywhere in 2..bound, axes filled or
    not). The spec bounds no size: each layer is drawn small (bounds under 16), real (to 1024)
    or huge (to 2^24 per bound, so counts pass 2^31 and 2^53)."""
    top = _scale_top(rng, (16, 1024, 1 << 24))
    layer = {d: _log_int(rng, 1, top if d not in "RS" or rng.random() < 0.3 else min(top, 11)) for d in CONV_DIMS}
    array = {"rows": _log_int(rng, 1, 256 if rng.random() < 0.8 else 1 << 16),
             "cols": _log_int(rng, 1, 256 if rng.random() < 0.8 else 1 << 16),
             "clock_mhz": _log_int(rng, 1, 4000)}
    free = list(CONV_DIMS)
    mapping = {"rows": _unroll_axis(rng, layer, free, array["rows"], 3),
               "cols": _unroll_axis(rng, layer, free, array["cols"], 3)}
    return {"layer": layer, "array": array, "mapping": mapping}


_LEVEL_NAMES = ("RF", "L0", "L1", "L2", "GLB", "SRAM", "DRAM", "HBM")
_TENSORS = ("input", "weight", "output")


def _traffic(rng: Any, budget: int) -> int:
    """A word count around ``budget`` (words a port moves in the compute cycles): none, a share,
    exactly a multiple of the port's rate, or a multiple far past it."""
    u = rng.random()
    if u < 0.15:
        return 0
    if u < 0.35:
        return budget * _log_int(rng, 1, 64)
    return max(0, int(budget * 2 ** rng.uniform(-6, 6)) + int(rng.integers(-2, 3)))


def _split_words(rng: Any, total: int, keys: tuple[str, ...]) -> dict[str, int]:
    """``total`` split among ``keys`` (exactly, in integers; some parts often 0)."""
    cuts = sorted(int(total * rng.random()) if rng.random() < 0.75 else total * int(rng.integers(0, 2))
                  for _ in keys[1:])
    parts = [b - a for a, b in zip([0, *cuts], [*cuts, total])]
    order = rng.permutation(len(keys))
    return {keys[int(i)]: p for i, p in zip(order, parts)}


def sample_throttled_latency(rng: Any) -> dict[str, Any]:
    """perf-core/f9-bandwidth-throttled-latency: one to six levels, each with any instance count,
    any positive bandwidths, a shared port or none, and traffic anywhere from nothing to far past
    what its ports move in the compute cycles (exact multiples of a port's rate included, where
    floating point rounds a cycle too many). Some levels copy an earlier one with instances and
    counts scaled together, so two levels tie; names may repeat. The spec bounds no size:
    compute cycles are drawn small, real or up to 2^44."""
    compute = _log_int(rng, 1, _scale_top(rng, (64, 1 << 20, 1 << 44)))
    levels: list[dict[str, Any]] = []
    for _ in range(int(rng.integers(1, 7))):
        if levels and rng.random() < 0.15:
            src = levels[int(rng.integers(0, len(levels)))]
            k = _log_int(rng, 1, 8)
            levels.append({**src, "name": str(rng.choice(_LEVEL_NAMES)) + str(len(levels)),
                           "instances": src["instances"] * k,
                           "reads": {t: v * k for t, v in src["reads"].items()},
                           "fills": {t: v * k for t, v in src["fills"].items()},
                           "updates": src["updates"] * k})
            continue
        inst = 1 if rng.random() < 0.3 else _log_int(rng, 1, 1024)
        bw_r = _log_int(rng, 1, 64 if rng.random() < 0.9 else 1 << 20)
        bw_w = _log_int(rng, 1, 64 if rng.random() < 0.9 else 1 << 20)
        shared = None if rng.random() < 0.4 else _log_int(rng, 1, 2 * max(bw_r, bw_w))
        reads = _traffic(rng, compute * inst * bw_r)
        writes = _traffic(rng, compute * inst * bw_w)
        updates = 0 if rng.random() < 0.3 else min(writes, int(writes * rng.random()))
        name = str(rng.choice(_LEVEL_NAMES))
        if rng.random() < 0.8:
            name += str(len(levels))
        levels.append({"name": name, "instances": inst, "read_bandwidth": bw_r, "write_bandwidth": bw_w,
                       "shared_bandwidth": shared, "reads": _split_words(rng, reads, _TENSORS),
                       "fills": _split_words(rng, writes - updates, _TENSORS), "updates": updates})
    return {"compute_cycles": compute, "clock_mhz": _log_int(rng, 1, 4000), "levels": levels}


def _pj(rng: Any, top: float) -> float:
    """An energy in pJ: zero now and then, otherwise log-uniform up to ``top``, at any precision."""
    if rng.random() < 0.05:
        return 0.0
    value = float(2 ** rng.uniform(-10, top.bit_length() if isinstance(top, int) else 10))
    return round(value, int(rng.integers(0, 7))) if rng.random() < 0.7 else value


def _word_count(rng: Any, top: int, block: int) -> int:
    """A scalar access count: zero, under one block, an exact multiple of the block, or any."""
    u = rng.random()
    if u < 0.1:
        return 0
    if u < 0.2:
        return int(rng.integers(1, block + 1))
    if u < 0.35:
        return block * _log_int(rng, 1, max(1, top // block))
    return _log_int(rng, 1, top)


def sample_action_energy(rng: Any) -> dict[str, Any]:
    """perf-core/f10-action-energy: zero to six levels with any names, any positive block size,
    any non-negative per-vector energies (zero and equal read/write ones included), and scalar
    counts anywhere from zero to far past a real layer's: the spec bounds no count, so each
    input is drawn small (under 2^10), real (to 2^32) or huge (to 2^70)."""
    top = _scale_top(rng, (1 << 10, 1 << 32, 1 << 70))
    n_levels = int(rng.integers(0, 7))
    names = [str(rng.choice(("RF", "L1", "L2", "GB", "Buffer", "DRAM"))) + ("" if rng.random() < 0.3 else str(i))
             for i in range(n_levels)]
    acc_levels, arch_levels = [], []
    for name in names:
        block = 1 if rng.random() < 0.2 else _log_int(rng, 1, 64 if rng.random() < 0.9 else 1 << 20)
        read = _pj(rng, 1000)
        write = read if rng.random() < 0.1 else _pj(rng, 1000)
        arch_levels.append({"name": name, "block_size": block, "read_pj": read, "write_pj": write})
        counts: dict[str, Any] = {"name": name}
        for t in ("I", "W", "O"):
            if rng.random() < 0.15:
                counts[t] = {"reads": 0, "fills": 0, "updates": 0}
            else:
                counts[t] = {a: _word_count(rng, top, block) for a in ("reads", "fills", "updates")}
        acc_levels.append(counts)
    macs = 0 if rng.random() < 0.05 else _log_int(rng, 1, top)
    return {"accesses": {"macs": macs, "levels": acc_levels},
            "architecture": {"mac_pj": _pj(rng, 10), "levels": arch_levels}}


def _size(rng: Any, top: int) -> int:
    """A positive size up to ``top``: often a product of small primes (so it splits many ways),
    sometimes any integer (a prime cannot split)."""
    if rng.random() < 0.3:
        return _log_int(rng, 1, top)
    n = 1
    target = _log_int(rng, 1, top)
    while True:
        p = int(rng.choice((2, 2, 2, 3, 3, 5, 7, 11)))
        if n * p > target:
            return n
        n *= p


def _prime_factors(n: int) -> list[int]:
    out, p = [], 2
    while p * p <= n:
        while n % p == 0:
            out.append(p)
            n //= p
        p += 1
    if n > 1:
        out.append(n)
    return out


def _split_factors(rng: Any, n: int, parts: int) -> list[int]:
    """``n`` as a product of ``parts`` factors, each prime factor sent to a random part."""
    out = [1] * parts
    for p in _prime_factors(n):
        out[int(rng.integers(0, parts))] *= p
    return out


def _level_loops(rng: Any, shares: dict[str, int], most: int = 3) -> list[list[Any]]:
    """One level's loops: each dimension's share as zero to ``most`` loops (several loops of one
    dimension, loops of bound 1 among them), all in a random order."""
    loops: list[list[Any]] = []
    for d, f in shares.items():
        n = int(rng.integers(0 if f == 1 else 1, most + 1))
        if f == 1 and rng.random() < 0.6:
            n = 0
        loops += [[d, b] for b in _split_factors(rng, f, n)] if n else []
    order = rng.permutation(len(loops))
    return [loops[int(i)] for i in order]


def _gemm_hierarchy(rng: Any, gemm: dict[str, int], names: tuple[str, ...]) -> dict[str, Any]:
    """An exact mapping of ``gemm`` onto ``names`` (innermost first): every dimension's size
    split over the levels, each level's share over several loops; bypass lists of any subset
    (all three tensors included) on every level but the last."""
    split = {d: _split_factors(rng, gemm[d], len(names)) for d in gemm}
    hierarchy: dict[str, Any] = {}
    for lv, name in enumerate(names):
        hierarchy[name] = {"loops": _level_loops(rng, {d: split[d][lv] for d in gemm})}
        if lv < len(names) - 1:
            hierarchy[name]["bypass"] = [t for t in ("I", "W", "O") if rng.random() < 0.3]
    return hierarchy


def _level_costs(rng: Any) -> dict[str, Any]:
    block = 1 if rng.random() < 0.25 else _log_int(rng, 1, 64 if rng.random() < 0.9 else 4096)
    read = _pj(rng, 1000)
    return {"block_size": block, "read_pj": read, "write_pj": read if rng.random() < 0.1 else _pj(rng, 1000)}


def sample_mapped_gemm_energy(rng: Any) -> dict[str, Any]:
    """perf-core/f10-mapped-gemm-energy: any GEMM the spec admits, mapped exactly on RF / GB /
    DRAM with zero to three loops per dimension per level (loops of bound 1 included), any
    bypass lists (a tensor bypassed at both RF and GB included), any block sizes and energies.
    The spec bounds no size: each GEMM is drawn small (under 64 per dimension), real (to 2^12)
    or huge (to 2^24 per dimension, so counts pass 2^53)."""
    top = _scale_top(rng, (64, 1 << 12, 1 << 24))
    gemm = {d: _size(rng, top) for d in ("M", "N", "K")}
    energy = {"mac_pj": _pj(rng, 10), **{name: _level_costs(rng) for name in ("RF", "GB", "DRAM")}}
    return {"gemm": gemm, "hierarchy": _gemm_hierarchy(rng, gemm, ("RF", "GB", "DRAM")), "energy": energy}


def _systolic_array(rng: Any) -> dict[str, int]:
    """Any rows x cols array of at least two PEs: single rows or columns, square and not, to 2^12 a side."""
    while True:
        rows = 1 if rng.random() < 0.1 else _log_int(rng, 1, 256 if rng.random() < 0.85 else 1 << 12)
        cols = rows if rng.random() < 0.2 else (1 if rng.random() < 0.1 else _log_int(rng, 1, 256 if rng.random() < 0.85 else 1 << 12))
        if rows * cols >= 2:
            return {"rows": rows, "cols": cols}


def _extent_against(rng: Any, side: int, top: int) -> int:
    """A GEMM extent: under the array side, a multiple of it, or anything up to ``top``."""
    u = rng.random()
    if u < 0.2 and side > 1:
        return _log_int(rng, 1, side - 1)
    if u < 0.35:
        return side * _log_int(rng, 1, max(1, top // side))
    return _log_int(rng, 1, top)


def sample_systolic_os_cycles(rng: Any) -> dict[str, Any]:
    """perf-core/f11-systolic-os-cycles: any GEMM on any array of at least two PEs. The spec
    bounds no size: each GEMM is drawn small (extents under 64), real (to 2^14) or huge (to
    2^24 per extent, counts past 2^53); extents fall under, on and off the array sides."""
    top = _scale_top(rng, (64, 1 << 14, 1 << 24))
    array = _systolic_array(rng)
    gemm = {"M": _extent_against(rng, array["rows"], top), "N": _extent_against(rng, array["cols"], top),
            "K": _log_int(rng, 1, top)}
    return {"gemm": gemm, "array": array}


def sample_systolic_conv_dataflows(rng: Any) -> dict[str, Any]:
    """perf-core/f11-systolic-conv-dataflows: any valid-convolution layer (filter within the
    input, non-square inputs and filters, strides longer than the filter or than the input leaves
    room for) on any array of at least two PEs. The spec bounds no size: each layer is drawn
    small (sides under 16), real (maps to 512, channels to 4096) or huge (to 2^16 and 2^24).
    A third of the layers give num_filters = P*Q, where WS and IS tie."""
    maps, chans = ((16, 16), (512, 4096), (1 << 16, 1 << 24))[int(rng.integers(0, 3))]
    h, w = _log_int(rng, 1, maps), _log_int(rng, 1, maps)
    fh = _log_int(rng, 1, min(h, 11) if rng.random() < 0.8 else h)
    fw = fh if fh <= w and rng.random() < 0.5 else _log_int(rng, 1, min(w, 11) if rng.random() < 0.8 else w)
    stride = _log_int(rng, 1, 4 if rng.random() < 0.8 else maps)
    layer = {"ifmap_h": h, "ifmap_w": w, "filter_h": fh, "filter_w": fw,
             "channels": _log_int(rng, 1, chans), "num_filters": _log_int(rng, 1, chans), "stride": stride}
    if rng.random() < 0.33:
        layer["num_filters"] = ((h - fh) // stride + 1) * ((w - fw) // stride + 1)
    return {"layer": layer, "array": _systolic_array(rng)}


def sample_systolic_sram_accesses(rng: Any) -> dict[str, Any]:
    """perf-core/f12-systolic-sram-accesses: any GEMM on any array (a single PE included) under
    each dataflow. The spec bounds no size: each GEMM is drawn small (extents under 64), real (to
    2^14) or huge (to 2^24, counts past 2^53); each extent is drawn against one of the sides."""
    top = _scale_top(rng, (64, 1 << 14, 1 << 24))
    array = _systolic_array(rng) if rng.random() < 0.97 else {"rows": 1, "cols": 1}
    sides = (array["rows"], array["cols"])
    gemm = {d: _extent_against(rng, sides[int(rng.integers(0, 2))], top) for d in ("M", "N", "K")}
    return {"gemm": gemm, "array": array, "dataflow": str(rng.choice(("os", "ws", "is")))}


def sample_systolic_dataflow_energy(rng: Any) -> dict[str, Any]:
    """perf-core/f12-systolic-dataflow-energy: any GEMM on any array (a single PE included) with
    any positive integer energies. The spec bounds no size: each GEMM is drawn small (extents
    under 64), real (to 2^14) or huge (to 2^24); energies to 2^10 (now and then to 2^30). A
    quarter of the inputs make WS and IS tie exactly (M = N, equal ifmap and filter energies)."""
    top = _scale_top(rng, (64, 1 << 14, 1 << 24))
    array = _systolic_array(rng) if rng.random() < 0.97 else {"rows": 1, "cols": 1}
    sides = (array["rows"], array["cols"])
    gemm = {d: _extent_against(rng, sides[int(rng.integers(0, 2))], top) for d in ("M", "N", "K")}
    pj_top = 1 << 10 if rng.random() < 0.9 else 1 << 30
    energy = {key: _log_int(rng, 1, pj_top) for key in ("ifmap_read_pj", "filter_read_pj", "ofmap_write_pj")}
    if rng.random() < 0.25:
        gemm["N"] = gemm["M"]
        energy["filter_read_pj"] = energy["ifmap_read_pj"]
    return {"gemm": gemm, "array": array, "energy": energy}


def _gemm_on_array(rng: Any, top: int) -> tuple[dict[str, int], dict[str, int]]:
    """A GEMM and a PE array for the F13 mappings: sides of any size (one PE included), extents
    under, on and off the sides (primes that only 1 divides among them); M = N a third of the time."""
    rows = _log_int(rng, 1, 64 if rng.random() < 0.9 else 4096)
    cols = rows if rng.random() < 0.25 else _log_int(rng, 1, 64 if rng.random() < 0.9 else 4096)
    sides = (rows, cols)
    gemm = {d: _extent_against(rng, sides[int(rng.integers(0, 2))], top) for d in ("M", "N", "K")}
    if rng.random() < 0.33:
        gemm["N"] = gemm["M"]
    return gemm, {"rows": rows, "cols": cols}


def sample_dataflow_latency(rng: Any) -> dict[str, Any]:
    """perf-core/f13-dataflow-latency: any GEMM on any array with any GB port widths. The spec
    bounds no size: each GEMM is drawn small (extents under 64), real (to 2^12) or huge (to
    2^22, counts past 2^53). Port widths run from 1 word per cycle to several times what the
    array can ask for in a cycle, so compute-bound, read-bound and write-bound dataflows and
    exact ties between the terms all appear."""
    gemm, array = _gemm_on_array(rng, _scale_top(rng, (64, 1 << 12, 1 << 22)))
    demand = array["rows"] + array["cols"] + array["rows"] * array["cols"]
    gb = {"read_words_per_cycle": _log_int(rng, 1, max(1, 2 * demand)),
          "write_words_per_cycle": _log_int(rng, 1, max(1, 2 * array["cols"]))}
    return {"gemm": gemm, "array": array, "gb": gb}


def _sixteenths(rng: Any, top: int) -> float:
    """A non-negative multiple of 1/16 pJ up to ``top`` pJ (zero now and then)."""
    return 0.0 if rng.random() < 0.05 else _log_int(rng, 1, 16 * top) / 16


def sample_array_dataflow_energy(rng: Any) -> dict[str, Any]:
    """perf-core/f13-array-dataflow-energy: any GEMM on any array, energies any non-negative
    multiples of 1/16 pJ (zero and equal read/write ones included), any GB block. The spec says
    every sum is exact in double precision, so sizes stay where that holds: each GEMM is drawn
    small (extents under 64), real (to 2^10) or large (to 2^11, M*N*K to 2^33); energies to
    2^10 pJ."""
    gemm, array = _gemm_on_array(rng, _scale_top(rng, (64, 1 << 10, 1 << 11)))
    rf_read = _sixteenths(rng, 64)
    gb_read = _sixteenths(rng, 1024)
    energy = {"mac_pj": _sixteenths(rng, 64), "rf_read_pj": rf_read,
              "rf_write_pj": rf_read if rng.random() < 0.1 else _sixteenths(rng, 64),
              "gb_read_pj": gb_read, "gb_write_pj": gb_read if rng.random() < 0.1 else _sixteenths(rng, 1024),
              "gb_block_size": 1 if rng.random() < 0.2 else _log_int(rng, 1, 64)}
    return {"gemm": gemm, "array": array, "energy": energy}


_MAESTRO_DIMS = ("K", "C", "P", "Q", "R", "S")


def _map_directive(rng: Any, kind: str, dim: str, extent: int) -> dict[str, Any]:
    """A map directive: any offset (1, dividing the extent or not, past it), and a size equal to
    it, a little larger (overlapping chunks) or past the whole extent."""
    offset = 1 if rng.random() < 0.3 else _log_int(rng, 1, max(1, extent if rng.random() < 0.9 else 2 * extent))
    u = rng.random()
    if u < 0.4:
        size = offset
    elif u < 0.75:
        size = offset + _log_int(rng, 1, max(1, extent))
    else:
        size = max(offset, extent + int(rng.integers(0, 3)))
    return {"kind": kind, "size": size, "offset": offset, "dim": dim}


def sample_directive_iterations(rng: Any) -> dict[str, Any]:
    """perf-core/f14-maestro-directive-iterations: one to six dimensions in any order with one
    directive each, exactly one of them a SpatialMap (on any dimension, extent 1 included), any
    offsets and sizes the spec admits, on 1 PE up to 2^12. The spec bounds no extent: each is drawn
    small (under 16), real (to 2^8) or huge (to 2^24, step counts past 2^53), but the
    SpatialMap's extent stays within 1024 chunks of one index per PE, so busy_pes (one entry per
    spatial iteration) stays short, and the total steps stay under 2^62."""
    top = _scale_top(rng, (16, 256, 1 << 24))
    names = [_MAESTRO_DIMS[int(i)] for i in rng.permutation(6)[: int(rng.integers(1, 7))]]
    dims = {n: _log_int(rng, 1, top if n not in "RS" or rng.random() < 0.3 else min(top, 11)) for n in names}
    num_pes = 1 if rng.random() < 0.05 else _log_int(rng, 1, 64 if rng.random() < 0.8 else 4096)
    spatial = names[int(rng.integers(0, len(names)))]
    dims[spatial] = min(dims[spatial], num_pes * 1024)
    dataflow = [_map_directive(rng, "SpatialMap" if n == spatial else "TemporalMap", n, dims[n]) for n in names]

    def steps() -> int:
        return _prod(-(-dims[x["dim"]] // (x["offset"] * (num_pes if x["kind"] == "SpatialMap" else 1)))
                     for x in dataflow)

    while steps() >= 1 << 62:  # the reference multiplies the iterations in int64
        big = max((x["dim"] for x in dataflow if x["kind"] == "TemporalMap"), key=lambda n: dims[n])
        dims[big] //= 2
    return {"dims": dims, "dataflow": dataflow, "num_pes": num_pes}


def _maestro_level(rng: Any, dims: dict[str, int], units: int) -> list[dict[str, Any]]:
    """One map per dimension of ``dims`` in a random order, one of them (any) a SpatialMap whose
    extent is first cut to 1024 chunks of one index per unit."""
    names = [list(dims)[int(i)] for i in rng.permutation(len(dims))]
    spatial = names[int(rng.integers(0, len(names)))]
    dims[spatial] = min(dims[spatial], units * 1024)
    return [_map_directive(rng, "SpatialMap" if n == spatial else "TemporalMap", n, dims[n]) for n in names]


def _level_steps(directives: list[dict[str, Any]], extents: dict[str, int], units: int) -> int:
    return _prod(-(-extents[x["dim"]] // (x["offset"] * (units if x["kind"] == "SpatialMap" else 1)))
                 for x in directives)


def sample_cluster_iterations(rng: Any) -> dict[str, Any]:
    """perf-core/f14-maestro-cluster-levels: one to six dimensions, an outer level and an inner
    level of one map each per dimension (independent orders, one SpatialMap each, on any
    dimension), one Cluster(n) with n any divisor of num_pes (1 and num_pes included), any
    offsets and sizes (outer sizes under, at and past the extent). The spec bounds no extent:
    each is drawn small (under 16), real (to 2^8) or huge (to 2^24); each SpatialMap stays within
    1024 chunks of one index per unit, and each level's steps under 2^62 (the reference
    multiplies a level's iterations in int64)."""
    top = _scale_top(rng, (16, 256, 1 << 24))
    names = [_MAESTRO_DIMS[int(i)] for i in rng.permutation(6)[: int(rng.integers(1, 7))]]
    dims = {n: _log_int(rng, 1, top if n not in "RS" or rng.random() < 0.3 else min(top, 11)) for n in names}
    n = _log_int(rng, 1, 64)
    clusters = 1 if rng.random() < 0.1 else _log_int(rng, 1, 64)
    outer = _maestro_level(rng, dims, clusters)
    inner_dims = {x["dim"]: min(x["size"], dims[x["dim"]]) for x in outer}
    inner = _maestro_level(rng, inner_dims, n)
    for x in outer:  # the inner SpatialMap's cut applies to the chunk the outer map hands down
        if min(x["size"], dims[x["dim"]]) > inner_dims[x["dim"]]:
            x["offset"] = min(x["offset"], inner_dims[x["dim"]])
            x["size"] = inner_dims[x["dim"]]
    while True:
        handed = {x["dim"]: min(x["size"], dims[x["dim"]]) for x in outer}
        if _level_steps(outer, dims, clusters) < 1 << 62 and _level_steps(inner, handed, n) < 1 << 62:
            break
        big = max(dims, key=lambda k: dims[k])
        dims[big] = max(1, dims[big] // 2)
    return {"dims": dims, "dataflow": outer + [{"kind": "Cluster", "size": n}] + inner, "num_pes": n * clusters}


def _bit_width(rng: Any) -> int:
    """A positive bit width: a common one, any under 16 (sub-byte and odd ones), or any to 64."""
    u = rng.random()
    if u < 0.4:
        return int(rng.choice((4, 8, 16, 32)))
    if u < 0.85:
        return int(rng.integers(1, 17))
    return int(rng.integers(1, 65))


def sample_mha_prefill_decode(rng: Any) -> dict[str, Any]:
    """perf-core/f15-mha-prefill-decode: any layer with n_heads dividing d_model (one head and
    head_dim 1 included), any d_ff, any positive bit widths (sub-byte and odd ones, where the
    byte counts round up), any batch and prompt length. The spec bounds no size: each input is
    drawn small (everything under 16), real (head_dim to 256, 128 heads, prompts to 2^17) or
    huge (to 2^20 each, counts past 2^53)."""
    top = _scale_top(rng, (16, 1 << 17, 1 << 20))
    head_dim = _log_int(rng, 1, min(top, 256) if top < (1 << 20) else top)
    n_heads = _log_int(rng, 1, min(top, 128) if top < (1 << 20) else top)
    d = head_dim * n_heads
    d_ff = 4 * d if rng.random() < 0.2 else _log_int(rng, 1, max(2, 8 * d))
    return {"model": {"d_model": d, "n_heads": n_heads, "d_ff": d_ff},
            "precision": {"weight_bits": _bit_width(rng), "kv_bits": _bit_width(rng)},
            "run": {"batch": _log_int(rng, 1, min(top, 256) if top < (1 << 20) else top),
                    "prompt_len": _log_int(rng, 1, top)}}


def _gqa_step_intensity(model: dict[str, Any], precision: dict[str, Any], run: dict[str, Any], j: int) -> float:
    """FLOP per byte of decode step ``j``, from the spec's formulas (to place a ridge point)."""
    d, h, g, e, f, n = (model[k] for k in ("d_model", "n_heads", "n_kv_heads", "head_dim", "d_ff", "n_layers"))
    params = n * (2 * d * h * e + 2 * d * g * e + (3 if model["gated_mlp"] else 2) * d * f)
    b, length = run["batch"], run["prompt_len"]
    flops = 2 * (b * params + 2 * n * b * h * (length + j + 1) * e)
    kv = -(-n * 2 * g * e * precision["kv_bits"] // 8)
    nbytes = -(-params * precision["weight_bits"] // 8) + b * (length + j + 1) * kv
    return flops / nbytes


def sample_gqa_serving(rng: Any) -> dict[str, Any]:
    """perf-core/f15-gqa-serving-roofline: any model the spec admits (n_kv_heads any divisor of
    n_heads, from MQA to MHA; h * e equal to d or not; gated or plain MLP; any d_ff), any bit
    widths (sub-byte and odd ones), any run and any hardware. Sizes at three scales (small,
    real, huge: prompts to 2^24, FLOPs past 2^53); decode runs to 512 steps (the answer sums
    every step). A third of the inputs put the ridge point between the first and the last decode
    step, so the run crosses from one bound to the other."""
    scale = int(rng.integers(0, 3))
    top = (16, 1 << 12, 1 << 16)[scale]
    heads = _log_int(rng, 1, min(top, 128))
    groups = [x for x in range(1, heads + 1) if heads % x == 0]
    g = 1 if rng.random() < 0.2 else (heads if rng.random() < 0.25 else groups[int(rng.integers(0, len(groups)))])
    e = _log_int(rng, 1, min(top, 256))
    d = heads * e if rng.random() < 0.6 else _log_int(rng, 1, top)
    model = {"n_layers": _log_int(rng, 1, min(top, 128)), "d_model": d, "n_heads": heads, "n_kv_heads": g,
             "head_dim": e, "d_ff": _log_int(rng, 1, 4 * top), "gated_mlp": bool(rng.random() < 0.5)}
    precision = {"weight_bits": _bit_width(rng), "kv_bits": _bit_width(rng)}
    run = {"batch": _log_int(rng, 1, min(top, 1024)), "prompt_len": _log_int(rng, 1, (16, 1 << 14, 1 << 24)[scale]),
           "gen_tokens": _log_int(rng, 1, 512)}
    bw = _log_int(rng, 1, 1 << 14)
    peak = _log_int(rng, 1, 1 << 21)
    if run["gen_tokens"] > 1 and rng.random() < 0.33:
        first = _gqa_step_intensity(model, precision, run, 0)
        last = _gqa_step_intensity(model, precision, run, run["gen_tokens"] - 1)
        peak = max(1, round((first + (last - first) * rng.uniform(0.1, 0.9)) * bw))
    return {"model": model, "precision": precision, "run": run, "hw": {"peak_gflops": peak, "hbm_gb_per_s": bw}}


def _dram_nest(rng: Any, shares: dict[str, int]) -> list[list[Any]]:
    return _level_loops(rng, shares)


def _candidate_twin(rng: Any, cand: dict[str, Any]) -> dict[str, Any]:
    """The same tiling with its loops permuted, or with a loop of bound 1 inserted."""
    loops = [list(x) for x in cand["dram"]]
    if rng.random() < 0.5 or not loops:
        loops.insert(int(rng.integers(0, len(loops) + 1)), [str(rng.choice(("M", "N", "K"))), 1])
    else:
        loops = [loops[int(i)] for i in rng.permutation(len(loops))]
    return {"tile": dict(cand["tile"]), "dram": loops}


def _tile_words(tile: dict[str, int]) -> int:
    return tile["M"] * tile["K"] + tile["K"] * tile["N"] + tile["M"] * tile["N"]


def sample_tiling_traffic_ranking(rng: Any) -> dict[str, Any]:
    """perf-core/f16-tiling-traffic-ranking: any GEMM, one to ten exact two-level tilings (tile
    extents any divisor, the DRAM share over zero to three loops per dimension, loops of bound 1
    included, any order; a third of them twins of an earlier one: permuted loops or a bound-1
    loop inserted), double buffering on or off, and a capacity at, one word under, or anywhere
    around a candidate's requirement (or past them all, or under them all). Sizes at three
    scales: small (under 64), real (to 2^12) or huge (to 2^20, traffic past 2^53)."""
    top = _scale_top(rng, (64, 1 << 12, 1 << 20))
    gemm = {d: _size(rng, top) for d in ("M", "N", "K")}
    candidates: list[dict[str, Any]] = []
    for _ in range(int(rng.integers(1, 11))):
        if candidates and rng.random() < 0.3:
            candidates.append(_candidate_twin(rng, candidates[int(rng.integers(0, len(candidates)))]))
            continue
        split = {d: _split_factors(rng, gemm[d], 2) for d in gemm}
        candidates.append({"tile": {d: split[d][0] for d in gemm}, "dram": _dram_nest(rng, {d: split[d][1] for d in gemm})})
    double = bool(rng.random() < 0.5)
    need = _tile_words(candidates[int(rng.integers(0, len(candidates)))]["tile"]) * (2 if double else 1)
    u = rng.random()
    if u < 0.3:
        capacity = need
    elif u < 0.55:
        capacity = max(1, need - 1)
    elif u < 0.7 and double:
        capacity = need // 2
    else:
        capacity = _log_int(rng, 1, 4 * need)
    return {"gemm": gemm, "buffer": {"capacity_words": capacity, "double_buffered": double}, "candidates": candidates}


def _held_words(gemm_dims: tuple[str, ...], hierarchy: dict[str, Any], names: tuple[str, ...]) -> dict[str, int]:
    """Words of the tiles each level but the last holds (bypassed tensors take no room)."""
    relevant = {"I": ("M", "K"), "W": ("K", "N"), "O": ("M", "N")}
    extent = dict.fromkeys(gemm_dims, 1)
    out = {}
    for name in names[:-1]:
        for d, b in hierarchy[name]["loops"]:
            extent[d] *= b
        out[name] = sum(extent[a] * extent[b] for t, (a, b) in relevant.items() if t not in hierarchy[name]["bypass"])
    return out


def sample_hierarchy_energy_ranking(rng: Any) -> dict[str, Any]:
    """perf-core/f16-hierarchy-energy-ranking: any GEMM, one to eight exact RF / GB / DRAM
    mappings (zero to three loops per dimension per level, loops of bound 1, any bypass; a third
    of them twins of an earlier one: loops permuted or a bound-1 loop inserted, the same energy),
    energies any multiples of 1/16 pJ, any blocks, multiple buffering 1 to 4, capacities at,
    just under or around a candidate's needs (0 included). The spec says energy sums are exact
    in double precision, so sizes stay where that holds: extents to 2^10."""
    names = ("RF", "GB", "DRAM")
    top = _scale_top(rng, (16, 256, 1 << 10))
    gemm = {d: _size(rng, top) for d in ("M", "N", "K")}
    candidates: list[dict[str, Any]] = []
    for _ in range(int(rng.integers(1, 9))):
        if candidates and rng.random() < 0.3:
            src = candidates[int(rng.integers(0, len(candidates)))]
            twin = {n: {k: [list(x) if isinstance(x, list) else x for x in v] for k, v in src[n].items()} for n in names}
            level = names[int(rng.integers(0, 3))]
            loops = twin[level]["loops"]
            if rng.random() < 0.5:
                twin[level]["loops"] = [loops[int(i)] for i in rng.permutation(len(loops))]
            else:
                loops.insert(int(rng.integers(0, len(loops) + 1)), [str(rng.choice(("M", "N", "K"))), 1])
            candidates.append(twin)
        else:
            candidates.append(_gemm_hierarchy(rng, gemm, names))
    arch: dict[str, Any] = {"mac_pj": _sixteenths(rng, 64)}
    for name in names:
        read = _sixteenths(rng, 1024)
        arch[name] = {"block_size": 1 if rng.random() < 0.25 else _log_int(rng, 1, 64), "read_pj": read,
                      "write_pj": read if rng.random() < 0.1 else _sixteenths(rng, 1024)}
    needs = [_held_words(("M", "N", "K"), c, names) for c in candidates]
    for name in names[:-1]:
        mb = 1 if rng.random() < 0.4 else _log_int(rng, 1, 4)
        need = needs[int(rng.integers(0, len(needs)))][name]
        u = rng.random()
        if u < 0.25:
            cap = need * mb
        elif u < 0.45:
            cap = need * mb + int(rng.integers(0, mb))
        elif u < 0.65:
            cap = max(0, need * mb - 1)
        elif u < 0.7:
            cap = 0
        else:
            cap = _log_int(rng, 1, 4 * need * mb + 1)
        arch[name].update(capacity_words=cap, multiple_buffering=mb)
    return {"gemm": gemm, "architecture": arch, "candidates": candidates}


def sample_pipeline_latency(rng: Any) -> dict[str, Any]:
    """perf-core/f17-double-buffered-pipeline: one to 64 tiles, any DMA bandwidths and setup
    costs (0 included), one to three buffer slots. Each input picks a scale (small: under 64,
    real: to 2^20, huge: to 2^50, so the cycle counts pass 2^53) and a regime (load-, compute-
    or store-heavy tiles, or each tile its own), and transfers that divide their bandwidth or not."""
    top = _scale_top(rng, (64, 1 << 20, 1 << 50))
    dma = {"load_bytes_per_cycle": _log_int(rng, 1, 1024), "store_bytes_per_cycle": _log_int(rng, 1, 1024),
           "setup_cycles": 0 if rng.random() < 0.3 else _log_int(rng, 1, 1024)}
    regime = str(rng.choice(("load", "compute", "store", "mixed")))
    tiles = []
    for _ in range(1 if rng.random() < 0.1 else _log_int(rng, 1, 64)):
        heavy = str(rng.choice(("load", "compute", "store"))) if regime == "mixed" else regime
        cycles = {k: _log_int(rng, 1, top if k == heavy else max(1, top // 4)) for k in ("load", "compute", "store")}
        load = cycles["load"] * dma["load_bytes_per_cycle"]
        store = cycles["store"] * dma["store_bytes_per_cycle"]
        if rng.random() < 0.7:
            load = max(1, load - int(rng.integers(0, dma["load_bytes_per_cycle"])))
        if rng.random() < 0.7:
            store = max(1, store - int(rng.integers(0, dma["store_bytes_per_cycle"])))
        tiles.append({"load_bytes": load, "compute_cycles": cycles["compute"], "store_bytes": store})
    return {"tiles": tiles, "dma": dma, "buffers": int(rng.integers(1, 4))}


SAMPLERS = {
    "samplers_f8_f17.pe_array_cycles": sample_pe_array_cycles,
    "samplers_f8_f17.throttled_latency": sample_throttled_latency,
    "samplers_f8_f17.action_energy": sample_action_energy,
    "samplers_f8_f17.mapped_gemm_energy": sample_mapped_gemm_energy,
    "samplers_f8_f17.systolic_os_cycles": sample_systolic_os_cycles,
    "samplers_f8_f17.systolic_conv_dataflows": sample_systolic_conv_dataflows,
    "samplers_f8_f17.systolic_sram_accesses": sample_systolic_sram_accesses,
    "samplers_f8_f17.systolic_dataflow_energy": sample_systolic_dataflow_energy,
    "samplers_f8_f17.dataflow_latency": sample_dataflow_latency,
    "samplers_f8_f17.array_dataflow_energy": sample_array_dataflow_energy,
    "samplers_f8_f17.directive_iterations": sample_directive_iterations,
    "samplers_f8_f17.cluster_iterations": sample_cluster_iterations,
    "samplers_f8_f17.mha_prefill_decode": sample_mha_prefill_decode,
    "samplers_f8_f17.gqa_serving": sample_gqa_serving,
    "samplers_f8_f17.tiling_traffic_ranking": sample_tiling_traffic_ranking,
    "samplers_f8_f17.hierarchy_energy_ranking": sample_hierarchy_energy_ranking,
    "samplers_f8_f17.pipeline_latency": sample_pipeline_latency,
}
