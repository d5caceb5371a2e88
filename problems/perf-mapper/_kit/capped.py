

# ---- constrained objectives: a DRAM port of bytes_per_cycle, one quantity under a cap ----
# The latency is max(time steps, ceil(DRAM bytes / bytes_per_cycle)). The DRAM bytes are the
# energy of the same closed form on a copy of the architecture whose energies per byte are 0
# except DRAM's 1. Per layer the search keeps the Pareto frontier of (cycles, energy) over every
# valid mapping; a chain combines the layers' frontiers exactly (partial sums Pareto-pruned).

def _counting(arch):
    lv = [dict(x, read_pj_per_byte=0.0, write_pj_per_byte=0.0) for x in arch["levels"][:-1]]
    return dict(arch, levels=lv + [dict(arch["levels"][-1], read_pj_per_byte=1.0, write_pj_per_byte=1.0)])


def energy_latency(work, arch, s, r, g, D, og, od):
    """Energy (pJ) and latency (cycles) of factor arrays."""
    e, steps = energy_cycles(work, arch, s, r, g, D, og, od)
    dram, _ = energy_cycles(work, _counting(arch), s, r, g, D, og, od)
    port = np.ceil(dram / arch["levels"][-1]["bytes_per_cycle"]).astype(np.int64)
    return e, np.maximum(steps, port)


def pareto(c, e):
    """Indices of the Pareto-optimal points, cycles ascending (only points faster than the
    least-energy one can be on it)."""
    least = np.flatnonzero(e == e.min())
    last = least[np.argmin(c[least])]
    faster = np.flatnonzero(c < c[last])
    if not len(faster):
        return np.asarray([last])
    order = faster[np.lexsort((e[faster], c[faster]))]
    es = e[order]
    prev = np.concatenate(([np.inf], np.minimum.accumulate(es)[:-1]))
    return np.concatenate([order[es < prev], [last]])


def frontier(work, arch):
    """(cycles ascending, energy descending, mappings): the layer's Pareto-optimal mappings."""
    cs, es, maps = [], [], []
    for choice, s, r, g, D, og, od in chunks(work, arch):
        e, c = energy_latency(work, arch, s, r, g, D, og, od)
        for i in pareto(c, e):
            cs.append(int(c[i]))
            es.append(float(e[i]))
            maps.append(as_mapping(choice, {d: r[d][i] for d in DIMS}, {d: g[d][i] for d in DIMS},
                                   {d: D[d][i] for d in DIMS}, og, od))
    cs, es = np.asarray(cs, dtype=np.int64), np.asarray(es)
    keep = pareto(cs, es)
    return cs[keep], es[keep], [maps[i] for i in keep]


def capped_value(work, arch, what, cap):
    """A candidate's value for the baselines: the objective within the cap, else far above every
    valid value and growing with the excess (so a greedy step first gets under the cap)."""
    def value(s, r, g, D, og, od):
        e, c = energy_latency(work, arch, s, r, g, D, og, od)
        obj, capped = (e, c) if what == "energy" else (c, e)
        return np.where(capped <= cap, obj, 1e15 * (1 + (capped - cap) / cap))
    return value


def capped_search(work, arch, what, cap):
    """``what`` (energy or cycles) minimised with the other quantity at most ``cap``."""
    how = FLAGS.get("search", "exhaustive")
    if FLAGS.get("no_cap"):  # a mistake: the unconstrained optimum
        cap = math.inf
    if how == "random":
        return random_search(work, arch, capped_value(work, arch, what, cap))
    if how == "greedy":
        return greedy_search(work, arch, capped_value(work, arch, what, cap))
    c, e, maps = frontier(work, arch)
    if what == "energy":
        ok = np.flatnonzero(c <= cap)
        return maps[int(ok[np.argmin(e[ok])])] if len(ok) else maps[0]
    ok = np.flatnonzero(e <= cap)
    return maps[int(ok[np.argmin(c[ok])])] if len(ok) else maps[-1]


def combine(fronts, cap):
    """One point per layer: the least total energy with total cycles at most ``cap``."""
    cyc, en = np.zeros(1, dtype=np.int64), np.zeros(1)
    picks = np.zeros((1, 0), dtype=np.int64)
    least = [int(f[0].min()) for f in fronts]
    for k, (fc, fe) in enumerate(fronts):
        c = (cyc[:, None] + fc[None, :]).ravel()
        e = (en[:, None] + fe[None, :]).ravel()
        who = np.concatenate([np.repeat(picks, len(fc), axis=0), np.tile(np.arange(len(fc)), len(cyc))[:, None]], axis=1)
        room = c <= cap - sum(least[k + 1:])
        if not room.any():  # infeasible: the fastest of every layer
            return [0] * len(fronts)
        c, e, who = c[room], e[room], who[room]
        keep = pareto(c, e)
        cyc, en, picks = c[keep], e[keep], who[keep]
    return [int(x) for x in picks[int(np.argmin(en))]]


def chain_search(works, arch, cap):
    """One mapping per layer, least total energy within the total latency cap."""
    how = FLAGS.get("search", "exhaustive")
    if how in ("random", "greedy") or FLAGS.get("proportional_split"):
        # the cap split in proportion to each layer's MACs, each layer searched on its own
        macs = [w["dims"]["M"] * w["dims"]["N"] * w["dims"]["K"] for w in works]
        shares = [int(cap * m / sum(macs)) for m in macs]
        return {"layers": [capped_search(w, arch, "energy", sh) for w, sh in zip(works, shares)]}
    if FLAGS.get("no_cap"):
        return {"layers": [capped_search(w, arch, "energy", cap) for w in works]}
    fronts = [frontier(w, arch) for w in works]
    picks = combine([(f[0], f[1]) for f in fronts], cap)
    return {"layers": [f[2][i] for f, i in zip(fronts, picks)]}
