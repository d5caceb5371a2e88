"""perf-model reference and generator: the cycle timeline of a weight-stationary systolic array
(F11, problems/perf-model/f11-systolic-ws-timeline).

A GEMM ``O[m][n] += I[m][k] * W[k][n]`` runs folded on an R x C array of PEs (TPU-like): every
iteration of the DRAM level's temporal loops is one *fold*, which maps a block of up to
``r`` rows of K (``spatial_y``) by up to ``c`` columns of N (``spatial_x``) onto the array and
streams up to ``mt`` rows of M (the array level's temporal loop) through it. The timeline rules
(what the spec states in words):

* a fold whose K-block and N-block equal the previous fold's loads nothing; any other fold
  loads its weights one array row per cycle (as many cycles as rows it uses), loads one at a
  time, the first load starting in cycle 0;
* single-buffered weight registers (``multiple_buffering`` 1 at ``WeightReg``): a load starts
  at the earliest in the cycle after the last MAC any earlier fold does in the top row;
  double-buffered (2): at the earliest in the cycle after the first input of the most recent
  earlier fold that loaded has passed the last used PE of the top row;
* a fold's first input enters the top row at the earliest in the cycle after its load, and
  after the previous fold's last input has entered the top row; row i lags row i-1 by a cycle,
  inputs move one column right per cycle, partial sums one row down per cycle through every row
  of the array (unused rows pass them on), leaving at the bottom;
* an accumulator entry per output: every arrival a write, every arrival but the first a read.

The reference is a recurrence over the folds (thousands at real size: milliseconds); the
element- and cycle-level simulators live in the problem's simulator.py and in the tests.
"""

from __future__ import annotations

import itertools
from typing import Any, Sequence

from reference_models import pm_shapes

from . import pm_draw

# ------------------------------------------------------------------------------------------
# the reference
# ------------------------------------------------------------------------------------------


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
    ranges = [range(int(f)) for _, f in reversed(loops)]
    names = [d for d, _ in reversed(loops)]
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


# ------------------------------------------------------------------------------------------
# the generator
# ------------------------------------------------------------------------------------------

def _arch(name: str, rows: int, cols: int, mb: int, ub: tuple[int, int] = (25165824, 4194304)) -> dict[str, Any]:
    return {"name": name, "levels": [
        {"name": "WeightReg", "capacity_bytes": {"W": mb}, "fanout": [1, 1], "multiple_buffering": mb},
        {"name": "UnifiedBuffer", "capacity_bytes": {"I": ub[0], "O": ub[1]}, "fanout": [cols, rows]},
        {"name": "DRAM", "capacity_bytes": None, "fanout": [1, 1]}]}


