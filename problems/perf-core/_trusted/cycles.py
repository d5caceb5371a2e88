"""F8 compute cycles and utilization, F9 bandwidth-throttled latency.

F8 (:func:`pe_array_cycles`): a conv layer on a rows x cols PE array, one MAC per PE per cycle,
some dimensions unrolled spatially along the rows and along the columns. A dimension of bound D
unrolled by f runs ceil(D / f) temporal iterations (the last one is an edge fold with only
D - (ceil(D/f) - 1) * f active PEs along that dimension); the others run D iterations. Cycles are
the product of the temporal iterations of every dimension; MAC utilization counts the idle PEs of
the edge folds and the unmapped PEs.

F9 (:func:`throttled_latency`): Timeloop's bandwidth model. Per level, with accesses per instance
and compute cycles C: req = accesses / C; slowdown = min(1, BWread / req_read, BWwrite /
req_write, BWshared / (req_read + req_write)) (terms with no traffic or no limit left out);
cycles_L = ceil(C / slowdown), computed exactly; total = max over levels.
"""

from __future__ import annotations

from fractions import Fraction
from math import prod
from typing import Any

import numpy as np

CONV_DIMS = ("N", "K", "C", "P", "Q", "R", "S")


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


# ------------------------------------------------------------------------------------------
# F8: PE array cycles and utilization
# ------------------------------------------------------------------------------------------

def spatial_factors(mapping: dict[str, Any]) -> dict[str, int]:
    factors = dict.fromkeys(CONV_DIMS, 1)
    for axis in ("rows", "cols"):
        for entry in mapping[axis]:
            factors[entry["dim"]] *= entry["factor"]
    return factors


def pe_array_cycles(layer: dict[str, Any], array: dict[str, Any], mapping: dict[str, Any]) -> dict[str, Any]:
    factors = spatial_factors(mapping)
    macs = prod(layer[d] for d in CONV_DIMS)
    cycles = prod(ceil_div(layer[d], factors[d]) for d in CONV_DIMS)
    pes = array["rows"] * array["cols"]
    pes_used = prod(factors.values())
    return {
        "macs": macs,
        "cycles": cycles,
        "pes_used": pes_used,
        "spatial_utilization": float(Fraction(pes_used, pes)),
        "mac_utilization": float(Fraction(macs, cycles * pes)),
        "latency_us": float(Fraction(cycles, array["clock_mhz"])),
    }


_ARRAY_SIZES = (4, 6, 8, 12, 14, 16, 24, 32)


def _axis(rng: np.random.Generator, layer: dict[str, int], dims: list[str], size: int) -> list[dict[str, Any]]:
    """Unroll one or two dimensions along an axis of `size` PEs, often imperfectly."""
    out = []
    room = size
    for i, d in enumerate(dims):
        if room < 2 or layer[d] < 2:
            continue
        cap = min(room, layer[d])
        if i == len(dims) - 1 and rng.random() < 0.5:
            f = cap  # fill what is left
        else:
            f = int(rng.integers(2, cap + 1))
        out.append({"dim": d, "factor": f})
        room //= f
    return out


def _large_layer(rng: np.random.Generator) -> dict[str, int]:
    """Loop bounds log-uniform up to 2^20 (filters to 2^10), so MACs and cycles pass 2^31 and often 2^53."""
    layer = {d: int(2 ** rng.uniform(0, 20)) for d in ("N", "K", "C", "P", "Q")}
    layer.update({d: int(2 ** rng.uniform(0, 10)) for d in ("R", "S")})
    return layer


