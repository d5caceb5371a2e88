"""The systolic references (F11, F12) against an independent, register-level simulation.

The simulator below never uses the closed forms. For every fold it steps a full ``rows x cols``
array cycle by cycle: operands enter at the left and top edges with one cycle of skew per row or
column and move one PE per cycle, WS/IS first shift their stationary tile in from the top (one
array row per cycle), partial sums move down and leave at the bottom. Padding PEs of a partial
fold see placeholder tokens, so an edge fold lasts as long as a full one (SCALE-Sim's
convention). It counts every real token injected at an edge (an SRAM read), every real output or
partial sum leaving the array (an SRAM write) and the last cycle in which any PE fires, and it
checks that the numbers it computes equal ``I @ W``.
"""

from __future__ import annotations

import json
import random

import numpy as np
import pytest

from support import trusted  # noqa: E402
_TRUSTED = trusted("perf-core")
GENERATORS = _TRUSTED.generators
REFERENCES = _TRUSTED.references
S = _TRUSTED.submodule("systolic")

N_CASES = 300


# ------------------------------------------------------------------------------------------
# the simulator
# ------------------------------------------------------------------------------------------

def _fold_os(I, W, O, m0, n0, r, c, R, C, T, stats):
    """Output stationary: PE (i, j) accumulates O[m0+i][n0+j]; K streams from the edges."""
    a = np.zeros((R, C), dtype=np.int64)
    a_ok = np.zeros((R, C), dtype=bool)
    a_real = np.zeros((R, C), dtype=bool)
    b = np.zeros((R, C), dtype=np.int64)
    b_ok = np.zeros((R, C), dtype=bool)
    b_real = np.zeros((R, C), dtype=bool)
    acc = np.zeros((R, C), dtype=np.int64)
    last = -1
    for cyc in range(T + R + C + 2):  # a safe bound: nothing is in flight after it
        for arr in (a, a_ok, a_real):
            arr[:, 1:] = arr[:, :-1].copy()
        for arr in (b, b_ok, b_real):
            arr[1:, :] = arr[:-1, :].copy()
        for i in range(R):  # the left edge: row i sees stream index cyc - i
            t = cyc - i
            a_ok[i, 0] = 0 <= t < T
            a_real[i, 0] = a_ok[i, 0] and i < r
            a[i, 0] = I[m0 + i, t] if a_real[i, 0] else 0
            stats["ifmap_reads"] += int(a_real[i, 0])
        for j in range(C):  # the top edge: column j sees stream index cyc - j
            t = cyc - j
            b_ok[0, j] = 0 <= t < T
            b_real[0, j] = b_ok[0, j] and j < c
            b[0, j] = W[t, n0 + j] if b_real[0, j] else 0
            stats["filter_reads"] += int(b_real[0, j])
        fire = a_ok & b_ok
        assert np.array_equal(fire, a_ok) and np.array_equal(fire, b_ok), "operands out of step"
        if fire.any():
            last = cyc
        acc += np.where(fire, a * b, 0)
        stats["macs"] += int((fire & a_real & b_real).sum())
    O[m0:m0 + r, n0:n0 + c] += acc[:r, :c]
    stats["ofmap_writes"] += r * c  # each output leaves the array once, when the fold ends
    return last + 1


def _fold_stationary(stat, stream, T, R, C, r, c, emit, stats, stat_key, stream_key):
    """WS / IS: `stat[i][j]` is shifted in from the top (R cycles), then `stream(i, t)` enters row i
    and moves right while partial sums move down; `emit(t, j, value)` takes a real partial sum."""
    held = np.zeros((R, C), dtype=np.int64)
    for p in range(R):  # cycle p: shift down one row, the top row takes array row R-1-p
        held[1:, :] = held[:-1, :].copy()
        i = R - 1 - p
        for j in range(C):
            real = i < r and j < c
            held[0, j] = stat[i][j] if real else 0
            stats[stat_key] += int(real)
    a = np.zeros((R, C), dtype=np.int64)
    a_ok = np.zeros((R, C), dtype=bool)
    psum = np.zeros((R, C), dtype=np.int64)
    last = -1
    for cyc in range(R, R + T + R + C + 2):
        a[:, 1:] = a[:, :-1].copy()
        a_ok[:, 1:] = a_ok[:, :-1].copy()
        for i in range(R):
            t = cyc - R - i
            a_ok[i, 0] = 0 <= t < T
            real = a_ok[i, 0] and i < r
            a[i, 0] = stream(i, t) if real else 0
            stats[stream_key] += int(real)
        incoming = np.zeros((R, C), dtype=np.int64)
        incoming[1:, :] = psum[:-1, :]
        psum = incoming + np.where(a_ok, a * held, 0)
        if a_ok.any():
            last = cyc
            real_rows = np.arange(R)[:, None] < r
            real_cols = np.arange(C)[None, :] < c
            stats["macs"] += int((a_ok & real_rows & real_cols).sum())
        for j in range(C):  # the bottom row hands its partial sums to the ofmap SRAM
            if a_ok[R - 1, j] and j < c:
                t = cyc - R - (R - 1) - j
                emit(t, j, int(psum[R - 1, j]))
                stats["ofmap_writes"] += 1
    return last + 1


