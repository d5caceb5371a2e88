"""perf-mapper trusted code: one GEMM layer on a three-level accelerator, the answer a mapping.

The hardware and its counts are those of problems/perf-model/FORMAT.md (the pack's preamble),
computed by the shared engine ``reference_models.pm_core``. A problem gives a layer
``O[m][n] += I[m][k] * W[k][n]`` and an accelerator of three levels, innermost first: ``RF``
(per PE, one MAC unit under it, separate partitions for I, W and O), ``GLB`` (one instance,
shared capacity, multiple buffering, fanning out to an X by Y array of PEs) and ``DRAM``.

* :func:`check` -> the mapping's first broken rule (schema and caps, coverage, the pack's rules,
  fan-out, capacity), or None: the host's judgement of untrusted data, never an exception;
* :func:`evaluate_energy`, :func:`evaluate_edp` -> the evaluators of the scoring table: validity
  with its reason, the objective (what a mapping can change) and its breakdown, from pm_core;
* :func:`search_energy`, :func:`search_edp` -> the reference search: exhaustive over the space
  the pack's rules define, vectorised with numpy (a closed form of the same counts over every
  factor choice at once, pruned by capacity before the loop orders are tried); ``proven`` true;
* :func:`enumerate_space` -> every mapping of that space one by one (small instances only: the
  validator's brute-force proof of the search);
* :func:`gen_gemm_mapping` -> the instance generator.

The objective leaves out what every valid mapping pays: the MACs, and at the RF one read of I,
one read of W and one update of O per MAC (one MAC unit per PE: every step each busy PE does
exactly that). It keeps every other access of every level, in bytes, times the level's
``read_pj_per_byte`` (reads) or ``write_pj_per_byte`` (fills and updates). EDP multiplies it by
the cycles, the number of temporal steps.
"""

from __future__ import annotations

import itertools
import json
import math
from typing import Any, Iterator, Mapping

import numpy as np

from reference_models import pm_core

DIMS = ("M", "N", "K")
TENSORS = ("I", "W", "O")
RELEVANT = {"I": ("M", "K"), "W": ("K", "N"), "O": ("M", "N")}
IRRELEVANT = {"I": "N", "W": "M", "O": "K"}
ORDERS = tuple(itertools.permutations(DIMS))  # innermost first
MAX_LOOPS = 16
MAX_FACTOR = 2 ** 31
MAX_BYTES = 16384
LEVEL_KEYS = ("temporal", "spatial_x", "spatial_y")


# ------------------------------------------------------------------------------------------
# the host's check of an untrusted mapping
# ------------------------------------------------------------------------------------------

def envelope(mapping: Any, key: str, max_bytes: int) -> str | None:
    """The first problem of a returned mapping's outer shape: a dict with exactly ``key`` and an
    optional string ``name``, plain JSON of at most ``max_bytes`` as compact JSON."""
    if type(mapping) is not dict:
        return f"schema: the mapping must be a dict, got {type(mapping).__name__}"
    extra = sorted(str(k)[:20] for k in mapping if k not in (key, "name"))
    if extra:
        return f"schema: unknown key(s) {extra[:4]} (a mapping has {key} and an optional name)"
    if "name" in mapping and type(mapping["name"]) is not str:
        return "schema: name must be a string"
    try:
        size = len(json.dumps(mapping, separators=(",", ":"), allow_nan=False))
    except (TypeError, ValueError, RecursionError):
        return "schema: the mapping is not plain JSON"
    if size > max_bytes:
        return f"schema: the mapping takes {size} bytes as compact JSON, more than {max_bytes}"
    return None


