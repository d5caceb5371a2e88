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
from .samplers_system import TENSORS, _bits, _log, _pick


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


SAMPLERS = {
    "samplers_search.best_tiling_search": sample_best_tiling_search,
}
