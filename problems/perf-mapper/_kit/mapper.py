# A mapper for one GEMM on a three-level accelerator (RF per PE, a shared GLB fanning out to the
# PEs, DRAM), in the format of the pack's FORMAT.md. The counts are closed forms of the format's
# semantics for exact factorisations with one loop per dimension per level; the search tries every
# spatial unrolling, every factorisation that fits and every pair of loop orders (GLB, DRAM),
# vectorised over the factor choices with numpy. Mistake switches and search strategies are read
# from FLAGS.
import itertools
import math
import random

import numpy as np

FLAGS: dict = {}

DIMS = ("M", "N", "K")
TENSORS = ("I", "W", "O")
RELEVANT = {"I": ("M", "K"), "W": ("K", "N"), "O": ("M", "N")}
IRRELEVANT = {"I": "N", "W": "M", "O": "K"}
ORDERS = tuple(itertools.permutations(DIMS))  # innermost first


def _divisors(n):
    return [d for d in range(1, n + 1) if n % d == 0]


def _nbytes(elements, bits):
    return -(-elements * bits // 8)


def _spatial_choices(dims, fx, fy):
    out = {}
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
                    out.setdefault(tuple(s[d] for d in DIMS), (a, x, b, y))
    return [(c, dict(zip(DIMS, k))) for k, c in sorted(out.items())]


def _reuse(order, f, tensor):
    u = IRRELEVANT[tensor]
    a, b = RELEVANT[tensor]
    clear = np.ones_like(f[u], dtype=bool)
    if not FLAGS.get("ignore_order"):
        for d in order[: order.index(u)]:
            clear &= f[d] == 1
    return np.where(clear, f[u], 1), (f[a] == 1) & (f[b] == 1)


def energy_cycles(work, arch, s, r, g, D, og, od):
    """Energy (pJ, the accesses a mapping can change) and cycles of factor arrays r, g, D."""
    dims, bits, lv = work["dims"], work["bits"], arch["levels"]
    size_o = dims["M"] * dims["N"]
    macs = dims["M"] * dims["N"] * dims["K"]
    pes = s["M"] * s["N"] * s["K"]
    tot_g = g["M"] * g["N"] * g["K"]
    tot_d = D["M"] * D["N"] * D["K"]
    rp = [float(x["read_pj_per_byte"]) for x in lv]
    wp = [float(x["write_pj_per_byte"]) for x in lv]
    e = np.zeros(np.shape(tot_g), dtype=np.float64)
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
            fills = tile_r * pes * mult_rf
            reads = fills if FLAGS.get("no_multicast") else fills // s[u]
            glb_fills = tile_g * mult_glb
            e = e + wp[0] * _nbytes(fills, tb) + rp[1] * _nbytes(reads, tb) + wp[1] * _nbytes(glb_fills, tb)
            e = e + rp[2] * _nbytes(glb_fills, tb)
        else:
            pb, ob = bits["psum"], bits["O"]
            upd = tile_r * s["M"] * s["N"] * mult_rf
            back = upd - size_o
            dupd = tile_g * mult_glb
            dback = dupd - size_o
            e = e + rp[0] * _nbytes(macs - size_o * s["K"], pb) + wp[0] * _nbytes(back, pb)
            e = e + wp[1] * (_nbytes(size_o, ob) + _nbytes(upd - size_o, pb)) + rp[1] * _nbytes(back, pb)
            e = e + wp[1] * _nbytes(dback, pb)
            e = e + wp[2] * (_nbytes(size_o, ob) + _nbytes(dupd - size_o, pb)) + rp[2] * _nbytes(dback, pb)
    return e, r["M"] * r["N"] * r["K"] * tot_g * tot_d


def fits(work, arch, s, r, g):
    bits = work["bits"]
    out = None
    for lvl, scale in ((arch["levels"][0], None), (arch["levels"][1], s)):
        mb = 1 if FLAGS.get("no_buffering") else int(lvl.get("multiple_buffering", 1))
        need = {}
        for t in TENSORS:
            a, b = RELEVANT[t]
            ext = r[a] * r[b] if scale is None else r[a] * r[b] * s[a] * s[b] * g[a] * g[b]
            psum = bits["O"] if FLAGS.get("psum_as_output") else bits["psum"]
            need[t] = mb * _nbytes(ext, psum if t == "O" else bits[t])
        cap = lvl["capacity_bytes"]
        if isinstance(cap, dict):
            ok = (need["I"] <= cap["I"]) & (need["W"] <= cap["W"]) & (need["O"] <= cap["O"])
        else:
            ok = need["I"] + need["W"] + need["O"] <= cap
        out = ok if out is None else out & ok
    return out


def as_mapping(choice, r, g, D, og, od):
    a, x, b, y = choice
    glb = {"temporal": [[d, int(g[d])] for d in og if g[d] > 1]}
    if x > 1:
        glb["spatial_x"] = [[a, int(x)]]
    if y > 1:
        glb["spatial_y"] = [[b, int(y)]]
    return {"levels": [{"temporal": [[d, int(r[d])] for d in DIMS if r[d] > 1]}, glb,
                       {"temporal": [[d, int(D[d])] for d in od if D[d] > 1]}]}


def _value(e, c, objective):
    return e if objective == "energy" else e * c


def _triples(n):
    return np.asarray([(r, g, n // (r * g)) for r in _divisors(n) for g in _divisors(n // r)],
                      dtype=np.int64).reshape(-1, 3)


def _space(work, arch, s):
    dims = work["dims"]
    trip = [_triples(dims[d] // s[d]) for d in DIMS]
    idx = [i.reshape(-1) for i in np.meshgrid(*[np.arange(len(t)) for t in trip], indexing="ij")]
    r = {d: trip[k][idx[k], 0] for k, d in enumerate(DIMS)}
    g = {d: trip[k][idx[k], 1] for k, d in enumerate(DIMS)}
    D = {d: trip[k][idx[k], 2] for k, d in enumerate(DIMS)}
    ok = fits(work, arch, s, r, g)
    return ({d: v[ok] for d, v in r.items()}, {d: v[ok] for d, v in g.items()}, {d: v[ok] for d, v in D.items()})


def chunks(work, arch):
    """Every spatial unrolling and pair of loop orders (GLB, DRAM), with the factor arrays that fit."""
    fx, fy = arch["levels"][1]["fanout"]
    orders = ORDERS if not FLAGS.get("ignore_order") else ORDERS[:1]
    for choice, s in _spatial_choices(work["dims"], fx, fy):
        r, g, D = _space(work, arch, s)
        if len(r["M"]) == 0:
            continue
        for og in orders:
            for od in orders:
                yield choice, s, r, g, D, og, od


def exhaustive(work, arch, objective):
    best, best_map = math.inf, None
    for choice, s, r, g, D, og, od in chunks(work, arch):
        e, c = energy_cycles(work, arch, s, r, g, D, og, od)
        v = _value(e, c, FLAGS.get("objective", objective))
        i = int(np.argmin(v))
        if v[i] < best:
            best = float(v[i])
            best_map = as_mapping(choice, {d: r[d][i] for d in DIMS}, {d: g[d][i] for d in DIMS},
                                  {d: D[d][i] for d in DIMS}, og, od)
    return best_map


def _one(work, arch, objective, choice, s, rgd, og, od):
    """Value of one candidate (math.inf when it does not fit); ``objective`` is a name or a
    function of (s, r, g, D, og, od) giving the value of factor arrays."""
    arr = {k: {d: np.asarray([rgd[d][k]], dtype=np.int64) for d in DIMS} for k in range(3)}
    if not fits(work, arch, s, arr[0], arr[1])[0]:
        return math.inf
    if callable(objective):
        return float(objective(s, arr[0], arr[1], arr[2], og, od)[0])
    e, c = energy_cycles(work, arch, s, arr[0], arr[1], arr[2], og, od)
    return float(_value(e, c, objective)[0])


def random_search(work, arch, objective, samples=60, seed=0):
    """Random search: ``samples`` random candidates (spatial unrolling, factors, orders), the best kept."""
    rng = random.Random(seed)
    dims = work["dims"]
    fx, fy = arch["levels"][1]["fanout"]
    choices = _spatial_choices(dims, fx, fy)
    best, best_map = math.inf, None
    for _ in range(samples):
        choice, s = rng.choice(choices)
        rgd = {}
        for d in DIMS:
            n = dims[d] // s[d]
            r = rng.choice(_divisors(n))
            g = rng.choice(_divisors(n // r))
            rgd[d] = (r, g, n // (r * g))
        og, od = rng.choice(ORDERS), rng.choice(ORDERS)
        v = _one(work, arch, objective, choice, s, rgd, og, od)
        if v < best:
            best, best_map = v, as_mapping(choice, {d: rgd[d][0] for d in DIMS}, {d: rgd[d][1] for d in DIMS},
                                           {d: rgd[d][2] for d in DIMS}, og, od)
    if best_map is None:  # nothing drawn fits: every loop at DRAM always does
        best_map = {"levels": [{"temporal": []}, {"temporal": []},
                               {"temporal": [[d, dims[d]] for d in DIMS if dims[d] > 1]}]}
    return best_map


def _primes(n):
    out, p = [], 2
    while n > 1:
        while n % p == 0:
            out.append(p)
            n //= p
        p += 1
    return out


def greedy_search(work, arch, objective):
    """Greedy: start with every loop at DRAM and no unrolling; move one prime factor of one
    dimension from DRAM to the RF, the GLB or a spatial axis while that improves the most."""
    dims = work["dims"]
    fx, fy = arch["levels"][1]["fanout"]
    state = {"rgd": {d: [1, 1, dims[d]] for d in DIMS}, "x": (None, 1), "y": (None, 1)}

    def build(st):
        s = dict.fromkeys(DIMS, 1)
        for d, f in (st["x"], st["y"]):
            if d:
                s[d] *= f
        xd, xf = st["x"]
        yd, yf = st["y"]
        choice = (xd or "M", xf, yd or "M", yf)
        best = (math.inf, None)
        for og in ORDERS:
            for od in ORDERS:
                v = _one(work, arch, objective, choice, s, {d: tuple(st["rgd"][d]) for d in DIMS}, og, od)
                if v < best[0]:
                    best = (v, as_mapping(choice, {d: st["rgd"][d][0] for d in DIMS},
                                          {d: st["rgd"][d][1] for d in DIMS}, {d: st["rgd"][d][2] for d in DIMS}, og, od))
        return best

    cur = build(state)
    while True:
        moves = []
        for d in DIMS:
            for p in sorted(set(_primes(state["rgd"][d][2]))):
                for where in ("r", "g", "x", "y"):
                    st = {"rgd": {k: list(v) for k, v in state["rgd"].items()}, "x": state["x"], "y": state["y"]}
                    st["rgd"][d][2] //= p
                    if where == "r":
                        st["rgd"][d][0] *= p
                    elif where == "g":
                        st["rgd"][d][1] *= p
                    else:
                        ad, af = st[where]
                        if ad not in (None, d) or af * p > (fx if where == "x" else fy):
                            continue
                        st[where] = (d, af * p)
                    moves.append(st)
        scored = [(build(st), st) for st in moves]
        scored = [x for x in scored if x[0][1] is not None]
        if not scored:
            break
        (val, mp), st = min(scored, key=lambda x: x[0][0])
        if val >= cur[0]:
            break
        cur, state = (val, mp), st
    return cur[1]


def search(work, arch, objective):
    how = FLAGS.get("search", "exhaustive")
    if how == "random":
        return random_search(work, arch, objective)
    if how == "greedy":
        return greedy_search(work, arch, objective)
    return exhaustive(work, arch, objective)
