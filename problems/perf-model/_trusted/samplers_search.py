"""Domain samplers of the perf-model pack for the F16 search and ranking problems.

Written from each problem's spec, the pack's FORMAT.md and the problem's ``[[domain]]`` rules
alone, sharing no code with the generators (the validator checks it). The layers,
architectures and mappings come from :mod:`.samplers_system` (every shape, hierarchy and
mapping the format allows); this module draws what the search and ranking problems add: a
stated search space, and lists of candidates on one layer and architecture whose capacities
leave some of them over a level. ``sample(rng, **options) -> {parameter: value}``.
"""

from __future__ import annotations

from math import prod
from typing import Any

from .samplers import PROJECTIONS
from .samplers_mapping import estimate_room
from .samplers_system import TENSORS, _bits, _log, _pick, architecture, mapping, workload


# ------------------------------------------------------------------------------------------
# F16: the best tiling over a stated space
# ------------------------------------------------------------------------------------------

def _tiling_option(rng: Any, dims: dict[str, int], fanout: list[int]) -> dict[str, Any]:
    """One spatial unrolling: each dimension at most once, factors within its size and the
    fan-out (possibly empty)."""
    opt: dict[str, Any] = {"spatial_x": [], "spatial_y": []}
    free = [str(d) for d in rng.permutation(["M", "N", "K"])]
    for ax, key in ((0, "spatial_x"), (1, "spatial_y")):
        budget = fanout[ax]
        for _ in range(int(_pick(rng, (0, 1, 1, 1, 2)))):
            if not free or budget < 1:
                break
            d = free.pop()
            top = min(budget, dims[d])
            f = top if rng.random() < 0.4 else int(rng.integers(1, top + 1))
            opt[key].append([d, f])
            budget //= f
    return opt