def _schema(mapping: Any, architecture: Mapping[str, Any], max_bytes: int) -> str | None:
    """The first schema or size problem of a returned mapping (plain JSON from the channel)."""
    why = envelope(mapping, "levels", max_bytes)
    if why:
        return why
    levels = mapping.get("levels")
    n = len(architecture["levels"])
    if type(levels) is not list or len(levels) != n:
        return f"schema: levels must be a list of {n} entries, one per architecture level (innermost first)"
    for lv, (entry, arch) in enumerate(zip(levels, architecture["levels"])):
        name = arch["name"]
        if type(entry) is not dict:
            return f"schema: level {lv} ({name}) must be a dict"
        bad = sorted(k for k in entry if k not in LEVEL_KEYS)
        if bad:
            return f"schema: level {name}: unknown key(s) {bad[:4]} (allowed: {', '.join(LEVEL_KEYS)})"
        for key in LEVEL_KEYS:
            loops = entry.get(key, [])
            if type(loops) is not list:
                return f"schema: level {name} {key} must be a list of [dimension, factor] pairs"
            if len(loops) > MAX_LOOPS:
                return f"schema: level {name} {key} has {len(loops)} loops (at most {MAX_LOOPS})"
            for loop in loops:
                if type(loop) is not list or len(loop) != 2 or type(loop[0]) is not str or type(loop[1]) is not int:
                    return f"schema: level {name} {key}: each loop is a [str, int] pair, got {_short(loop)}"
                if not 1 <= loop[1] <= MAX_FACTOR:
                    return f"schema: level {name} {key}: factor {loop[1]} of {_short(loop[0])} is out of range"
    return None


def _short(value: Any) -> str:
    text = json.dumps(value) if isinstance(value, (str, int, list, dict, type(None))) else type(value).__name__
    return text if len(text) <= 40 else text[:37] + "..."


def check(mapping: Any, workload: Mapping[str, Any], architecture: Mapping[str, Any],
          max_bytes: int = MAX_BYTES, holds: Any = None) -> str | None:
    """Why the mapping is invalid (its first broken rule), or None when it is valid. ``holds``:
    per level the tensors it keeps (the others bypass it; default every level holds every tensor)."""
    why = _schema(mapping, architecture, max_bytes)
    if why:
        return why
    dims = workload["dims"]
    names = tuple(dims)
    levels = mapping["levels"]
    last = len(levels) - 1
    total = dict.fromkeys(names, 1)
    for lv, entry in enumerate(levels):
        name = architecture["levels"][lv]["name"]
        for key in LEVEL_KEYS:
            for d, f in entry.get(key, []):
                if d not in dims:
                    return f"coverage: unknown dimension {_short(d)} at {name} (the layer has {', '.join(names)})"
                total[d] *= f
    for d in names:
        if total[d] != dims[d]:
            return f"coverage: the factors of {d} multiply to {total[d]}, its size is {dims[d]}"
    for lv, entry in enumerate(levels):
        arch = architecture["levels"][lv]
        name = arch["name"]
        seen = [d for d, _ in entry.get("temporal", [])]
        dup = sorted({d for d in seen if seen.count(d) > 1})
        if dup:
            return f"rules: {dup[0]} has more than one temporal loop at {name}"
        fx, fy = arch.get("fanout", [1, 1])
        for key, fan in (("spatial_x", fx), ("spatial_y", fy)):
            loops = entry.get(key, [])
            if loops and (fan == 1 or lv == last):
                return f"rules: {name} does not fan out along {key[-1].upper()}: no {key} loops there"
            if len(loops) > 1:
                return f"rules: at most one {key} loop per level ({name} has {len(loops)})"
            used = math.prod(f for _, f in loops)
            if used > fan:
                return f"fan-out at {name}: {key} uses {used} instances, the level has {fan}"
    try:
        nest = pm_core.parse(workload, architecture, {"levels": levels if holds is None else [
            {**entry, "bypass": [t for t in TENSORS if t not in kept]} for entry, kept in zip(levels, holds)]})
    except ValueError as exc:  # the checks above cover the format's rules; anything left is named
        return f"format: {exc}"
    for row in pm_core.buffer_requirement(nest):
        if not row["fits"]:
            return f"capacity at {row['name']}"
    return None


