
# ---- energy, cycles, bandwidth, bytes and fit on top of analyze (kit: e2e problems) -------
# This fragment is appended (by adapters_e2e.py) after engine.py (solutions, variants) or
# simulator.py (the brute-force candidate) and the shared PRELUDE: it uses their `analyze`,
# `FLAGS`, and `parse` (engine) or `Sim` (simulator). Not a module of its own.

import itertools as _it

_E2E_BRUTE = "Sim" in globals()  # built on the brute-force simulator: step every iteration
_E2E_TENSORS = ("I", "W", "O")


def _e2e(name):
    return FLAGS.get(name, False)


def _ceil_div(a, b):
    return -(-a // b)


# --- compute cycles ---------------------------------------------------------------------

def _sorted_sums(pairs):
    s = np.zeros(1, dtype=np.int64)
    for f, st in pairs:
        s = (s[:, None] + np.arange(f, dtype=np.int64)[None, :] * st).ravel()
    return np.sort(s)


def _cycle_stats_closed(workload, architecture, mapping):
    """Per dimension, the temporal digits with every spatial digit at zero give the smallest
    index a step uses, so a step has a real MAC when that index is real for every dimension:
    the counts are products over dimensions."""
    nest = parse(workload, architecture, mapping)
    strides = list(nest.strides)
    if _e2e("digits_reversed"):  # the outermost loop of a dimension taken as its least significant digit
        running = dict.fromkeys(nest.dims, 1)
        for i in reversed(range(len(nest.loops))):
            strides[i] = running[nest.loops[i].dim]
            running[nest.loops[i].dim] *= nest.loops[i].factor
    cycles, full, busy = 1, 1, [1] * nest.depth
    for d in nest.dims:
        mine = nest.dim_loops(d)
        bound = nest.bounds[d]
        if _e2e("ragged_ignored"):
            bound = prod(nest.loops[i].factor for i in mine)
        temporal = _sorted_sums([(nest.loops[i].factor, strides[i]) for i in mine if not nest.loops[i].spatial])
        span = sum((nest.loops[i].factor - 1) * strides[i] for i in mine if nest.loops[i].spatial)
        cycles *= len(temporal) if _e2e("empty_steps_counted") else int((temporal < bound).sum())
        full *= int((temporal + span < bound).sum())
        for lv in range(nest.depth):
            above = _sorted_sums([(nest.loops[i].factor, strides[i]) for i in mine
                                  if nest.loops[i].spatial and nest.loops[i].level > lv])
            if _e2e("busy_counts_every_instance"):
                busy[lv] *= int((temporal < bound).sum()) * len(above)
            else:
                busy[lv] *= int(np.searchsorted(above, bound - temporal, side="left").sum())
    return {"cycles": cycles, "full_cycles": full, "busy": busy}


def _cycle_stats_brute(workload, architecture, mapping):
    """Step every time step and every MAC unit."""
    sim = Sim(workload, architecture, mapping)
    temporal = [i for i, lp in enumerate(sim.loops) if not lp[3]]
    spatial = [i for i, lp in enumerate(sim.loops) if lp[3]]
    above = [[i for i in spatial if sim.loops[i][2] > lv] for lv in range(sim.depth)]
    cycles = full = 0
    busy = [0] * sim.depth
    for step in sim.combos(temporal):
        hit, missed = False, False
        seen = [set() for _ in range(sim.depth)]
        for lanes in sim.combos(spatial):
            if sim.real(sim.point({**step, **lanes})):
                hit = True
                for lv in range(sim.depth):
                    seen[lv].add(tuple(lanes[i] for i in above[lv]))
            else:
                missed = True
        if hit:
            cycles += 1
            full += not missed
            for lv in range(sim.depth):
                busy[lv] += len(seen[lv])
    return {"cycles": cycles, "full_cycles": full, "busy": busy}


def _cycle_stats(workload, architecture, mapping):
    if _E2E_BRUTE:
        return _cycle_stats_brute(workload, architecture, mapping)
    return _cycle_stats_closed(workload, architecture, mapping)


# --- energy -----------------------------------------------------------------------------

def _blocks(words, block):
    if _e2e("blocks_ignored"):
        return words
    if _e2e("fractional_blocks"):
        return words / block
    return _ceil_div(words, block)


def _level_energy(levels, energy):
    out = []
    for lv, cost in zip(levels, energy["levels"]):
        total = 0.0
        for t in _E2E_TENSORS:
            for action in ("reads", "fills", "updates"):
                words = lv[t][action]
                if not words:
                    continue
                if action == "updates":
                    pj = cost["update_pj"]
                elif action == "reads" or _e2e("fills_at_read_energy"):
                    pj = cost["read_pj"][t]
                else:
                    pj = cost["fill_pj"][t]
                total += _blocks(words, int(cost["block_words"][t])) * float(pj)
        out.append(total)
    return out


def _real_input_macs(workload):
    """MACs whose input element is not padding (a wrong-on-purpose switch only)."""
    dims = workload["dims"]
    if workload["shape"] not in ("conv", "depthwise"):
        return prod(dims.values())
    (hin, win), st, dil, pad = workload["input_hw"], workload["stride"], workload["dilation"], workload["padding"]
    rows = sum(1 for p in range(dims["P"]) for r in range(dims["R"]) if 0 <= p * st[0] + r * dil[0] - pad[0] < hin)
    cols = sum(1 for q in range(dims["Q"]) for s in range(dims["S"]) if 0 <= q * st[1] + s * dil[1] - pad[1] < win)
    rest = prod(v for k, v in dims.items() if k not in ("P", "Q", "R", "S"))
    return rows * cols * rest


def _mac_energy(workload, res, cycles, energy):
    if _e2e("mac_energy_every_unit"):
        return cycles * res["mac_units"] * float(energy["mac_pj"])
    macs = _real_input_macs(workload) if _e2e("padding_macs_free") else res["macs"]
    return macs * float(energy["mac_pj"])


# --- bandwidth ----------------------------------------------------------------------------

def _traffic(lv):
    reads = sum(lv[t]["reads"] for t in _E2E_TENSORS)
    writes = sum((0 if _e2e("fills_not_written") else lv[t]["fills"]) + lv[t]["updates"] for t in _E2E_TENSORS)
    return reads, writes


def _level_cycles(levels, bandwidth):
    out = []
    for lv, bw in zip(levels, bandwidth["levels"]):
        reads, writes = _traffic(lv)
        r = _ceil_div(reads, int(bw["read_words_per_cycle"]))
        w = _ceil_div(writes, int(bw["write_words_per_cycle"]))
        need = r + w if _e2e("ports_serialized") else max(r, w)
        shared = bw.get("shared_words_per_cycle")
        if shared is not None and not _e2e("shared_port_ignored"):
            need = max(need, _ceil_div(reads + writes, int(shared)))
        out.append(need)
    return out


def _throttled(compute, level_cycles, names):
    if _e2e("stalls_add_up"):
        total = compute + sum(max(0, c - compute) for c in level_cycles)
    else:
        total = max([compute] + list(level_cycles))
    if total == compute and not (_e2e("compute_loses_ties") and compute in level_cycles):
        return total, "compute"
    hits = [n for n, c in zip(names, level_cycles) if c == total]
    if not hits:  # stalls_add_up: the level that stalls the most
        top = max(level_cycles)
        hits = [n for n, c in zip(names, level_cycles) if c == top]
    return total, (hits[-1] if _e2e("bottleneck_tie_outermost") else hits[0])


# --- bytes and fit ----------------------------------------------------------------------

def _dram_bytes(levels, workload):
    d, b = levels[-1], workload["bits"]
    reads = _nbytes(d["I"]["reads"], b["I"]) + _nbytes(d["W"]["reads"], b["W"]) + _psum_bytes(d["O"]["reads"], b)
    return reads, _o_write_bytes(d, b)


def _fits(levels, workload, architecture):
    bits = workload["bits"]
    last = len(levels) - 1
    out = []
    for i, (lv, arch) in enumerate(zip(levels, architecture["levels"])):
        if i == last:
            out.append(True)
            continue
        mb = 1 if _e2e("multiple_buffering_ignored") else arch.get("multiple_buffering", 1)
        need = {}
        for t in lv["keeps"]:
            b = bits["O"] if (t == "O" and _e2e("psum_capacity_at_output_bits")) else bits["psum"] if t == "O" else bits[t]
            n = lv["tile"][t] if _e2e("capacity_in_elements") else _ceil_div(lv["tile"][t] * b, 8)
            need[t] = mb * n
        cap = arch["capacity_bytes"]
        if isinstance(cap, dict):
            out.append(all(need[t] <= cap.get(t, 0) for t in need))
        else:
            out.append(sum(need.values()) <= cap)
    return out


def _flat_counts(levels, action):
    return {f"{lv['name']}.{t}": lv[t][action] for lv in levels for t in _E2E_TENSORS}


def _first_min(values):
    best = min(values.values())
    tied = sorted(k for k, v in values.items() if v == best)
    return tied[-1] if _e2e("ties_to_last") else tied[0]
