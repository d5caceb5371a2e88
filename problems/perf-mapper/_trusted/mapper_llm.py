"""perf-mapper trusted code: LLM layers on a TPU-like and an NVDLA-like accelerator.

A problem gives one real layer of BERT-base, Llama-2-7B or Llama-3-8B (``reference_models.pm_shapes``:
a projection GEMM at prefill or decode, or a batched product of attention against a KV cache), an
accelerator (``tpu-like``: a weight register per MAC, a unified buffer with separate input and
accumulator partitions fanning out to a 128 x 128 array, DRAM; ``tpu-v4i-like``: the same with
TPUv4i's common memory (CMEM, one shared capacity) between the unified buffer and DRAM;
``nvdla-like``: a weight register per MAC, an accumulator per output lane fanning out to its
atomic-C MACs, a convolution buffer fanning out to the atomic-K lanes, DRAM) and ``holds``: the
tensors each level keeps (the others bypass it). The same machinery serves M1's five-level
problems: a real pointwise convolution as a GEMM on the ``simba-like`` accelerator (weight
registers, PE weight/accumulation and input buffers fanning out along Y, a global buffer bypassed
by the weights fanning out along X, DRAM), and the four-level M1 problems: a real BERT-base
projection on ``eyeriss-cluster-like`` (RF, a cluster buffer of inputs and partial sums bypassed by
the weights fanning out to 4 x 3 PEs, a GLB fanning out to 4 x 4 clusters, DRAM).

* :func:`check` -> the mapping's first broken rule, or None (never an exception);
* :func:`evaluate_energy`, :func:`evaluate_edp` -> the evaluators: validity with its reason, the
  objective and its breakdown, from the shared engine ``reference_models.pm_core``;
* :func:`search_energy`, :func:`search_edp` -> the reference search. Small spaces (the brute-force
  proof's) are enumerated whole with the closed form: ``proven`` true. Real spaces (10^6 to 10^11 valid
  mappings) are searched by the bundled mapper's local search (``_kit/llm_mapper.py``: best
  improvement over factor moves and loop swaps, from the all-at-DRAM point and seeded random ones,
  then the best point kicked and climbed again): ``proven`` false, the best value that search finds
  (the batched attention's; :func:`best_point` with ``DEEP_SEEDS`` such searches of ``DEEP_KICKS``
  kicks serves M4's capped layers);
  :func:`search_energy_exact`, :func:`search_edp_exact` (the GEMMs: the M1 problems and, since
  0.9.1, M2's prefill) run the exact search of a GEMM's space (``_kit/gemm_exact.py``): ``proven``
  true;
* :func:`enumerate_space` -> every mapping of the space one by one (small instances only);
* :func:`space_size` -> an estimate of the number of valid mappings (the README's figures);
* :func:`gen_llm_mapping` -> the instance generator.

The objective leaves out what every valid mapping pays: the MACs and the weight register's one read
of its weight per MAC (one MAC unit under each weight register). It keeps every other access of
every level, in bytes, times the level's ``read_pj_per_byte`` or ``write_pj_per_byte``. EDP
multiplies it by the cycles (temporal steps).
"""

from __future__ import annotations

import copy
import itertools
import json
import math
from pathlib import Path
from typing import Any, Iterator, Mapping

import numpy as np

from reference_models import pm_core, pm_shapes

from . import mapper
from .mapper import MAX_BYTES

KIT = Path(__file__).resolve().parent.parent / "_kit" / "llm_mapper.py"
EXACT = KIT.parent / "gemm_exact.py"  # the exact search of a GEMM's space (the M1 problems)
EXHAUSTIVE_LIMIT = 20_000  # factor choices up to which the reference enumerates the whole space
HOLDS = {"tpu-like": (("W",), ("I", "O"), ("I", "W", "O")),
         "tpu-v4i-like": (("W",), ("I", "O"), ("I", "W", "O"), ("I", "W", "O")),
         "nvdla-like": (("W",), ("O",), ("I", "W"), ("I", "W", "O")),
         "simba-like": (("W",), ("W", "O"), ("I",), ("I", "O"), ("I", "W", "O")),
         "eyeriss-cluster-like": (("I", "W", "O"), ("I", "O"), ("I", "W", "O"), ("I", "W", "O"))}