# ------------------------------------------------------------------------------------------
# evaluation (the trusted engine's counts)
# ------------------------------------------------------------------------------------------

def _breakdown(nest: pm_core.Nest, architecture: Mapping[str, Any], counts: Any = None) -> dict[str, Any]:
    counts = counts if counts is not None else pm_core.access_counts(nest)
    byts = pm_core.level_bytes(nest, counts)
    per_level: dict[str, dict[str, float]] = {}
    energy = 0.0
    for lv, arch in enumerate(architecture["levels"]):
        rp, wp = float(arch["read_pj_per_byte"]), float(arch["write_pj_per_byte"])
        row = {}
        for t in TENSORS:
            b = byts[lv][t]
            reads = 0 if (lv == 0 and t in ("I", "W")) else b["reads"]
            updates = 0 if (lv == 0 and t == "O") else b["updates"]
            e = rp * reads + wp * (b["fills"] + updates)
            row[t] = e
            energy += e
        per_level[arch["name"]] = row
    return {"energy_pj": energy, "cycles": nest.steps, "per_level_pj": per_level}


def _evaluate(mapping: Any, workload: Mapping[str, Any], architecture: Mapping[str, Any], objective: str,
              max_bytes: int) -> dict[str, Any]:
    why = check(mapping, workload, architecture, max_bytes)
    if why is not None:
        return {"valid": False, "reason": why, "objective": None, "breakdown": {}}
    nest = pm_core.parse(workload, architecture, {"levels": mapping["levels"]})
    br = _breakdown(nest, architecture)
    value = br["energy_pj"] if objective == "energy" else br["energy_pj"] * br["cycles"]
    return {"valid": True, "reason": "", "objective": float(value), "breakdown": br}


def evaluate_energy(mapping: Any, workload: Mapping[str, Any], architecture: Mapping[str, Any],
                    max_bytes: int = MAX_BYTES) -> dict[str, Any]:
    """The energy objective of a returned mapping (pJ), or why the mapping is invalid."""
    return _evaluate(mapping, workload, architecture, "energy", max_bytes)


def evaluate_edp(mapping: Any, workload: Mapping[str, Any], architecture: Mapping[str, Any],
                 max_bytes: int = MAX_BYTES) -> dict[str, Any]:
    """The energy-delay product of a returned mapping (pJ x cycles), or why it is invalid."""
    return _evaluate(mapping, workload, architecture, "edp", max_bytes)


# ------------------------------------------------------------------------------------------
# the reference search: exhaustive, vectorised
# ------------------------------------------------------------------------------------------

