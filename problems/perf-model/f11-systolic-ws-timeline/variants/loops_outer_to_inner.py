"""Wrong on purpose: reads the DRAM loop list as outermost first, so the folds come in the wrong order."""

from __future__ import annotations

import itertools
from typing import Any


def _loop(level: dict[str, Any], key: str, dim: str) -> int:
    f = 1
    for d, n in level.get(key, []) or []:
        if d == dim:
            f *= int(n)
    return f


def folds(workload: dict, mapping: dict) -> list[tuple[int, int, int, int, int]]:
    """The folds in order: (k_block, n_block, rows used, columns used, M rows streamed)."""
    dims = workload["dims"]
    M, N, K = int(dims["M"]), int(dims["N"]), int(dims["K"])
    arr = mapping["levels"][1]
    r, c, mt = _loop(arr, "spatial_y", "K"), _loop(arr, "spatial_x", "N"), _loop(arr, "temporal", "M")
    block = {"K": r, "N": c, "M": mt}
    loops = list(mapping["levels"][2].get("temporal", []) or [])  # innermost first
    ranges = [range(int(f)) for _, f in loops]
    names = [d for d, _ in loops]
    out = []
    for idx in itertools.product(*ranges):
        at = {"K": 0, "N": 0, "M": 0}
        for d, i in zip(names, idx):
            at[d] = i
        kb, nb, mb = at["K"], at["N"], at["M"]
        rows = min(r, K - kb * block["K"])
        cols = min(c, N - nb * block["N"])
        ms = min(mt, M - mb * block["M"])
        if rows <= 0 or cols <= 0 or ms <= 0:
            continue  # no real MAC: not a fold
        out.append((kb, nb, rows, cols, ms))
    return out


def _union_length(intervals: list[tuple[int, int]]) -> list[tuple[int, int]]:
    merged: list[list[int]] = []
    for a, b in sorted(intervals):
        if merged and a <= merged[-1][1] + 1:
            merged[-1][1] = max(merged[-1][1], b)
        else:
            merged.append([a, b])
    return [(a, b) for a, b in merged]


def systolic_ws_timeline(workload: dict, architecture: dict, mapping: dict) -> dict[str, Any]:
    levels = architecture["levels"]
    double = int(levels[0].get("multiple_buffering", 1) or 1) >= 2
    C, R = (int(x) for x in levels[1]["fanout"])
    dims = workload["dims"]
    M, N, K = int(dims["M"]), int(dims["N"]), int(dims["K"])

    prev_block = None
    load_end = -1            # last cycle of the most recent load
    top_last_mac = -1        # the last MAC of any earlier fold in the top row
    loaded_first = None      # (first-input cycle, columns) of the most recent fold that loaded
    prev_start = prev_ms = None
    macs_iv: list[tuple[int, int]] = []
    loads_iv: list[tuple[int, int]] = []
    last_out = -1
    input_reads = weight_reads = acc_writes = 0
    for kb, nb, rows, cols, ms in folds(workload, mapping):
        start = -1
        if (kb, nb) != prev_block:
            lo = load_end + 1
            if not double:
                lo = max(lo, top_last_mac + 1)
            elif loaded_first is not None:
                lo = max(lo, loaded_first[0] + loaded_first[1])
            load_end = lo + rows - 1
            loads_iv.append((lo, load_end))
            weight_reads += rows * cols
            start = load_end + 1
        if prev_start is not None:
            start = max(start, prev_start + prev_ms)
        if (kb, nb) != prev_block:
            loaded_first = (start, cols)
        prev_block, prev_start, prev_ms = (kb, nb), start, ms
        macs_iv.append((start, start + (ms - 1) + (rows - 1) + (cols - 1)))
        top_last_mac = max(top_last_mac, start + (ms - 1) + (cols - 1))
        last_out = max(last_out, start + (ms - 1) + (R - 1) + (cols - 1))
        input_reads += ms * rows
        acc_writes += ms * cols

    total = last_out + 1
    busy = _union_length(macs_iv)
    mac_cycles = sum(b - a + 1 for a, b in busy)
    exposed, j = 0, 0
    for a, b in loads_iv:  # load intervals are disjoint and in order
        length = b - a + 1
        while j < len(busy) and busy[j][1] < a:
            j += 1
        t = j
        while t < len(busy) and busy[t][0] <= b:
            length -= min(b, busy[t][1]) - max(a, busy[t][0]) + 1
            t += 1
        exposed += length
    return {"total_cycles": total, "mac_cycles": mac_cycles,
            "utilization": (M * N * K) / (R * C * total),
            "exposed_load_cycles": exposed, "input_reads": input_reads, "weight_reads": weight_reads,
            "accumulator_reads": acc_writes - M * N, "accumulator_writes": acc_writes}