def _kit(flags: Mapping[str, Any] | None = None, exact: bool = False) -> dict[str, Any]:
    """The bundled mapper's namespace (its cost model and searches; with ``exact``, the exact search
    of a GEMM appended as the M1 solutions assemble it), with ``flags``."""
    ns: dict[str, Any] = {"__name__": "llm_mapper"}
    for path in (KIT, EXACT) if exact else (KIT,):
        exec(compile(path.read_text(), str(path), "exec"), ns)  # the pack's own files, on the host
    ns["FLAGS"].update(flags or {})
    return ns


_KIT = _kit()
_EXACT = _kit(exact=True)


# ------------------------------------------------------------------------------------------
# the host's check of an untrusted mapping
# ------------------------------------------------------------------------------------------

def check(mapping: Any, workload: Mapping[str, Any], architecture: Mapping[str, Any], holds: Any,
          max_bytes: int = MAX_BYTES) -> str | None:
    """Why the mapping is invalid (its first broken rule), or None when it is valid: the first
    kind's checks (``mapper.check``) with each level keeping only the tensors ``holds`` names."""
    return mapper.check(mapping, workload, architecture, max_bytes, holds=holds)


def _with_bypass(levels: list[dict[str, Any]], holds: Any) -> dict[str, Any]:
    return {"levels": [{**entry, "bypass": [t for t in pm_core.TENSORS if t not in kept]}
                       for entry, kept in zip(levels, holds)]}


# ------------------------------------------------------------------------------------------
# evaluation (the trusted engine's counts)
# ------------------------------------------------------------------------------------------

def _evaluate(mapping: Any, workload: Mapping[str, Any], architecture: Mapping[str, Any], holds: Any,
              objective: str, max_bytes: int) -> dict[str, Any]:
    why = check(mapping, workload, architecture, holds, max_bytes)
    if why is not None:
        return {"valid": False, "reason": why, "objective": None, "breakdown": {}}
    nest = pm_core.parse(workload, architecture, _with_bypass(mapping["levels"], holds))
    br = mapper._breakdown(nest, architecture)  # every access but the innermost level's per-MAC ones
    value = br["energy_pj"] if objective == "energy" else br["energy_pj"] * br["cycles"]
    return {"valid": True, "reason": "", "objective": float(value), "breakdown": br}


def evaluate_energy(mapping: Any, workload: Mapping[str, Any], architecture: Mapping[str, Any], holds: Any,
                    max_bytes: int = MAX_BYTES) -> dict[str, Any]:
    """The energy objective of a returned mapping (pJ), or why the mapping is invalid."""
    return _evaluate(mapping, workload, architecture, holds, "energy", max_bytes)


def evaluate_edp(mapping: Any, workload: Mapping[str, Any], architecture: Mapping[str, Any], holds: Any,
                 max_bytes: int = MAX_BYTES) -> dict[str, Any]:
    """The energy-delay product of a returned mapping (pJ x cycles), or why it is invalid."""
    return _evaluate(mapping, workload, architecture, holds, "edp", max_bytes)


# ------------------------------------------------------------------------------------------
# the space and the reference search
# ------------------------------------------------------------------------------------------

