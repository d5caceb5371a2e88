"""perf-model reference and generator: the best tiling of a matrix product over a whole stated
mapping space (F16, mapping selection), in the format of problems/perf-model/FORMAT.md.

A layer ``O[m][n] += I[m][k] * W[k][n]`` runs on a global buffer (GLB) that feeds an X x Y array
of MAC units, over DRAM. A candidate is one spatial unrolling from a given list, one GLB
temporal factor per dimension from a given list, and one order of the three DRAM loops (every
permutation); the DRAM factor of a dimension is the number of GLB tiles that cover it (ceil, so
the last tile can be ragged). A candidate is valid when its largest tiles, with the GLB's
multiple buffering and outputs at psum bits, fit the GLB (shared or partitioned). The best
valid candidate moves the fewest DRAM bytes; ties go to the fewest GLB bytes reserved, then to
the lower spatial option, then to the lexicographically smallest factor triple (M, N, K), then
to the alphabetically first order (innermost first).

Everything is closed form and vectorised over the space with numpy (every candidate at once):
a GLB tile along a dimension is a contiguous block, so a tensor's tile changes at every
iteration of the DRAM loops from its first relevant loop with more than one iteration outwards,
and every element of the tensor arrives once per iteration of the irrelevant loops outside that
one. Outputs leave and come back in the same way; the first entry reads nothing and the last
write-back of an output is the complete one.

The generator draws a small instance (a brute-force simulation of every candidate finishes) by
default and a real one (a BERT-base or Llama projection on a two-level reduction of an
Eyeriss-, Simba-, NVDLA- or TPU-like design, 10^4 - 2 x 10^5 candidates) with ``real=True``.
"""

from __future__ import annotations

import itertools
from typing import Any, Callable, Sequence

import numpy as np

from reference_models import pm_shapes

DIMS = ("M", "N", "K")
TENSORS = ("I", "W", "O")
RELEVANT = {"I": ("M", "K"), "W": ("K", "N"), "O": ("M", "N")}
ORDERS = sorted(itertools.permutations(DIMS))  # alphabetical, innermost first


