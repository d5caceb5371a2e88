"""F13 dataflow comparison and F16 mapping ranking.

**F13** (``ranking.array_dataflow_energy``): one GEMM on a ``rows x cols`` PE array with a
one-word register file (RF) per PE and a global buffer (GB) that holds the whole layer. Each
dataflow keeps one tensor in the RFs and unrolls two dimensions onto the array, by a pinned rule:

========  ===========  ===========  ===========  ==========
dataflow   array rows   array cols   streamed     RF holds
========  ===========  ===========  ===========  ==========
ws         K            N            M            W
os         M            N            K            O
is         K            M            N            I
========  ===========  ===========  ===========  ==========

The spatial factor of a dimension is its largest divisor that fits the side of the array. The GB
loops, innermost first, are the streamed dimension (whole), then the rest of the row dimension,
then the rest of the column dimension. Counts come from :func:`loopnest.analyze` (multicast of
streamed operands, spatial reduction of partial sums, first read elided); energy from
:func:`energy.level_energy` (RF one word per access, GB vectors of ``gb_block_size`` words).
The winner has the least energy; exact ties go to the first of ``ws, os, is`` (energies are
multiples of 1/16 pJ in the generator, so sums are exact and ties are real).

**F13** (``ranking.dataflow_latency``): the same three mappings, timed against the GB's read
and write ports: ``latency = max(cycles, ceil(GB reads / read width), ceil(GB writes / write
width))`` (the Timeloop slowdown rule, which comes to this with separate ports), the bound named
in the order compute, gb_read, gb_write on ties, the fastest dataflow with the ``ws, os, is`` tie
order.

**F16** (``ranking.tiling_traffic_ranking``): candidate two-level GEMM tilings (buffer tile and
DRAM loops, the F4 format) ranked by DRAM traffic (stationarity rule, first partial-sum read
elided); a candidate whose tiles need more than the buffer's capacity (doubled when double
buffered) is invalid and left out of the ranking; ties go to the lower index.

**F16** (``ranking.hierarchy_energy_ranking``): candidate RF / GB / DRAM mappings (the F5
format) ranked by energy (the F10 model); a level's capacity holds the tiles of the tensors it
keeps, divided by its ``multiple_buffering`` (Timeloop: effective size = floor(capacity /
multiple_buffering)); invalid candidates are ranked after every valid one, by index; ties go to
the lower index.

The tests recompute every metric with the brute-force trace simulator and compare the rankings
pair by pair.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from ._draw import divisors as _divisors, pick as _pick
from .energy import (
    GEMM_DIMS,
    HIERARCHY,
    RELEVANT,
    TENSORS,
    hierarchy_counts,
    hierarchy_energy,
    level_energy,
    random_costs,
    random_hierarchy,
)
from .loopnest import analyze, gemm_two_level_traffic

DATAFLOWS = ("ws", "os", "is")  # also the tie order
# dataflow -> (dimension on the array rows, on the columns, streamed in time, tensor in the RFs)
PLAN = {"ws": ("K", "N", "M", "W"), "os": ("M", "N", "K", "O"), "is": ("K", "M", "N", "I")}


def largest_divisor_at_most(n: int, cap: int) -> int:
    return max(d for d in range(1, min(n, cap) + 1) if n % d == 0)


def ranked(metric: Sequence[Any], valid: Sequence[bool], invalid_last: bool) -> list[int]:
    """Valid candidates by ascending metric (ties: lower index first); then, if ``invalid_last``,
    the invalid ones by index."""
    order = sorted((i for i in range(len(metric)) if valid[i]), key=lambda i: (metric[i], i))
    if invalid_last:
        order += [i for i in range(len(metric)) if not valid[i]]
    return order


# ------------------------------------------------------------------------------------------
# F13: WS / OS / IS on one PE array
# ------------------------------------------------------------------------------------------

def dataflow_nest(gemm: Mapping[str, Any], array: Mapping[str, Any], dataflow: str) -> dict[str, Any]:
    """The workload / architecture / mapping of one dataflow, in the loopnest format."""
    rdim, cdim, sdim, kept = PLAN[dataflow]
    bounds = {d: int(gemm[d]) for d in GEMM_DIMS}
    fr = largest_divisor_at_most(bounds[rdim], int(array["rows"]))
    fc = largest_divisor_at_most(bounds[cdim], int(array["cols"]))
    return {
        "workload": {"kind": "gemm", **bounds},
        "architecture": {"levels": [{"name": "RF", "bypass": [t for t in TENSORS if t != kept]}, {"name": "GB"}]},
        "mapping": {"levels": [
            {"temporal": []},
            {"spatial": [[cdim, fc], [rdim, fr]],
             "temporal": [[sdim, bounds[sdim]], [rdim, bounds[rdim] // fr], [cdim, bounds[cdim] // fc]]},
        ]},
    }


def ref_array_dataflow_energy(gemm: dict[str, Any], array: dict[str, Any], energy: dict[str, Any]) -> dict[str, Any]:
    rf_cost = {"block_size": 1, "read_pj": energy["rf_read_pj"], "write_pj": energy["rf_write_pj"]}
    gb_cost = {"block_size": energy["gb_block_size"], "read_pj": energy["gb_read_pj"], "write_pj": energy["gb_write_pj"]}
    out: dict[str, dict[str, Any]] = {k: {} for k in ("pes_used", "cycles", "gb_reads", "gb_updates", "energy_pj")}
    for df in DATAFLOWS:
        nest = dataflow_nest(gemm, array, df)
        result = analyze(nest["workload"], nest["architecture"], nest["mapping"])
        rf, gb = result["levels"]
        out["pes_used"][df] = result["mac_units"]
        out["cycles"][df] = result["steps"]
        out["gb_reads"][df] = sum(gb[t]["reads"] for t in TENSORS)
        out["gb_updates"][df] = gb["O"]["updates"]
        total = result["macs"] * float(energy["mac_pj"])
        total += level_energy(rf, rf_cost)[1]
        total += level_energy(gb, gb_cost)[1]
        out["energy_pj"][df] = total
    best = min(DATAFLOWS, key=lambda df: (out["energy_pj"][df], DATAFLOWS.index(df)))
    return {**out, "best_dataflow": best}


_F13_VALUES = (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 12, 14, 15, 16, 18, 20, 21, 24, 27, 28, 30, 32, 36, 40, 45, 48, 56, 60, 64)
_SIDES = (2, 3, 4, 5, 6, 8, 12, 16)


def gen_array_dataflow_energy(rng: Any, values: Sequence[int] = _F13_VALUES, sides: Sequence[int] = _SIDES) -> dict[str, Any]:
    """Sizes the array sides do not divide (largest divisor < side), M == N often (WS and IS
    then tie exactly), reads and writes at different energies, GB blocks that do not divide the
    counts. Energies are multiples of 1/16 pJ so every sum is exact."""
    gemm = {d: int(_pick(rng, values)) for d in GEMM_DIMS}
    if rng.random() < 0.35:
        gemm["N"] = gemm["M"]
    rows = int(_pick(rng, sides))
    cols = rows if rng.random() < 0.3 else int(_pick(rng, sides))

    def sixteenths(low: int, high: int) -> float:
        return int(rng.integers(low, high + 1)) / 16

    rf_read = sixteenths(1, 24)
    gb_read = sixteenths(16, 320)
    energy = {
        "mac_pj": sixteenths(2, 48),
        "rf_read_pj": rf_read,
        "rf_write_pj": rf_read if rng.random() < 0.15 else sixteenths(1, 32),
        "gb_read_pj": gb_read,
        "gb_write_pj": gb_read if rng.random() < 0.15 else sixteenths(16, 400),
        "gb_block_size": int(_pick(rng, (1, 2, 3, 4, 4, 5, 6, 8, 8, 16))),
    }
    return {"gemm": gemm, "array": {"rows": rows, "cols": cols}, "energy": energy}


BOUNDS = ("compute", "gb_read", "gb_write")  # also the tie order of the bound


def dataflow_gb_counts(gemm: Mapping[str, Any], array: Mapping[str, Any], dataflow: str) -> dict[str, int]:
    nest = dataflow_nest(gemm, array, dataflow)
    result = analyze(nest["workload"], nest["architecture"], nest["mapping"])
    gb = result["levels"][1]
    return {"cycles": result["steps"], "gb_reads": sum(gb[t]["reads"] for t in TENSORS),
            "gb_writes": gb["O"]["updates"]}


def ref_dataflow_latency(gemm: dict[str, Any], array: dict[str, Any], gb: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, dict[str, Any]] = {k: {} for k in ("cycles", "gb_reads", "gb_writes", "latency", "bound")}
    for df in DATAFLOWS:
        c = dataflow_gb_counts(gemm, array, df)
        terms = {
            "compute": c["cycles"],
            "gb_read": -(-c["gb_reads"] // int(gb["read_words_per_cycle"])),
            "gb_write": -(-c["gb_writes"] // int(gb["write_words_per_cycle"])),
        }
        latency = max(terms.values())
        out["cycles"][df] = c["cycles"]
        out["gb_reads"][df] = c["gb_reads"]
        out["gb_writes"][df] = c["gb_writes"]
        out["latency"][df] = latency
        out["bound"][df] = next(b for b in BOUNDS if terms[b] == latency)
    best = min(DATAFLOWS, key=lambda df: (out["latency"][df], DATAFLOWS.index(df)))
    return {**out, "best_dataflow": best}


def _port_width(rng: Any, words: int, cycles: int) -> int:
    """A port width that makes the port time close to ``cycles``: equal to it (a bound tie) when
    some width allows, otherwise a little above or below."""
    exact_width = -(-words // cycles)
    u = rng.random()
    if u < 0.35 and -(-words // exact_width) == cycles:
        return exact_width
    return max(1, int(round(exact_width * float(_pick(rng, (0.5, 0.7, 0.9, 1.0, 1.2, 1.6, 2.5))))))


def gen_dataflow_latency(rng: Any, values: Sequence[int] = _F13_VALUES, sides: Sequence[int] = _SIDES) -> dict[str, Any]:
    """Port widths drawn around the compute time of a random dataflow, so compute-bound,
    read-bound and write-bound dataflows and exact bound ties all appear; M == N often (WS and
    IS then tie)."""
    gemm = {d: int(_pick(rng, values)) for d in GEMM_DIMS}
    if rng.random() < 0.3:
        gemm["N"] = gemm["M"]
    rows = int(_pick(rng, sides))
    cols = rows if rng.random() < 0.3 else int(_pick(rng, sides))
    array = {"rows": rows, "cols": cols}
    counts = {df: dataflow_gb_counts(gemm, array, df) for df in DATAFLOWS}
    ref_r, ref_w = _pick(rng, DATAFLOWS), _pick(rng, DATAFLOWS)
    gb = {
        "read_words_per_cycle": _port_width(rng, counts[ref_r]["gb_reads"], counts[ref_r]["cycles"]),
        "write_words_per_cycle": _port_width(rng, counts[ref_w]["gb_writes"], counts[ref_w]["cycles"]),
    }
    return {"gemm": gemm, "array": array, "gb": gb}


# ------------------------------------------------------------------------------------------
# F16: two-level tilings ranked by DRAM traffic
# ------------------------------------------------------------------------------------------

def tiling_requirement(tile: Mapping[str, Any], double_buffered: bool) -> int:
    words = sum(int(tile[a]) * int(tile[b]) for a, b in RELEVANT.values())
    return words * (2 if double_buffered else 1)


def ref_tiling_traffic_ranking(gemm: dict[str, Any], buffer: dict[str, Any], candidates: list[Any]) -> dict[str, Any]:
    traffic, required, valid = [], [], []
    for cand in candidates:
        t = gemm_two_level_traffic(gemm, cand["tile"], cand["dram"])
        traffic.append(t["I_reads"] + t["W_reads"] + t["O_writes"] + t["O_reads"])
        required.append(tiling_requirement(cand["tile"], bool(buffer["double_buffered"])))
        valid.append(required[-1] <= int(buffer["capacity_words"]))
    return {"traffic": traffic, "required_words": required, "valid": valid,
            "ranking": ranked(traffic, valid, invalid_last=False)}


_F16_VALUES = (2, 3, 4, 6, 8, 9, 12, 16, 18, 24, 32, 36, 48, 64)


def _dram_loops(rng: Any, factors: Mapping[str, int]) -> list[list[Any]]:
    loops = []
    for d, f in factors.items():
        divs = _divisors(f)
        if f > 1 and rng.random() < 0.2 and len(divs) > 2:
            a = int(_pick(rng, divs[1:-1]))
            loops += [[d, a], [d, f // a]]
        elif f > 1 or rng.random() < 0.35:
            loops.append([d, f])
    return [loops[i] for i in rng.permutation(len(loops))]


def _twin_loops(rng: Any, loops: list[list[Any]]) -> list[list[Any]]:
    """The same loops, permuted or with a bound-1 loop inserted (often the same traffic)."""
    out = [list(x) for x in loops]
    if rng.random() < 0.5 or not out:
        out.insert(int(rng.integers(0, len(out) + 1)), [str(_pick(rng, GEMM_DIMS)), 1])
    else:
        out = [out[i] for i in rng.permutation(len(out))]
    return out


def gen_tiling_traffic_ranking(rng: Any, values: Sequence[int] = _F16_VALUES, max_candidates: int = 8) -> dict[str, Any]:
    """Candidates with exact ties (twins: a permuted or padded copy), a capacity at or just
    below one candidate's requirement, double buffering on or off."""
    gemm = {d: int(_pick(rng, values)) for d in GEMM_DIMS}
    n = int(rng.integers(3, max_candidates + 1))
    candidates: list[dict[str, Any]] = []
    while len(candidates) < n:
        if candidates and rng.random() < 0.3:
            src = candidates[int(rng.integers(0, len(candidates)))]
            cand = {"tile": dict(src["tile"]), "dram": _twin_loops(rng, src["dram"])}
        else:
            tile = {d: int(_pick(rng, _divisors(gemm[d]))) for d in GEMM_DIMS}
            cand = {"tile": tile, "dram": _dram_loops(rng, {d: gemm[d] // tile[d] for d in GEMM_DIMS})}
        if cand not in candidates:
            candidates.append(cand)
    double = bool(rng.random() < 0.6)
    by_need = sorted(range(n), key=lambda i: tiling_requirement(candidates[i]["tile"], False))
    j = by_need[int(rng.integers(n // 4, n - n // 4))]  # a middling candidate sets the capacity
    single = tiling_requirement(candidates[j]["tile"], False)
    need = tiling_requirement(candidates[j]["tile"], double)
    u = rng.random()
    if u < 0.35:
        capacity = need  # exactly full: fits
    elif u < 0.65:
        capacity = need - 1  # one word short
    elif u < 0.85 and double:
        capacity = single  # fits only without the second buffer
    else:
        capacity = need + int(rng.integers(0, need + 1))
    return {"gemm": gemm, "buffer": {"capacity_words": int(capacity), "double_buffered": double},
            "candidates": candidates}


# ------------------------------------------------------------------------------------------
# F16: RF / GB / DRAM mappings ranked by energy
# ------------------------------------------------------------------------------------------

def level_requirements(gemm: Mapping[str, Any], hierarchy: Mapping[str, Any]) -> dict[str, int]:
    """Words each of RF and GB must hold: the tiles of the tensors the level keeps."""
    result = hierarchy_counts(gemm, hierarchy)
    return {name: sum(level["tiles"].values()) for name, level in zip(HIERARCHY, result["levels"]) if name != "DRAM"}


def ref_hierarchy_energy_ranking(gemm: dict[str, Any], architecture: dict[str, Any], candidates: list[Any]) -> dict[str, Any]:
    energies, valid = [], []
    for hierarchy in candidates:
        energies.append(hierarchy_energy(gemm, hierarchy, architecture)["total_energy_pj"])
        need = level_requirements(gemm, hierarchy)
        valid.append(all(
            need[name] <= int(architecture[name]["capacity_words"]) // int(architecture[name]["multiple_buffering"])
            for name in ("RF", "GB")
        ))
    return {"energy_pj": energies, "valid": valid, "ranking": ranked(energies, valid, invalid_last=True)}


def _twin_hierarchy(rng: Any, hierarchy: Mapping[str, Any]) -> dict[str, Any]:
    """The same mapping with the RF loops permuted and a bound-1 loop inserted somewhere: the
    same counts, the same tiles, the same energy."""
    twin = {name: {k: [list(x) if isinstance(x, list) else x for x in v] for k, v in hierarchy[name].items()}
            for name in HIERARCHY}
    rf = twin["RF"]["loops"]
    twin["RF"]["loops"] = [rf[i] for i in rng.permutation(len(rf))]
    name = str(_pick(rng, HIERARCHY))
    loops = twin[name]["loops"]
    loops.insert(int(rng.integers(0, len(loops) + 1)), [str(_pick(rng, GEMM_DIMS)), 1])
    return twin


_F16H_VALUES = (2, 3, 4, 5, 6, 8, 9, 10, 12, 16, 18, 20, 24, 32)


def gen_hierarchy_energy_ranking(rng: Any, values: Sequence[int] = _F16H_VALUES, max_candidates: int = 7) -> dict[str, Any]:
    """Candidates with exact twins (same energy), capacities at or just below a candidate's
    requirement, multiple buffering 1 to 3, bypassed tensors that must not count toward a
    level's capacity. Energies are multiples of 1/16 pJ so sums and ties are exact."""
    gemm = {d: int(_pick(rng, values)) for d in GEMM_DIMS}
    n = int(rng.integers(3, max_candidates + 1))
    candidates: list[dict[str, Any]] = []
    while len(candidates) < n:
        if candidates and rng.random() < 0.3:
            cand = _twin_hierarchy(rng, candidates[int(rng.integers(0, len(candidates)))])
        else:
            cand = random_hierarchy(rng, gemm, {"RF": 0.3, "GB": 0.2})
        if cand not in candidates:
            candidates.append(cand)
    arch = random_costs(rng, sixteenths=True)
    needs = [level_requirements(gemm, c) for c in candidates]
    for name in ("RF", "GB"):
        mb = int(_pick(rng, (1, 1, 2, 2, 3)))
        ordered = sorted(x[name] for x in needs)
        need = ordered[int(rng.integers(n // 4, n - n // 4))]  # a middling candidate's requirement
        u = rng.random()
        if u < 0.3:
            cap = need * mb
        elif u < 0.55:
            cap = need * mb + mb - 1  # the floor still fits
        elif u < 0.8:
            cap = max(mb, need * mb - 1)  # one word short
        else:
            cap = need * mb * int(rng.integers(1, 4))
        arch[name]["capacity_words"] = int(cap)
        arch[name]["multiple_buffering"] = mb
    arch = {"mac_pj": arch["mac_pj"], **{name: arch[name] for name in HIERARCHY}}
    return {"gemm": gemm, "architecture": arch, "candidates": candidates}


REFERENCES: dict = {
    "ranking.array_dataflow_energy": ref_array_dataflow_energy,
    "ranking.dataflow_latency": ref_dataflow_latency,
    "ranking.tiling_traffic_ranking": ref_tiling_traffic_ranking,
    "ranking.hierarchy_energy_ranking": ref_hierarchy_energy_ranking,
}
GENERATORS: dict = {
    "ranking.array_dataflow_energy": gen_array_dataflow_energy,
    "ranking.dataflow_latency": gen_dataflow_latency,
    "ranking.tiling_traffic_ranking": gen_tiling_traffic_ranking,
    "ranking.hierarchy_energy_ranking": gen_hierarchy_energy_ranking,
}