def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def _triples(n: int) -> np.ndarray:
    """Every (r, g, D) with r * g * D == n, as rows."""
    rows = [(r, g, n // (r * g)) for r in _divisors(n) for g in _divisors(n // r)]
    return np.asarray(rows, dtype=np.int64).reshape(-1, 3)


def _spatial_choices(dims: Mapping[str, int], fx: int, fy: int) -> list[tuple[tuple, dict[str, int]]]:
    """Distinct spatial unrollings at the GLB: ((x dim, x factor, y dim, y factor), s per dim)."""
    out: dict[tuple[int, ...], tuple] = {}
    for a in DIMS:
        for x in _divisors(dims[a]):
            if x > fx:
                continue
            for b in DIMS:
                rest = dims[b] // x if a == b else dims[b]
                for y in _divisors(rest):
                    if y > fy:
                        continue
                    s = dict.fromkeys(DIMS, 1)
                    s[a] *= x
                    s[b] *= y
                    key = tuple(s[d] for d in DIMS)
                    out.setdefault(key, (a, x, b, y))
    return [(choice, dict(zip(DIMS, key))) for key, choice in sorted(out.items())]


def _packed(elements, bits: int):
    return -(-elements * bits // 8)


def _reuse(order: tuple[str, ...], f: Mapping[str, np.ndarray], tensor: str) -> tuple[np.ndarray, np.ndarray]:
    """For a level's temporal loops in ``order`` (innermost first): the reuse factor of ``tensor``
    (its irrelevant loop's factor when every relevant loop inside it has factor 1, else 1) and
    whether every relevant loop of the level has factor 1 (the scan goes on to the next level)."""
    u = IRRELEVANT[tensor]
    rel = RELEVANT[tensor]
    inside = order[: order.index(u)]
    clear = np.ones_like(f[u], dtype=bool)
    for d in inside:
        clear &= f[d] == 1
    reuse = np.where(clear, f[u], 1)
    none_rel = (f[rel[0]] == 1) & (f[rel[1]] == 1)
    return reuse, none_rel


def _costs(work: Mapping[str, Any], arch: Mapping[str, Any], s: Mapping[str, int], r, g, D,
           og: tuple[str, ...], od: tuple[str, ...]) -> tuple[np.ndarray, np.ndarray]:
    """Energy (pJ) and cycles of every factor choice (arrays r, g, D per dim) for one spatial
    unrolling and one pair of loop orders (GLB, DRAM)."""
    dims = work["dims"]
    bits = work["bits"]
    lv = arch["levels"]
    size = {t: dims[RELEVANT[t][0]] * dims[RELEVANT[t][1]] for t in TENSORS}
    macs = dims["M"] * dims["N"] * dims["K"]
    pes = s["M"] * s["N"] * s["K"]
    tot_g = g["M"] * g["N"] * g["K"]
    tot_d = D["M"] * D["N"] * D["K"]
    rp = [float(x["read_pj_per_byte"]) for x in lv]
    wp = [float(x["write_pj_per_byte"]) for x in lv]
    energy = np.zeros_like(tot_g, dtype=np.float64)
    for t in TENSORS:
        a, b = RELEVANT[t]
        u = IRRELEVANT[t]
        tile_r = r[a] * r[b]
        tile_g = tile_r * s[a] * s[b] * g[a] * g[b]
        reuse_g, none_g = _reuse(og, g, t)
        reuse_d, _ = _reuse(od, D, t)
        mult_rf = (tot_g * tot_d) // np.where(none_g, reuse_g * reuse_d, reuse_g)
        mult_glb = tot_d // reuse_d
        if t != "O":
            tb = bits[t]
            rf_fills = tile_r * pes * mult_rf
            glb_reads = rf_fills // s[u]
            glb_fills = tile_g * mult_glb
            energy += wp[0] * _packed(rf_fills, tb)
            energy += rp[1] * _packed(glb_reads, tb) + wp[1] * _packed(glb_fills, tb)
            energy += rp[2] * _packed(glb_fills, tb)
        else:
            pb, ob = bits["psum"], bits["O"]
            rf_reads = macs - size["O"] * s["K"]
            glb_upd = tile_r * s["M"] * s["N"] * mult_rf
            glb_reads = glb_upd - size["O"]
            dram_upd = tile_g * mult_glb
            dram_reads = dram_upd - size["O"]
            energy += rp[0] * _packed(rf_reads, pb) + wp[0] * _packed(glb_reads, pb)  # RF reads, RF fills
            energy += wp[1] * (_packed(size["O"], ob) + _packed(glb_upd - size["O"], pb))
            energy += rp[1] * _packed(glb_reads, pb) + wp[1] * _packed(dram_reads, pb)  # GLB reads, fills
            energy += wp[2] * (_packed(size["O"], ob) + _packed(dram_upd - size["O"], pb))
            energy += rp[2] * _packed(dram_reads, pb)
    cycles = r["M"] * r["N"] * r["K"] * tot_g * tot_d
    return energy, cycles


def _fits(work: Mapping[str, Any], arch: Mapping[str, Any], s: Mapping[str, int], r, g) -> np.ndarray:
    bits = work["bits"]
    rf, glb = arch["levels"][0], arch["levels"][1]
    need_rf, need_glb = {}, {}
    for t in TENSORS:
        a, b = RELEVANT[t]
        tb = bits["psum"] if t == "O" else bits[t]
        need_rf[t] = int(rf.get("multiple_buffering", 1)) * _packed(r[a] * r[b], tb)
        need_glb[t] = int(glb.get("multiple_buffering", 1)) * _packed(r[a] * r[b] * s[a] * s[b] * g[a] * g[b], tb)
    ok = np.ones_like(need_rf["I"], dtype=bool)
    for lvl, need in ((rf, need_rf), (glb, need_glb)):
        cap = lvl["capacity_bytes"]
        if isinstance(cap, dict):
            for t in TENSORS:
                ok &= need[t] <= int(cap[t])
        else:
            ok &= (need["I"] + need["W"] + need["O"]) <= int(cap)
    return ok


def _mapping(choice: tuple, r: Mapping[str, int], g: Mapping[str, int], D: Mapping[str, int],
             og: tuple[str, ...], od: tuple[str, ...]) -> dict[str, Any]:
    a, x, b, y = choice
    glb: dict[str, Any] = {"temporal": [[d, int(g[d])] for d in og if g[d] > 1]}
    if x > 1:
        glb["spatial_x"] = [[a, int(x)]]
    if y > 1:
        glb["spatial_y"] = [[b, int(y)]]
    return {"levels": [{"temporal": [[d, int(r[d])] for d in DIMS if r[d] > 1]}, glb,
                       {"temporal": [[d, int(D[d])] for d in od if D[d] > 1]}]}


def mapping_json(choice: tuple, r: Mapping[str, np.ndarray], g: Mapping[str, np.ndarray],
                 D: Mapping[str, np.ndarray], i: int, og: tuple[str, ...], od: tuple[str, ...]) -> str:
    """The canonical JSON of the mapping of row ``i`` of the factor arrays (RF, GLB, DRAM)."""
    return json.dumps(_mapping(choice, {d: r[d][i] for d in DIMS}, {d: g[d][i] for d in DIMS},
                               {d: D[d][i] for d in DIMS}, og, od), sort_keys=True, separators=(",", ":"))


def spatial_ways(s: Mapping[str, int], fx: int, fy: int) -> dict[int, set]:
    """The distinct spatial assignments (x dim, y dim) that unroll ``s`` on an fx x fy array, by
    the x factor (the columns used): :func:`candidates` yields one per ``s``, the space counts each."""
    ways: dict[int, set] = {}
    for xd, x in [(None, 1)] + [(d, x) for d in DIMS for x in _divisors(s[d]) if 1 < x <= fx]:
        rest = {d: s[d] // (x if d == xd else 1) for d in DIMS}
        used = [d for d in DIMS if rest[d] > 1]
        if len(used) <= 1 and (not used or rest[used[0]] <= fy):
            ways.setdefault(x, set()).add((xd, used[0] if used else None))
    return ways


FACTORIAL = np.asarray([1.0, 1.0, 2.0, 6.0])


def distinct_orders(g: Mapping[str, np.ndarray], D: Mapping[str, np.ndarray]) -> np.ndarray:
    """The distinct pairs of loop orders (GLB, DRAM) of each factor choice: loops of factor 1 are
    left out, so a level with n live loops has n! orders."""
    orders = np.ones(len(g[DIMS[0]]))
    for f in (g, D):
        orders = orders * FACTORIAL[sum((f[d] > 1).astype(np.int64) for d in DIMS)]
    return orders


def candidates(workload: Mapping[str, Any], architecture: Mapping[str, Any]) -> Iterator[tuple]:
    """Per spatial unrolling at the GLB: (choice, s, r, g, D), the factor arrays (RF, GLB, DRAM
    per dimension) of every factorisation that fits; the loop orders are the caller's."""
    dims = workload["dims"]
    fx, fy = architecture["levels"][1]["fanout"]
    for choice, s in _spatial_choices(dims, fx, fy):
        trip = [_triples(dims[d] // s[d]) for d in DIMS]
        idx = np.meshgrid(*[np.arange(len(t)) for t in trip], indexing="ij")
        idx = [i.reshape(-1) for i in idx]
        r = {d: trip[k][idx[k], 0] for k, d in enumerate(DIMS)}
        g = {d: trip[k][idx[k], 1] for k, d in enumerate(DIMS)}
        D = {d: trip[k][idx[k], 2] for k, d in enumerate(DIMS)}
        ok = _fits(workload, architecture, s, r, g)
        if ok.any():
            yield (choice, s, *({d: v[ok] for d, v in x.items()} for x in (r, g, D)))


def _search(workload: Mapping[str, Any], architecture: Mapping[str, Any], objective: str) -> dict[str, Any]:
    best_val, best_map = math.inf, None
    for choice, s, r, g, D in candidates(workload, architecture):
        for og in ORDERS:
            for od in ORDERS:
                energy, cycles = _costs(workload, architecture, s, r, g, D, og, od)
                value = energy if objective == "energy" else energy * cycles
                i = int(np.argmin(value))
                if value[i] < best_val * (1 - 1e-12):
                    best_val = float(value[i])
                    best_map = _mapping(choice, {d: r[d][i] for d in DIMS}, {d: g[d][i] for d in DIMS},
                                        {d: D[d][i] for d in DIMS}, og, od)
    if best_map is None:
        raise ValueError("no valid mapping: the instance is infeasible")
    return {"best": best_val, "proven": True,
            "mapping": json.dumps(best_map, sort_keys=True, separators=(",", ":"))}


def search_energy(workload: Mapping[str, Any], architecture: Mapping[str, Any]) -> dict[str, Any]:
    """The least energy over every valid mapping (exhaustive: proven), and one mapping reaching it."""
    return _search(workload, architecture, "energy")


def search_edp(workload: Mapping[str, Any], architecture: Mapping[str, Any]) -> dict[str, Any]:
    """The least energy-delay product over every valid mapping (exhaustive: proven)."""
    return _search(workload, architecture, "edp")


def enumerate_space(workload: Mapping[str, Any], architecture: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
    """Every distinct mapping the pack's rules allow, one at a time (valid or not: the caller
    checks). Written apart from the search: plain loops over every factorisation, every spatial
    assignment and every loop order, factor-1 loops left out, duplicates dropped."""
    dims = workload["dims"]
    fx, fy = architecture["levels"][1]["fanout"]
    seen: set[str] = set()
    spatial = [(None, 1)] + [(d, f) for d in DIMS for f in _divisors(dims[d]) if f > 1]
    for (xd, xf), (yd, yf) in itertools.product(spatial, spatial):
        if xf > fx or yf > fy:
            continue
        s = dict.fromkeys(DIMS, 1)
        if xd:
            s[xd] *= xf
        if yd:
            s[yd] *= yf
        if any(dims[d] % s[d] for d in DIMS):
            continue
        per_dim = [[(r, gg, dims[d] // s[d] // (r * gg)) for r in _divisors(dims[d] // s[d])
                    for gg in _divisors(dims[d] // s[d] // r)] for d in DIMS]
        for combo in itertools.product(*per_dim):
            rgd = dict(zip(DIMS, combo))
            for og in ORDERS:
                for od in ORDERS:
                    glb: dict[str, Any] = {"temporal": [[d, rgd[d][1]] for d in og if rgd[d][1] > 1]}
                    if xd:
                        glb["spatial_x"] = [[xd, xf]]
                    if yd:
                        glb["spatial_y"] = [[yd, yf]]
                    m = {"levels": [{"temporal": [[d, rgd[d][0]] for d in DIMS if rgd[d][0] > 1]}, glb,
                                    {"temporal": [[d, rgd[d][2]] for d in od if rgd[d][2] > 1]}]}
                    key = json.dumps(m, sort_keys=True)
                    if key not in seen:
                        seen.add(key)
                        yield m


# ------------------------------------------------------------------------------------------
# the instance generator
# ------------------------------------------------------------------------------------------

def _size(rng: np.random.Generator, lo: int, hi: int) -> int:
    """A size in [lo, hi] made of the primes 2 and 3 (so that it has many factorisations)."""
    choices = [2 ** a * 3 ** b for a in range(12) for b in range(4) if lo <= 2 ** a * 3 ** b <= hi]
    return int(rng.choice(sorted(choices)))


def gen_gemm_mapping(rng: np.random.Generator, *, small: bool = False, energy: str = "eyeriss",
                     largest: int = 512) -> dict[str, Any]:
    """A GEMM and a three-level accelerator (RF partitions per PE, a shared GLB with double or
    single buffering fanning out X by Y, DRAM) on which at least one mapping is valid.

    ``small``: sizes for which every mapping can be enumerated one by one (the brute-force proof).
    ``largest``: a cap on every dimension's size (hidden instances).
    ``energy``: the per-byte energies (``eyeriss``: the eyeriss-like design's; ``flat``: an RF
    nearly as costly as the GLB, which moves the best tiles).
    """
    if small:
        dims = {d: _size(rng, 2, 6) for d in DIMS}
        fan = [int(rng.integers(1, 4)), int(rng.integers(1, 4))]
        rf = {"I": int(rng.integers(1, 5)), "W": int(rng.integers(1, 5)), "O": 3 * int(rng.integers(1, 5))}
        glb_cap = int(rng.integers(16, 96))
    else:
        dims = {"M": _size(rng, 16, min(256, largest)), "N": _size(rng, 16, min(256, largest)),
                "K": _size(rng, 16, min(512, largest))}
        fan = [int(rng.choice([4, 6, 8, 12, 14])), int(rng.choice([4, 6, 8, 12]))]
        rf = {"I": int(rng.choice([4, 8, 12, 16])), "W": int(rng.choice([16, 64, 192])),
              "O": int(rng.choice([12, 24, 48]))}
        glb_cap = int(rng.choice([2048, 4096, 8192, 16384, 32768]))
    rf_pj, glb_pj = (0.25, 3.0) if energy == "eyeriss" else (1.5, 3.0)
    work = {"name": "gemm", "shape": "gemm", "dims": dims, "bits": {"I": 8, "W": 8, "O": 8, "psum": 24}}
    arch = {"name": "three-level",
            "levels": [
                {"name": "RF", "capacity_bytes": rf, "fanout": [1, 1],
                 "read_pj_per_byte": rf_pj, "write_pj_per_byte": rf_pj},
                {"name": "GLB", "capacity_bytes": glb_cap, "fanout": fan,
                 "multiple_buffering": int(rng.choice([1, 2])),
                 "read_pj_per_byte": glb_pj, "write_pj_per_byte": glb_pj + 0.5},
                {"name": "DRAM", "capacity_bytes": None, "fanout": [1, 1],
                 "read_pj_per_byte": 100.0, "write_pj_per_byte": 100.0}]}
    # the all-ones mapping (every loop at DRAM) must fit: RF and GLB hold one element of each tensor
    arch["levels"][0]["capacity_bytes"]["O"] = max(rf["O"], 3)
    arch["levels"][1]["capacity_bytes"] = max(glb_cap, 2 * (1 + 1 + 3))
    return {"workload": work, "architecture": arch}


REFERENCES = {"mapper.search_energy": search_energy, "mapper.search_edp": search_edp}
GENERATORS = {"mapper.gemm_mapping": gen_gemm_mapping}
EVALUATORS = {"mapper.evaluate_energy": evaluate_energy, "mapper.evaluate_edp": evaluate_edp}
SPACES = {"mapper.enumerate_space": enumerate_space}