def gen_pe_array(rng: np.random.Generator, large: bool = False) -> dict[str, Any]:
    """A conv layer and a rows x cols array with one or two dimensions per axis; sizes that do not
    divide the unrolling (edge folds) are the rule, not the exception. ``large`` draws the loop
    bounds log-uniform up to 2^20 instead (counts past 2^31 and 2^53)."""
    while True:
        if large:
            layer = _large_layer(rng)
        else:
            r = int(rng.choice((1, 3, 3, 5, 7)))
            layer = {
                "N": int(rng.choice((1, 1, 2, 3, 4))),
                "K": int(rng.integers(3, 130)),
                "C": int(rng.choice((3, int(rng.integers(4, 97))))),
                "P": int(rng.integers(1, 57)),
                "Q": 0,
                "R": r,
                "S": r if rng.random() < 0.8 else int(rng.choice((1, 3, 5))),
            }
            layer["Q"] = layer["P"] if rng.random() < 0.6 else int(rng.integers(1, 57))
        array = {"rows": int(rng.choice(_ARRAY_SIZES)), "cols": int(rng.choice(_ARRAY_SIZES)),
                 "clock_mhz": int(rng.choice((200, 500, 700, 800, 1000, 1200)))}
        dims = list(rng.permutation(("K", "C", "P", "Q", "R", "S", "N")))
        n_rows = int(rng.integers(1, 3))
        n_cols = int(rng.integers(1, 3))
        rows_dims, cols_dims = dims[:n_rows], dims[n_rows:n_rows + n_cols]
        mapping = {"rows": _axis(rng, layer, [str(d) for d in rows_dims], array["rows"]),
                   "cols": _axis(rng, layer, [str(d) for d in cols_dims], array["cols"])}
        if mapping["rows"] or mapping["cols"]:
            return {"layer": layer, "array": array, "mapping": mapping}


# ------------------------------------------------------------------------------------------
# F9: bandwidth-throttled latency
# ------------------------------------------------------------------------------------------

def level_traffic(level: dict[str, Any]) -> tuple[Fraction, Fraction]:
    """Read and write words per instance (exact averages over the instances)."""
    inst = level["instances"]
    reads = sum(level["reads"].values())
    writes = sum(level["fills"].values()) + level["updates"]
    return Fraction(reads, inst), Fraction(writes, inst)


def level_slowdown(level: dict[str, Any], compute_cycles: int) -> Fraction:
    reads, writes = level_traffic(level)
    req_r, req_w = reads / compute_cycles, writes / compute_cycles
    s = Fraction(1)
    if req_r > 0:
        s = min(s, level["read_bandwidth"] / req_r)
    if req_w > 0:
        s = min(s, level["write_bandwidth"] / req_w)
    if level["shared_bandwidth"] is not None and req_r + req_w > 0:
        s = min(s, level["shared_bandwidth"] / (req_r + req_w))
    return s


