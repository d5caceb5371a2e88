# An EXACT optimiser for a GEMM (each tensor with exactly one irrelevant dimension) on any hierarchy
# whose last level holds every tensor, under the closed-form cost of llm_mapper.py (this file is
# appended to it: Problem, FLAGS and _nbytes are its globals). It returns the least prob.cost(f, order)
# over every point of the pack's space (every split of every dimension over the slots, at most one
# dimension per array axis within its fanout, every loop order of every level).
#
# Why it is exact. With exact factorisation a tensor t whose irrelevant dimension is u is filled at
# a child level c  |t| * size_u / (S_u(<=c) * b_u(s))  times, where S_u(<=c) is u's spatial product at
# levels <= c, b_u(l) the product of u's temporal factors at levels <= l, and s >= c the level where
# the run of u-loops above c (the innermost loops above c irrelevant to t) ends; its parent p reads
# that divided by the multicast S_u(c+1..p); the outputs' update/read-back counts are of the same
# form in b_K. So for a fixed spatial assignment and a fixed "run-end" structure the energy is a sum
# of functions of ONE tile b_u(l) each, plus a constant; the dimensions are coupled only by the
# capacities of each level (tiles a_d(l) = S_d(<=l) b_d(l)) and by the chains b_d(0) | b_d(1) | ...
#
# Loop orders. Only the innermost live loop of each level above 0 matters, and whether the level
# has other live loops. Every point maps exactly onto one "state" per level l >= 1: an owner u_l
# (the innermost live dim: u's runs take its factor), exclusive (no other live loop: u's runs go on
# to level l+1) or not (they stop); a level with no live loop is never needed (a state with the owner
# of the next non-empty level, exclusive, is as good), nor an exclusive level under a different
# owner (the runs stop there anyway). Conversely the model's value of any (state, factors) is >= the
# true cost of the point with those factors and order [owner] + the rest (the model never counts
# more reuse than the point has), so the least model value is the least cost.
#
# Search. For every distinct spatial assignment (per-level spatial products per dimension) and
# every state vector: a lower bound (the chains between levels relaxed: per level, the least
# sum alpha_u / b_u over the maximal tile triples dividing D that fit that level and every level above
# it; a term whose tile an exclusive level pins is charged to the level below; _nbytes bounded below
# by its linear part) orders them; then, best bound first, an exact dynamic programme over the levels
# on the divisor lattice of the three dimensions restricted to the divisors of D = size / spatial
# (a suffix-min per prime axis carries "min over the multiples"; an exclusive level pins the other
# dimensions' tiles), batched over the states of one spatial assignment, until the bound reaches the
# best value found. EDP = energy x steps, and steps depend on the spatial assignment only. About
# 60,000 (spatial, state) pairs on eyeriss-cluster-like; a few thousand programmes run.
import itertools

import numpy as np


def _pfactor(n):
    out, p = [], 2
    while n > 1:
        e = 0
        while n % p == 0:
            n //= p
            e += 1
        if e:
            out.append((p, e))
        p += 1
    return out


