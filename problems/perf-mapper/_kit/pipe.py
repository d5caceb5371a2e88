

# ---- a layer pipeline: every layer resident at once, on its own columns and its own GLB share ----
# A layer's columns are its spatial_x factor (1 without one); its cycles depend on its spatial
# unrolling alone; its GLB footprint is its largest GLB tiles times the multiple buffering. Per
# layer and per spatial unrolling (realised on the fewest columns) the search keeps the Pareto set
# of (GLB bytes, energy), each factorisation at its best pair of loop orders; then, for every
# interval candidate T, it combines one point per layer with cycles at most T, exactly, within the
# array's columns and the GLB's bytes (partial combinations pruned to the undominated ones).

def glb_bytes(work, arch, s, r, g):
    mb = 1 if FLAGS.get("no_buffering") else int(arch["levels"][1].get("multiple_buffering", 1))
    bits = work["bits"]
    return sum(mb * _nbytes(r[a] * r[b] * s[a] * s[b] * g[a] * g[b], bits["psum"] if t == "O" else bits[t])
               for t, (a, b) in RELEVANT.items())


def narrowest(s, fx, fy):
    """The unrolling of per-dimension factors ``s`` on the fewest columns: (x dim, x, y dim, y)."""
    used = [d for d in DIMS if s[d] > 1] or ["M"]
    if len(used) == 2:
        a, b = sorted(used, key=lambda d: (s[d], d))
        return (a, s[a], b, s[b]) if s[b] <= fy else (b, s[b], a, s[a])
    d = used[0]
    x = next(x for x in _divisors(s[d]) if s[d] // x <= fy)
    return (d, x, d, s[d] // x)


def staircase(gl, en):
    order = np.lexsort((en, gl))
    e = en[order]
    prev = np.concatenate(([np.inf], np.minimum.accumulate(e)[:-1]))
    return order[e < prev]


def layer_points(work, arch):
    """(cols, cycles, glb bytes, energy, mappings) of the layer's points worth keeping."""
    dims = work["dims"]
    macs = dims["M"] * dims["N"] * dims["K"]
    fx, fy = arch["levels"][1]["fanout"]
    pairs = [(og, od) for og in ORDERS for od in ORDERS]
    out = ([], [], [], [], [])
    for _, s in _spatial_choices(dims, fx, fy):
        r, g, D = _space(work, arch, s)
        if not len(r["M"]):
            continue
        ens = np.stack([energy_cycles(work, arch, s, r, g, D, og, od)[0] for og, od in pairs])
        which = ens.argmin(axis=0)
        en = ens[which, np.arange(ens.shape[1])]
        gl = glb_bytes(work, arch, s, r, g)
        choice = narrowest(s, fx, fy)
        for i in staircase(gl, en):
            og, od = pairs[int(which[i])]
            for lst, v in zip(out, (choice[1], macs // (s["M"] * s["N"] * s["K"]), int(gl[i]), float(en[i]),
                                    as_mapping(choice, {d: r[d][i] for d in DIMS}, {d: g[d][i] for d in DIMS},
                                               {d: D[d][i] for d in DIMS}, og, od))):
                lst.append(v)
    c, t, gb, e, maps = out
    return np.asarray(c), np.asarray(t), np.asarray(gb), np.asarray(e), maps


def prune(c, gl, en):
    """Indices of the points no other beats in columns, bytes and energy."""
    keep, bg, be = [], np.zeros(0, dtype=np.int64), np.zeros(0)
    for col in np.unique(c):
        at = np.flatnonzero(c == col)
        at = at[staircase(gl[at], en[at])]
        if len(bg):
            k = np.searchsorted(bg, gl[at], side="right")
            at = at[en[at] < np.where(k > 0, be[np.maximum(k - 1, 0)], np.inf)]
        keep.extend(at.tolist())
        g2, e2 = np.concatenate([bg, gl[at]]), np.concatenate([be, en[at]])
        st = staircase(g2, e2)
        bg, be = g2[st], e2[st]
    return np.asarray(keep, dtype=np.int64)


def pipe_within(pts, arch, interval):
    """The least total energy with every layer's cycles at most ``interval``: (energy, picks) or None."""
    fx, cap = int(arch["levels"][1]["fanout"][0]), int(arch["levels"][1]["capacity_bytes"])
    layers = []
    for c, t, gb, e, _ in pts:
        ok = np.flatnonzero(t <= interval)
        ok = ok[prune(c[ok], gb[ok], e[ok])]
        if not len(ok):
            return None
        layers.append(ok)
    cols, gl, en = np.zeros(1, dtype=np.int64), np.zeros(1, dtype=np.int64), np.zeros(1)
    picks = np.zeros((1, 0), dtype=np.int64)
    for k, ok in enumerate(layers):
        lc, lg, le = (pts[k][j][ok] for j in (0, 2, 3))
        rest_c = sum(int(pts[j][0][layers[j]].min()) for j in range(k + 1, len(pts)))
        rest_g = sum(int(pts[j][2][layers[j]].min()) for j in range(k + 1, len(pts)))
        c = (cols[:, None] + lc[None, :]).ravel()
        g = (gl[:, None] + lg[None, :]).ravel()
        e = (en[:, None] + le[None, :]).ravel()
        room = np.flatnonzero((c <= fx - rest_c) & (g <= cap - rest_g))
        if not len(room):
            return None
        who = np.concatenate([picks[room // len(lc)], ok[room % len(lc)][:, None]], axis=1)
        keep = prune(c[room], g[room], e[room])
        cols, gl, en, picks = c[room][keep], g[room][keep], e[room][keep], who[keep]
    i = int(np.argmin(en))
    return float(en[i]), [int(x) for x in picks[i]]


def _share(works, arch):
    """The baselines' split: columns and GLB bytes in proportion to the layers' MACs, each layer
    on a sub-accelerator of its share."""
    macs = [w["dims"]["M"] * w["dims"]["N"] * w["dims"]["K"] for w in works]
    fx, fy = arch["levels"][1]["fanout"]
    cap = int(arch["levels"][1]["capacity_bytes"])
    subs = []
    for m in macs:
        glb = dict(arch["levels"][1], fanout=[max(1, fx * m // sum(macs)), fy], capacity_bytes=cap * m // sum(macs))
        subs.append(dict(arch, levels=[arch["levels"][0], glb, arch["levels"][2]]))
    return subs


def _per_layer(works, arch, objective):
    how = FLAGS.get("search", "exhaustive")
    if FLAGS.get("whole_array"):  # a mistake: each layer as if it had the array and the GLB alone
        subs = [arch] * len(works)
    else:
        subs = _share(works, arch)
    if how in ("random", "greedy"):
        fn = random_search if how == "random" else greedy_search
        return {"layers": [fn(w, a, objective(w, a)) for w, a in zip(works, subs)]}
    layers = []  # exact per layer within its share
    for w, a in zip(works, subs):
        c, t, gb, e, maps = layer_points(w, a)
        v = np.asarray(objective(w, a)(t, e))
        layers.append(maps[int(np.argmin(v))])
    return {"layers": layers}


def _within_cap(cap):
    """Per layer: its energy within the cap, else far above every valid value (growing with the
    excess, so that a greedy step first gets under the cap); of factor arrays or of points."""
    def objective(work, arch):
        def value(*args):
            c, e = args if len(args) == 2 else energy_cycles(work, arch, *args)[::-1]
            return np.where(c <= cap, e, 1e15 * (1 + (c - cap) / cap))
        return value
    return objective


def pipe_edp(works, arch):
    """One mapping per layer: the least total energy x interval (the slowest layer's cycles)."""
    if FLAGS.get("search") in ("random", "greedy") or FLAGS.get("whole_array") or FLAGS.get("proportional_split"):
        return _per_layer(works, arch, lambda w, a: "edp" if FLAGS.get("search") else (lambda t, e: t * e))
    pts = [layer_points(w, arch) for w in works]
    floor = max(int(p[1].min()) for p in pts)
    least = pipe_within(pts, arch, math.inf)
    best, best_picks = math.inf, None
    for t in sorted({int(c) for p in pts for c in p[1] if c >= floor}):
        if least is not None and t * least[0] >= best:
            break
        got = pipe_within(pts, arch, t)
        if got is None:
            continue
        v = got[0] * max(int(p[1][i]) for p, i in zip(pts, got[1]))
        if v < best:
            best, best_picks = v, got[1]
    return {"layers": [p[4][i] for p, i in zip(pts, best_picks or [0] * len(pts))]}


def pipe_energy(works, arch, cap):
    """One mapping per layer: the least total energy with the interval at most ``cap``."""
    if FLAGS.get("search") in ("random", "greedy") or FLAGS.get("whole_array") or FLAGS.get("proportional_split"):
        return _per_layer(works, arch, _within_cap(cap))
    pts = [layer_points(w, arch) for w in works]
    got = pipe_within(pts, arch, cap)
    picks = got[1] if got is not None else [int(np.argmin(p[1])) for p in pts]
    return {"layers": [p[4][i] for p, i in zip(pts, picks)]}