def _mapping(rng: Any, dims: dict[str, int], r: int, c: int, mt: int) -> dict[str, Any]:
    outer = []
    for d, b in (("K", r), ("N", c), ("M", mt)):
        n = -(-dims[d] // b)
        if n > 1:
            outer.append([d, n])
    order = [outer[int(i)] for i in rng.permutation(len(outer))]
    return {"levels": [
        {"temporal": [], "spatial_x": [], "spatial_y": []},
        {"temporal": [["M", mt]] if mt > 1 else [], "spatial_x": [["N", c]] if c > 1 else [],
         "spatial_y": [["K", r]] if r > 1 else []},
        {"temporal": order, "spatial_x": [], "spatial_y": []}]}


REAL_ARRAYS = (("tpu-like", 128, 2), ("tpu-like-single-buffered", 128, 1),
               ("tpu-v1-like", 256, 2), ("tpu-v1-like-single-buffered", 256, 1))
REAL_GROUPS = ("bert-base", "llama-prefill", "llama-decode")
MIN_REAL_MACS = 40 * 2 ** 20  # the slowest simulator call stays near 10 s, far past the 2 s budget
WRAP = 2 ** 31  # where 32-bit signed counts wrap


def _narrow_blocks(rng: Any) -> dict[str, Any]:
    """A Llama projection at 2048 tokens whose N blocks (or K blocks) are so narrow that its input
    reads (or accumulator accesses) pass 2^31: thousands of weight blocks, one or two blocks of M."""
    names = [n for n in pm_shapes.group("llama-prefill") if pm_shapes.LAYERS[n]["dims"]["M"] >= 2048]
    wl = pm_shapes.layer(str(pm_draw._pick(rng, names)))
    name, size, mb = pm_draw._pick(rng, REAL_ARRAYS)
    dims = wl["dims"]
    M, N, K = dims["M"], dims["N"], dims["K"]
    r, c = min(size, K), min(size, N)
    # input reads are M * K per block of N, accumulator writes M * N per block of K
    narrow, other = ("N", K) if rng.random() < 0.5 else ("K", N)
    need = -(-WRAP // (M * other))  # blocks of the narrow dimension
    widest = max(w for w in range(1, size + 1) if -(-dims[narrow] // w) >= need)
    w = int(rng.integers(max(2, widest // 2), widest + 1))
    r, c = (r, w) if narrow == "N" else (w, c)
    mt = M if rng.random() < 0.5 else M // 2  # or two blocks of M: weights kept or loaded again
    return {"workload": wl, "architecture": _arch(name, size, size, mb), "mapping": _mapping(rng, dims, r, c, mt)}


def gen_systolic_ws_timeline(rng: Any, real: bool = False, groups: Sequence[str] = REAL_GROUPS,
                             edges: bool = False, narrow: bool = False) -> dict[str, Any]:
    """A small GEMM, or with ``real`` a real projection; ``edges`` (small only) draws arrays of one
    row or one column whose blocks span the whole array side and M blocks up to two rows past M,
    so blocks are often wider than their dimension; ``narrow`` (real only) draws K or N blocks
    narrow enough that a count passes 2^31."""
    if real and narrow:
        return _narrow_blocks(rng)
    if real:
        group = str(pm_draw._pick(rng, tuple(groups)))  # the group first: BERT-base is as likely as Llama
        names = [n for n in pm_shapes.group(group) if pm_draw.macs(pm_shapes.LAYERS[n]) >= MIN_REAL_MACS]
        wl = pm_shapes.layer(str(pm_draw._pick(rng, names)))
        name, size, mb = pm_draw._pick(rng, REAL_ARRAYS)
        arch = _arch(name, size, size, mb)
        dims = wl["dims"]
        r = size if rng.random() < 0.8 else int(pm_draw._pick(rng, (96, 100, size // 2 + 8)))
        c = size if rng.random() < 0.8 else int(pm_draw._pick(rng, (96, 120, size // 2)))
        r, c = min(r, dims["K"]), min(c, dims["N"])
        M = dims["M"]
        mt = M if M <= 16 or rng.random() < 0.4 else int(pm_draw._pick(rng, (128, 256, 200, 512, 1000)))
        mt = min(mt, M)
        return {"workload": wl, "architecture": arch, "mapping": _mapping(rng, dims, r, c, mt)}

    R, C = int(rng.integers(2, 7)), int(rng.integers(2, 7))
    mb = int(pm_draw._pick(rng, (1, 2)))
    arch = _arch(f"small-{R}x{C}" + ("" if mb == 2 else "-single-buffered"), R, C, mb, (4096, 4096))
    dims = {"M": int(rng.integers(1, 11)), "N": int(rng.integers(1, 15)), "K": int(rng.integers(1, 15))}
    wl = {"name": "small-gemm", "shape": "gemm", "dims": dims, "bits": pm_draw.small_bits(rng)}
    r = min(dims["K"], R if rng.random() < 0.6 else int(rng.integers(1, R + 1)))
    c = min(dims["N"], C if rng.random() < 0.6 else int(rng.integers(1, C + 1)))
    mt = dims["M"] if rng.random() < 0.3 else int(rng.integers(1, dims["M"] + 1))
    if edges:
        R, C = (1, C) if rng.random() < 0.5 else (R, 1)
        arch = _arch(f"small-{R}x{C}" + ("" if mb == 2 else "-single-buffered"), R, C, mb, (4096, 4096))
        r, c, mt = R, C, int(rng.integers(1, dims["M"] + 3))
    return {"workload": wl, "architecture": arch, "mapping": _mapping(rng, dims, r, c, mt)}


REFERENCES: dict = {"pm_systolic.systolic_ws_timeline": systolic_ws_timeline}
GENERATORS: dict = {"pm_systolic.systolic_ws_timeline": gen_systolic_ws_timeline}