def _ceil_div(a, b):
    return -(-a // b)


def _spatial(option: dict[str, Any]) -> dict[str, int]:
    s = {d: 1 for d in DIMS}
    for key in ("spatial_x", "spatial_y"):
        for d, f in option.get(key, []):
            s[d] *= int(f)
    return s


def _option_arrays(workload: dict, architecture: dict, space: dict, option: dict) -> dict[str, Any]:
    """Every (factor triple, order) of one spatial option: DRAM bytes, GLB bytes, validity.
    Arrays of shape (factor triples, 6 orders) for the bytes; (factor triples,) for the room."""
    dims = {d: int(workload["dims"][d]) for d in DIMS}
    bits = workload["bits"]
    glb = architecture["levels"][0]
    buf = int(glb.get("multiple_buffering", 1))
    s = _spatial(option)
    lists = [np.asarray(space["factors"][d], dtype=np.int64) for d in DIMS]
    grid = np.meshgrid(*lists, indexing="ij")
    f = {d: g.reshape(-1) for d, g in zip(DIMS, grid)}
    ext = {d: np.minimum(dims[d], f[d] * s[d]) for d in DIMS}          # the largest tile along d
    trips = {d: _ceil_div(dims[d], f[d] * s[d]) for d in DIMS}          # DRAM iterations along d
    room = {}
    for t in TENSORS:
        a, b = RELEVANT[t]
        tbits = bits["psum"] if t == "O" else bits[t]
        room[t] = buf * _ceil_div(ext[a] * ext[b] * tbits, 8)
    total = room["I"] + room["W"] + room["O"]
    cap = glb["capacity_bytes"]
    if isinstance(cap, dict):
        fits = np.ones_like(total, dtype=bool)
        for t in TENSORS:
            fits &= room[t] <= int(cap[t])
    else:
        fits = total <= int(cap)
    size = {t: dims[RELEVANT[t][0]] * dims[RELEVANT[t][1]] for t in TENSORS}
    n = len(total)
    dram = np.zeros((n, len(ORDERS)), dtype=np.int64)
    for j, order in enumerate(ORDERS):
        mult = {}
        for t in TENSORS:
            # inner to outer: the tile is fixed until the first relevant loop that advances;
            # from there on every iteration brings a new tile, and the irrelevant loops outside
            # it bring the same elements again
            m = np.ones(n, dtype=np.int64)
            started = np.zeros(n, dtype=bool)
            for d in order:
                if d in RELEVANT[t]:
                    started |= trips[d] > 1
                else:
                    m = np.where(started, m * trips[d], m)
            mult[t] = m
        i_bytes = _ceil_div(size["I"] * mult["I"] * bits["I"], 8)
        w_bytes = _ceil_div(size["W"] * mult["W"] * bits["W"], 8)
        o_complete = _ceil_div(size["O"] * bits["O"], 8)
        partial = size["O"] * (mult["O"] - 1)
        psum_bytes = _ceil_div(partial * bits["psum"], 8)
        dram[:, j] = i_bytes + w_bytes + o_complete + 2 * psum_bytes
    return {"f": f, "glb": total, "fits": fits, "dram": dram}


def ref_best_tiling_search(workload: dict, architecture: dict, space: dict) -> dict[str, Any]:
    best_key = None
    best: dict[str, Any] = {}
    per_option = []
    for o, option in enumerate(space["spatial_options"]):
        arr = _option_arrays(workload, architecture, space, option)
        per_option.append(arr)
    valid_count = sum(int(a["fits"].sum()) * len(ORDERS) for a in per_option)
    if valid_count == 0:
        raise ValueError("no valid candidate")
    best_bytes = min(int(a["dram"][a["fits"]].min()) for a in per_option if a["fits"].any())
    optimal = sum(int((a["dram"][a["fits"]] == best_bytes).sum()) for a in per_option if a["fits"].any())
    for o, a in enumerate(per_option):
        hit = (a["dram"] == best_bytes) & a["fits"][:, None]
        rows, cols = np.nonzero(hit)
        if len(rows) == 0:
            continue
        # the meshgrid rows are already in lexicographic (M, N, K) order and the columns in
        # alphabetical order: the smallest (glb, row, col) is the winner of this option
        glbs = a["glb"][rows]
        k = np.lexsort((cols, rows, glbs))[0]
        key = (int(glbs[k]), o)
        if best_key is None or key < best_key:
            best_key = key
            r, c = int(rows[k]), int(cols[k])
            best = {"best_spatial": o,
                    "best_factors": {d: int(a["f"][d][r]) for d in DIMS},
                    "best_order": list(ORDERS[c]),
                    "best_dram_bytes": best_bytes,
                    "best_glb_bytes": int(a["glb"][r])}
    best["valid_candidates"] = valid_count
    best["optimal_candidates"] = optimal
    return best


# ------------------------------------------------------------------------------------------
# the generator
# ------------------------------------------------------------------------------------------

def _pick(rng: Any, seq: Sequence[Any]) -> Any:
    return seq[int(rng.integers(0, len(seq)))]


def _limits(dims: dict[str, int], options: Sequence[dict[str, Any]]) -> dict[str, int]:
    """The largest GLB factor of each dimension that leaves no GLB iteration without a real
    index under any spatial option."""
    return {d: min(_ceil_div(dims[d], _spatial(o)[d]) for o in options) for d in DIMS}


def _count(space: dict[str, Any]) -> int:
    n = len(space["spatial_options"]) * len(ORDERS)
    for d in DIMS:
        n *= len(space["factors"][d])
    return n


def _small_options(rng: Any, dims: dict[str, int], fanout: Sequence[int]) -> list[dict[str, Any]]:
    options: list[dict[str, Any]] = []
    seen = set()
    want = int(rng.integers(1, 4))
    for _ in range(40):
        if len(options) >= want:
            break
        opt: dict[str, Any] = {"spatial_x": [], "spatial_y": []}
        free = [d for d in DIMS if dims[d] > 1]
        order = list(rng.permutation(free)) if free else []
        for axis, key in enumerate(("spatial_x", "spatial_y")):
            if fanout[axis] > 1 and order and rng.random() < 0.8:
                d = str(order.pop())
                f = int(rng.integers(2, min(fanout[axis], dims[d]) + 1))
                opt[key] = [[d, f]]
        key = repr(opt)
        if key not in seen:
            seen.add(key)
            options.append(opt)
    return options


def _small_case(rng: Any) -> dict[str, Any]:
    while True:
        dims = {d: int(rng.integers(1, 8)) for d in DIMS}
        if 8 <= dims["M"] * dims["N"] * dims["K"] <= 150:
            break
    bits = _pick(rng, [{"I": 8, "W": 8, "O": 8, "psum": 24}, {"I": 8, "W": 8, "O": 8, "psum": 32},
                       {"I": 16, "W": 16, "O": 16, "psum": 32}, {"I": 4, "W": 4, "O": 8, "psum": 20},
                       {"I": 6, "W": 3, "O": 8, "psum": 12}, {"I": 12, "W": 4, "O": 16, "psum": 28}])
    wl = {"name": "small.gemm", "shape": "gemm", "dims": dims, "bits": dict(bits)}
    fanout = [int(rng.integers(1, 4)), int(rng.integers(1, 4))]
    options = _small_options(rng, dims, fanout)
    lim = _limits(dims, options)
    factors = {}
    for d in DIMS:
        pool = list(range(1, lim[d] + 1))
        k = min(len(pool), int(rng.integers(1, 4)))
        factors[d] = sorted(int(x) for x in rng.choice(pool, size=k, replace=False))
    space = {"spatial_options": options, "factors": factors}
    buf = int(_pick(rng, (1, 1, 2, 2, 3)))
    arch = {"name": "small", "levels": [
        {"name": "GLB", "capacity_bytes": 0, "fanout": fanout},
        {"name": "DRAM", "capacity_bytes": None, "fanout": [1, 1]}]}
    if buf > 1:
        arch["levels"][0]["multiple_buffering"] = buf
    # capacities from the candidates' own needs: some fit, some do not, at least one fits
    rooms = {t: [] for t in TENSORS}
    for o in options:
        s = _spatial(o)
        for fm, fn, fk in itertools.product(*(factors[d] for d in DIMS)):
            ext = {"M": min(dims["M"], fm * s["M"]), "N": min(dims["N"], fn * s["N"]), "K": min(dims["K"], fk * s["K"])}
            for t in TENSORS:
                a, b = RELEVANT[t]
                tb = bits["psum"] if t == "O" else bits[t]
                rooms[t].append(buf * _ceil_div(ext[a] * ext[b] * tb, 8))
    if rng.random() < 0.35:
        cap = {}
        keep = int(rng.integers(0, len(rooms["I"])))  # this candidate fits every partition
        for t in TENSORS:
            vals = sorted(set(rooms[t]))
            pick = int(vals[int(rng.integers(0, len(vals)))]) if rng.random() < 0.6 else int(vals[-1])
            cap[t] = max(pick, int(rooms[t][keep]))
        arch["levels"][0]["capacity_bytes"] = cap
    else:
        totals = sorted(set(a + b + c for a, b, c in zip(rooms["I"], rooms["W"], rooms["O"])))
        q = float(rng.choice([0.2, 0.4, 0.6, 0.8, 1.0]))
        arch["levels"][0]["capacity_bytes"] = int(totals[min(len(totals) - 1, int(q * (len(totals) - 1)))])
    return {"workload": wl, "architecture": arch, "space": space}


# two-level reductions of the named designs: the global buffer and the MAC array under it
_REAL_ARCHS: dict[str, dict[str, Any]] = {
    "eyeriss-like": {"capacity_bytes": 131072, "fanout": [14, 12],
                     "options": [{"spatial_x": [["N", 14]], "spatial_y": [["K", 12]]},
                                 {"spatial_x": [["M", 14]], "spatial_y": [["N", 12]]},
                                 {"spatial_x": [["K", 14]], "spatial_y": [["M", 12]]}]},
    "simba-like": {"capacity_bytes": 65536, "fanout": [16, 16],
                   "options": [{"spatial_x": [["N", 16]], "spatial_y": [["K", 16]]},
                               {"spatial_x": [["K", 16]], "spatial_y": [["N", 16]]},
                               {"spatial_x": [["M", 16]], "spatial_y": [["N", 16]]}]},
    "nvdla-like": {"capacity_bytes": 524288, "fanout": [64, 16],
                   "options": [{"spatial_x": [["K", 64]], "spatial_y": [["N", 16]]},
                               {"spatial_x": [["N", 64]], "spatial_y": [["K", 16]]},
                               {"spatial_x": [["K", 64]], "spatial_y": [["M", 16]]}]},
    "tpu-like": {"capacity_bytes": {"I": 25165824, "W": 262144, "O": 4194304}, "fanout": [128, 128],
                 "options": [{"spatial_x": [["N", 128]], "spatial_y": [["K", 128]]},
                             {"spatial_x": [["M", 128]], "spatial_y": [["K", 128]]},
                             {"spatial_x": [["N", 128]], "spatial_y": [["M", 128]]}]},
}


def _real_factors(rng: Any, lim: int, extra_p: float) -> list[int]:
    """Powers of two below the limit, the limit itself, and some other values (ragged tiles)."""
    vals = {1, lim}
    p = 2
    while p < lim:
        vals.add(p)
        p *= 2
    for base in (3, 5, 7, 12, 24, 48, 96, 192, 384, 768):
        x = base
        while x < lim:
            if rng.random() < extra_p:
                vals.add(x)
            x *= 4
    return sorted(vals)


def _real_case(rng: Any) -> dict[str, Any]:
    names = pm_shapes.group("bert-base") + pm_shapes.group("llama-prefill") + pm_shapes.group("llama-decode")
    for _ in range(1000):
        wl = pm_shapes.layer(str(_pick(rng, names)),
                             _pick(rng, [{"I": 8, "W": 8, "O": 8, "psum": 24}, {"I": 8, "W": 8, "O": 8, "psum": 32},
                                         {"I": 16, "W": 16, "O": 16, "psum": 32}]))
        dims = wl["dims"]
        aname = str(_pick(rng, sorted(_REAL_ARCHS)))
        src = _REAL_ARCHS[aname]
        options = [o for o in src["options"] if all(f <= dims[d] for k in ("spatial_x", "spatial_y")
                                                     for d, f in o.get(k, []))]
        if not options:
            continue
        k = int(rng.integers(1, len(options) + 1))
        options = [options[i] for i in sorted(rng.choice(len(options), size=k, replace=False))]
        glb: dict[str, Any] = {"name": "GLB", "capacity_bytes": src["capacity_bytes"], "fanout": list(src["fanout"])}
        buf = 2 if aname == "tpu-like" else int(_pick(rng, (1, 2, 2)))
        if buf > 1:
            glb["multiple_buffering"] = buf
        arch = {"name": aname, "levels": [glb, {"name": "DRAM", "capacity_bytes": None, "fanout": [1, 1]}]}
        lim = _limits(dims, options)
        for extra_p in (0.5, 0.3, 0.15, 0.0, 0.8, 1.0):
            space = {"spatial_options": options, "factors": {d: _real_factors(rng, lim[d], extra_p) for d in DIMS}}
            n = _count(space)
            if 10**4 <= n <= 2 * 10**5:
                return {"workload": wl, "architecture": arch, "space": space}
    raise AssertionError("no real case in range")  # pragma: no cover


def _huge_case(rng: Any) -> dict[str, Any]:
    """A Llama prefill projection (2048 tokens) whose GLB is scaled down 16 to 1024 times, so
    that even the best valid candidate moves 2^31 bytes or more (the first draw that does)."""
    names = [n for n in pm_shapes.group("llama-prefill") if pm_shapes.layer(n)["dims"]["M"] >= 2048]
    case = None
    for _ in range(200):
        case = _real_case(rng)
        if case["workload"]["name"] not in names:
            continue
        scale = int(_pick(rng, (16, 64, 256, 1024)))
        glb = case["architecture"]["levels"][0]
        cap = glb["capacity_bytes"]
        glb["capacity_bytes"] = ({t: max(1, v // scale) for t, v in cap.items()} if isinstance(cap, dict)
                                 else max(1, cap // scale))
        try:
            best = ref_best_tiling_search(case["workload"], case["architecture"], case["space"])
        except ValueError:  # no valid candidate left
            continue
        if best["best_dram_bytes"] >= 2 ** 31:
            return case
    raise AssertionError("no huge case")  # pragma: no cover


def gen_best_tiling_search(rng: Any, real: bool = False, huge_p: float = 0.0) -> dict[str, Any]:
    """``huge_p``: with ``real``, the probability of a real case whose best candidate moves 2^31
    bytes or more (0 draws exactly as before)."""
    if real and huge_p > 0 and rng.random() < huge_p:
        return _huge_case(rng)
    return _real_case(rng) if real else _small_case(rng)


REFERENCES: dict[str, Callable[..., dict[str, Any]]] = {
    "pm_search.best_tiling_search": ref_best_tiling_search,
}

GENERATORS: dict[str, Callable[..., dict[str, Any]]] = {
    "pm_search.best_tiling_search": gen_best_tiling_search,
}
