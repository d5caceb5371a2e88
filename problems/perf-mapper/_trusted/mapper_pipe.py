"""perf-mapper trusted code, a layer pipeline: a chain of GEMMs resident on ``mapper``'s three-level
accelerator at the same time, each layer on its own columns of the PE array and its own part of the
one GLB.

The hardware, one layer's mapping space, its checks and its energy are ``mapper``'s (imported, not
copied). What this kind adds:

* **columns**: every layer gets all Y rows of its own columns; a layer's columns are its
  ``spatial_x`` factor at the GLB (1 without one), and the layers' columns add up to at most the
  array's X;
* **the shared GLB**: a layer's GLB footprint is ``mapper``'s (its largest GLB tiles, outputs at
  psum bits, times the multiple buffering); the layers' footprints add up to at most the GLB's
  capacity (each layer's RF is its own PEs', checked as in ``mapper``);
* **the interval**: the layers run at the same time on different data, so the pipeline's interval
  is the slowest layer's cycles (``mapper``'s: its time steps).

Problems: least total energy x interval (``search_edp`` / ``evaluate_edp``) and least total energy
with the interval at most a cap (``search_energy`` / ``evaluate_energy``).

The reference search is exact: per layer and per spatial unrolling (which fixes the layer's
columns and cycles), the Pareto set of (GLB bytes, energy) over every factorisation that fits,
each at its best pair of loop orders (``mapper.candidates`` and the closed form ``mapper._costs``);
then, for every interval candidate ``T`` (a cycles value of some layer), the least total energy of
one point per layer with cycles at most ``T``, columns and GLB bytes within the array's and the
GLB's: a two-resource combination of the layers' points, pruned to the points no other beats in
columns, bytes and energy, never approximated. ``proven`` true.
"""

from __future__ import annotations

import functools
import itertools
import json
import math
from typing import Any, Iterator, Mapping

import numpy as np

from reference_models import pm_core

from . import mapper

LARGEST = 36  # the largest dimension of a hidden layer (the reference search's time)


# ------------------------------------------------------------------------------------------
# the host's judgement of an untrusted answer
# ------------------------------------------------------------------------------------------

def columns(mapping: Mapping[str, Any]) -> int:
    """The columns a (checked) layer mapping takes: its spatial_x factor at the GLB, 1 without one."""
    return math.prod(f for _, f in mapping["levels"][1].get("spatial_x", []))


def _invalid(reason: str) -> dict[str, Any]:
    return {"valid": False, "reason": reason, "objective": None, "breakdown": {}}


def judge(answer: Any, workloads: list[Mapping[str, Any]], architecture: Mapping[str, Any],
          max_bytes: int) -> tuple[str | None, dict[str, Any]]:
    """(why the answer is invalid or None, breakdown: energy, interval, columns, GLB bytes, layers)."""
    why = mapper.envelope(answer, "layers", max_bytes)
    if why:
        return why, {}
    layers = answer.get("layers")
    if type(layers) is not list or len(layers) != len(workloads):
        return f"schema: layers must be a list of {len(workloads)} mappings, one per layer in order", {}
    rows = []
    for i, (m, w) in enumerate(zip(layers, workloads)):
        why = mapper.check(m, w, architecture, max_bytes)
        if why is not None:
            return f"layer {i}: {why}", {}
        nest = pm_core.parse(w, architecture, {"levels": m["levels"]})
        br = mapper._breakdown(nest, architecture)
        br["columns"] = columns(m)
        br["glb_bytes"] = pm_core.buffer_requirement(nest)[1]["total"]
        rows.append(br)
    fx = int(architecture["levels"][1]["fanout"][0])
    cols = sum(r["columns"] for r in rows)
    if cols > fx:
        return (f"columns: the layers take {cols} columns ({' + '.join(str(r['columns']) for r in rows)}), "
                f"the array has {fx}"), {}
    glb = sum(r["glb_bytes"] for r in rows)
    cap = int(architecture["levels"][1]["capacity_bytes"])
    if glb > cap:
        return (f"capacity at GLB: the layers' footprints take {glb} bytes "
                f"({' + '.join(str(r['glb_bytes']) for r in rows)}, multiple buffering included), "
                f"the GLB holds {cap}"), {}
    energy = sum(r["energy_pj"] for r in rows)
    interval = max(r["cycles"] for r in rows)
    return None, {"energy_pj": energy, "interval": interval, "columns": cols, "glb_bytes": glb, "layers": rows}


