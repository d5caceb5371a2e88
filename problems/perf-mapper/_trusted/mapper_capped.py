"""perf-mapper trusted code, constrained objectives: one quantity of a layer's mapping minimised
while another stays under a cap given with the instance.

What this kind adds is the **latency** with DRAM bandwidth: the DRAM level has a ``bytes_per_cycle``,
every byte read from DRAM and written into it crosses its one port, at most that many bytes a
cycle, overlapping the computation completely, so the cycles are the larger of the time steps (the
product of every temporal factor) and the whole number of cycles the port needs
(``ceil(DRAM bytes / bytes_per_cycle)``). Problems:

* least energy under a latency cap (``search_energy_latency`` / ``evaluate_energy_latency``) and
  fewest cycles under an energy cap (``search_cycles_energy`` / ``evaluate_cycles_energy``): a real
  pointwise convolution (as a GEMM) on the five-level Simba-like accelerator of ``mapper_llm``
  (its hardware, checks, bypass and engine, imported), 10^10 to 10^11 valid mappings per
  instance. The reference keeps the best of ``DEEP_SEEDS`` local searches of the bundled mapper
  (``_kit/llm_mapper.py``) on the capped objective (a point over the cap is worth 1e30 times one
  plus its relative excess, so a climb first gets under the cap): ``proven`` false; small instances
  (the brute-force proof's) are enumerated whole: proven. The generators draw the cap between the
  two ends one search finds (the fastest mapping's cycles and the least-energy one's, or their
  energies), so it binds on the mappings that search finds;
* a chain of GEMMs on the three-level accelerator of ``mapper``, each mapped on its own, least total
  energy under one total-latency cap (``search_chain`` / ``evaluate_chain``): the cap must be split
  between the layers. The reference is exhaustive: per layer the Pareto frontier of (cycles,
  energy) over every valid mapping (``mapper.candidates`` and the closed form ``mapper._costs``,
  once with the energies per byte and once counting DRAM bytes only), then the exact combination
  of the layers' frontiers; ``proven`` true; the cap is drawn between the sum of the layers'
  fewest cycles and the sum of the cycles of their least-energy mappings, so it binds.

:func:`within_cap_size` estimates how many of a single layer's valid mappings are within a cap (the
README's figures: far below 10^10 on the hidden instances); :func:`chain_space_size` counts a chain's
answers within its cap exactly.
"""

from __future__ import annotations

import functools
import itertools
import json
import math
from typing import Any, Iterator, Mapping

import numpy as np

from reference_models import pm_core

from . import mapper, mapper_llm

SLACK = 1e-9  # relative: an energy within this of the cap is under it (float sums, host and search alike)
CHAIN_LARGEST = 48  # the largest dimension of a layer of a hidden chain (the reference search's time)


# ------------------------------------------------------------------------------------------
# the latency and the judgement of one layer's mapping
# ------------------------------------------------------------------------------------------