def simulate(dataflow, M, N, K, R, C, seed=0):
    rng = np.random.default_rng(seed)
    I = rng.integers(-4, 5, size=(M, K))
    W = rng.integers(-4, 5, size=(K, N))
    O = np.zeros((M, N), dtype=np.int64)
    stats = {"ifmap_reads": 0, "filter_reads": 0, "ofmap_writes": 0, "macs": 0}
    spans, used = [], []
    Sr, Sc = {"os": (M, N), "ws": (K, N), "is": (K, M)}[dataflow]
    for r0 in range(0, Sr, R):
        for c0 in range(0, Sc, C):
            r, c = min(R, Sr - r0), min(C, Sc - c0)
            used.append(r * c)
            if dataflow == "os":
                spans.append(_fold_os(I, W, O, r0, c0, r, c, R, C, K, stats))
            elif dataflow == "ws":  # PE (i, j) holds W[r0+i][c0+j]; rows of I stream through
                def emit(t, j, v, c0=c0):
                    O[t, c0 + j] += v
                stat = [[W[r0 + i, c0 + j] if i < r and j < c else 0 for j in range(C)] for i in range(R)]
                spans.append(_fold_stationary(stat, lambda i, t, r0=r0: I[t, r0 + i], M, R, C, r, c,
                                              emit, stats, "filter_reads", "ifmap_reads"))
            else:  # PE (i, j) holds I[c0+j][r0+i]; rows of W stream through
                def emit(t, j, v, c0=c0):
                    O[c0 + j, t] += v
                stat = [[I[c0 + j, r0 + i] if i < r and j < c else 0 for j in range(C)] for i in range(R)]
                spans.append(_fold_stationary(stat, lambda i, t, r0=r0: W[r0 + i, t], N, R, C, r, c,
                                              emit, stats, "ifmap_reads", "filter_reads"))
    assert np.array_equal(O, I @ W), f"{dataflow}: the simulated array computed the wrong product"
    assert stats["macs"] == M * N * K
    cycles = sum(spans) - 1  # the last busy cycle, numbering from 0
    return {
        "folds": len(spans),
        "cycles": cycles,
        "ifmap_reads": stats["ifmap_reads"],
        "filter_reads": stats["filter_reads"],
        "ofmap_writes": stats["ofmap_writes"],
        "mapping_efficiency": float(np.mean([u / (R * C) for u in used])),
        "utilization": stats["macs"] / (R * C * cycles),
    }


def _cases(seed, n=N_CASES, max_dim=10, max_side=5):
    rnd = random.Random(seed)
    out = []
    while len(out) < n:
        R, C = rnd.randint(1, max_side), rnd.randint(1, max_side)
        if R * C == 1:
            continue
        out.append((rnd.randint(1, max_dim), rnd.randint(1, max_dim), rnd.randint(1, max_dim), R, C))
    return out


# ------------------------------------------------------------------------------------------
# the simulator itself, and golden numbers
# ------------------------------------------------------------------------------------------

def test_simulator_golden_numbers():
    # SCALE-Sim: OS, 8x8 array, M = N = K = 64 -> 4991 cycles
    assert simulate("os", 64, 64, 64, 8, 8)["cycles"] == 4991


def test_golden_cycles():
    assert S.total_cycles("os", 64, 64, 64, 8, 8) == 4991
    assert S.total_cycles("ws", 256, 256, 256, 32, 32) == 22399


def test_golden_scalesim_report_values():
    # what SCALE-Sim 3.0.0 reports for OS, 8x8 array, 64^3 (COMPUTE and DETAILED_ACCESS reports)
    acc = S.sram_accesses("os", 64, 64, 64, 8, 8)
    assert acc["ifmap_reads"] == 32768 and acc["filter_reads"] == 32768
    assert acc["ofmap_writes"] == 4096
    assert S.scalesim_os_ofmap_writes(64, 64, 64, 8, 8) == 5120
    assert S.utilization("os", 64, 64, 64, 8, 8) == pytest.approx(0.8206772189941896, rel=1e-12)
    assert S.mapping_efficiency("os", 64, 64, 64, 8, 8) == 1.0


