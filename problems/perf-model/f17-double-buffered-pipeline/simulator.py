"""A brute-force simulator of the spec (what a careful engineer writes to check a model): every
MAC of every DRAM iteration is enumerated to find the global buffer's tiles as sets of tensor
elements and the time steps with a real MAC; what moves is found by set differences; then the
DRAM port, the slots and the compute engine are stepped one cycle at a time. Correct, and
hopeless at real sizes.
"""

from __future__ import annotations

import itertools

SHAPE_DIMS = {"conv": ("N", "K", "C", "P", "Q", "R", "S"), "depthwise": ("N", "C", "P", "Q", "R", "S"),
              "gemm": ("M", "N", "K")}


def _nbytes(n, bits):
    return -(-n * bits // 8)


def _iterations(workload, architecture, mapping):
    shape = workload["shape"]
    dims = SHAPE_DIMS[shape]
    bound = workload["dims"]
    levels = mapping["levels"]
    dram = len(levels) - 1
    loops = []
    for lv, m in enumerate(levels):
        for key in ("spatial_x", "spatial_y", "temporal"):
            for d, f in m.get(key, []) or []:
                loops.append((d, f, lv, key != "temporal"))
    weight, run = [], dict.fromkeys(dims, 1)
    for d, f, _, _ in loops:
        weight.append(run[d])
        run[d] *= f
    if shape != "gemm":
        hin, win = workload["input_hw"]
        sh, sw = workload.get("stride", [1, 1])
        dh, dw = workload.get("dilation", [1, 1])
        ph, pw = workload.get("padding", [0, 0])

    def coords(v):
        if shape == "gemm":
            return {"I": (v["M"], v["K"]), "W": (v["K"], v["N"]), "O": (v["M"], v["N"])}
        h = v["P"] * sh + v["R"] * dh - ph
        w = v["Q"] * sw + v["S"] * dw - pw
        if shape == "conv":
            return {"I": (v["N"], v["C"], h, w), "W": (v["K"], v["C"], v["R"], v["S"]),
                    "O": (v["N"], v["K"], v["P"], v["Q"])}
        return {"I": (v["N"], v["C"], h, w), "W": (v["C"], v["R"], v["S"]), "O": (v["N"], v["C"], v["P"], v["Q"])}

    outer_idx = [i for i, lp in enumerate(loops) if lp[2] == dram]
    inner_idx = [i for i, lp in enumerate(loops) if lp[2] < dram]
    temporal_inner = [i for i in inner_idx if not loops[i][3]]
    out = []
    # outermost loop slowest: product over the loops listed from the outermost
    for odig in itertools.product(*(range(loops[i][1]) for i in reversed(outer_idx))):
        od = dict(zip(reversed(outer_idx), odig))
        lo, hi = {}, {}
        busy_steps = set()
        for idig in itertools.product(*(range(loops[i][1]) for i in inner_idx)):
            dg = {**od, **dict(zip(inner_idx, idig))}
            v = dict.fromkeys(dims, 0)
            for i, x in dg.items():
                v[loops[i][0]] += x * weight[i]
            if any(v[d] >= bound[d] for d in dims):
                continue
            busy_steps.add(tuple(dg[i] for i in temporal_inner))
            for t, e in coords(v).items():
                if t not in lo:
                    lo[t], hi[t] = list(e), list(e)
                else:
                    lo[t] = [min(a, b) for a, b in zip(lo[t], e)]
                    hi[t] = [max(a, b) for a, b in zip(hi[t], e)]
        tiles = {}
        for t in ("I", "W", "O"):
            a, b = list(lo[t]), list(hi[t])
            if t == "I" and shape != "gemm":
                a[2], b[2] = max(a[2], 0), min(b[2], hin - 1)
                a[3], b[3] = max(a[3], 0), min(b[3], win - 1)
            tiles[t] = set(itertools.product(*(range(x, y + 1) for x, y in zip(a, b))))
        out.append((tiles, len(busy_steps)))
    return out


def _transfers(workload, architecture, mapping):
    bits = workload["bits"]
    its = _iterations(workload, architecture, mapping)
    T = len(its)
    last_in = {}
    for t, (tiles, _) in enumerate(its):
        for e in tiles["O"]:
            last_in[e] = t
    held_before = set()
    left_after = {}  # output element -> the iteration after which it last left
    rows = []
    for t, (tiles, steps) in enumerate(its):
        prev = its[t - 1][0] if t else {"I": set(), "W": set(), "O": set()}
        nxt = its[t + 1][0]["O"] if t + 1 < T else set()
        fi = len(tiles["I"] - prev["I"])
        fw = len(tiles["W"] - prev["W"])
        entering = tiles["O"] - prev["O"]
        back = entering & held_before
        waits = [left_after[e] for e in back]
        held_before |= tiles["O"]
        leaving = tiles["O"] - nxt
        complete = sum(1 for e in leaving if last_in[e] == t)
        partial = len(leaving) - complete
        for e in leaving:
            left_after[e] = t
        load = _nbytes(fi, bits["I"]) + _nbytes(fw, bits["W"]) + _nbytes(len(back), bits["psum"])
        store = _nbytes(complete, bits["O"]) + _nbytes(partial, bits["psum"])
        rows.append({"load": load, "store": store, "steps": steps, "waits": sorted(set(waits))})
    return rows


def _run(rows, slots, bpc):
    """Step the pipeline one cycle at a time."""
    T = len(rows)
    load_done, comp_done, store_done, release = {}, {}, {}, {}
    load_ready, store_ready = {}, {}
    comp_start = {}
    nl = ns = nc = 0  # next load / write-back to become ready, next compute to start
    port = None  # (kind, index, end cycle)
    comp = None  # (index, end cycle)
    c = 0
    while len(store_done) < T:
        if port is not None and port[2] == c:
            kind, idx, _ = port
            if kind == "load":
                load_done[idx] = c
            else:
                store_done[idx] = c
                release[idx] = c
            port = None
        if comp is not None and comp[1] == c:
            comp_done[comp[0]] = c
            comp = None
        changed = True
        while changed:
            changed = False
            if nl < T and (nl == 0 or nl - 1 in load_done) and (nl < slots or nl - slots in release) \
                    and all(s in store_done for s in rows[nl]["waits"]):
                load_ready[nl] = c
                if rows[nl]["load"] == 0:
                    load_done[nl] = c
                nl += 1
                changed = True
            if comp is None and nc < T and nc in load_done and (nc == 0 or nc - 1 in comp_done):
                comp_start[nc] = c
                comp = (nc, c + rows[nc]["steps"])
                nc += 1
                changed = True
            if ns < T and ns in comp_done:
                store_ready[ns] = c
                if rows[ns]["store"] == 0:
                    store_done[ns] = c
                    release[ns] = c
                ns += 1
                changed = True
        if port is None:
            waiting = [(store_ready[j], 0, "store", j) for j in store_ready if j not in store_done]
            waiting += [(load_ready[i], 1, "load", i) for i in load_ready if i not in load_done]
            if waiting:
                _, _, kind, idx = min(waiting)
                size = rows[idx]["load" if kind == "load" else "store"]
                port = (kind, idx, c + -(-size // bpc))
        c += 1
    return comp_start, comp_done, store_done


def pipeline(workload, architecture, mapping):
    rows = _transfers(workload, architecture, mapping)
    b = architecture["levels"][-2].get("multiple_buffering", 1)
    bpc = architecture["levels"][-1]["bytes_per_cycle"]
    T = len(rows)
    total = sum(r["steps"] for r in rows)
    by_b, main = {}, None
    for bb in (1, 2, 3):
        cs, ce, se = _run(rows, bb, bpc)
        by_b[str(bb)] = max(se.values())
        if bb == b:
            main = (cs, ce)
    cs, ce = main
    stalled = sum(1 for t in range(T) if cs[t] > (ce[t - 1] if t else 0))
    return {
        "read_bytes": sum(r["load"] for r in rows),
        "write_bytes": sum(r["store"] for r in rows),
        "compute_cycles": total,
        "cycles": by_b[str(b)],
        "compute_idle_cycles": ce[T - 1] - total,
        "stalled_iterations": stalled,
        "cycles_by_buffering": by_b,
    }
