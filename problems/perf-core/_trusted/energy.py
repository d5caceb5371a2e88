"""F10: energy from action counts, Accelergy / Timeloop style.

A storage level moves data in *vectors* of ``block_size`` words: for every tensor and every action
(``reads``, ``fills``, ``updates``) separately, ``vector accesses = ceil(scalar accesses /
block_size)``. A vector read costs ``read_pj``; a vector fill or update (both are writes) costs
``write_pj``. The energy of a layer is ``MACs x mac_pj`` plus the sum over levels, tensors and
actions of ``vector accesses x per-vector energy``. Rounding happens per tensor per action, never on
a level's total (Timeloop's convention).

The mapped problems take a GEMM on a three-level hierarchy ``RF`` / ``GB`` / ``DRAM`` in the
format of the F5 problems (``{"RF": {"loops": [[dim, bound], ...] innermost first, "bypass": [...]},
"GB": {...}, "DRAM": {"loops": ...}}``) and derive the action counts with
:func:`reference_models.loopnest.analyze` (stationarity, bypass, first-read elision).

The tests check the arithmetic against a direct recomputation that packs accesses into vectors
one by one, the mapped counts against the brute-force trace simulator, and Timeloop's published
conv1d exercise (DRAM block 8, 43.35 pJ per vector: W 3 reads -> 43.35 pJ, I 18 reads -> 130.05
pJ, 48 MACs x 0.845 pJ = 40.56 pJ).
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from ._draw import divisors as _divisors, pick as _pick, shares as _shares
from .loopnest import analyze

TENSORS = ("I", "W", "O")
ACTIONS = ("reads", "fills", "updates")
HIERARCHY = ("RF", "GB", "DRAM")
GEMM_DIMS = ("M", "N", "K")
RELEVANT = {"I": ("M", "K"), "W": ("K", "N"), "O": ("M", "N")}


# ------------------------------------------------------------------------------------------
# the arithmetic
# ------------------------------------------------------------------------------------------

def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def level_energy(counts: Mapping[str, Mapping[str, int]], cost: Mapping[str, Any]) -> tuple[int, float]:
    """(vector accesses, energy in pJ) of one level: ``counts[tensor][action]`` scalar accesses,
    ``cost`` = {block_size, read_pj, write_pj}. Reads cost ``read_pj`` per vector, fills and
    updates ``write_pj``; the ceil is taken per tensor per action."""
    block = int(cost["block_size"])
    vectors, energy = 0, 0.0
    for t in TENSORS:
        for a in ACTIONS:
            v = ceil_div(int(counts.get(t, {}).get(a, 0)), block)
            vectors += v
            energy += v * float(cost["read_pj"] if a == "reads" else cost["write_pj"])
    return vectors, energy


def hierarchy_counts(gemm: Mapping[str, Any], hierarchy: Mapping[str, Any]) -> dict[str, Any]:
    """``loopnest.analyze`` of a GEMM on RF / GB / DRAM in the F5 format (one instance each)."""
    workload = {"kind": "gemm", **{d: int(gemm[d]) for d in GEMM_DIMS}}
    arch = {"levels": [{"name": n, "bypass": list(hierarchy[n].get("bypass", []))} for n in HIERARCHY]}
    mapping = {"levels": [{"temporal": [[str(d), int(f)] for d, f in hierarchy[n].get("loops", [])]}
                          for n in HIERARCHY]}
    return analyze(workload, arch, mapping)


def hierarchy_energy(gemm: Mapping[str, Any], hierarchy: Mapping[str, Any],
                     energy: Mapping[str, Any]) -> dict[str, Any]:
    result = hierarchy_counts(gemm, hierarchy)
    vectors, level_pj = {}, {}
    for name, level in zip(HIERARCHY, result["levels"]):
        vectors[name], level_pj[name] = level_energy(level, energy[name])
    mac = result["macs"] * float(energy["mac_pj"])
    total = mac
    for name in HIERARCHY:
        total += level_pj[name]
    return {"vectors": vectors, "level_energy_pj": level_pj, "mac_energy_pj": mac, "total_energy_pj": total}


# ------------------------------------------------------------------------------------------
# shared draws
# ------------------------------------------------------------------------------------------


def _log_int(rng: Any, low_digits: int, high_digits: int) -> int:
    """A positive integer, log-uniform over [10**low_digits, 10**high_digits) (integer draws only)."""
    digits = int(rng.integers(low_digits, high_digits))
    return int(rng.integers(10 ** digits, 10 ** (digits + 1)))


def _milli(rng: Any, low: int, high: int) -> float:
    """A value in [low, high] thousandths, as a float with three decimals."""
    return int(rng.integers(low, high + 1)) / 1000


def _level_loops(rng: Any, shares: Mapping[str, int], split_prob: float = 0.25,
                 unit_prob: float = 0.15) -> list[list[Any]]:
    """One level's loops: each dimension's share, sometimes split in two, sometimes an explicit
    bound-1 loop, in a random order."""
    loops = []
    for d, f in shares.items():
        divs = _divisors(f)
        if f > 1 and rng.random() < split_prob and len(divs) > 2:
            a = int(_pick(rng, divs[1:-1]))
            loops += [[d, a], [d, f // a]]
        elif f > 1 or rng.random() < unit_prob:
            loops.append([d, f])
    order = rng.permutation(len(loops))
    return [loops[i] for i in order]


def random_hierarchy(rng: Any, gemm: Mapping[str, int], bypass_prob: Mapping[str, float] | None = None,
                     split_prob: float = 0.25) -> dict[str, Any]:
    """A three-level mapping of ``gemm`` (exact factors), random loop orders and bypass lists."""
    bypass_prob = bypass_prob or {"RF": 0.35, "GB": 0.25}
    split = {d: _shares(rng, int(gemm[d]), 3) for d in GEMM_DIMS}
    hierarchy: dict[str, Any] = {}
    for lv, name in enumerate(HIERARCHY):
        hierarchy[name] = {"loops": _level_loops(rng, {d: split[d][lv] for d in GEMM_DIMS}, split_prob)}
        if name != "DRAM":
            hierarchy[name]["bypass"] = [t for t in TENSORS if rng.random() < bypass_prob[name]]
    return hierarchy


_BLOCKS = {"RF": (1, 1, 1, 2, 3, 4), "GB": (2, 3, 4, 4, 5, 6, 8, 8), "DRAM": (4, 6, 8, 8, 12, 16, 32)}
_PJ_RANGE = {"RF": (40, 2000), "GB": (1000, 25000), "DRAM": (20000, 250000)}  # thousandths of a pJ


def random_costs(rng: Any, names: Sequence[str] = HIERARCHY, sixteenths: bool = False) -> dict[str, Any]:
    """Per-level block sizes and per-vector energies (reads and writes differ), and a MAC energy.

    With ``sixteenths`` every energy is a multiple of 1/16 pJ (sums of them are exact in binary
    floating point, so exact ties between candidates survive any summation order)."""
    def value(low: int, high: int) -> float:
        if sixteenths:
            return int(rng.integers(max(1, low * 16 // 1000), high * 16 // 1000 + 1)) / 16
        return _milli(rng, low, high)

    costs: dict[str, Any] = {"mac_pj": value(200, 3000)}
    for name in names:
        kind = name if name in _BLOCKS else "GB"
        low, high = _PJ_RANGE[kind]
        read = value(low, high)
        write = value(low, high)
        while write == read:
            write = value(low, high)
        costs[name] = {"block_size": int(_pick(rng, _BLOCKS[kind])), "read_pj": read, "write_pj": write}
    return costs


# ------------------------------------------------------------------------------------------
# F10: energy from given action counts
# ------------------------------------------------------------------------------------------

def ref_action_energy(accesses: dict[str, Any], architecture: dict[str, Any]) -> dict[str, Any]:
    levels = accesses["levels"]
    costs = architecture["levels"]
    if len(levels) != len(costs):
        raise ValueError("accesses and architecture must list the same levels")
    mac = int(accesses["macs"]) * float(architecture["mac_pj"])
    vectors, level_pj = [], []
    for counts, cost in zip(levels, costs):
        if counts["name"] != cost["name"]:
            raise ValueError(f"level {counts['name']!r} != {cost['name']!r}")
        v, e = level_energy(counts, cost)
        vectors.append(v)
        level_pj.append(e)
    total = mac
    for e in level_pj:
        total += e
    return {
        "mac_energy_pj": mac,
        "level_vectors": vectors,
        "level_energy_pj": level_pj,
        "total_energy_nj": total / 1000,
    }


_LEVEL_NAMES = (("Buffer", "DRAM"), ("RF", "GB", "DRAM"), ("RF", "L1", "GB", "DRAM"), ("RF", "GB", "L2", "DRAM"))


def _count(rng: Any, scale: int, block: int) -> int:
    """A scalar access count near ``scale``: mostly ragged, sometimes an exact multiple of the
    block, sometimes below one block, sometimes zero."""
    u = rng.random()
    if u < 0.08:
        return 0
    if u < 0.2:
        return int(rng.integers(1, block + 1))
    if u < 0.35:
        return block * int(rng.integers(1, max(2, scale // block + 1)))
    return int(rng.integers(1, scale + 1))


def gen_action_energy(rng: Any, large: bool = False) -> dict[str, Any]:
    """Two to four levels, counts that are rarely multiples of the block, tensors absent from a
    level (all zero), reads and writes at different energies. ``large`` draws the MAC count
    (and so the scale of the access counts) at 10^15..10^18, past 2^53."""
    names = _pick(rng, _LEVEL_NAMES)
    macs = _log_int(rng, 15, 18) if large else _log_int(rng, 2, 7)
    arch_levels, acc_levels = [], []
    for lv, name in enumerate(names):
        kind = "DRAM" if name == "DRAM" else ("RF" if lv == 0 else "GB")
        block = int(_pick(rng, _BLOCKS[kind] + (1, 3, 5, 7)))
        low, high = _PJ_RANGE[kind]
        read = _milli(rng, low, high)
        write = _milli(rng, low, high)
        if write == read:
            write = round(read + 0.001, 3)
        arch_levels.append({"name": name, "block_size": block, "read_pj": read, "write_pj": write})
        scale = max(1, macs // (4 ** lv))
        outermost = lv == len(names) - 1
        counts: dict[str, Any] = {"name": name}
        for t in TENSORS:
            held = outermost or rng.random() > 0.2
            if not held:
                counts[t] = {"reads": 0, "fills": 0, "updates": 0}
                continue
            fills = 0 if outermost else _count(rng, scale, block)
            if t == "O":
                updates = _count(rng, scale, block)
                reads = max(0, updates - int(rng.integers(0, updates + 1)))
                counts[t] = {"reads": reads, "fills": fills, "updates": updates}
            else:
                counts[t] = {"reads": _count(rng, scale, block), "fills": fills, "updates": 0}
        acc_levels.append(counts)
    return {
        "accesses": {"macs": macs, "levels": acc_levels},
        "architecture": {"mac_pj": _milli(rng, 200, 3000), "levels": arch_levels},
    }


# ------------------------------------------------------------------------------------------
# F10: energy of a mapped GEMM on RF / GB / DRAM
# ------------------------------------------------------------------------------------------

def ref_mapped_gemm_energy(gemm: dict[str, Any], hierarchy: dict[str, Any], energy: dict[str, Any]) -> dict[str, Any]:
    return hierarchy_energy(gemm, hierarchy, energy)


_GEMM_VALUES = (2, 3, 4, 5, 6, 7, 8, 9, 10, 12, 14, 15, 16, 18, 20, 24, 28, 30, 32, 36, 48)


def gen_mapped_gemm_energy(rng: Any, values: Sequence[int] = _GEMM_VALUES) -> dict[str, Any]:
    gemm = {d: int(_pick(rng, values)) for d in GEMM_DIMS}
    return {"gemm": gemm, "hierarchy": random_hierarchy(rng, gemm), "energy": random_costs(rng)}


REFERENCES: dict = {
    "energy.action_energy": ref_action_energy,
    "energy.mapped_gemm_energy": ref_mapped_gemm_energy,
}
GENERATORS: dict = {
    "energy.action_energy": gen_action_energy,
    "energy.mapped_gemm_energy": gen_mapped_gemm_energy,
}
