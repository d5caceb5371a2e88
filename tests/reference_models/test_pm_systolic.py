"""The systolic timeline reference (reference_models.pm_systolic) against a register-level
simulator of the array, written from the spec of problems/perf-model/f11-systolic-ws-timeline.

The simulator below shares no code with the reference: every cycle it moves real numbers through
the PEs' input, partial-sum, active and shadow weight registers, starts loads and input streams
only when the spec's rules (as observed in the registers) allow, and checks that every MAC uses
its own fold's weight and that every partial sum meets its own input. At the end the
accumulators must hold exactly ``I @ W``: the pinned rules never corrupt a value.
"""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest

from reference_models import pm_shapes  # noqa: E402
from support import trusted  # noqa: E402
_TRUSTED = trusted("perf-model")
GENERATORS = _TRUSTED.generators
REFERENCES = _TRUSTED.references
_m_pm_systolic = _TRUSTED.submodule("pm_systolic")
MIN_REAL_MACS = _m_pm_systolic.MIN_REAL_MACS

KEY = "pm_systolic.systolic_ws_timeline"
REF = REFERENCES[KEY]
GEN = GENERATORS[KEY]
N_CASES = 300


# ------------------------------------------------------------------------------------------
# the register-level simulator
# ------------------------------------------------------------------------------------------

def _fold_list(workload, mapping):
    d = workload["dims"]
    arr = mapping["levels"][1]
    width = {"K": 1, "N": 1, "M": 1}
    for key, dim in (("spatial_y", "K"), ("spatial_x", "N"), ("temporal", "M")):
        for name, f in arr[key]:
            assert name == dim
            width[dim] *= f
    outer = mapping["levels"][2]["temporal"][::-1]          # outermost first
    out = []
    for idx in itertools.product(*(range(f) for _, f in outer)):
        b = dict.fromkeys("KNM", 0)
        b.update({name: i for (name, _), i in zip(outer, idx)})
        ks = [k for k in range(b["K"] * width["K"], (b["K"] + 1) * width["K"]) if k < d["K"]]
        ns = [n for n in range(b["N"] * width["N"], (b["N"] + 1) * width["N"]) if n < d["N"]]
        ms = [m for m in range(b["M"] * width["M"], (b["M"] + 1) * width["M"]) if m < d["M"]]
        if ks and ns and ms:
            out.append(((b["K"], b["N"]), ks, ns, ms))
    return out