def _splits(n: int, k: int) -> list[tuple[int, ...]]:
    """Every ordered k-tuple of positive integers whose product is n."""
    if k == 1:
        return [(n,)]
    return [(a,) + rest for a in range(1, n + 1) if n % a == 0 for rest in _splits(n // a, k - 1)]


def _count_splits(n: int, k: int) -> int:
    """len(_splits(n, k)) without listing them: a product over the prime powers of n."""
    out, p = 1, 2
    while n > 1:
        e = 0
        while n % p == 0:
            n //= p
            e += 1
        out *= math.comb(e + k - 1, k - 1)
        p += 1
    return out


def _split_count(prob: Any) -> int:
    """The factor choices of the space: every split of every dimension over the loops (spatial
    limits, orders and capacity aside)."""
    return math.prod(_count_splits(prob.size[d], len(prob.slots)) for d in prob.dims)


def _uniform_split(rng: np.random.Generator, n: int, k: int) -> list[int]:
    """A uniformly drawn ordered k-tuple with product n (a uniform composition per prime)."""
    out, p = [1] * k, 2
    while n > 1:
        e = 0
        while n % p == 0:
            n //= p
            e += 1
        if e:  # stars and bars
            bars = np.sort(rng.choice(e + k - 1, size=k - 1, replace=False))
            for i, a in enumerate(np.diff(np.concatenate(([-1], bars, [e + k - 1]))) - 1):
                out[i] *= p ** int(a)
        p += 1
    return out


def fixed_slots(prob: Any) -> set[tuple[str, int]]:
    """The (dimension, slot) pairs whose factor is 1 on every valid point: a dimension relevant to
    a tensor whose partition at a level holds a single element (two overflow it) keeps factor 1 at
    that level and below."""
    fixed = set()
    for lv in range(prob.depth - 1):
        arch = prob.levels[lv]
        cap = arch["capacity_bytes"]
        mb = int(arch.get("multiple_buffering", 1))
        for t in prob.holds[lv]:
            bits = prob.bits["psum"] if t == "O" else prob.bits[t]
            if isinstance(cap, dict) and mb * -(-2 * bits // 8) > cap[t]:
                fixed |= {(d, i) for d in prob.rel[t] for i, (l, _) in enumerate(prob.slots) if l <= lv}
    return fixed


def strata(prob: Any, fixed: set[tuple[str, int]]) -> Iterator[tuple[dict[int, str], dict[str, list[int]]]]:
    """The strata of the space's estimates: for each choice of the dimension (above 1) that may
    use each array axis (``owner``: axis slot -> dimension), the slots each dimension may take
    (``allowed``: an axis only to its owner, the ``fixed`` pairs left out)."""
    big = [d for d in prob.dims if prob.size[d] > 1]
    axes = sorted(prob.cap)
    for who in itertools.product(big or [prob.dims[0]], repeat=len(axes)):
        owner = dict(zip(axes, who))
        yield owner, {d: [i for i in range(len(prob.slots)) if (d, i) not in fixed and owner.get(i, d) == d]
                      for d in prob.dims}


def space_size(workload: Mapping[str, Any], architecture: Mapping[str, Any], holds: Any,
               samples: int = 400, seed: int = 0) -> float:
    """An unbiased estimate of the number of VALID mappings of the space (the README's figures).

    Stratified sampling: a stratum fixes which dimension may use each array axis (a point whose
    axis is unused belongs to the stratum of the first dimension); a dimension relevant to a tensor
    whose partition holds a single element keeps factor 1 at that level and below (anything else
    overflows it). Within a stratum the factor choices are drawn uniformly; each drawn point counts
    its distinct loop orders when it fits the fanouts and every capacity."""
    prob = _KIT["Problem"](workload, architecture, holds, "energy")
    rng = np.random.default_rng(seed)
    k = len(prob.slots)
    first = ([d for d in prob.dims if prob.size[d] > 1] or prob.dims)[0]
    total = 0.0
    for owner, allowed in strata(prob, fixed_slots(prob)):
        if any(not allowed[d] and prob.size[d] > 1 for d in prob.dims):
            continue
        count = math.prod(_count_splits(prob.size[d], len(allowed[d])) if allowed[d] else 1 for d in prob.dims)
        acc = 0.0
        for _ in range(samples):
            f = {d: [1] * k for d in prob.dims}
            for d in prob.dims:
                if allowed[d]:
                    for i, x in zip(allowed[d], _uniform_split(rng, prob.size[d], len(allowed[d]))):
                        f[d][i] = x
            if any(d != first and f[d][i] == 1 for i, d in owner.items()):
                continue  # an unused axis: counted in the first dimension's stratum
            order = [list(prob.dims) for _ in range(prob.depth)]
            if all(prob.spatial_ok(f, i) for i in prob.cap) and math.isfinite(prob.cost(f, order)[0]):
                acc += math.prod(math.factorial(sum(f[d][prob.temporal[lv]] > 1 for d in prob.dims))
                                 for lv in range(prob.depth))
        total += count * acc / samples
    return total


def _points(prob: Any) -> Iterator[tuple[dict[str, list[int]], list[list[str]]]]:
    """Every distinct point (factors per slot, orders of the loops with a factor above 1)."""
    per_dim = [_splits(prob.size[d], len(prob.slots)) for d in prob.dims]
    for combo in itertools.product(*per_dim):
        f = {d: list(c) for d, c in zip(prob.dims, combo)}
        if not all(prob.spatial_ok(f, i) for i in prob.cap):
            continue
        live = [[d for d in prob.dims if f[d][prob.temporal[lv]] > 1] for lv in range(prob.depth)]
        for orders in itertools.product(*[itertools.permutations(x) for x in live]):
            yield f, [list(o) + [d for d in prob.dims if d not in o] for o in orders]


def enumerate_space(workload: Mapping[str, Any], architecture: Mapping[str, Any], holds: Any) -> Iterator[dict[str, Any]]:
    """Every distinct mapping the pack's rules allow, one at a time (valid or not: the caller checks)."""
    prob = _KIT["Problem"](workload, architecture, holds, "energy")
    for f, order in _points(prob):
        yield prob.mapping(f, order)


# M4's capped five-level layers' reference keeps the best of DEEP_SEEDS independent local searches,
# each with DEEP_KICKS kicks (their bundled solution does the same within the CPU budget)
DEEP_SEEDS, DEEP_KICKS = 6, 60


def best_point(prob: Any, seeds: int, kicks: int) -> tuple[tuple[float, Any, Any], bool]:
    """((value, factors, orders), proven): the whole space enumerated with the closed form on small
    instances (proven), else the best of ``seeds`` local searches of ``kicks`` kicks."""
    if _split_count(prob) > EXHAUSTIVE_LIMIT:
        return _KIT["deep_search"](prob, seeds, kicks=kicks), False
    best = (math.inf, None, None)
    for f, order in _points(prob):
        v = prob.cost(f, order)[0]
        if v < best[0] * (1 - 1e-12):
            best = (v, f, order)
    return best, True


def _search(workload: Mapping[str, Any], architecture: Mapping[str, Any], holds: Any, objective: str,
            seeds: int = 1, kicks: int = 300) -> dict[str, Any]:
    prob = _KIT["Problem"](workload, architecture, holds, objective)
    best, proven = best_point(prob, seeds, kicks)
    if best[1] is None or not math.isfinite(best[0]):
        raise ValueError("no valid mapping: the instance is infeasible")
    mapping = prob.mapping(best[1], best[2])
    value = _evaluate(mapping, workload, architecture, holds, objective, MAX_BYTES)["objective"]
    return {"best": value, "proven": proven, "mapping": json.dumps(mapping, sort_keys=True, separators=(",", ":"))}


def search_energy(workload: Mapping[str, Any], architecture: Mapping[str, Any], holds: Any) -> dict[str, Any]:
    """The least energy found (exhaustive on small spaces: proven) and one mapping reaching it."""
    return _search(workload, architecture, holds, "energy")


def search_edp(workload: Mapping[str, Any], architecture: Mapping[str, Any], holds: Any) -> dict[str, Any]:
    """The least energy-delay product found (exhaustive on small spaces: proven)."""
    return _search(workload, architecture, holds, "edp")


def _search_exact(workload: Mapping[str, Any], architecture: Mapping[str, Any], holds: Any,
                  objective: str) -> dict[str, Any]:
    prob = _EXACT["Problem"](workload, architecture, holds, objective)
    value, f, order = _EXACT["exact_search"](prob)
    if f is None or not math.isfinite(value):
        raise ValueError("no valid mapping: the instance is infeasible")
    mapping = prob.mapping(f, order)
    value = _evaluate(mapping, workload, architecture, holds, objective, MAX_BYTES)["objective"]
    return {"best": value, "proven": True, "mapping": json.dumps(mapping, sort_keys=True, separators=(",", ":"))}


def search_energy_exact(workload: Mapping[str, Any], architecture: Mapping[str, Any], holds: Any) -> dict[str, Any]:
    """The least energy of a GEMM's whole space (``_kit/gemm_exact.py``: exact without enumerating
    it; proven) and one mapping reaching it."""
    return _search_exact(workload, architecture, holds, "energy")


def search_edp_exact(workload: Mapping[str, Any], architecture: Mapping[str, Any], holds: Any) -> dict[str, Any]:
    """The least energy-delay product of a GEMM's whole space (exact; proven)."""
    return _search_exact(workload, architecture, holds, "edp")


# ------------------------------------------------------------------------------------------
# the instance generator
# ------------------------------------------------------------------------------------------

LAYER_GROUPS = {
    "prefill": ("bert-base", "llama-prefill"),
    "decode": ("llama-decode",),
    "attention": ("attention-decode",),
    "pointwise": ("resnet50", "mobilenetv2-pw"),
    "gemm": ("bert-base",),
}


def _batched_attention() -> dict[str, dict[str, Any]]:
    """Llama-3-8B decode attention for 8 or 16 sequences at once, the products ``pm_shapes`` lacks
    (it has the scores of 8): the same ``bmm`` shape, batch ``B``, 8 key/value heads of 4 query
    heads each, one query token, head dim 128, KV caches of 1024 to 8192 tokens."""
    bits = dict(pm_shapes.layer("llama3-8b.decode.batch8.ctx1024.scores")["bits"])
    out = {}
    for ctx in (1024, 4096, 8192):
        for b, what, n, k in ((8, "context", 128, ctx), (16, "scores", ctx, 128), (16, "context", 128, ctx)):
            name = f"llama3-8b.decode.batch{b}.ctx{ctx}.{what}"
            out[name] = {"name": name, "shape": "bmm", "dims": {"B": b, "G": 8, "H": 4, "M": 1, "N": n, "K": k},
                         "bits": dict(bits)}
    return out


BATCHED_ATTENTION = _batched_attention()


def _layer(name: str) -> dict[str, Any]:
    return copy.deepcopy(BATCHED_ATTENTION[name]) if name in BATCHED_ATTENTION else pm_shapes.layer(name)


def _as_gemm(layer: Mapping[str, Any]) -> dict[str, Any]:
    """A stride-1 1x1 convolution as the matrix product it is: ``M`` the output positions, ``N``
    the output channels, ``K`` the input channels."""
    d = layer["dims"]
    return {"name": layer["name"] + ".as_gemm", "shape": "gemm",
            "dims": {"M": d["N"] * d["P"] * d["Q"], "N": d["K"], "K": d["C"]}, "bits": dict(layer["bits"])}


def _pointwise(name: str) -> bool:
    w = pm_shapes.layer(name)
    return w["shape"] == "conv" and w["dims"]["R"] == w["dims"]["S"] == 1 and w["stride"] == [1, 1]


# TPUv4i's common memory (CMEM): a shared on-chip SRAM between the unified buffer and DRAM
CMEM = {"name": "CMEM", "capacity_bytes": 128 * 1024 * 1024, "fanout": [1, 1],
        "bytes_per_cycle": 256, "read_pj_per_byte": 8.0, "write_pj_per_byte": 9.0}


# Eyeriss v2's grouping of the PEs: clusters of 4 x 3 PEs, each cluster with a buffer for inputs
# and partial sums (the weights bypass it), 4 x 4 clusters under the global buffer
CLUSTER = {"name": "ClusterBuffer", "capacity_bytes": {"I": 1536, "O": 1920}, "fanout": [4, 3],
           "bytes_per_cycle": 16, "read_pj_per_byte": 1.0, "write_pj_per_byte": 1.2}


def architecture(name: str) -> dict[str, Any]:
    """A named accelerator: ``pm_shapes``' designs; ``tpu-v4i-like``, the ``tpu-like`` design with
    TPUv4i's CMEM between its unified buffer and DRAM (four levels); ``eyeriss-cluster-like``, the
    ``eyeriss-like`` design with its 192 PEs grouped as in Eyeriss v2 (four levels: RF, a cluster
    buffer per 4 x 3 PEs, the GLB fanning out to 4 x 4 clusters, DRAM)."""
    if name == "eyeriss-cluster-like":
        arch = pm_shapes.architecture("eyeriss-like")
        arch["name"] = name
        arch["levels"].insert(1, copy.deepcopy(CLUSTER))
        arch["levels"][2]["fanout"] = [4, 4]
        return arch
    if name == "tpu-v4i-like":
        arch = pm_shapes.architecture("tpu-like")
        arch["name"] = name
        arch["levels"].insert(2, copy.deepcopy(CMEM))
        return arch
    return pm_shapes.architecture(name)


def _arch(rng: np.random.Generator, name: str, small: bool) -> dict[str, Any]:
    arch = architecture(name)
    lv = arch["levels"]
    if name in ("tpu-like", "tpu-v4i-like"):  # the same unified buffer; tpu-v4i-like adds the CMEM
        if small:
            lv[1]["fanout"] = [int(rng.integers(1, 4)), int(rng.integers(1, 4))]
            lv[1]["capacity_bytes"] = {"I": int(rng.integers(2, 24)), "O": 3 * int(rng.integers(1, 8))}
        else:
            lv[1]["capacity_bytes"] = {"I": int(rng.choice([1, 2, 4, 8, 24])) * 1024 * 1024 // 8,
                                       "O": int(rng.choice([256, 512, 1024, 4096])) * 1024 // 8}
        if name == "tpu-v4i-like":  # small: the all-at-DRAM mapping's 5 bytes fit
            lv[2]["capacity_bytes"] = (int(rng.integers(5, 40)) if small
                                       else int(rng.choice([4, 8, 16, 32])) * 1024 * 1024)
    elif name == "eyeriss-cluster-like":
        if small:
            lv[0]["capacity_bytes"] = {"I": int(rng.integers(1, 5)), "W": int(rng.integers(1, 5)),
                                       "O": 3 * int(rng.integers(1, 5))}
            lv[1]["fanout"] = [int(rng.integers(1, 3)), int(rng.integers(1, 3))]
            lv[1]["capacity_bytes"] = {"I": int(rng.integers(1, 9)), "O": 3 * int(rng.integers(1, 5))}
            lv[2]["fanout"] = [int(rng.integers(1, 3)), int(rng.integers(1, 3))]
            lv[2]["capacity_bytes"] = int(rng.integers(10, 48))  # the all-at-DRAM mapping's 5 bytes, twice
        else:
            lv[0]["capacity_bytes"] = {"I": int(rng.choice([8, 12, 16, 24])), "W": int(rng.choice([64, 128, 192, 256])),
                                       "O": int(rng.choice([24, 32, 48]))}
            lv[1]["capacity_bytes"] = {"I": int(rng.choice([768, 1536, 3072])), "O": int(rng.choice([960, 1920, 3840]))}
            lv[2]["capacity_bytes"] = int(rng.choice([32, 64, 128, 256])) * 1024
        lv[2]["multiple_buffering"] = int(rng.choice([1, 2]))
    elif name == "simba-like":
        if small:
            lv[1]["fanout"] = [1, int(rng.integers(1, 3))]
            lv[1]["capacity_bytes"] = {"W": int(rng.integers(1, 5)), "O": 3 * int(rng.integers(1, 4))}
            lv[2]["fanout"] = [1, int(rng.integers(1, 3))]
            lv[2]["capacity_bytes"] = {"I": int(rng.integers(1, 8))}
            lv[3]["fanout"] = [int(rng.integers(1, 3)), 1]
            lv[3]["capacity_bytes"] = int(rng.integers(8, 48))
        else:
            lv[1]["capacity_bytes"] = {"W": int(rng.choice([2, 4, 8, 16, 32])) * 1024,
                                       "O": int(rng.choice([96, 192, 384, 768]))}
            lv[2]["capacity_bytes"] = {"I": int(rng.choice([4, 8, 16, 32, 64])) * 1024}
            lv[3]["capacity_bytes"] = int(rng.choice([32, 64, 128, 256])) * 1024
        lv[2]["multiple_buffering"] = int(rng.choice([1, 2]))
        lv[3]["multiple_buffering"] = int(rng.choice([1, 2]))
        if small:  # the all-at-DRAM mapping fits: one input element, double-buffered or not
            lv[2]["capacity_bytes"]["I"] = max(lv[2]["capacity_bytes"]["I"], lv[2]["multiple_buffering"])
    else:
        if small:
            lv[1]["fanout"] = [int(rng.integers(1, 4)), 1]
            lv[1]["capacity_bytes"] = {"O": 3 * int(rng.integers(1, 6))}
            lv[2]["fanout"] = [1, int(rng.integers(1, 4))]
            lv[2]["capacity_bytes"] = int(rng.integers(4, 40))
        else:
            lv[1]["capacity_bytes"] = {"O": int(rng.choice([512, 1024, 2048]))}
            lv[2]["capacity_bytes"] = int(rng.choice([64, 128, 256, 512])) * 1024
    return arch


MIN_VALID_TRIES = 200


def gen_llm_mapping(rng: np.random.Generator, *, layers: str = "prefill", arch: str = "tpu-like",
                    small: bool = False, min_valid: float = 0.0) -> dict[str, Any]:
    """One real LLM layer (``layers``: prefill projections, decode projections or attention against
    a KV cache) on the named accelerator with sampled buffer sizes, and what each level holds.

    ``small``: a tiny layer of the same shape on a tiny array, whose whole space can be enumerated
    one mapping at a time (the brute-force proof). ``min_valid``: a real instance whose space holds
    fewer valid mappings than this (``space_size``'s estimate) is drawn again, so every instance is
    beyond enumeration."""
    if small or not min_valid:
        return _draw_llm(rng, layers, arch, small)
    for _ in range(MIN_VALID_TRIES):
        drawn = _draw_llm(rng, layers, arch, small)
        # a quick estimate first: most instances drawn again are far below (an M of 49 splits few ways)
        if space_size(**drawn, samples=50) >= min_valid / 4 and space_size(**drawn) >= min_valid:
            return drawn
    raise ValueError(f"no {layers} layer on {arch} drawn in {MIN_VALID_TRIES} tries has {min_valid:.1e} "
                     "valid mappings: lower min_valid")


def _draw_llm(rng: np.random.Generator, layers: str, arch: str, small: bool) -> dict[str, Any]:
    names = [n for g in LAYER_GROUPS[layers] for n in pm_shapes.group(g)
             if layers != "pointwise" or _pointwise(n)]
    if layers == "attention":
        names += list(BATCHED_ATTENTION)
    work = _layer(str(rng.choice(sorted(names))))
    if layers == "pointwise":
        work = _as_gemm(work)
    if small:
        for d in work["dims"]:
            work["dims"][d] = 1
        dims = list(work["dims"])
        for d in ("M", "N", "K") if len(dims) == 3 else ("H", "N", "K"):
            work["dims"][d] = int(rng.choice([1, 2, 3, 4]))
        if arch == "eyeriss-cluster-like":  # eight loops per dimension: one 4 at most, so that the
            four = str(rng.choice(["M", "N", "K"]))  # brute-force proof enumerates a few hundred mappings
            for d in ("M", "N", "K"):
                work["dims"][d] = int(rng.choice([2, 4] if d == four else [2, 3]))
        work["name"] += ".small"
    return {"workload": work, "architecture": _arch(rng, arch, small), "holds": [list(h) for h in HOLDS[arch]]}


REFERENCES = {"mapper_llm.search_energy": search_energy, "mapper_llm.search_edp": search_edp,
              "mapper_llm.search_energy_exact": search_energy_exact, "mapper_llm.search_edp_exact": search_edp_exact}
GENERATORS = {"mapper_llm.llm_mapping": gen_llm_mapping}
EVALUATORS = {"mapper_llm.evaluate_energy": evaluate_energy, "mapper_llm.evaluate_edp": evaluate_edp}
SPACES = {"mapper_llm.enumerate_space": enumerate_space}