def _nb_arr(x, bits):
    """_nbytes on an integer array."""
    return -(-(x * bits) // 8)


def exact_search(prob):
    """(value, f, order): the least prob.cost(f, order)[0] over EVERY point of the pack's space."""
    for flag in ("ignore_order", "compulsory_dram"):
        if FLAGS.get(flag):
            raise NotImplementedError(f"exact_search does not model the {flag} mistake")
    if prob.limit is not None or prob.objective not in ("energy", "edp"):
        raise NotImplementedError("exact_search: energy or edp without a cap only")
    dims = list(prob.dims)
    irr = {}
    for t in TENSORS:
        rest = [d for d in dims if d not in prob.rel[t]]
        if len(rest) != 1:
            raise NotImplementedError("exact_search: each tensor needs exactly one irrelevant dimension")
        irr[t] = rest[0]
    L = prob.depth
    top = L - 1
    for t in TENSORS:
        if prob.holders[t][-1] != top:
            raise NotImplementedError("exact_search: the last level must hold every tensor")
    size, bits = prob.size, prob.bits
    pb = bits["psum"]
    obits = bits["O"] if FLAGS.get("psum_as_output") else bits["psum"]
    nomc = bool(FLAGS.get("no_multicast"))
    macs = prob.macs
    tsize = {t: math.prod(size[d] for d in prob.rel[t]) for t in TENSORS}
    rp = [float(a["read_pj_per_byte"]) for a in prob.levels]
    wp = [float(a["write_pj_per_byte"]) for a in prob.levels]

    # ---- the divisor lattice of each dimension (one axis per prime) and the joint grid ----
    vals, shapes, axes, bshape = {}, {}, {}, {}
    nax = 0
    for d in dims:
        pf = _pfactor(size[d]) or [(1, 0)]
        shp = tuple(e + 1 for _, e in pf)
        v = np.ones(shp, dtype=np.int64)
        for i, (p, e) in enumerate(pf):
            pw = np.array([p ** k for k in range(e + 1)], dtype=np.int64)
            v = v * pw.reshape([-1 if j == i else 1 for j in range(len(pf))])
        vals[d] = v.reshape(-1)
        shapes[d] = shp
        axes[d] = list(range(nax, nax + len(shp)))
        nax += len(shp)
    joint = tuple(s for d in dims for s in shapes[d])
    for d in dims:
        bs = [1] * nax
        for a, s in zip(axes[d], shapes[d]):
            bs[a] = s
        bshape[d] = tuple(bs)
    vb = {d: vals[d].reshape(bshape[d]) for d in dims}
    index_of = {d: {int(x): i for i, x in enumerate(vals[d])} for d in dims}

    # ---- spatial assignments, deduplicated by their per-level products ----
    sp_slots = [i for i, (_, k) in enumerate(prob.slots) if k != "t"]
    opts = [[None] + [(d, k) for d in dims for k in range(2, prob.cap[i] + 1) if size[d] % k == 0]
            for i in sp_slots]
    sigmas, seen = [], set()
    for combo in itertools.product(*opts):
        S = {d: [1] * L for d in dims}
        for i, o in zip(sp_slots, combo):
            if o is not None:
                S[o[0]][prob.slots[i][0]] *= o[1]
        if any(size[d] % math.prod(S[d]) for d in dims):
            continue
        key = tuple(tuple(S[d]) for d in dims)
        if key in seen:
            continue
        seen.add(key)
        sigmas.append((S, combo))

    # ---- the (child, parent) pairs of every tensor and the states ----
    pairs = []
    for t in TENSORS:
        h = prob.holders[t]
        for c, p in zip(h, h[1:]):
            pairs.append((t, c, p, irr[t]))
    npair = len(pairs)
    omegas, okeys = [], set()
    for owners in itertools.product(dims, repeat=top):  # owners[l - 1]: level l's innermost live dim
        for xs in itertools.product((0, 1), repeat=max(top - 1, 0)):
            if any(xs[l - 1] and owners[l - 1] != owners[l] for l in range(1, top)):
                continue
            ends = []
            for (_, c, _, u) in pairs:
                s, l = c, c + 1
                while l <= top and owners[l - 1] == u:
                    s = l
                    if l < top and xs[l - 1]:
                        l += 1
                        continue
                    break
                ends.append(s)
            eq = tuple(frozenset(e for e in dims if e != owners[l - 1]) if xs[l - 1] else frozenset()
                       for l in range(1, top))
            key = (tuple(ends), eq)
            if key in okeys:
                continue
            okeys.add(key)
            omegas.append((owners, xs, ends, eq))
    nom = len(omegas)
    ends_arr = np.array([o[2] for o in omegas], dtype=np.int64).reshape(nom, npair)
    pair_dim = [dims.index(u) for (_, _, _, u) in pairs]
    # the bound's level of a pair: where its run ends, lowered while an exclusive level pins the tile
    eff = ends_arr.copy()
    for w, (_, _, _, eq) in enumerate(omegas):
        for k in range(npair):
            s = eff[w, k]
            while 1 <= s < top and pairs[k][3] in eq[s - 1]:
                s -= 1
            eff[w, k] = s
    sel = {}  # level l < top: (nom * ndims, npair) 0/1, the pairs bounded at l by their dimension
    for l in range(top):
        m = np.zeros((nom, len(dims), npair))
        for k in range(npair):
            m[:, pair_dim[k], k] = (eff[:, k] == l)
        sel[l] = m.reshape(nom * len(dims), npair)
    at_top = (ends_arr == top).astype(float)

    # ---- capacities: the fitting tile triples of a level (cached by the level's spatial products) ----
    mask_cache, inv_cache = {}, {}
    axp = [None] * nax  # each axis' prime powers
    for d in dims:
        for a, (p, e) in zip(axes[d], _pfactor(size[d]) or [(1, 0)]):
            axp[a] = np.array([p ** k for k in range(e + 1)], dtype=np.int64)

    def cap_mask(l, sc):
        key = (l, sc)
        if key in mask_cache:
            return mask_cache[key]
        arch = prob.levels[l]
        mb = 1 if FLAGS.get("no_buffering") else int(arch.get("multiple_buffering", 1))
        cap = arch["capacity_bytes"]
        need = {}
        for t in prob.holds[l]:
            prod = 1
            for d, s in zip(dims, sc):
                if d in prob.rel[t]:
                    prod = prod * (s * vb[d])
            need[t] = mb * _nb_arr(prod, obits if t == "O" else bits[t])
        ok = np.ones(joint, dtype=bool)
        if need:
            if isinstance(cap, dict):
                for t in need:
                    ok = ok & (need[t] <= cap[t])
            else:
                tot = 0
                for t in need:
                    tot = tot + need[t]
                ok = ok & (tot <= cap)
        mask_cache[key] = ok
        return ok

    def level_inv(l, scs, box):
        """1/b of the maximal tile triples (dividing D) that fit level l and every level above it
        but the last (a tile fits wherever a tile of a level below it fits), or None."""
        key = (l, tuple(scs[l:]), box)
        if key in inv_cache:
            return inv_cache[key]
        ok = cap_mask(l, scs[l])
        for l2 in range(l + 1, top):
            ok = ok & cap_mask(l2, scs[l2])
        ok = ok[tuple(slice(0, n) for n in box)]
        mx = ok.copy()
        for a in range(nax):
            if box[a] > 1:
                src = (slice(None),) * a + (slice(1, None),)
                dst = (slice(None),) * a + (slice(None, -1),)
                mx[dst] &= ~ok[src]
        idx = np.nonzero(mx)
        if len(idx[0]) == 0:
            inv_cache[key] = None
            return None
        inv = np.empty((len(dims), len(idx[0])))
        for j, d in enumerate(dims):
            b = 1
            for a in axes[d]:
                b = b * axp[a][idx[a]]
            inv[j] = 1.0 / b
        inv_cache[key] = inv
        return inv

    # ---- per spatial assignment: the pairs' energy tables, the constant, the bound of every state ----
    info = []
    bounds = np.full((len(sigmas), nom), np.inf)
    for si, (S, combo) in enumerate(sigmas):
        scum = {d: list(itertools.accumulate(S[d], lambda x, y: x * y)) for d in dims}
        D = {d: size[d] // scum[d][top] for d in dims}
        steps = math.prod(D.values())
        mult = steps if prob.objective == "edp" else 1
        box = []  # the divisors of D: a corner of the grid
        for d in dims:
            for a in axes[d]:
                p, e, x = int(axp[a][1]) if len(axp[a]) > 1 else 1, 0, D[d]
                while p > 1 and x % p == 0:
                    x //= p
                    e += 1
                box.append(e + 1)
        box = tuple(box)
        c0 = 0.0
        for t in ("I", "W"):
            h0 = prob.holders[t][0]
            if h0 != 0:
                mc = 1 if nomc else scum[irr[t]][h0]
                c0 += rp[h0] * _nbytes(macs // mc, bits[t])
        h0 = prob.holders["O"][0]
        k_ = irr["O"]
        upd0 = macs // scum[k_][h0]
        c0 += rp[h0] * _nbytes(upd0 - tsize["O"] * (scum[k_][top] // scum[k_][h0]), pb)
        if h0 != 0:
            c0 += wp[h0] * _nbytes(upd0, pb)
        tabs, kap, bet, tD = [], np.zeros(npair), np.zeros(npair), np.zeros(npair)
        for k, (t, c, p, u) in enumerate(pairs):
            b = vals[u]
            if t != "O":
                n_c = tsize[t] * size[u] // scum[u][c]
                m = 1 if nomc else scum[u][p] // scum[u][c]
                fills = n_c // b
                tab = wp[c] * _nb_arr(fills, bits[t]) + rp[p] * _nb_arr(fills // m, bits[t])
                kap[k] = bits[t] / 8 * (wp[c] * n_c + rp[p] * n_c / m)
            else:
                u_p = tsize["O"] * size[u] // scum[u][p]
                x_p = tsize["O"] * (scum[u][top] // scum[u][p])
                fin = tsize["O"] if scum[u][top] == scum[u][p] else 0
                upd = u_p // b
                reads = upd - x_p
                tab = ((rp[p] + wp[c]) * _nb_arr(reads, pb)
                       + wp[p] * (_nbytes(fin, bits["O"]) + _nb_arr(upd - fin, pb)))
                kap[k] = pb / 8 * u_p * (rp[p] + wp[c] + wp[p])
                bet[k] = -pb / 8 * ((rp[p] + wp[c]) * x_p + wp[p] * fin) + wp[p] * _nbytes(fin, bits["O"])
            tD[k] = tab[index_of[u][D[u]]]
            tabs.append(tab.reshape(shapes[u])[tuple(slice(0, box[a]) for a in axes[u])].reshape(-1))
        scs = [tuple(scum[d][l] for d in dims) for l in range(top)]
        info.append((scum, D, mult, c0, tabs, tD, scs, box))
        lb = c0 + at_top @ tD + (1.0 - at_top) @ bet
        for l in range(top):
            inv = level_inv(l, scs, box)
            if inv is None:
                lb = None
                break
            alpha = (sel[l] @ kap).reshape(nom, len(dims))
            lb = lb + (alpha @ inv).min(axis=1)
        if lb is not None:
            bounds[si] = lb * mult

    # ---- best bound first: the exact programme over the levels, batched by spatial assignment ----
    pairs_of = {d: [k for k in range(npair) if pairs[k][3] == d] for d in dims}
    eq_groups = {}
    for w, o in enumerate(omegas):
        eq_groups.setdefault(o[3], []).append(w)
    eq_of = [o[3] for o in omegas]

    def run_dp(si, ws, save=False):
        """The least energy of the states ws (one pinning pattern) under spatial assignment si."""
        scum, D, mult, c0, tabs, tD, scs, box = info[si]
        bsl = tuple(slice(0, n) for n in box)
        eq = eq_of[ws[0]]
        ew = ends_arr[ws]
        const = c0 + (ew == top) @ tD
        obj = []
        for l in range(top):
            o = 0.0
            for d in dims:
                ks = pairs_of[d]
                if not ks:
                    continue
                fl = (ew[:, ks] == l).astype(float) @ np.stack([tabs[k] for k in ks])
                o = o + fl.reshape((len(ws),) + tuple(box[a] if a in axes[d] else 1 for a in range(nax)))
            obj.append(o)
        saved = [None] * top
        v = np.where(cap_mask(top - 1, scs[top - 1])[bsl], obj[top - 1], np.inf)
        v = np.broadcast_to(v, (len(ws),) + box)
        saved[top - 1] = v
        for l in range(top - 1, 0, -1):
            u_ = v.copy()
            for d in dims:
                if d in eq[l - 1]:
                    continue
                for a in axes[d]:
                    for i in range(box[a] - 2, -1, -1):
                        lo = (slice(None),) * (a + 1) + (i,)
                        hi = (slice(None),) * (a + 1) + (i + 1,)
                        np.minimum(u_[lo], u_[hi], out=u_[lo])
            v = np.where(cap_mask(l - 1, scs[l - 1])[bsl], obj[l - 1] + u_, np.inf)
            saved[l - 1] = v
        e = v.reshape(len(ws), -1).min(axis=1) + const
        return (e, saved) if save else e

    flat = bounds.reshape(-1)
    order_idx = np.argsort(flat, kind="stable")
    done = np.zeros(flat.shape, dtype=bool)
    best = (math.inf, None)
    for q in order_idx:
        if not flat[q] < math.inf or flat[q] * (1 - 1e-9) >= best[0]:
            break
        if done[q]:
            continue
        si, wi = divmod(int(q), nom)
        # every state of this spatial assignment and pinning pattern still under the best value
        ws = [w for w in eq_groups[eq_of[wi]]
              if not done[si * nom + w] and bounds[si, w] * (1 - 1e-9) < best[0]]
        ws.sort(key=lambda w: (bounds[si, w], w))
        for w in ws:
            done[si * nom + w] = True
        e = run_dp(si, ws) * info[si][2]
        j = int(np.argmin(e))
        if e[j] < best[0]:
            best = (float(e[j]), (si, ws[j]))

    if best[1] is None:
        raise ValueError("no valid mapping: the instance is infeasible")
    si, wi = best[1]
    e, saved = run_dp(si, [wi], save=True)
    eq = eq_of[wi]
    v = saved[0][0]
    idx = list(np.unravel_index(int(np.argmin(v)), v.shape))
    tiles = [list(idx)]
    for l in range(1, top):
        sl = []
        for d in dims:
            for a in axes[d]:
                sl.append(slice(idx[a], idx[a] + 1) if d in eq[l - 1] else slice(idx[a], None))
        sub = saved[l][0][tuple(sl)]
        j = np.unravel_index(int(np.argmin(sub)), sub.shape)
        idx = [i0 + jj for i0, jj in zip(idx, j)]
        tiles.append(list(idx))
    S, combo = sigmas[si]
    scum, D = info[si][0], info[si][1]
    owners = omegas[wi][0]
    b = []
    for l in range(top):
        row = {}
        for d in dims:
            sub = tuple(tiles[l][a] for a in axes[d])
            row[d] = int(vals[d].reshape(shapes[d])[sub])
        b.append(row)
    f = {d: [1] * len(prob.slots) for d in dims}
    for i, o in zip(sp_slots, combo):
        if o is not None:
            f[o[0]][i] = o[1]
    for lv, i in enumerate(prob.temporal):
        for d in dims:
            below = b[lv - 1][d] if lv > 0 else 1
            f[d][i] = (b[lv][d] if lv < top else D[d]) // below
    order = [list(dims)] + [[owners[l - 1]] + [d for d in dims if d != owners[l - 1]] for l in range(1, L)]
    value = prob.cost(f, order)[0]
    if not abs(value - best[0]) <= 1e-9 * abs(best[0]):
        raise AssertionError(f"exact_search: model {best[0]} != cost {value}")
    return value, f, order


def exact_mapper(workload, architecture, holds, objective):
    """The mapping of the least objective (the exact search), or a baseline's (FLAGS search:
    random or greedy, the kit's local-search module's strategies)."""
    if FLAGS.get("search") in ("random", "greedy"):
        return search(workload, architecture, holds, objective)
    if FLAGS.get("shared_as_partitions"):  # a mistake: each tensor against the whole shared capacity
        levels = [dict(lv) for lv in architecture["levels"]]
        for lv, kept in zip(levels[:-1], holds):
            if not isinstance(lv["capacity_bytes"], dict):
                lv["capacity_bytes"] = {t: lv["capacity_bytes"] for t in kept}
        architecture = {**architecture, "levels": levels}
    prob = Problem(workload, architecture, holds, objective)
    _, f, order = exact_search(prob)
    return prob.mapping(f, order)