def register_sim(workload, architecture, mapping, seed=0):
    d = workload["dims"]
    rng = np.random.default_rng(seed)
    I = rng.integers(-5, 6, size=(d["M"], d["K"]))
    W = rng.integers(-5, 6, size=(d["K"], d["N"]))
    C, R = architecture["levels"][1]["fanout"]
    double = architecture["levels"][0]["multiple_buffering"] == 2
    folds = _fold_list(workload, mapping)
    F = len(folds)
    loads = [f == 0 or folds[f][0] != folds[f - 1][0] for f in range(F)]

    active = [[None] * C for _ in range(R)]     # (block, value)
    shadow = [[None] * C for _ in range(R)]
    inp = [[None] * C for _ in range(R)]        # (fold, j, first, value) in the PE this cycle
    ps = [[None] * C for _ in range(R)]         # (fold, j, column, value) leaving the PE this cycle
    row_queue = [[] for _ in range(R)]          # (cycle, item) to inject at the left edge
    acc = {}
    counts = dict(input_reads=0, weight_reads=0, accumulator_reads=0, accumulator_writes=0)
    mac_cycles = set()
    load_cycles = set()
    last_leave = -1
    next_load = 0            # next fold whose load has not started
    load_busy_until = -1     # last cycle of the current / last load
    load_done = {}           # fold -> last load cycle
    load_rows = []           # (fold, row, cycle) writes pending
    next_stream = 0
    streamed_until = {}      # fold -> cycle its last input entered row 0
    first_at_end = {}        # loaded fold -> cycle its first input reached row 0's last used PE
    t = 0
    while True:
        done = next_stream == F and all(not q for q in row_queue) and \
            all(x is None for row in inp for x in row) and all(x is None for row in ps for x in row)
        if done and t > 0:
            break
        # ---- moves at the start of cycle t: inputs one PE right, injections at the left edge
        new_inp = [[None] * C for _ in range(R)]
        for r in range(R):
            for c in range(C - 1, 0, -1):
                new_inp[r][c] = inp[r][c - 1]
            if row_queue[r] and row_queue[r][0][0] == t:
                new_inp[r][0] = row_queue[r].pop(0)[1]
                counts["input_reads"] += 1
        inp = new_inp
        # ---- controller: may a load start in cycle t?
        while next_load < F and not loads[next_load]:
            next_load += 1
        if next_load < F and t > load_busy_until:
            f = next_load
            ok = True
            if not double:
                # no MAC of an earlier fold in row 0 from cycle t on: all of them have entered
                # row 0 and none of their inputs is still at (or before) a used PE of row 0
                if any(g not in streamed_until or streamed_until[g] >= t for g in range(f)):
                    ok = False
                else:
                    for c in range(C):
                        x = inp[0][c]
                        if x is not None and x[0] < f and c < len(folds[x[0]][2]):
                            ok = False
            else:
                earlier = [g for g in range(f) if loads[g]]
                if earlier:
                    g = earlier[-1]
                    ok = g in first_at_end and first_at_end[g] < t
            if ok:
                rows = len(folds[f][1])
                for i in range(rows):
                    load_rows.append((f, i, t + i))
                    load_cycles.add(t + i)
                load_busy_until = t + rows - 1
                load_done[f] = t + rows - 1
                next_load += 1
        # ---- controller: may the next fold's first input enter row 0 in cycle t?
        if next_stream < F:
            f = next_stream
            ready = (not loads[f]) or (f in load_done and load_done[f] < t)
            if f > 0:
                ready = ready and f - 1 in streamed_until and streamed_until[f - 1] < t
            if ready:
                _, ks, ns, ms = folds[f]
                for j, m in enumerate(ms):
                    for i, k in enumerate(ks):
                        item = (f, j, j == 0 and loads[f], int(I[m, k]))
                        row_queue[i].append((t + j + i, item))
                        if i == 0 and j == 0:
                            new_inp0 = item
                streamed_until[f] = t + len(ms) - 1
                next_stream += 1
                # the injection of row 0 for this very cycle
                if row_queue[0] and row_queue[0][0][0] == t:
                    row_queue[0].pop(0)
                    assert inp[0][0] is None
                    inp[0][0] = new_inp0
                    counts["input_reads"] += 1
        # ---- the PEs in cycle t (top row first: the partial sums of cycle t-1 come from above)
        new_ps = [[None] * C for _ in range(R)]
        for r in range(R):
            for c in range(C):
                above = ps[r - 1][c] if r > 0 else None
                x = inp[r][c]
                used = x is not None and r < len(folds[x[0]][1]) and c < len(folds[x[0]][2])
                if used:
                    f, j, first, val = x
                    if double and first:
                        active[r][c], shadow[r][c] = shadow[r][c], None
                    block = folds[f][0]
                    assert active[r][c] is not None and active[r][c][0] == block, "a MAC with a wrong weight"
                    if r > 0:
                        assert above is not None and above[:3] == (f, j, c), "a partial sum met a wrong input"
                        base = above[3]
                    else:
                        assert above is None
                        base = 0
                    new_ps[r][c] = (f, j, c, base + val * active[r][c][1])
                    mac_cycles.add(t)
                    if r == 0 and c == len(folds[f][2]) - 1 and first:
                        first_at_end[f] = t
                else:
                    new_ps[r][c] = above
        for c in range(C):
            y = new_ps[R - 1][c]
            if y is not None:
                f, j, col, val = y
                m, n = folds[f][3][j], folds[f][2][col]
                if (m, n) in acc:
                    counts["accumulator_reads"] += 1
                    acc[(m, n)] += val
                else:
                    acc[(m, n)] = val
                counts["accumulator_writes"] += 1
                last_leave = t
        ps = new_ps
        # ---- loads write at the end of cycle t
        for f, i, cyc in [w for w in load_rows if w[2] == t]:
            _, ks, ns, _ = folds[f]
            for c, n in enumerate(ns):
                reg = (folds[f][0], int(W[ks[i], n]))
                if double:
                    assert shadow[i][c] is None, "a shadow register overwritten before its switch"
                    shadow[i][c] = reg
                else:
                    active[i][c] = reg
                counts["weight_reads"] += 1
        load_rows = [w for w in load_rows if w[2] != t]
        t += 1

    out = np.zeros((d["M"], d["N"]), dtype=np.int64)
    for (m, n), v in acc.items():
        out[m, n] = v
    assert np.array_equal(out, I @ W), "the accumulators do not hold I @ W"
    total = last_leave + 1
    return {"total_cycles": total, "mac_cycles": len(mac_cycles),
            "utilization": d["M"] * d["N"] * d["K"] / (R * C * total),
            "exposed_load_cycles": len(load_cycles - mac_cycles), **counts}


