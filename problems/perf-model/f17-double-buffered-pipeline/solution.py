"""A tile-level model of a layer streamed through a multiple-buffered global buffer.

Per DRAM iteration (innermost DRAM loop fastest): the box of every tensor's GLB tile (ranges per
axis, input windows cut to the real rows and columns), the load (elements of the I and W boxes the
previous boxes do not have, plus the partial sums of an output tile that comes back), the compute
(time steps below DRAM with a real MAC: a product over dimensions of the temporal offsets that
stay below the dimension's size), the write-back (the output tile when it changes or at the end,
complete if it never comes back). Then an event schedule of one DRAM port, b slots, in order.
"""

from __future__ import annotations

FLAGS: dict = {}  # switches of the wrong-on-purpose variants (all off here)


def _flag(name):
    return FLAGS.get(name, False)


SHAPE_DIMS = {"conv": ("N", "K", "C", "P", "Q", "R", "S"), "depthwise": ("N", "C", "P", "Q", "R", "S"),
              "gemm": ("M", "N", "K")}


def _axes(workload):
    shape = workload["shape"]
    if shape == "gemm":
        return {"I": [("id", "M"), ("id", "K")], "W": [("id", "K"), ("id", "N")], "O": [("id", "M"), ("id", "N")]}
    hin, win = workload["input_hw"]
    sh, sw = workload.get("stride", [1, 1])
    dh, dw = workload.get("dilation", [1, 1])
    ph, pw = workload.get("padding", [0, 0])
    rows = ("win", "P", "R", sh, dh, ph, hin)
    cols = ("win", "Q", "S", sw, dw, pw, win)
    if shape == "conv":
        return {"I": [("id", "N"), ("id", "C"), rows, cols], "W": [("id", "K"), ("id", "C"), ("id", "R"), ("id", "S")],
                "O": [("id", "N"), ("id", "K"), ("id", "P"), ("id", "Q")]}
    return {"I": [("id", "N"), ("id", "C"), rows, cols], "W": [("id", "C"), ("id", "R"), ("id", "S")],
            "O": [("id", "N"), ("id", "C"), ("id", "P"), ("id", "Q")]}