def evaluate_edp(answer: Any, workloads: list[Mapping[str, Any]], architecture: Mapping[str, Any],
                 max_bytes: int = mapper.MAX_BYTES) -> dict[str, Any]:
    """Total energy (pJ) times the interval (the slowest layer's cycles), or why it is invalid."""
    why, br = judge(answer, workloads, architecture, max_bytes)
    if why is not None:
        return _invalid(why)
    return {"valid": True, "reason": "", "objective": float(br["energy_pj"] * br["interval"]), "breakdown": br}


def evaluate_energy(answer: Any, workloads: list[Mapping[str, Any]], architecture: Mapping[str, Any],
                    interval_cap: int, max_bytes: int = mapper.MAX_BYTES) -> dict[str, Any]:
    """Total energy (pJ) of an answer whose interval is at most the cap, or why it is invalid."""
    why, br = judge(answer, workloads, architecture, max_bytes)
    if why is not None:
        return _invalid(why)
    if br["interval"] > interval_cap:
        return _invalid(f"over the interval cap: the slowest layer takes {br['interval']} cycles, "
                        f"the cap is {interval_cap}")
    return {"valid": True, "reason": "", "objective": float(br["energy_pj"]), "breakdown": br}


# ------------------------------------------------------------------------------------------
# the reference search
# ------------------------------------------------------------------------------------------

def _glb_bytes(work: Mapping[str, Any], arch: Mapping[str, Any], s: Mapping[str, int], r, g) -> np.ndarray:
    """The GLB footprint of factor arrays (``mapper._fits``'s requirement, as bytes)."""
    bits = work["bits"]
    mb = int(arch["levels"][1].get("multiple_buffering", 1))
    need = 0
    for t in mapper.TENSORS:
        a, b = mapper.RELEVANT[t]
        need = need + mb * mapper._packed(r[a] * r[b] * s[a] * s[b] * g[a] * g[b],
                                          bits["psum"] if t == "O" else bits[t])
    return need


def _staircase(glb: np.ndarray, energy: np.ndarray) -> np.ndarray:
    """Indices of the points no other beats in both GLB bytes and energy (ties: one kept)."""
    order = np.lexsort((energy, glb))
    e = energy[order]
    prev = np.concatenate(([np.inf], np.minimum.accumulate(e)[:-1]))
    return order[e < prev]


