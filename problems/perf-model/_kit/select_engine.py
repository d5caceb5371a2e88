# ---- buffer requirements and mapping selection (shared by the F3 / F16 adapters) ----------
#
# Appended (by adapters_select.py) after the engine or the simulator and PRELUDE in every
# generated file of these problems: it builds on ``analyze`` (both have it) and, where the
# analytical engine is present, on its faster pieces (``parse``, ``max_tile``, the outermost
# level's counts). Mistake switches are read from FLAGS.

import itertools as _sel_itertools


def _sel_fast():
    """The analytical engine is present (not the brute-force simulator)."""
    return "access_counts" in globals() and "max_tile" in globals()


def _sel_tiles(workload, architecture, mapping):
    """``analyze``-shaped levels with at least name, keeps and tile (largest tile per instance)."""
    if not _sel_fast():
        return analyze(workload, architecture, mapping)["levels"]
    nest = parse(workload, architecture, mapping)
    out = []
    for lv, name in enumerate(nest.names):
        keeps = [t for t in ("I", "W", "O") if t in nest.keeps[lv]]
        out.append({"name": name, "keeps": keeps,
                    "tile": {t: max_tile(nest, t, lv) if t in keeps else 0 for t in ("I", "W", "O")}})
    return out


def _sel_requirement(workload, architecture, levels):
    """Per on-chip level: {"name", "bytes": {t: bytes one instance reserves}, "total", "fits"}."""
    bits = workload["bits"]
    out = []
    for arch, lv in zip(architecture["levels"][:-1], levels[:-1]):
        mb = 1 if FLAGS.get("single_buffer") else arch.get("multiple_buffering", 1)
        need = {}
        for t in ("I", "W", "O"):
            tile = lv["tile"][t] if t in lv["keeps"] else 0
            b = bits["psum"] if (t == "O" and not FLAGS.get("psum_as_output")) else bits[t]
            need[t] = mb * (tile if FLAGS.get("capacity_in_elements") else _nbytes(tile, b))
        cap = arch["capacity_bytes"]
        if isinstance(cap, dict):
            fits = all(need[t] <= cap.get(t, 0) for t in lv["keeps"])
        else:
            fits = sum(need.values()) <= cap
        out.append({"name": arch["name"], "bytes": need, "total": sum(need.values()), "fits": fits})
    return out


def _sel_used_instances(workload, architecture, mapping, level):
    """Instances of ``level`` under which at least one real MAC runs during the schedule."""
    if FLAGS.get("arch_instances"):
        n = 1
        for lv in architecture["levels"][level + 1:]:
            n *= lv.get("fanout", [1, 1])[0] * lv.get("fanout", [1, 1])[1]
        return n
    bounds = workload["dims"]
    weight = {d: 1 for d in bounds}
    spatial = {d: [] for d in bounds}
    for i, m in enumerate(mapping["levels"]):
        for key in ("spatial_x", "spatial_y", "temporal"):
            for d, f in m.get(key, []) or []:
                if key != "temporal" and i > level:
                    spatial[d].append((f, weight[d]))
                weight[d] *= f
    total = 1
    for d, loops in spatial.items():
        starts = [0]
        for f, w in loops:
            starts = [s + k * w for s in starts for k in range(f)]
        total *= len(starts) if FLAGS.get("all_instances_used") else sum(1 for s in starts if s < bounds[d])
    return total


def _sel_valid(workload, architecture, mapping, levels=None):
    levels = levels if levels is not None else _sel_tiles(workload, architecture, mapping)
    return all(r["fits"] for r in _sel_requirement(workload, architecture, levels))


def _sel_rank(metric, valid):
    """Valid candidates by ascending metric (ties: lower index), then the invalid ones by index."""
    idx = list(range(len(metric)))
    if FLAGS.get("invalid_ranked"):
        return sorted(idx, key=lambda i: (metric[i], i))
    tie = (lambda i: -i) if FLAGS.get("ties_higher_index") else (lambda i: i)
    good = sorted((i for i in idx if valid[i]), key=lambda i: (metric[i], tie(i)))
    bad = [i for i in idx if not valid[i]]
    if FLAGS.get("invalid_by_metric"):
        bad.sort(key=lambda i: (metric[i], i))
    return good + bad