def _case(gemm, rows, cols, mb, r, c, mt, dram):
    M, N, K = gemm
    arr = {"temporal": [["M", mt]] if mt > 1 else [], "spatial_x": [["N", c]] if c > 1 else [],
           "spatial_y": [["K", r]] if r > 1 else []}
    return {"workload": {"name": "t", "shape": "gemm", "dims": {"M": M, "N": N, "K": K},
                         "bits": {"I": 8, "W": 8, "O": 8, "psum": 24}},
            "architecture": {"name": "t", "levels": [
                {"name": "WeightReg", "capacity_bytes": {"W": mb}, "fanout": [1, 1], "multiple_buffering": mb},
                {"name": "UnifiedBuffer", "capacity_bytes": {"I": 1, "O": 1}, "fanout": [cols, rows]},
                {"name": "DRAM", "capacity_bytes": None, "fanout": [1, 1]}]},
            "mapping": {"levels": [{"temporal": [], "spatial_x": [], "spatial_y": []}, arr,
                                   {"temporal": dram, "spatial_x": [], "spatial_y": []}]}}


def _same(a, b):
    assert set(a) == set(b)
    for k in a:
        if k == "utilization":
            assert a[k] == pytest.approx(b[k], rel=1e-12)
        else:
            assert a[k] == b[k], (k, a[k], b[k])