def _narrowest(s: Mapping[str, int], fx: int, fy: int) -> tuple[str, int, str, int]:
    """The spatial unrolling (x dim, x, y dim, y) of the per-dimension factors ``s`` that takes
    the fewest columns (the energy and the cycles depend on ``s`` alone)."""
    used = [d for d in mapper.DIMS if s[d] > 1] or ["M"]
    if len(used) == 2:
        a, b = sorted(used, key=lambda d: (s[d], d))
        return (a, s[a], b, s[b]) if s[b] <= fy else (b, s[b], a, s[a])
    d = used[0]
    x = next(x for x in mapper._divisors(s[d]) if s[d] // x <= fy)
    return (d, x, d, s[d] // x)


@functools.lru_cache(maxsize=64)
def _points_cached(key: str) -> dict[str, Any]:
    workload, architecture = json.loads(key)
    dims = workload["dims"]
    macs = dims["M"] * dims["N"] * dims["K"]
    cols, cyc, glb, en, maps = [], [], [], [], []
    fx, fy = architecture["levels"][1]["fanout"]
    for _, s, r, g, D in mapper.candidates(workload, architecture):
        choice = _narrowest(s, fx, fy)
        pairs = list(itertools.product(mapper.ORDERS, mapper.ORDERS))
        energies = np.stack([mapper._costs(workload, architecture, s, r, g, D, og, od)[0] for og, od in pairs])
        which = np.argmin(energies, axis=0)
        best = energies[which, np.arange(energies.shape[1])]
        need = _glb_bytes(workload, architecture, s, r, g)
        for i in _staircase(need, best):
            og, od = pairs[int(which[i])]
            cols.append(choice[1])
            cyc.append(macs // (s["M"] * s["N"] * s["K"]))
            glb.append(int(need[i]))
            en.append(float(best[i]))
            maps.append(mapper.mapping_json(choice, r, g, D, i, og, od))
    if not maps:
        raise ValueError("no valid mapping: the instance is infeasible")
    return {"cols": np.asarray(cols, dtype=np.int64), "cycles": np.asarray(cyc, dtype=np.int64),
            "glb": np.asarray(glb, dtype=np.int64), "energy": np.asarray(en), "maps": tuple(maps)}


def points(workload: Mapping[str, Any], architecture: Mapping[str, Any]) -> dict[str, Any]:
    """Every mapping of the layer worth keeping in a pipeline: per spatial unrolling (its columns
    and cycles), the Pareto set of (GLB bytes, energy), each with one mapping (canonical JSON)."""
    return _points_cached(json.dumps([workload, architecture], sort_keys=True))


def _prune(cols: np.ndarray, glb: np.ndarray, energy: np.ndarray) -> np.ndarray:
    """Indices of the points no other beats in columns, GLB bytes and energy (ties: one kept)."""
    keep = []
    best_g, best_e = np.zeros(0, dtype=np.int64), np.zeros(0)  # the staircase of the fewer columns
    for c in np.unique(cols):
        at = np.flatnonzero(cols == c)
        at = at[_staircase(glb[at], energy[at])]
        if len(best_g):  # beaten by a point with fewer columns?
            k = np.searchsorted(best_g, glb[at], side="right")
            floor = np.where(k > 0, best_e[np.maximum(k - 1, 0)], np.inf)
            at = at[energy[at] < floor]
        keep.extend(at.tolist())
        g, e = np.concatenate([best_g, glb[at]]), np.concatenate([best_e, energy[at]])
        st = _staircase(g, e)
        best_g, best_e = g[st], np.minimum.accumulate(e[st])
    return np.asarray(keep, dtype=np.int64)


def _combine(layers: list[tuple[np.ndarray, np.ndarray, np.ndarray]], fx: int, cap: int) -> tuple[float, list[int]] | None:
    """The least total energy of one point per layer (cols, glb, energy arrays) with the columns at
    most ``fx`` and the bytes at most ``cap`` in all, and the points; None when none fits."""
    cols, glb, en = np.zeros(1, dtype=np.int64), np.zeros(1, dtype=np.int64), np.zeros(1)
    picks = np.zeros((1, 0), dtype=np.int64)
    if any(not len(x[0]) for x in layers):
        return None
    for k, (lc, lg, le) in enumerate(layers):
        rest_c = sum(int(x[0].min()) for x in layers[k + 1:])
        rest_g = sum(int(x[1].min()) for x in layers[k + 1:])
        c = (cols[:, None] + lc[None, :]).ravel()
        g = (glb[:, None] + lg[None, :]).ravel()
        e = (en[:, None] + le[None, :]).ravel()
        room = np.flatnonzero((c <= fx - rest_c) & (g <= cap - rest_g))
        if not len(room):
            return None
        c, g, e = c[room], g[room], e[room]
        who = np.concatenate([picks[room // len(lc)], (room % len(lc))[:, None]], axis=1)
        keep = _prune(c, g, e)
        cols, glb, en, picks = c[keep], g[keep], e[keep], who[keep]
    i = int(np.argmin(en))
    return float(en[i]), [int(x) for x in picks[i]]


def _best_within(pts: list[dict[str, Any]], fx: int, cap: int, interval: float) -> tuple[float, list[int]] | None:
    """The least total energy with every layer's cycles at most ``interval`` (and the picks)."""
    layers = []
    for p in pts:
        ok = np.flatnonzero(p["cycles"] <= interval)
        sub = _prune(p["cols"][ok], p["glb"][ok], p["energy"][ok])
        layers.append((ok[sub], p["cols"][ok[sub]], p["glb"][ok[sub]], p["energy"][ok[sub]]))
    out = _combine([x[1:] for x in layers], fx, cap)
    if out is None:
        return None
    return out[0], [int(x[0][i]) for x, i in zip(layers, out[1])]


def _limits(architecture: Mapping[str, Any]) -> tuple[int, int]:
    glb = architecture["levels"][1]
    return int(glb["fanout"][0]), int(glb["capacity_bytes"])


def _answer(pts: list[dict[str, Any]], picks: list[int]) -> dict[str, Any]:
    return {"layers": [json.loads(p["maps"][i]) for p, i in zip(pts, picks)]}


def _result(best: float, answer: Mapping[str, Any]) -> dict[str, Any]:
    return {"best": float(best), "proven": True, "mapping": json.dumps(answer, sort_keys=True, separators=(",", ":"))}


def solve_edp(workloads: list[Mapping[str, Any]], architecture: Mapping[str, Any]) -> tuple[float, list[int], int]:
    """(least energy x interval, picks, interval): for every interval candidate T, the least energy
    with every layer within T; the best of T x that energy is the optimum (the combination found
    for T has an interval at most T, and at the optimum's own interval it is found)."""
    fx, cap = _limits(architecture)
    pts = [points(w, architecture) for w in workloads]
    floor = max(int(p["cycles"].min()) for p in pts)
    least = _best_within(pts, fx, cap, math.inf)
    if least is None:
        raise ValueError("no valid pipeline: the instance is infeasible")
    best = (math.inf, [], 0)
    for t in sorted({int(c) for p in pts for c in p["cycles"] if c >= floor}):
        if t * least[0] >= best[0]:  # no energy is below the least: no larger interval can win
            break
        out = _best_within(pts, fx, cap, t)
        if out is None:
            continue
        real = max(int(p["cycles"][i]) for p, i in zip(pts, out[1]))
        if real * out[0] < best[0] * (1 - 1e-12):
            best = (real * out[0], out[1], real)
    if not best[1]:
        raise ValueError("no valid pipeline: the instance is infeasible")
    return best


def search_edp(workloads: list[Mapping[str, Any]], architecture: Mapping[str, Any]) -> dict[str, Any]:
    """The least total energy x interval over every valid answer (exact: proven)."""
    value, picks, _ = solve_edp(workloads, architecture)
    return _result(value, _answer([points(w, architecture) for w in workloads], picks))


def search_energy(workloads: list[Mapping[str, Any]], architecture: Mapping[str, Any],
                  interval_cap: int) -> dict[str, Any]:
    """The least total energy over every valid answer with the interval at most the cap (exact)."""
    fx, cap = _limits(architecture)
    pts = [points(w, architecture) for w in workloads]
    out = _best_within(pts, fx, cap, interval_cap)
    if out is None:
        raise ValueError("no valid pipeline within the interval cap")
    return _result(out[0], _answer(pts, out[1]))


def space_size(workloads: list[Mapping[str, Any]], architecture: Mapping[str, Any],
               interval_cap: int | None = None) -> tuple[list[int], float]:
    """(per layer, its valid mappings: distinct spatial assignments x factorisations that fit x
    distinct pairs of loop orders, as ``mapper.enumerate_space`` lists them; the answers, one valid
    mapping per layer, that keep the shared limits). The second is counted from each layer's
    histogram over (columns, GLB bytes), combined with an FFT (a float: exact to its rounding).
    With ``interval_cap``, only the mappings whose cycles (the spatial unrolling's time steps) are
    within it count, in both."""
    fx, cap = _limits(architecture)
    fy = int(architecture["levels"][1]["fanout"][1])
    n = len(workloads)
    total = np.ones((n * fx + 1, n * cap + 1), dtype=complex)
    per_layer = []
    shape = total.shape
    for w in workloads:
        hist = np.zeros((fx + 1, cap + 1))
        macs = w["dims"]["M"] * w["dims"]["N"] * w["dims"]["K"]
        for _, s, r, g, D in mapper.candidates(w, architecture):
            if interval_cap is not None and macs // (s["M"] * s["N"] * s["K"]) > interval_cap:
                continue
            ways = mapper.spatial_ways(s, fx, fy)
            need = _glb_bytes(w, architecture, s, r, g)
            orders = mapper.distinct_orders(g, D)
            ok = need <= cap
            counts = np.bincount(need[ok], weights=orders[ok], minlength=cap + 1)
            for x, assigned in ways.items():
                hist[x] += len(assigned) * counts
        per_layer.append(int(round(hist.sum())))
        total = total * np.fft.fft2(hist, s=shape)
    joint = np.real(np.fft.ifft2(total))[: fx + 1, : cap + 1].sum()
    return per_layer, float(joint)


# ------------------------------------------------------------------------------------------
# the space of the brute-force proof
# ------------------------------------------------------------------------------------------

def enumerate_pipe(workloads: list[Mapping[str, Any]], architecture: Mapping[str, Any], *cap: Any) -> Iterator[dict[str, Any]]:
    """Every combination of one mapping per layer, each from ``mapper.enumerate_space`` (small
    chains only; the shared limits and the cap are the evaluator's)."""
    spaces = [list(mapper.enumerate_space(w, architecture)) for w in workloads]
    for combo in itertools.product(*spaces):
        yield {"layers": list(combo)}


# ------------------------------------------------------------------------------------------
# the instance generators
# ------------------------------------------------------------------------------------------

def _chain(rng: np.random.Generator, small: bool) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """An MLP chain (layer i maps K_i features to N_i = K_{i+1} for M tokens) and ``mapper``'s
    accelerator: hidden ones three layers (dims 16 to LARGEST), a double-buffered GLB of 2 to 8 KiB
    and an array at least 6 columns wide; small ones (the proof's) two tiny layers."""
    kw = mapper.gen_gemm_mapping(rng, small=small, largest=LARGEST)
    arch = kw["architecture"]
    glb = arch["levels"][1]
    if small:
        n, m = 2, 2
        widths = [mapper._size(rng, 1, 2) for _ in range(n + 1)]
        glb["fanout"] = [int(rng.integers(2, 5)), int(rng.integers(1, 3))]
        glb["capacity_bytes"] = max(glb["capacity_bytes"], 10 * n)  # every layer all at DRAM fits
    else:
        n, m = 3, mapper._size(rng, 16, LARGEST)
        widths = [mapper._size(rng, 16, LARGEST) for _ in range(n + 1)]
        glb["fanout"] = [int(rng.choice([6, 8, 12, 14])), int(rng.choice([4, 6, 8, 12]))]
        glb["multiple_buffering"] = 2
        glb["capacity_bytes"] = int(rng.choice([2048, 3072, 4096, 6144, 8192]))
    works = [{"name": f"mlp.fc{i}", "shape": "gemm", "dims": {"M": m, "N": widths[i + 1], "K": widths[i]},
              "bits": {"I": 8, "W": 8, "O": 8, "psum": 24}} for i in range(n)]
    return works, arch


def gen_edp(rng: np.random.Generator, *, small: bool = False) -> dict[str, Any]:
    """A chain and an accelerator on which the layers can be resident together."""
    works, arch = _chain(rng, small)
    return {"workloads": works, "architecture": arch}


def gen_energy(rng: np.random.Generator, *, small: bool = False) -> dict[str, Any]:
    """A chain, an accelerator and an interval cap between the least interval of any valid
    pipeline and the interval of the least-energy one (hidden instances are redrawn until these
    differ; ``small`` ones, the proof's, are not)."""
    for _ in range(100):
        works, arch = _chain(rng, small)
        fx, cap = _limits(arch)
        pts = [points(w, arch) for w in works]
        least = _best_within(pts, fx, cap, math.inf)
        if least is None:
            continue
        hi = max(int(p["cycles"][i]) for p, i in zip(pts, least[1]))
        lo = next(t for t in sorted({int(c) for p in pts for c in p["cycles"]})
                  if _best_within(pts, fx, cap, t) is not None)
        if hi > lo or small:
            span = float(rng.uniform(0.2, 0.7)) if hi > lo else 1.0
            return {"workloads": works, "architecture": arch, "interval_cap": int(lo + span * (hi - lo))}
    raise ValueError("no instance with a binding interval cap")


REFERENCES = {"mapper_pipe.search_edp": search_edp, "mapper_pipe.search_energy": search_energy}
GENERATORS = {"mapper_pipe.edp": gen_edp, "mapper_pipe.energy": gen_energy}
EVALUATORS = {"mapper_pipe.evaluate_edp": evaluate_edp, "mapper_pipe.evaluate_energy": evaluate_energy}
SPACES = {"mapper_pipe.enumerate_pipe": enumerate_pipe}