def _judge(mapping: Any, workload: Mapping[str, Any], architecture: Mapping[str, Any],
           max_bytes: int, holds: Any = None) -> tuple[str | None, dict[str, Any]]:
    """(why invalid or None, breakdown with energy_pj, steps, dram_bytes, port_cycles and cycles);
    ``holds``: the tensors each level keeps (``mapper_llm``'s deep accelerators), None for every
    tensor at every level (``mapper``'s three-level one)."""
    why = mapper.check(mapping, workload, architecture, max_bytes, holds=holds)
    if why is not None:
        return why, {}
    levels = mapping["levels"] if holds is None else mapper_llm._with_bypass(mapping["levels"], holds)["levels"]
    nest = pm_core.parse(workload, architecture, {"levels": levels})
    counts = pm_core.access_counts(nest)
    br = mapper._breakdown(nest, architecture, counts)
    dram = sum(pm_core.offchip_traffic(nest, counts).values())
    steps = br.pop("cycles")
    port = -(-dram // int(architecture["levels"][-1]["bytes_per_cycle"]))
    return None, {**br, "steps": steps, "dram_bytes": dram, "port_cycles": port, "cycles": max(steps, port)}


def _invalid(reason: str) -> dict[str, Any]:
    return {"valid": False, "reason": reason, "objective": None, "breakdown": {}}


def evaluate_chain(answer: Any, workloads: list[Mapping[str, Any]], architecture: Mapping[str, Any],
                   latency_cap: int, max_bytes: int = mapper.MAX_BYTES) -> dict[str, Any]:
    """The total energy (pJ) of one mapping per layer whose total cycles are at most the cap."""
    if type(answer) is not dict or set(answer) - {"layers", "name"} or "layers" not in answer:
        return _invalid("schema: the answer must be a dict with the key layers (and an optional name)")
    if "name" in answer and type(answer["name"]) is not str:
        return _invalid("schema: name must be a string")
    try:
        size = len(json.dumps(answer, separators=(",", ":"), allow_nan=False))
    except (TypeError, ValueError, RecursionError):
        return _invalid("schema: the answer is not plain JSON")
    if size > max_bytes:
        return _invalid(f"schema: the answer takes {size} bytes as compact JSON, more than {max_bytes}")
    layers = answer["layers"]
    if type(layers) is not list or len(layers) != len(workloads):
        return _invalid(f"schema: layers must be a list of {len(workloads)} mappings, one per layer in order")
    rows, energy, cycles = [], 0.0, 0
    for i, (m, w) in enumerate(zip(layers, workloads)):
        why, br = _judge(m, w, architecture, max_bytes)
        if why is not None:
            return _invalid(f"layer {i}: {why}")
        rows.append(br)
        energy += br["energy_pj"]
        cycles += br["cycles"]
    if cycles > latency_cap:
        return _invalid(f"over the latency cap: {cycles} cycles in all, the cap is {latency_cap}")
    return {"valid": True, "reason": "", "objective": float(energy),
            "breakdown": {"energy_pj": energy, "cycles": cycles, "layers": rows}}


# ------------------------------------------------------------------------------------------
# the reference search: each layer's exact Pareto frontier of (cycles, energy)
# ------------------------------------------------------------------------------------------

def _bytes_only(architecture: Mapping[str, Any], level: int) -> dict[str, Any]:
    """The architecture with every energy per byte 0 but ``level``'s 1: ``mapper._costs`` then
    counts the bytes read from and written into that level (the RF is never a port)."""
    one = {"read_pj_per_byte": 1.0, "write_pj_per_byte": 1.0}
    zero = {"read_pj_per_byte": 0.0, "write_pj_per_byte": 0.0}
    return dict(architecture, levels=[dict(lv, **(one if i == level else zero))
                                      for i, lv in enumerate(architecture["levels"])])


def _ports(architecture: Mapping[str, Any]) -> list[tuple[int, int, dict[str, Any]]]:
    """(level, bytes_per_cycle, the architecture counting that level's bytes) of each port."""
    return [(lv, int(x["bytes_per_cycle"]), _bytes_only(architecture, lv))
            for lv, x in enumerate(architecture["levels"]) if "bytes_per_cycle" in x]


def _cycles(workload: Mapping[str, Any], ports: list[tuple[int, int, dict[str, Any]]], steps: int, n: int,
            s: Any, r: Any, g: Any, D: Any, og: Any, od: Any) -> np.ndarray:
    """The cycles of each of a factor choice's ``n`` tilings under one pair of loop orders: the
    time steps, or a port's whole cycles (the bytes it moves over its bytes_per_cycle) when more."""
    cycles = np.full(n, steps, dtype=np.int64)
    for _, bw, counting in ports:
        moved, _ = mapper._costs(workload, counting, s, r, g, D, og, od)
        cycles = np.maximum(cycles, np.ceil(moved / bw).astype(np.int64))
    return cycles


def _pareto(cycles: np.ndarray, energy: np.ndarray) -> np.ndarray:
    """Indices of the points no other point beats in both (ties: one kept), by cycles ascending.
    Only the points faster than the least-energy one can be on it: most chunks have none."""
    least = np.flatnonzero(energy == energy.min())
    last = least[np.argmin(cycles[least])]
    faster = np.flatnonzero(cycles < cycles[last])
    if not len(faster):
        return np.asarray([last])
    order = faster[np.lexsort((energy[faster], cycles[faster]))]
    e = energy[order]
    prev = np.concatenate(([np.inf], np.minimum.accumulate(e)[:-1]))
    return np.concatenate([order[e < prev], [last]])


@functools.lru_cache(maxsize=64)
def _frontier_cached(key: str) -> tuple[np.ndarray, np.ndarray, tuple[str, ...]]:
    workload, architecture = json.loads(key)
    dims = workload["dims"]
    macs = dims["M"] * dims["N"] * dims["K"]
    ports = _ports(architecture)
    cyc_parts, e_parts, maps = [], [], []
    for choice, s, r, g, D in mapper.candidates(workload, architecture):
        steps = macs // (s["M"] * s["N"] * s["K"])
        for og, od in itertools.product(mapper.ORDERS, mapper.ORDERS):
            energy, _ = mapper._costs(workload, architecture, s, r, g, D, og, od)
            cycles = _cycles(workload, ports, steps, len(energy), s, r, g, D, og, od)
            for i in _pareto(cycles, energy):
                cyc_parts.append(int(cycles[i]))
                e_parts.append(float(energy[i]))
                maps.append(mapper.mapping_json(choice, r, g, D, i, og, od))
    if not maps:
        raise ValueError("no valid mapping: the instance is infeasible")
    cyc, e = np.asarray(cyc_parts, dtype=np.int64), np.asarray(e_parts)
    keep = _pareto(cyc, e)
    return cyc[keep], e[keep], tuple(maps[i] for i in keep)


def frontier(workload: Mapping[str, Any], architecture: Mapping[str, Any]) -> tuple[np.ndarray, np.ndarray, tuple[str, ...]]:
    """Every Pareto-optimal (cycles, energy) of the layer's valid mappings, cycles ascending (energy
    descending), with one mapping (canonical JSON) reaching each."""
    return _frontier_cached(json.dumps([workload, architecture], sort_keys=True))


def _result(best: float, mapping: Any) -> dict[str, Any]:
    text = mapping if isinstance(mapping, str) else json.dumps(mapping, sort_keys=True, separators=(",", ":"))
    return {"best": float(best), "proven": True, "mapping": text}


def _combine(fronts: list[tuple[np.ndarray, np.ndarray]], cap: int) -> tuple[float, list[int]]:
    """The least total energy over one frontier point per layer with total cycles <= cap, and the
    points (exact: the partial sums are Pareto-pruned, never approximated)."""
    cyc, e = np.zeros(1, dtype=np.int64), np.zeros(1)
    picks = np.zeros((1, 0), dtype=np.int64)
    rest = [int(f[0].min()) for f in fronts]
    for k, (fc, fe) in enumerate(fronts):
        c = (cyc[:, None] + fc[None, :]).ravel()
        s = (e[:, None] + fe[None, :]).ravel()
        who = np.concatenate([np.repeat(picks, len(fc), axis=0),
                              np.tile(np.arange(len(fc)), len(cyc))[:, None]], axis=1)
        room = c <= cap - sum(rest[k + 1:])
        c, s, who = c[room], s[room], who[room]
        keep = _pareto(c, s)
        cyc, e, picks = c[keep], s[keep], who[keep]
    if not len(cyc):
        raise ValueError("no valid mappings within the latency cap")
    i = int(np.argmin(e))
    return float(e[i]), [int(x) for x in picks[i]]


def search_chain(workloads: list[Mapping[str, Any]], architecture: Mapping[str, Any],
                 latency_cap: int) -> dict[str, Any]:
    """The least total energy of the chain within the total latency cap (exhaustive: proven)."""
    fronts = [frontier(w, architecture) for w in workloads]
    best, picks = _combine([(f[0], f[1]) for f in fronts], latency_cap)
    answer = {"layers": [json.loads(f[2][i]) for f, i in zip(fronts, picks)]}
    return _result(best, answer)


def chain_space_size(workloads: list[Mapping[str, Any]], architecture: Mapping[str, Any],
                     latency_cap: int | None = None) -> tuple[list[int], float]:
    """(per layer, its valid mappings, as ``mapper.enumerate_space`` lists them; the answers, one
    valid mapping per layer, whose cycles add up to at most ``latency_cap``: all of them without
    it). Counted exactly from each layer's histogram over its cycles (every factor choice under each
    of the 36 pairs of full loop orders, weighted by its distinct orders over 36, so each distinct
    mapping weighs 1), the histograms convolved up to the cap (a float: exact to its rounding)."""
    fx, fy = architecture["levels"][1]["fanout"]
    ports = _ports(architecture)
    per_layer, joint, uncapped = [], np.ones(1), 1.0
    for w in workloads:
        dims = w["dims"]
        macs = dims["M"] * dims["N"] * dims["K"]
        hist, total = np.zeros(1 if latency_cap is None else latency_cap + 1), 0.0
        for _, s, r, g, D in mapper.candidates(w, architecture):
            weight = sum(len(v) for v in mapper.spatial_ways(s, fx, fy).values()) * mapper.distinct_orders(g, D) / 36
            steps = macs // (s["M"] * s["N"] * s["K"])
            total += 36 * weight.sum()
            if latency_cap is None:
                continue
            for og, od in itertools.product(mapper.ORDERS, mapper.ORDERS):
                cycles = _cycles(w, ports, steps, len(weight), s, r, g, D, og, od)
                ok = cycles <= latency_cap
                hist += np.bincount(cycles[ok], weights=weight[ok], minlength=latency_cap + 1)
        per_layer.append(int(round(total)))
        uncapped *= total
        if latency_cap is not None:
            joint = np.convolve(joint, hist)[: latency_cap + 1]
    return per_layer, float(uncapped if latency_cap is None else joint.sum())


# ------------------------------------------------------------------------------------------
# the spaces of the brute-force proof
# ------------------------------------------------------------------------------------------

def enumerate_chain(workloads: list[Mapping[str, Any]], architecture: Mapping[str, Any], cap: Any) -> Iterator[dict[str, Any]]:
    """Every combination of one mapping per layer (small chains only)."""
    spaces = [list(mapper.enumerate_space(w, architecture)) for w in workloads]
    for combo in itertools.product(*spaces):
        yield {"layers": list(combo)}


# ------------------------------------------------------------------------------------------
# the instance generators: the cap binds
# ------------------------------------------------------------------------------------------

def _instance(rng: np.random.Generator, small: bool) -> tuple[dict[str, Any], dict[str, Any]]:
    """``mapper``'s GEMM (dims up to CHAIN_LARGEST) and three-level accelerator, with a DRAM port of
    ``bytes_per_cycle``."""
    kw = mapper.gen_gemm_mapping(rng, small=small, largest=CHAIN_LARGEST)
    _port(rng, kw["workload"], kw["architecture"])
    return kw["workload"], kw["architecture"]


def _port(rng: np.random.Generator, work: Mapping[str, Any], arch: dict[str, Any]) -> None:
    """DRAM's port about as fast as the whole array needs when every tensor crosses it once (0.6 to
    1.6 times that): on some mappings it binds, on others the time steps do."""
    d, bits = work["dims"], work["bits"]
    rel = {"I": ("M", "K"), "W": ("K", "N"), "O": ("M", "N")}
    once = sum(-(-d[a] * d[b] * bits[t] // 8) for t, (a, b) in rel.items())
    pes = math.prod(math.prod(lv.get("fanout", [1, 1])) for lv in arch["levels"][:-1])
    arch["levels"][-1]["bytes_per_cycle"] = max(1, round(once * pes / (d["M"] * d["N"] * d["K"])
                                                         / float(rng.uniform(0.6, 1.6))))


def _between(rng: np.random.Generator, lo: float, hi: float) -> float:
    return lo + float(rng.uniform(0.2, 0.7)) * (hi - lo)


def gen_chain(rng: np.random.Generator, *, small: bool = False, layers: int = 3,
              min_valid: float = 0) -> dict[str, Any]:
    """A chain of GEMMs (an MLP: layer i maps K_i features to N_i = K_{i+1} for M tokens), one
    accelerator with a DRAM port, and a total latency cap between the sum of the layers' fewest
    cycles and the sum of the cycles of their least-energy mappings; drawn again while fewer than
    ``min_valid`` answers are within the cap (:func:`chain_space_size`)."""
    for _ in range(100):
        arch = _instance(rng, small)[1]
        if small:
            n = 2
            m = 2
            widths = [mapper._size(rng, 1, 2) for _ in range(n + 1)]
        else:
            n = layers
            m = mapper._size(rng, 16, CHAIN_LARGEST)
            widths = [mapper._size(rng, 16, CHAIN_LARGEST) for _ in range(n + 1)]
        works = [{"name": f"mlp.fc{i}", "shape": "gemm", "dims": {"M": m, "N": widths[i + 1], "K": widths[i]},
                  "bits": {"I": 8, "W": 8, "O": 8, "psum": 24}} for i in range(n)]
        _port(rng, works[0], arch)
        fronts = [frontier(w, arch)[0] for w in works]
        lo, hi = sum(int(f[0]) for f in fronts), sum(int(f[-1]) for f in fronts)
        if hi > lo + 1 or small:
            cap = int(_between(rng, lo, hi))
            if small or not min_valid or chain_space_size(works, arch, cap)[1] >= min_valid:
                return {"workloads": works, "architecture": arch, "latency_cap": cap}
    raise ValueError("no instance with a binding latency cap and min_valid answers within it")


# ------------------------------------------------------------------------------------------
# real layers on the five-level Simba-like accelerator (``mapper_llm``'s machinery), capped
# ------------------------------------------------------------------------------------------
# The space holds 10^10 and more valid mappings: no exhaustive search. The reference keeps the best of
# DEEP_SEEDS local searches of DEEP_KICKS kicks (the bundled mapper's, on the capped objective: a point
# over the cap is worth 1e30 times one plus its relative excess, so a climb first gets under the cap);
# ``proven`` false. Small instances (the brute-force proof's) are enumerated whole: proven. The same
# number of searches as the uncapped five-level problems' reference (``mapper_llm``'s).

DEEP_SEEDS, DEEP_KICKS = mapper_llm.DEEP_SEEDS, mapper_llm.DEEP_KICKS
ANCHOR_SEEDS, ANCHOR_KICKS = 1, 30  # the generator's searches for the two ends of a cap


def evaluate_energy_latency(mapping: Any, workload: Mapping[str, Any], architecture: Mapping[str, Any],
                            holds: Any, latency_cap: int, max_bytes: int = mapper.MAX_BYTES) -> dict[str, Any]:
    """The energy (pJ) of a mapping whose cycles are at most the cap, or why it is invalid."""
    why, br = _judge(mapping, workload, architecture, max_bytes, holds)
    if why is not None:
        return _invalid(why)
    if br["cycles"] > latency_cap:
        return _invalid(f"over the latency cap: {br['cycles']} cycles, the cap is {latency_cap}")
    return {"valid": True, "reason": "", "objective": float(br["energy_pj"]), "breakdown": br}


def evaluate_cycles_energy(mapping: Any, workload: Mapping[str, Any], architecture: Mapping[str, Any],
                           holds: Any, energy_cap: float, max_bytes: int = mapper.MAX_BYTES) -> dict[str, Any]:
    """The cycles of a mapping whose energy is at most the cap, or why it is invalid."""
    why, br = _judge(mapping, workload, architecture, max_bytes, holds)
    if why is not None:
        return _invalid(why)
    if br["energy_pj"] > energy_cap * (1 + SLACK):
        return _invalid(f"over the energy cap: {br['energy_pj']:.6g} pJ, the cap is {energy_cap:.6g}")
    return {"valid": True, "reason": "", "objective": float(br["cycles"]), "breakdown": br}


def _deep_best(workload: Mapping[str, Any], architecture: Mapping[str, Any], holds: Any, objective: str,
               limit: tuple[str, float] | None, seeds: int, kicks: int) -> tuple[Any, bool]:
    """(the best point found, proven): the whole space on small instances, else local searches."""
    kit = mapper_llm._KIT
    prob = kit["Problem"](workload, architecture, holds, objective, limit=limit)
    best, proven = mapper_llm.best_point(prob, seeds, kicks)
    if best[1] is None or not math.isfinite(best[0]) or best[0] >= kit["PENALTY"]:
        raise ValueError("no valid mapping within the cap" if limit else "no valid mapping: the instance is infeasible")
    return prob.mapping(best[1], best[2]), proven


def _deep_result(mapping: Any, evaluation: Mapping[str, Any], proven: bool) -> dict[str, Any]:
    if not evaluation["valid"]:  # the kit's closed form and the engine disagree: never hidden
        raise ValueError(f"the reference search's mapping is invalid: {evaluation['reason']}")
    return {"best": float(evaluation["objective"]), "proven": proven,
            "mapping": json.dumps(mapping, sort_keys=True, separators=(",", ":"))}


def search_energy_latency(workload: Mapping[str, Any], architecture: Mapping[str, Any], holds: Any,
                          latency_cap: int) -> dict[str, Any]:
    """The least energy found within the latency cap (best of DEEP_SEEDS local searches; small
    instances exhaustive: proven)."""
    m, proven = _deep_best(workload, architecture, holds, "energy", ("cycles", latency_cap), DEEP_SEEDS, DEEP_KICKS)
    return _deep_result(m, evaluate_energy_latency(m, workload, architecture, holds, latency_cap), proven)


def search_cycles_energy(workload: Mapping[str, Any], architecture: Mapping[str, Any], holds: Any,
                         energy_cap: float) -> dict[str, Any]:
    """The fewest cycles found within the energy cap (best of DEEP_SEEDS local searches; small
    instances exhaustive: proven)."""
    m, proven = _deep_best(workload, architecture, holds, "cycles", ("energy", energy_cap), DEEP_SEEDS, DEEP_KICKS)
    return _deep_result(m, evaluate_cycles_energy(m, workload, architecture, holds, energy_cap), proven)


def enumerate_capped(workload: Mapping[str, Any], architecture: Mapping[str, Any], holds: Any,
                     cap: Any) -> Iterator[dict[str, Any]]:
    """Every mapping of the layer's space (``mapper_llm.enumerate_space``; the cap is the evaluator's)."""
    return mapper_llm.enumerate_space(workload, architecture, holds)


def within_cap_size(workload: Mapping[str, Any], architecture: Mapping[str, Any], holds: Any,
                    limit: tuple[str, float] | None = None, samples: int = 120, orders: int = 6,
                    seed: int = 0) -> tuple[float, float]:
    """(the valid mappings of a layer on a deep accelerator, those of them within ``limit``, a
    (``"cycles"`` or ``"energy"``, cap) pair: all of them without it), estimated by stratified
    sampling with the spatial unrollings enumerated (the README's figures).

    A stratum fixes the dimension that may use each array axis and every spatial factor (a point
    whose axis is unused belongs to the stratum of the first dimension, as in
    ``mapper_llm.space_size``): the cycles depend mostly on those. In a stratum the temporal
    factors are every split when they number at most ``samples``, else ``samples`` uniform draws
    (each weighing the splits over the draws); a point that fits every capacity weighs its distinct
    loop orders, all of them judged when they number at most ``orders``, else ``orders`` uniform
    draws. So the count is exact when no stratum and no point exceeds those numbers (the tests
    give the proof's small instances samples and orders to spare) and unbiased otherwise."""
    kit = mapper_llm._KIT
    prob = kit["Problem"](workload, architecture, holds, "energy", limit=limit)
    rng = np.random.default_rng(seed)
    k = len(prob.slots)
    first = ([d for d in prob.dims if prob.size[d] > 1] or prob.dims)[0]
    fixed = mapper_llm.fixed_slots(prob)
    valid = within = 0.0
    for owner, allowed in mapper_llm.strata(prob, fixed):
        if any(d != first and (d, i) in fixed for i, d in owner.items()):
            continue  # the axis stays unused: the first dimension's stratum
        spatial = {d: [i for i in allowed[d] if i in prob.cap] for d in prob.dims}
        temporal = {d: [i for i in allowed[d] if i not in prob.cap] for d in prob.dims}
        choices = []
        for d in prob.dims:  # a dimension other than the first leaves none of its axes unused
            low = 1 if d == first else 2
            choices.append([c for c in itertools.product(*[[x for x in range(low, prob.cap[i] + 1)
                                                            if prob.size[d] % x == 0] for i in spatial[d]])
                            if prob.size[d] % math.prod(c) == 0])
        for choice in itertools.product(*choices):
            rest = {d: prob.size[d] // math.prod(c) for d, c in zip(prob.dims, choice)}
            if any(rest[d] > 1 and not temporal[d] for d in prob.dims):
                continue
            count = math.prod(mapper_llm._count_splits(rest[d], len(temporal[d])) for d in prob.dims if temporal[d])
            if count <= samples:
                draws = itertools.product(*[mapper_llm._splits(rest[d], len(temporal[d])) if temporal[d] else [()]
                                            for d in prob.dims])
                weight = 1.0
            else:
                draws = (tuple(tuple(mapper_llm._uniform_split(rng, rest[d], len(temporal[d])))
                               if temporal[d] else () for d in prob.dims) for _ in range(samples))
                weight = count / samples
            for split in draws:
                f = {d: [1] * k for d in prob.dims}
                for d, c, t in zip(prob.dims, choice, split):
                    for i, x in zip(spatial[d], c):
                        f[d][i] = x
                    for i, x in zip(temporal[d], t):
                        f[d][i] = x
                value = prob.cost(f, [list(prob.dims)] * prob.depth)[0]
                if not math.isfinite(value):
                    continue  # over a capacity, whatever the orders
                live = [[d for d in prob.dims if f[d][prob.temporal[lv]] > 1] for lv in range(prob.depth)]
                n = math.prod(math.factorial(len(x)) for x in live)
                valid += weight * n
                if limit is None:
                    continue
                if n <= orders:
                    picks = list(itertools.product(*[itertools.permutations(x) for x in live]))
                else:
                    picks = [[rng.permutation(x).tolist() for x in live] for _ in range(orders)]
                ok = sum(prob.cost(f, [list(o) + [d for d in prob.dims if d not in o] for o in pick])[0]
                         < kit["PENALTY"] for pick in picks)
                within += weight * n * ok / len(picks)
    return valid, (valid if limit is None else within)


def _deep_anchors(drawn: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The breakdowns of the least-energy and of the fastest mapping found (ANCHOR_SEEDS searches)."""
    out = []
    for objective in ("energy", "cycles"):
        m, _ = _deep_best(drawn["workload"], drawn["architecture"], drawn["holds"], objective,
                          None, ANCHOR_SEEDS, ANCHOR_KICKS)
        out.append(_judge(m, drawn["workload"], drawn["architecture"], mapper.MAX_BYTES, drawn["holds"])[1])
    return out[0], out[1]


def _deep_draw(rng: np.random.Generator, layers: str, arch: str, small: bool, min_valid: float) -> dict[str, Any]:
    drawn = mapper_llm.gen_llm_mapping(rng, layers=layers, arch=arch, small=small, min_valid=min_valid)
    _port(rng, drawn["workload"], drawn["architecture"])
    return drawn


def gen_energy_latency(rng: np.random.Generator, *, layers: str = "pointwise", arch: str = "simba-like",
                       small: bool = False, min_valid: float = 0.0) -> dict[str, Any]:
    """A real layer on the deep accelerator with a DRAM port, and a latency cap between the cycles
    of the fastest mapping found and those of the least-energy one found (redrawn until those
    differ by 5% or more; ``small`` ones, the proof's, are not)."""
    for _ in range(100):
        drawn = _deep_draw(rng, layers, arch, small, min_valid)
        least, fastest = _deep_anchors(drawn)
        lo, hi = fastest["cycles"], least["cycles"]
        if hi > lo * 1.05 or small:
            return {**drawn, "latency_cap": int(_between(rng, min(lo, hi), hi))}
    raise ValueError("no instance with a binding latency cap")


def gen_cycles_energy(rng: np.random.Generator, *, layers: str = "pointwise", arch: str = "simba-like",
                      small: bool = False, min_valid: float = 0.0) -> dict[str, Any]:
    """A real layer on the deep accelerator with a DRAM port, and an energy cap between the energy
    of the least-energy mapping found and that of the fastest one found (redrawn until those differ
    by 5% or more; ``small`` ones, the proof's, are not)."""
    for _ in range(100):
        drawn = _deep_draw(rng, layers, arch, small, min_valid)
        least, fastest = _deep_anchors(drawn)
        lo, hi = least["energy_pj"], fastest["energy_pj"]
        if hi > lo * 1.05 or small:
            return {**drawn, "energy_cap": round(_between(rng, lo, max(lo, hi)), 2)}
    raise ValueError("no instance with a binding energy cap")


REFERENCES = {"mapper_capped.search_energy_latency": search_energy_latency,
              "mapper_capped.search_cycles_energy": search_cycles_energy,
              "mapper_capped.search_chain": search_chain}
GENERATORS = {"mapper_capped.energy_latency": gen_energy_latency,
              "mapper_capped.cycles_energy": gen_cycles_energy,
              "mapper_capped.chain": gen_chain}
EVALUATORS = {"mapper_capped.evaluate_energy_latency": evaluate_energy_latency,
              "mapper_capped.evaluate_cycles_energy": evaluate_cycles_energy,
              "mapper_capped.evaluate_chain": evaluate_chain}
SPACES = {"mapper_capped.enumerate_capped": enumerate_capped,
          "mapper_capped.enumerate_chain": enumerate_chain}
