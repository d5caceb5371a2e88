"""A brute-force simulator of the spec (what a careful engineer would write to check a model): a
controller steps through the cycles one by one, starting loads and input streams when the
spec's rules allow, and every input entry, every MAC and every partial sum leaving the array is
an event of its own. Correct, and hopeless at real sizes (millions of MACs and cycles).
"""

from __future__ import annotations

import itertools
from collections import defaultdict


def _factor(level, key, dim):
    f = 1
    for d, n in level.get(key, []) or []:
        if d == dim:
            f *= n
    return f


def systolic_ws_timeline(workload, architecture, mapping):
    M, N, K = (workload["dims"][d] for d in ("M", "N", "K"))
    double = architecture["levels"][0].get("multiple_buffering", 1) == 2
    C, R = architecture["levels"][1]["fanout"]
    arr = mapping["levels"][1]
    width = {"K": _factor(arr, "spatial_y", "K"), "N": _factor(arr, "spatial_x", "N"),
             "M": _factor(arr, "temporal", "M")}
    size = {"M": M, "N": N, "K": K}
    loops = mapping["levels"][2]["temporal"]
    folds = []  # in loop-nest order: the last DRAM loop is the outermost
    for idx in itertools.product(*[range(f) for _, f in reversed(loops)]):
        block = {"K": 0, "N": 0, "M": 0}
        for (d, _), i in zip(reversed(loops), idx):
            block[d] = i
        real = {d: range(block[d] * width[d], min((block[d] + 1) * width[d], size[d])) for d in ("K", "N", "M")}
        if all(real.values()):
            folds.append({"kb": block["K"], "nb": block["N"], **real})
    for f, fold in enumerate(folds):
        prev = folds[f - 1] if f else None
        fold["load"] = prev is None or (prev["kb"], prev["nb"]) != (fold["kb"], fold["nb"])

    mac_count = defaultdict(int)      # cycle -> MACs done in it
    row0_macs = []                    # cycles of row-0 MACs of the folds started so far
    load_cycle = set()
    arrivals = defaultdict(int)       # output -> partial sums added so far
    acc_reads = acc_writes = input_reads = weight_reads = 0
    last_leave = -1
    load_started = [False] * len(folds)
    load_end = {}
    start = {}
    next_load = 0                     # the next fold whose load (if any) has not started
    next_stream = 0                   # the next fold whose inputs have not started
    path_free_from = 0                # the load path is free from this cycle on
    t = 0
    while next_stream < len(folds):
        # loads
        while next_load < len(folds) and not folds[next_load]["load"]:
            next_load += 1
        if next_load < len(folds) and t >= path_free_from:
            f = next_load
            ok = True
            if not double:
                if any(g not in start for g in range(f)):
                    ok = False
                elif row0_macs and t <= max(row0_macs):
                    ok = False
            else:
                g = max((h for h in range(f) if folds[h]["load"]), default=None)
                if g is not None:
                    if g not in start:
                        ok = False
                    elif t <= start[g] + (len(folds[g]["N"]) - 1):  # the first input reaches row 0's last used PE
                        ok = False
            if ok:
                rows = len(folds[f]["K"])
                for i in range(rows):
                    load_cycle.add(t + i)
                    weight_reads += len(folds[f]["N"])
                load_started[f] = True
                load_end[f] = t + rows - 1
                path_free_from = t + rows
                next_load += 1
        # input streams
        f = next_stream
        fold = folds[f]
        ready = (not fold["load"]) or (load_started[f] and t > load_end[f])
        if f > 0:
            p = folds[f - 1]
            ready = ready and t > start[f - 1] + len(p["M"]) - 1
        if ready:
            start[f] = t
            for j, m in enumerate(fold["M"]):
                for i, k in enumerate(fold["K"]):
                    input_reads += 1
                    for c, n in enumerate(fold["N"]):
                        cyc = t + j + i + c
                        mac_count[cyc] += 1
                        if i == 0:
                            row0_macs.append(cyc)
                for c, n in enumerate(fold["N"]):
                    leave = t + j + (R - 1) + c
                    last_leave = max(last_leave, leave)
                    if arrivals[(m, n)]:
                        acc_reads += 1
                    arrivals[(m, n)] += 1
                    acc_writes += 1
            next_stream += 1
        t += 1

    total = last_leave + 1
    busy = {c for c, n in mac_count.items() if n > 0}
    return {"total_cycles": total, "mac_cycles": len(busy),
            "utilization": sum(mac_count.values()) / (R * C * total),
            "exposed_load_cycles": len(load_cycle - busy),
            "input_reads": input_reads, "weight_reads": weight_reads,
            "accumulator_reads": acc_reads, "accumulator_writes": acc_writes}