def throttled_latency(compute_cycles: int, clock_mhz: int, levels: list[dict[str, Any]]) -> dict[str, Any]:
    slowdowns, cycles = [], []
    for level in levels:
        s = level_slowdown(level, compute_cycles)
        slowdowns.append(float(s))
        q = Fraction(compute_cycles) / s
        cycles.append(-(-q.numerator // q.denominator))
    total = max([compute_cycles, *cycles])
    bottleneck = "compute"
    if total > compute_cycles:
        bottleneck = levels[cycles.index(total)]["name"]
    return {
        "slowdown": slowdowns,
        "level_cycles": cycles,
        "total_cycles": total,
        "bottleneck": bottleneck,
        "latency_us": float(Fraction(total, clock_mhz)),
    }


def _split(rng: np.random.Generator, total: int, keys: tuple[str, ...]) -> dict[str, int]:
    cuts = sorted(int(x) for x in rng.integers(0, total + 1, size=len(keys) - 1))
    parts = [b - a for a, b in zip([0, *cuts], [*cuts, total])]
    return dict(zip(keys, parts))


def _in_range(rng: np.random.Generator, target: int, per_cycle: int) -> int:
    """A total whose ceil(total / per_cycle) is exactly `target`, rarely a multiple."""
    lo = (target - 1) * per_cycle + 1
    hi = target * per_cycle
    if rng.random() < 0.15:
        return hi
    return int(rng.integers(lo, hi + 1))


_LEVELS = (("RF", (64, 128, 144, 168, 256)), ("L1", (4, 8, 16)), ("GLB", (1, 1, 2)), ("DRAM", (1,)))


def _throttled_level(rng: np.random.Generator, name: str, inst: int, c: int, target: int,
                     kind: str) -> dict[str, Any]:
    """One level whose cycles are exactly `target` (> c), set by the `kind` term, or at most c
    when kind is "none"."""
    bw_r, bw_w = int(rng.integers(1, 17)), int(rng.integers(1, 9))
    shared: int | None = None
    if kind == "read":
        reads = _in_range(rng, target, inst * bw_r)
        writes = int(rng.integers(0, (target - 1) * inst * bw_w // 2 + 1))
        if rng.random() < 0.5:
            shared = bw_r + bw_w  # loose: cannot bind harder than the read port here
            if ceil_div(reads + writes, inst * shared) > target:
                shared = None
    elif kind == "write":
        writes = _in_range(rng, target, inst * bw_w)
        reads = int(rng.integers(0, (target - 1) * inst * bw_r // 2 + 1))
        if rng.random() < 0.5:
            shared = bw_r + bw_w
            if ceil_div(reads + writes, inst * shared) > target:
                shared = None
    elif kind == "shared":
        bw_r, bw_w = int(rng.integers(2, 17)), int(rng.integers(2, 9))
        shared = int(rng.integers(max(2, max(bw_r, bw_w) // 2 + 1), bw_r + bw_w))
        both = _in_range(rng, target, inst * shared)
        # split so that neither port alone binds: reads < (target-1)*inst*bw_r etc.
        lo = max(0, both - (target - 1) * inst * bw_w)
        hi = min(both, (target - 1) * inst * bw_r)
        if lo > hi:
            shared = max(bw_r, bw_w)
            both = _in_range(rng, target, inst * shared)
            lo = max(0, both - (target - 1) * inst * bw_w)
            hi = min(both, (target - 1) * inst * bw_r)
        if lo > hi:
            return _throttled_level(rng, name, inst, c, target, "read")
        reads = int(rng.integers(lo, hi + 1))
        writes = both - reads
    else:  # none: every term within the compute cycles
        reads = int(rng.integers(0, c * inst * bw_r + 1))
        writes = int(rng.integers(0, c * inst * bw_w + 1))
        if rng.random() < 0.5:
            shared = max(bw_r, bw_w, ceil_div(reads + writes, c * inst))
    fills_total = int(rng.integers(0, writes + 1)) if name != "DRAM" else 0
    updates = writes - fills_total
    return {
        "name": name, "instances": inst, "read_bandwidth": bw_r, "write_bandwidth": bw_w,
        "shared_bandwidth": shared,
        "reads": _split(rng, reads, ("input", "weight", "output")),
        "fills": _split(rng, fills_total, ("input", "weight", "output")),
        "updates": updates,
    }


def gen_throttled(rng: np.random.Generator, max_levels: int = 4, large: bool = False) -> dict[str, Any]:
    """Levels throttled by their read, write or shared port, or not at all; two levels tie for
    the slowest in some cases; counts are totals over many instances at the inner levels.
    ``large`` draws the compute cycles log-uniform in 2^44..2^49 (counts past 2^53)."""
    c = int(2 ** rng.uniform(44, 49)) if large else int(rng.integers(500, 200_000))
    n_levels = int(rng.integers(2, max_levels + 1))
    chosen = sorted(rng.choice(len(_LEVELS), size=n_levels, replace=False).tolist())
    kinds = ("none", "read", "write", "shared", "shared")
    targets = [c + int(rng.integers(1, 3 * c)) for _ in chosen]
    if rng.random() < 0.25 and n_levels >= 2:
        i, j = rng.choice(n_levels, size=2, replace=False).tolist()
        targets[j] = targets[i] = max(targets)
        forced = {i, j}
    else:
        forced = set()
    unthrottled = not forced and rng.random() < 0.15
    levels = []
    for pos, idx in enumerate(chosen):
        name, inst_choices = _LEVELS[idx]
        inst = int(rng.choice(inst_choices))
        kind = "none" if unthrottled else str(rng.choice(kinds[1:] if pos in forced else kinds))
        levels.append(_throttled_level(rng, name, inst, c, targets[pos], kind))
    return {"compute_cycles": c, "clock_mhz": int(rng.choice((200, 500, 800, 1000, 1200))), "levels": levels}


REFERENCES = {
    "cycles.pe_array_cycles": pe_array_cycles,
    "cycles.throttled_latency": throttled_latency,
}

GENERATORS = {
    "cycles.pe_array": gen_pe_array,
    "cycles.throttled": gen_throttled,
}