def _sel_level_bytes(workload, lv):
    """Bytes of one level's reads, fills and updates per tensor: {t: {action: bytes}}."""
    bits = workload["bits"]
    out = {}
    for t in ("I", "W"):
        out[t] = {a: _nbytes(lv[t][a], bits[t]) for a in ("reads", "fills", "updates")}
    out["O"] = {"reads": _psum_bytes(lv["O"]["reads"], bits), "fills": _psum_bytes(lv["O"]["fills"], bits),
                "updates": _o_write_bytes(lv, bits)}
    return out


def _sel_energy(workload, architecture, res):
    """MAC energy plus every byte read and written at every level."""
    total = 0 if FLAGS.get("no_mac_energy") else res["macs"] * architecture["mac_pj"]
    bits = workload["bits"]
    for arch, lv in zip(architecture["levels"], res["levels"]):
        rd, wr = arch["read_pj_per_byte"], arch["write_pj_per_byte"]
        if FLAGS.get("one_price"):
            wr = rd
        if FLAGS.get("ceil_on_total"):  # the level's bits of each action added up, then rounded once
            def bits_of(a):
                n = sum(lv[t][a] * bits[t] for t in ("I", "W"))
                if a == "updates":
                    fin = lv["O"]["final_updates"]
                    return n + fin * bits["O"] + (lv["O"]["updates"] - fin) * bits["psum"]
                return n + lv["O"][a] * bits["psum"]
            reads, fills, updates = (-(-bits_of(a) // 8) for a in ("reads", "fills", "updates"))
        else:
            b = _sel_level_bytes(workload, lv)
            reads = sum(b[t]["reads"] for t in ("I", "W", "O"))
            fills = sum(b[t]["fills"] for t in ("I", "W", "O"))
            updates = sum(b[t]["updates"] for t in ("I", "W", "O"))
        if FLAGS.get("fills_free"):
            fills = 0
        total += reads * rd + (fills + updates) * wr
    return float(total)


def _sel_latency(workload, architecture, res):
    """(cycles, bound): the MAC units and every port with a bytes_per_cycle; the slowest wins
    (ties: compute, then the innermost level)."""
    if FLAGS.get("ideal_compute"):
        compute = -(-res["macs"] // res["mac_units"])
    else:
        compute = res["steps"]
    best, bound, total = compute, "compute", compute
    for arch, lv in zip(architecture["levels"], res["levels"]):
        bpc = arch.get("bytes_per_cycle")
        if bpc is None:
            continue
        b = _sel_level_bytes(workload, lv)
        actions = ("reads",) if FLAGS.get("reads_only") else ("reads", "fills", "updates")
        moved = sum(b[t][a] for t in ("I", "W", "O") for a in actions)
        cyc = moved // bpc if FLAGS.get("floor_cycles") else -(-moved // bpc)
        total += cyc
        if cyc > best:
            best, bound = cyc, arch["name"]
    return (total if FLAGS.get("sum_latency") else best), bound


def _sel_dram_bytes(workload, architecture, mapping):
    """Bytes crossing the outermost level's port (reads of I and W, write-backs and read-backs
    of O). With the analytical engine only the outermost level's counts are computed."""
    if not _sel_fast():
        lv = analyze(workload, architecture, mapping)["levels"][-1]
    else:
        nest = parse(workload, architecture, mapping)
        last = nest.depth - 1
        lv = {t: {"reads": 0, "fills": 0, "updates": 0} for t in ("I", "W", "O")}
        lv["O"]["final_updates"] = 0
        for t in ("I", "W", "O"):
            hold = nest.holders(t)
            if t == "O":
                if len(hold) == 1:
                    up = _mac_accesses(nest, t, last)
                else:
                    up = _moves(nest, t, hold[-2], last, "fills" if _flag("no_reduction") else "reduce")
                    if _contributors(nest, last) == 1:
                        lv["O"]["final_updates"] = nest.size("O")
                lv["O"]["updates"] = up
                lv["O"]["reads"] = up - (0 if _flag("first_read") else partition(nest, "O", last))
            elif len(hold) == 1:
                lv[t]["reads"] = _mac_accesses(nest, t, last)
            else:
                lv[t]["reads"] = _moves(nest, t, hold[-2], last, "fills" if _flag("no_multicast") else "multicast")
    b = _sel_level_bytes(workload, lv)
    if FLAGS.get("reads_only"):
        return sum(b[t]["reads"] for t in ("I", "W", "O"))
    return sum(b[t]["reads"] + b[t]["updates"] for t in ("I", "W", "O"))