# ------------------------------------------------------------------------------------------
# the reference against the simulator
# ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("seed", [101, 202])
def test_reference_matches_register_sim_on_random_cases(seed):
    for i in range(N_CASES // 2):
        case = json.loads(json.dumps(GEN(np.random.default_rng([seed, i]))))
        _same(REF(**case), register_sim(**case, seed=i))


def test_one_fold_fills_and_drains_with_skew():
    # 2 x 3 array, K=2, N=3, M=4: load rows 0..1 in cycles 0, 1; inputs from cycle 2; the last
    # partial sum (input row 3, column 2) is at row 1 in cycle 2+3+1+2 = 8: 9 cycles
    case = _case((4, 3, 2), 2, 3, 1, 2, 3, 4, [])
    got = REF(**case)
    assert got["total_cycles"] == 9 and got["mac_cycles"] == 7 and got["exposed_load_cycles"] == 2
    assert got["input_reads"] == 8 and got["weight_reads"] == 6
    assert got["accumulator_writes"] == 12 and got["accumulator_reads"] == 0
    _same(got, register_sim(**case))


def test_ragged_rows_still_drain_through_every_row():
    # K=1 on a 4-row array: the partial sums still pass rows 1..3
    short = REF(**_case((1, 1, 1), 4, 1, 1, 1, 1, 1, []))
    assert short["total_cycles"] == 1 + 4  # one load cycle, then rows 0..3
    _same(short, register_sim(**_case((1, 1, 1), 4, 1, 1, 1, 1, 1, [])))


def test_ragged_columns_only_cross_the_used_columns():
    wide = REF(**_case((1, 1, 1), 1, 6, 1, 1, 1, 1, []))
    assert wide["total_cycles"] == 2  # load, then one MAC in column 0 that leaves at once


def test_weights_kept_when_blocks_repeat():
    # M innermost at DRAM: the M-blocks reuse the loaded weights (one load per K/N block)
    case = _case((6, 4, 4), 2, 2, 1, 2, 2, 2, [["M", 3], ["K", 2], ["N", 2]])
    got = REF(**case)
    assert got["weight_reads"] == 16
    reload = _case((6, 4, 4), 2, 2, 1, 2, 2, 2, [["K", 2], ["N", 2], ["M", 3]])
    assert REF(**reload)["weight_reads"] == 48
    _same(got, register_sim(**case))
    _same(REF(**reload), register_sim(**reload))


def test_double_buffering_hides_loads_behind_long_streams():
    single = _case((12, 2, 8), 2, 2, 1, 2, 2, 12, [["K", 4]])
    double = _case((12, 2, 8), 2, 2, 2, 2, 2, 12, [["K", 4]])
    s, d = REF(**single), REF(**double)
    assert d["total_cycles"] < s["total_cycles"]
    assert d["exposed_load_cycles"] == 2 and s["exposed_load_cycles"] > 2  # only the first load is exposed
    _same(s, register_sim(**single))
    _same(d, register_sim(**double))


def test_double_buffered_load_waits_for_the_switch_across_row_zero():
    # one input row per fold: the next load waits until the previous fold's first input has
    # crossed row 0's used columns, so each fold costs its rows plus its columns
    case = _case((1, 5, 6), 3, 5, 2, 3, 5, 1, [["K", 2]])
    got = REF(**case)
    # fold 0: load 0..2, input at 3; fold 1: load from 3 + 5 = 8 to 10, input at 11,
    # last partial sum at 11 + 2 + 4 = 17
    assert got["total_cycles"] == 18
    _same(got, register_sim(**case))


def test_first_accumulation_reads_nothing():
    case = _case((3, 2, 5), 2, 2, 2, 2, 2, 3, [["K", 3]])
    got = REF(**case)
    assert got["accumulator_writes"] == 3 * 2 * 3 and got["accumulator_reads"] == 3 * 2 * 2


def test_utilization_counts_the_whole_array():
    case = _case((4, 2, 2), 4, 4, 1, 2, 2, 4, [])
    got = REF(**case)
    assert got["utilization"] == pytest.approx(16 / (16 * got["total_cycles"]))


# ------------------------------------------------------------------------------------------
# the real-size generator
# ------------------------------------------------------------------------------------------

def test_real_cases_are_real():
    for i in range(20):
        case = GEN(np.random.default_rng([5, i]), real=True)
        wl, arch = case["workload"], case["architecture"]
        assert wl["name"] in pm_shapes.LAYERS
        assert wl["dims"]["M"] * wl["dims"]["N"] * wl["dims"]["K"] >= MIN_REAL_MACS
        assert arch["levels"][1]["fanout"] in ([128, 128], [256, 256])
        out = REF(**case)
        assert 0 < out["utilization"] <= 1
        assert out["mac_cycles"] <= out["total_cycles"]


def test_narrow_cases_pass_2_31_in_a_count():
    """The ``narrow`` option: a 2048-token Llama projection whose narrow N blocks stream every input
    row thousands of times (input reads) or whose narrow K blocks send thousands of partial sums
    to every output (accumulator accesses); either count passes 2^31, where 32-bit counts wrap."""
    kinds = set()
    for i in range(8):
        case = GEN(np.random.default_rng([6, i]), real=True, narrow=True)
        wl, arch, arr = case["workload"], case["architecture"], case["mapping"]["levels"][1]
        side = arch["levels"][1]["fanout"][0]
        assert wl["name"] in pm_shapes.LAYERS and wl["dims"]["M"] == 2048
        out = REF(**case)
        M, N, K = (wl["dims"][d] for d in "MNK")
        r, c = (dict(arr[key]).get(d, 1) for key, d in (("spatial_y", "K"), ("spatial_x", "N")))
        assert out["input_reads"] == M * K * -(-N // c)
        assert out["accumulator_writes"] == M * N * -(-K // r)
        wide = [n for n, v in (("input_reads", out["input_reads"]), ("accumulator_writes", out["accumulator_writes"]))
                if v >= 2 ** 31]
        assert wide and min(r, c) < side // 2
        kinds.update(wide)
    assert kinds == {"input_reads", "accumulator_writes"}