# ------------------------------------------------------------------------------------------
# closed forms == simulation, on random small cases
# ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dataflow", S.DATAFLOWS)
def test_closed_forms_match_simulation(dataflow):
    seed = {"os": 11, "ws": 12, "is": 13}[dataflow]
    for idx, (M, N, K, R, C) in enumerate(_cases(seed)):
        sim = simulate(dataflow, M, N, K, R, C, seed=idx)
        fr, fc = S.folds(dataflow, M, N, K, R, C)
        closed = {
            "folds": fr * fc,
            "cycles": S.total_cycles(dataflow, M, N, K, R, C),
            **S.sram_accesses(dataflow, M, N, K, R, C),
        }
        case = (dataflow, M, N, K, R, C)
        for key, value in closed.items():
            assert sim[key] == value, (case, key, sim[key], value)
        assert sim["mapping_efficiency"] == pytest.approx(S.mapping_efficiency(dataflow, M, N, K, R, C), rel=1e-12)
        assert sim["utilization"] == pytest.approx(S.utilization(dataflow, M, N, K, R, C), rel=1e-12)


def _brute_output_size(size, kernel, stride):
    return sum(1 for start in range(0, size) if start % stride == 0 and start + kernel <= size)


def test_references_match_simulation():
    rnd = random.Random(21)
    for idx, (M, N, K, R, C) in enumerate(_cases(22, n=N_CASES)):
        gemm, array = {"M": M, "N": N, "K": K}, {"rows": R, "cols": C}
        sims = {df: simulate(df, M, N, K, R, C, seed=idx) for df in S.DATAFLOWS}

        os_ref = REFERENCES["systolic.os_cycles"](gemm, array)
        assert os_ref["folds"] == sims["os"]["folds"] == os_ref["row_folds"] * os_ref["col_folds"]
        assert os_ref["cycles"] == sims["os"]["cycles"]
        assert os_ref["mapping_efficiency"] == pytest.approx(sims["os"]["mapping_efficiency"], rel=1e-12)
        assert os_ref["utilization"] == pytest.approx(sims["os"]["utilization"], rel=1e-12)

        df = rnd.choice(S.DATAFLOWS)
        acc = REFERENCES["systolic.sram_access_counts"](gemm, array, df)
        assert acc["row_folds"] * acc["col_folds"] == sims[df]["folds"]
        for key in ("ifmap_reads", "filter_reads", "ofmap_writes"):
            assert acc[key] == sims[df][key], (df, key)

        energy = {"ifmap_read_pj": rnd.randint(1, 9), "filter_read_pj": rnd.randint(1, 9),
                  "ofmap_write_pj": rnd.randint(1, 20)}
        en = REFERENCES["systolic.dataflow_sram_energy"](gemm, array, energy)
        e_sim = {d: sims[d]["ifmap_reads"] * energy["ifmap_read_pj"]
                 + sims[d]["filter_reads"] * energy["filter_read_pj"]
                 + sims[d]["ofmap_writes"] * energy["ofmap_write_pj"] for d in S.DATAFLOWS}
        for d in S.DATAFLOWS:
            assert en["cycles"][d] == sims[d]["cycles"]
            assert en["energy_pj"][d] == e_sim[d]
            for key in ("ifmap_reads", "filter_reads", "ofmap_writes"):
                assert en[key][d] == sims[d][key]
        ranked = sorted(S.DATAFLOWS, key=lambda d: (e_sim[d] * sims[d]["cycles"], S.DATAFLOWS.index(d)))
        assert en["best_dataflow"] == ranked[0]


def test_conv_reference_matches_simulation():
    rnd = random.Random(31)
    for idx in range(N_CASES):
        fh, fw, stride = rnd.randint(1, 3), rnd.randint(1, 3), rnd.randint(1, 3)
        layer = {"ifmap_h": rnd.randint(fh, 8), "ifmap_w": rnd.randint(fw, 8), "filter_h": fh,
                 "filter_w": fw, "channels": rnd.randint(1, 2), "num_filters": rnd.randint(1, 8),
                 "stride": stride}
        R, C = rnd.choice([(1, 2), (2, 1), (2, 3), (3, 2), (4, 4), (3, 5), (5, 2)])
        ref = REFERENCES["systolic.conv_dataflow_cycles"](layer, {"rows": R, "cols": C})
        P = _brute_output_size(layer["ifmap_h"], fh, stride)
        Q = _brute_output_size(layer["ifmap_w"], fw, stride)
        M, N, K = P * Q, layer["num_filters"], fh * fw * layer["channels"]
        assert (ref["P"], ref["Q"], ref["M"], ref["N"], ref["K"]) == (P, Q, M, N, K)
        sims = {df: simulate(df, M, N, K, R, C, seed=idx) for df in S.DATAFLOWS}
        for df in S.DATAFLOWS:
            assert ref["cycles"][df] == sims[df]["cycles"]
            assert ref["folds"][df] == sims[df]["folds"]
        best = sorted(S.DATAFLOWS, key=lambda d: (sims[d]["cycles"], S.DATAFLOWS.index(d)))[0]
        assert ref["best_dataflow"] == best
        assert ref["best_utilization"] == pytest.approx(sims[best]["utilization"], rel=1e-12)