def _bytes(n, bits):
    return -(-n * bits // 8)


def _cdiv(a, b):
    return -(-a // b)


def traffic(workload, architecture, mapping):
    dims = SHAPE_DIMS[workload["shape"]]
    bound = dict(workload["dims"])
    bits = workload["bits"]
    levels = mapping["levels"]
    depth = len(levels)
    dram = depth - 1
    loops = []  # innermost first over the whole nest
    for lv, m in enumerate(levels):
        for key in ("spatial_x", "spatial_y", "temporal"):
            for d, f in m.get(key, []) or []:
                loops.append((d, int(f), lv, key != "temporal"))
    weight, run = [], dict.fromkeys(dims, 1)
    for d, f, _, _ in loops:
        weight.append(run[d])
        run[d] *= f
    ext = dict.fromkeys(dims, 1)  # the span of a GLB tile per dimension
    for d, f, lv, _ in loops:
        if lv < dram:
            ext[d] *= f
    outer = [(d, f, weight[i]) for i, (d, f, lv, _) in enumerate(loops) if lv == dram]
    T = 1
    for _, f, _ in outer:
        T *= f
    # compute: per dimension, the temporal offsets below DRAM
    offsets = {}
    for d in dims:
        offs = [0]
        for i, (dd, f, lv, sp) in enumerate(loops):
            if dd == d and lv < dram and not sp:
                offs = [o + k * weight[i] for o in offs for k in range(f)]
        offsets[d] = sorted(offs)
    axes = _axes(workload)
    o_dims = [ax[1] for ax in axes["O"]]

    def box(tensor, base):
        out = []
        for ax in axes[tensor]:
            if ax[0] == "id":
                d = ax[1]
                hi = base[d] + ext[d] if _flag("ragged_as_full") else min(base[d] + ext[d], bound[d])
                out.append((base[d], hi - 1))
            else:
                _, pd, rd, st, dil, pad, size = ax
                plo, phi = base[pd], min(base[pd] + ext[pd], bound[pd]) - 1
                rlo, rhi = base[rd], min(base[rd] + ext[rd], bound[rd]) - 1
                out.append((max(0, plo * st + rlo * dil - pad), min(size - 1, phi * st + rhi * dil - pad)))
        return out

    def size(b):
        n = 1
        for lo, hi in b:
            n *= max(0, hi - lo + 1)
        return n

    def overlap(a, b):
        n = 1
        for (l1, h1), (l2, h2) in zip(a, b):
            n *= max(0, min(h1, h2) - max(l1, l2) + 1)
        return n

    from bisect import bisect_left

    rows = []
    prev = None
    keys = []
    for t in range(T):
        base = dict.fromkeys(dims, 0)
        rem = t
        for d, f, w in outer:
            base[d] += (rem % f) * w
            rem //= f
        boxes = {x: box(x, base) for x in ("I", "W", "O")}
        fills = {}
        for x in ("I", "W"):
            n = size(boxes[x])
            if prev is not None:
                if _flag("refetch") and boxes[x] != prev[x]:
                    pass
                else:
                    n -= overlap(boxes[x], prev[x])
            fills[x] = n
        steps = 1
        for d in dims:
            if _flag("full_steps"):
                steps *= len(offsets[d])
            else:
                steps *= bisect_left(offsets[d], bound[d] - base[d])
        keys.append(tuple(base[d] for d in o_dims))
        rows.append({"fills": fills, "o": size(boxes["O"]), "steps": steps})
        prev = boxes
    first, last = {}, {}
    for t, k in enumerate(keys):
        first.setdefault(k, t)
        last[k] = t
    psum_bits = bits["psum"]
    out = []
    left_after = {}
    for t, k in enumerate(keys):
        r = rows[t]
        enters = t == 0 or keys[t - 1] != k
        leaves = t == T - 1 or keys[t + 1] != k
        back = enters and (t > first[k] or (_flag("first_read_counted") and t > 0))
        hazard = left_after.get(k, -1) if back and t > first[k] else -1
        load = _bytes(r["fills"]["I"], bits["I"]) + _bytes(r["fills"]["W"], bits["W"])
        if back:
            load += _bytes(r["o"], psum_bits)
        store = 0
        if leaves:
            complete = t == last[k]
            store = _bytes(r["o"], bits["O"] if (complete or _flag("psum_at_output_bits")) else psum_bits)
            left_after[k] = t
        out.append((load, r["steps"], store, hazard))
    b = architecture["levels"][-2].get("multiple_buffering", 1)
    bpc = architecture["levels"][-1]["bytes_per_cycle"]
    return out, b, bpc


def schedule(rows, b, bpc):
    T = len(rows)
    lc = [_cdiv(r[0], bpc) for r in rows]
    sc = [_cdiv(r[2], bpc) for r in rows]
    comp = [r[1] for r in rows]
    haz = [-1 if _flag("no_hazard") else r[3] for r in rows]
    le, cs, ce, se, rel = [0] * T, [0] * T, [0] * T, [0] * T, [0] * T
    i = j = 0
    port = wport = 0
    while j < T:
        r_load = None
        if i < T:
            ok, r = True, (le[i - 1] if i else 0)
            if i >= b:
                if j > i - b:
                    r = max(r, rel[i - b])
                else:
                    ok = False
            if haz[i] >= 0:
                if j > haz[i]:
                    r = max(r, se[haz[i]])
                else:
                    ok = False
            if ok:
                r_load = r
        if r_load is not None and lc[i] == 0:
            le[i] = r_load
            cs[i] = max(le[i], ce[i - 1] if i else 0)
            ce[i] = cs[i] + comp[i]
            i += 1
            continue
        if j < i and sc[j] == 0:
            se[j] = rel[j] = ce[j]
            j += 1
            continue
        r_store = ce[j] if j < i else None
        if _flag("separate_write_port"):
            take_load = r_load is not None
        else:
            take_load = r_load is not None and (r_store is None or r_load < r_store)
        if take_load:
            le[i] = port = max(port, r_load) + lc[i]
            cs[i] = max(le[i], ce[i - 1] if i else 0)
            ce[i] = cs[i] + comp[i]
            i += 1
        else:
            if _flag("separate_write_port"):
                se[j] = wport = max(wport, r_store) + sc[j]
            else:
                se[j] = port = max(port, r_store) + sc[j]
            rel[j] = ce[j] if _flag("release_at_compute_end") else se[j]
            j += 1
    return le, cs, ce, se


def pipeline(workload, architecture, mapping):
    rows, b, bpc = traffic(workload, architecture, mapping)
    total = sum(r[1] for r in rows)
    by_b, main = {}, None
    for bb in (1, 2, 3):
        s = schedule(rows, bb, bpc)
        end = s[3][-1]
        by_b[str(bb)] = end
        if bb == b:
            main = s
    _, cs, ce, _ = main
    stalled = sum(1 for t in range(len(rows)) if cs[t] > (ce[t - 1] if t else 0))
    idle = ce[-1] - total
    return {
        "read_bytes": sum(r[0] for r in rows),
        "write_bytes": sum(r[2] for r in rows),
        "compute_cycles": total,
        "cycles": by_b[str(b)],
        "compute_idle_cycles": idle,
        "stalled_iterations": stalled,
        "cycles_by_buffering": by_b,
    }