def sample_best_tiling_search(rng: Any, real_share: float = 0.15) -> dict[str, Any]:
    """perf-model/f16-best-tiling-search: a matrix product (small to a real projection) on a GLB
    (shared or partitioned capacity, any fan-out, multiple buffering) over DRAM; one to four
    spatial options (empty ones, duplicates, ragged factors), one to five allowed GLB factors per
    dimension, dozens at real size (up to the largest the domain allows: ragged last tiles,
    single-iteration DRAM loops), a capacity from fitting every candidate down to fitting only a few."""
    real = rng.random() < real_share
    if real:
        n, k = _pick(rng, PROJECTIONS)
        dims = {"M": int(_pick(rng, (1, 8, 16, 128, 512, 2048))), "N": int(n), "K": int(k)}
        fanout = [int(_pick(rng, (1, 4, 12, 14, 16, 64, 128))), int(_pick(rng, (1, 4, 12, 16, 64, 128)))]
    else:
        top = int(_pick(rng, (4, 8, 16, 40, 200)))
        dims = {d: _log(rng, 1, top) for d in ("M", "N", "K")}
        fanout = [_log(rng, 1, 8), _log(rng, 1, 8)]
    bits = _bits(rng)
    options = [_tiling_option(rng, dims, fanout) for _ in range(int(_pick(rng, (1, 1, 2, 3, 4))))]
    if rng.random() < 0.15:
        options.append({"spatial_x": [], "spatial_y": []})
    if rng.random() < 0.1:
        options.append(dict(options[0]))
    options = [options[i] for i in rng.permutation(len(options))]
    spatial = [{d: prod(f for key in ("spatial_x", "spatial_y") for e, f in o[key] if e == d) for d in dims} for o in options]
    factors = {}
    for d, size in dims.items():
        hi = min((size - 1) // s[d] + 1 for s in spatial)  # the largest factor every option allows
        pool = {hi} if rng.random() < 0.5 else set()
        for _ in range(int(rng.integers(5, 40)) if real else int(_pick(rng, (1, 1, 2, 3, 4, 5)))):
            pool.add(_log(rng, 1, hi))
        factors[d] = sorted(pool)
    buf = int(_pick(rng, (1, 1, 2, 2, 3)))
    rooms = []  # per (option, factor triple): the room of I, W, O
    for s in spatial:
        for fm in factors["M"]:
            for fn in factors["N"]:
                for fk in factors["K"]:
                    ext = {"M": min(dims["M"], fm * s["M"]), "N": min(dims["N"], fn * s["N"]), "K": min(dims["K"], fk * s["K"])}
                    rooms.append({t: buf * -(-ext[a] * ext[b] * (bits["psum"] if t == "O" else bits[t]) // 8)
                                  for t, (a, b) in (("I", "MK"), ("W", "KN"), ("O", "MN"))})
    keep = rooms[int(rng.integers(0, len(rooms)))]  # this one always fits
    if rng.random() < 0.35:
        cap: Any = {t: max(keep[t], int(_pick(rng, [r[t] for r in rooms])) + int(rng.integers(0, 3))) for t in TENSORS}
    else:
        cap = max(sum(keep.values()), int(_pick(rng, [sum(r.values()) for r in rooms])) + int(rng.integers(0, 3)))
    glb: dict[str, Any] = {"name": str(_pick(rng, ("GLB", "GlobalBuffer", "Buffer"))), "capacity_bytes": cap, "fanout": fanout}
    if buf > 1 or rng.random() < 0.2:
        glb["multiple_buffering"] = buf
    arch = {"name": "sampled-two-level", "levels": [glb, {"name": "DRAM", "capacity_bytes": None, "fanout": [1, 1]}]}
    wl = {"name": "sampled.gemm", "shape": "gemm", "dims": dims, "bits": bits}
    return {"workload": wl, "architecture": arch, "space": {"spatial_options": options, "factors": factors}}


# ------------------------------------------------------------------------------------------
# F16: candidate mappings ranked by DRAM bytes, energy, latency, energy-delay product
# ------------------------------------------------------------------------------------------

def _instances(arch: dict[str, Any], i: int) -> int:
    """Instances of level ``i``: the fan-outs of the levels above it multiplied."""
    return prod(lv["fanout"][0] * lv["fanout"][1] for lv in arch["levels"][i + 1:])


def _ports(rng: Any, arch: dict[str, Any]) -> None:
    """Port bandwidths on single-instance levels only (DRAM always, the others at random)."""
    last = len(arch["levels"]) - 1
    for i, lv in enumerate(arch["levels"]):
        lv.pop("bytes_per_cycle", None)
        if i == last or (_instances(arch, i) == 1 and rng.random() < 0.6):
            lv["bytes_per_cycle"] = int(_pick(rng, (1, 2, 3, 4, 8, 16, 64)))
    if rng.random() < 0.3:  # a single-instance hierarchy now and then, so on-chip ports appear
        for lv in arch["levels"]:
            lv["fanout"] = [1, 1]
        for lv in arch["levels"][:-1]:
            if rng.random() < 0.7:
                lv["bytes_per_cycle"] = int(_pick(rng, (1, 2, 4, 8, 16)))


def _tie(rng: Any, m: dict[str, Any], dims: list[str]) -> dict[str, Any]:
    """A copy of ``m``, with a factor-1 loop inserted now and then (the same counts: an exact tie)."""
    out = {"levels": [{k: [list(x) if k != "bypass" else x for x in v] for k, v in lv.items()} for lv in m["levels"]]}
    if rng.random() < 0.6:
        lv = out["levels"][int(rng.integers(0, len(out["levels"])))]
        lv.setdefault("temporal", []).insert(int(rng.integers(0, len(lv.get("temporal", [])) + 1)), [str(_pick(rng, dims)), 1])
    return out


def _exact(m: dict[str, Any], dims: dict[str, int]) -> dict[str, Any]:
    """``m`` with each dimension's factors multiplying exactly to its size: every loop of it,
    innermost first, shrinks to the largest divisor of what is left (spatial loops stay within
    their fan-out), and its outermost temporal loop (or a new one at the outermost level) takes
    the rest. No ragged tile, no overshoot."""
    keys = ("temporal", "spatial_x", "spatial_y")
    for d, size in dims.items():
        left, last = size, None
        for lv in m["levels"]:
            for key in ("spatial_x", "spatial_y", "temporal"):
                for loop in lv.get(key, []):
                    if loop[0] != d:
                        continue
                    loop[1] = max(f for f in range(1, min(loop[1], left) + 1) if left % f == 0)
                    left //= loop[1]
                    if key == "temporal":
                        last = loop
        if left > 1:
            if last is None:
                m["levels"][-1].setdefault("temporal", []).append([d, left])
            else:
                last[1] *= left
    assert all(prod(f for lv in m["levels"] for k in keys for e, f in lv.get(k, []) if e == d) == size
               for d, size in dims.items())
    return m


def _bounded_mapping(rng: Any, wl: dict[str, Any], arch: dict[str, Any], span: int | None,
                     plain: bool = False) -> dict[str, Any]:
    """A mapping; with ``span``, one whose loops of each dimension span at most ``span`` times its
    size (plus 16). The spec bounds no overshoot, but the counts of every level (energy, latency)
    take time with the span: an answer must come within the CPU budget of a call. ``plain``: no
    bypass but the one a partitioned level forces."""
    dims = wl["dims"]
    for _ in range(100):
        m = mapping(rng, wl, arch, bypass_p=0.0 if plain else float(_pick(rng, (0.0, 0.2, 0.4))), spatial_p=0.6)
        if span is None or all(prod(f for lv in m["levels"] for k in ("temporal", "spatial_x", "spatial_y") for e, f in lv.get(k, [])
                    if e == d) <= span * size + 16 for d, size in dims.items()):
            return m
    return m


def _capacities(rng: Any, wl: dict[str, Any], arch: dict[str, Any], cands: list[dict[str, Any]]) -> None:
    """On-chip capacities from the candidates' own (estimated) needs: between the smallest and the
    largest, so some candidates fit and others do not; now and then room for all, or for none."""
    rooms = [estimate_room(wl, arch, m) for m in cands]

    def cut(values: list[int]) -> int:
        u = rng.random()
        if u < 0.15:
            return max(values) + int(rng.integers(0, 3))
        if u < 0.25:
            return max(1, min(values) - int(rng.integers(0, 3)))
        return max(1, int(_pick(rng, values)) + int(_pick(rng, (-1, 0, 0, 0, 1))))

    for i, lv in enumerate(arch["levels"][:-1]):
        cap = lv["capacity_bytes"]
        if isinstance(cap, dict):
            lv["capacity_bytes"] = {t: cut([r[i].get(t, 0) for r in rooms]) for t in cap}
        else:
            lv["capacity_bytes"] = cut([sum(r[i].values()) for r in rooms])


def _ranking(rng: Any, shapes: tuple[str, ...], *, energies: bool = False, bandwidth: bool = False,
             real_share: float = 0.25, span: int | None = None, exact_share: float = 0.0,
             plain_share: float = 0.0) -> dict[str, Any]:
    """A layer of one of ``shapes`` (small to real), two to five levels (any fan-out, bypass,
    shared or partitioned capacities, multiple buffering), two to ten candidate mappings, any
    the format allows (several loops of a dimension at a level, ragged and overshooting factors,
    spatial loops at every level), exact ties among them, capacities that leave some over a level.
    With probability ``exact_share`` every candidate's factors multiply exactly to the sizes, and
    with ``plain_share`` no candidate bypasses a tensor it need not (the restricted domains of
    partial models; both 0 draws as before)."""
    wl = workload(rng, shapes, real_share)
    arch = architecture(rng, int(_pick(rng, (2, 2, 3, 3, 4, 5))), energies=energies, buffering_p=0.5)
    if bandwidth:
        _ports(rng, arch)
    exact = exact_share > 0 and rng.random() < exact_share
    plain = plain_share > 0 and rng.random() < plain_share
    dims = list(wl["dims"])
    cands: list[dict[str, Any]] = []
    for _ in range(int(_pick(rng, (2, 3, 4, 5, 6, 7, 8, 9, 10)))):
        if len(cands) >= 2 and rng.random() < 0.12:
            cands.append(_tie(rng, cands[int(rng.integers(0, len(cands)))], dims))
        else:
            m = _bounded_mapping(rng, wl, arch, span, plain)
            cands.append(_exact(m, wl["dims"]) if exact else m)
    _capacities(rng, wl, arch, cands)
    return {"workload": wl, "architecture": arch, "candidates": cands}


def sample_dram_traffic_ranking(rng: Any, real_share: float = 0.25) -> dict[str, Any]:
    """perf-model/f16-dram-traffic-ranking: a GEMM or a batch of them, candidates ranked by DRAM bytes."""
    return _ranking(rng, ("gemm", "bmm"), real_share=real_share)


def sample_energy_ranking(rng: Any, real_share: float = 0.25) -> dict[str, Any]:
    """perf-model/f16-energy-ranking: a convolution (depthwise too) or a GEMM, with energies."""
    return _ranking(rng, ("conv", "depthwise", "gemm"), energies=True, real_share=real_share, span=4)


def sample_latency_ranking(rng: Any, real_share: float = 0.25, exact_share: float = 0.0,
                           plain_share: float = 0.0) -> dict[str, Any]:
    """perf-model/f16-latency-ranking: a convolution or a GEMM, with port bandwidths."""
    return _ranking(rng, ("conv", "gemm"), bandwidth=True, real_share=real_share, span=4,
                    exact_share=exact_share, plain_share=plain_share)


def sample_edp_ranking(rng: Any, real_share: float = 0.25, exact_share: float = 0.0,
                       plain_share: float = 0.0) -> dict[str, Any]:
    """perf-model/f16-edp-ranking: any layer shape, with energies and port bandwidths."""
    return _ranking(rng, ("conv", "depthwise", "gemm", "bmm"), energies=True, bandwidth=True, real_share=real_share,
                    span=4, exact_share=exact_share, plain_share=plain_share)


SAMPLERS = {
    "samplers_search.best_tiling_search": sample_best_tiling_search,
    "samplers_search.dram_traffic_ranking": sample_dram_traffic_ranking,
    "samplers_search.energy_ranking": sample_energy_ranking,
    "samplers_search.latency_ranking": sample_latency_ranking,
    "samplers_search.edp_ranking": sample_edp_ranking,
}