# ------------------------------------------------------------------------------------------
# worked examples of the specs, ties, generators
# ------------------------------------------------------------------------------------------

def test_spec_worked_examples():
    r = REFERENCES["systolic.os_cycles"]({"M": 10, "N": 5, "K": 3}, {"rows": 4, "cols": 8})
    assert (r["row_folds"], r["col_folds"], r["folds"], r["cycles"]) == (3, 1, 3, 38)
    assert r["mapping_efficiency"] == pytest.approx(50 / 96) and r["utilization"] == pytest.approx(150 / 1216)

    layer = {"ifmap_h": 8, "ifmap_w": 8, "filter_h": 3, "filter_w": 3, "channels": 2, "num_filters": 4, "stride": 2}
    r = REFERENCES["systolic.conv_dataflow_cycles"](layer, {"rows": 4, "cols": 8})
    assert (r["P"], r["Q"], r["M"], r["N"], r["K"]) == (3, 3, 9, 4, 18)
    assert r["folds"] == {"os": 3, "ws": 5, "is": 10} and r["cycles"] == {"os": 83, "ws": 114, "is": 179}
    assert r["best_dataflow"] == "os" and r["best_utilization"] == pytest.approx(648 / 2656)

    g, a = {"M": 10, "N": 5, "K": 6}, {"rows": 4, "cols": 3}
    expect = {"os": (3, 2, 120, 90, 50), "ws": (2, 2, 120, 30, 100), "is": (2, 4, 60, 120, 100)}
    for df, want in expect.items():
        r = REFERENCES["systolic.sram_access_counts"](g, a, df)
        assert (r["row_folds"], r["col_folds"], r["ifmap_reads"], r["filter_reads"], r["ofmap_writes"]) == want

    r = REFERENCES["systolic.dataflow_sram_energy"](g, a, {"ifmap_read_pj": 2, "filter_read_pj": 3, "ofmap_write_pj": 5})
    assert r["cycles"] == {"os": 65, "ws": 75, "is": 111}
    assert r["energy_pj"] == {"os": 760, "ws": 830, "is": 980} and r["best_dataflow"] == "os"


def test_first_minimum_tie_order():
    assert S.first_minimum({"os": 5, "ws": 5, "is": 5}) == "os"
    assert S.first_minimum({"os": 6, "ws": 5, "is": 5}) == "ws"
    assert S.first_minimum({"os": 6, "ws": 7, "is": 5}) == "is"


def _draw(key, seed, n, **options):
    gen = GENERATORS[key]
    return [gen(np.random.default_rng([seed, i]), **options) for i in range(n)]


@pytest.mark.parametrize("key", ["systolic.gemm_array", "systolic.gemm_array_dataflow",
                                 "systolic.gemm_array_energy", "systolic.conv_array"])
def test_generators_deterministic_and_json(key):
    a, b = _draw(key, 5, 40), _draw(key, 5, 40)
    assert json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)
    for args in a:
        arr = args["array"]
        assert arr["rows"] * arr["cols"] >= 2


def test_generators_produce_the_traps():
    gemms = _draw("systolic.gemm_array", 1101, 100)
    assert sum(g["array"]["rows"] != g["array"]["cols"] for g in gemms) >= 50
    assert any(g["gemm"]["M"] < g["array"]["rows"] for g in gemms)
    assert any(g["gemm"]["M"] % g["array"]["rows"] for g in gemms)
    assert any(g["gemm"]["N"] % g["array"]["cols"] == 0 and g["gemm"]["N"] > g["array"]["cols"] for g in gemms)

    convs = _draw("systolic.conv_array", 1111, 100)
    refs = [REFERENCES["systolic.conv_dataflow_cycles"](**c) for c in convs]
    assert any((c["layer"]["ifmap_h"] - c["layer"]["filter_h"]) % c["layer"]["stride"] for c in convs)
    ties = [r for r in refs if r["cycles"]["ws"] == r["cycles"]["is"] == min(r["cycles"].values())]
    assert len(ties) >= 5
    assert {r["best_dataflow"] for r in refs} == set(S.DATAFLOWS)

    energy = _draw("systolic.gemm_array_energy", 1211, 100)
    refs = [REFERENCES["systolic.dataflow_sram_energy"](**e) for e in energy]
    edp = [{d: r["energy_pj"][d] * r["cycles"][d] for d in S.DATAFLOWS} for r in refs]
    assert sum(x["ws"] == x["is"] == min(x.values()) for x in edp) >= 5
    assert {r["best_dataflow"] for r in refs} == set(S.DATAFLOWS)
