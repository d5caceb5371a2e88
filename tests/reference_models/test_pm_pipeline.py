"""F17 double-buffered pipeline (reference_models.pm_pipeline) against brute force.

The brute-force model here is written from the problem's spec.md and shares no code with the
reference: it runs the whole loop nest MAC by MAC in schedule order, files every real MAC under
its DRAM iteration to build the global buffer's tiles as sets of elements and the set of time
steps with a real MAC, finds what moves by set differences, and then steps the DRAM port, the
slots and the compute engine one cycle at a time. Also: hand-worked cases for the conventions
the spec pins (delta reuse of input rows, the bounding box of a strided window, the first
partial-sum read elided, partial sums at psum bits, ragged steps skipped, the tie on the port,
zero-byte transfers, the read-after-write wait, slots freed at the end of the write-back), and
the real-size generator (real layers, every input inside the domain; the reference's speed
is measured by benchmarks/bench_references.py).
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from support import trusted  # noqa: E402
_TRUSTED = trusted("perf-model")
GENERATORS = _TRUSTED.generators
REFERENCES = _TRUSTED.references
pm_pipeline = _TRUSTED.submodule("pm_pipeline")

N_CASES = 300
DIMS = {"conv": ("N", "K", "C", "P", "Q", "R", "S"), "depthwise": ("N", "C", "P", "Q", "R", "S"),
        "gemm": ("M", "N", "K")}


# ------------------------------------------------------------------------------------------
# the brute-force model
# ------------------------------------------------------------------------------------------

def _element_fn(workload):
    shape = workload["shape"]
    if shape == "gemm":
        return lambda v: {"I": (v["M"], v["K"]), "W": (v["K"], v["N"]), "O": (v["M"], v["N"])}, None
    (hin, win), (sh, sw) = workload["input_hw"], workload["stride"]
    (dh, dw), (ph, pw) = workload["dilation"], workload["padding"]

    def fn(v):
        h, w = v["P"] * sh + v["R"] * dh - ph, v["Q"] * sw + v["S"] * dw - pw
        ch = "K" if shape == "conv" else "C"
        wt = (v["K"], v["C"], v["R"], v["S"]) if shape == "conv" else (v["C"], v["R"], v["S"])
        return {"I": (v["N"], v["C"], h, w), "W": wt, "O": (v["N"], v[ch], v["P"], v["Q"])}
    return fn, (hin, win)


def brute_iterations(workload, mapping):
    """Per DRAM iteration (schedule order): tiles as element sets and the real time steps."""
    dims = DIMS[workload["shape"]]
    size = workload["dims"]
    depth = len(mapping["levels"])
    nest = []  # outermost first: (dim, factor, level, temporal?)
    for lv in reversed(range(depth)):
        m = mapping["levels"][lv]
        for d, f in reversed(m.get("temporal", [])):
            nest.append((d, f, lv, True))
        for d, f in reversed(m.get("spatial_y", [])):
            nest.append((d, f, lv, False))
        for d, f in reversed(m.get("spatial_x", [])):
            nest.append((d, f, lv, False))
    place = []  # the digit value of each loop: the factors of inner loops of the same dimension
    for i, (d, _, _, _) in enumerate(nest):
        w = 1
        for d2, f2, _, _ in nest[i + 1:]:
            if d2 == d:
                w *= f2
        place.append(w)
    fn, hw = _element_fn(workload)
    iters: dict[tuple, dict] = {}
    order = []
    for digits in itertools.product(*(range(f) for _, f, _, _ in nest)):
        key = tuple(x for x, lp in zip(digits, nest) if lp[2] == depth - 1)
        if key not in iters:
            iters[key] = {"span": {}, "steps": set()}
            order.append(key)
        v = dict.fromkeys(dims, 0)
        for x, lp, w in zip(digits, nest, place):
            v[lp[0]] += x * w
        if any(v[d] >= size[d] for d in dims):
            continue
        it = iters[key]
        it["steps"].add(tuple(x for x, lp in zip(digits, nest) if lp[3] and lp[2] < depth - 1))
        for t, e in fn(v).items():
            lo, hi = it["span"].setdefault(t, (list(e), list(e)))
            it["span"][t] = ([min(a, b) for a, b in zip(lo, e)], [max(a, b) for a, b in zip(hi, e)])
    out = []
    for key in order:
        it = iters[key]
        tiles = {}
        for t in ("I", "W", "O"):
            lo, hi = it["span"][t]
            ranges = [range(a, b + 1) for a, b in zip(lo, hi)]
            if t == "I" and hw is not None:
                ranges[2] = range(max(lo[2], 0), min(hi[2], hw[0] - 1) + 1)
                ranges[3] = range(max(lo[3], 0), min(hi[3], hw[1] - 1) + 1)
            tiles[t] = set(itertools.product(*ranges))
        out.append((tiles, len(it["steps"])))
    return out


def packed(n, bits):
    total_bits, nbytes = n * bits, 0
    while nbytes * 8 < total_bits:
        nbytes += 1
    return nbytes


def brute_transfers(workload, mapping):
    bits = workload["bits"]
    its = brute_iterations(workload, mapping)
    T = len(its)
    empty = {"I": set(), "W": set(), "O": set()}
    ever, last_wrote = set(), {}
    rows = []
    for t, (tiles, steps) in enumerate(its):
        before = its[t - 1][0] if t else empty
        after = its[t + 1][0]["O"] if t + 1 < T else set()
        later = set().union(*(its[s][0]["O"] for s in range(t + 1, T))) if t + 1 < T else set()
        back = (tiles["O"] - before["O"]) & ever
        waits = {last_wrote[e] for e in back}
        ever |= tiles["O"]
        gone = tiles["O"] - after
        done = gone - later
        for e in gone:
            last_wrote[e] = t
        rows.append({
            "load": packed(len(tiles["I"] - before["I"]), bits["I"]) + packed(len(tiles["W"] - before["W"]), bits["W"])
            + packed(len(back), bits["psum"]),
            "store": packed(len(done), bits["O"]) + packed(len(gone - done), bits["psum"]),
            "steps": steps, "waits": waits})
    return rows


def brute_pipeline(rows, slots, bpc):
    """Cycle by cycle. Returns per iteration the compute start and end, and the latency."""
    T = len(rows)
    INF = None
    load_ready, load_done = [INF] * T, [INF] * T
    wb_ready, wb_done = [INF] * T, [INF] * T
    c_start, c_end = [INF] * T, [INF] * T
    slot_back = [INF] * T
    port_job, port_free_at = None, 0
    cyc = 0
    while wb_done[T - 1] is None:
        if port_job is not None and port_free_at == cyc:
            kind, k = port_job
            if kind == "load":
                load_done[k] = cyc
            else:
                wb_done[k] = slot_back[k] = cyc
            port_job = None
        for _ in range(4 * T + 4):  # settle everything that happens at this cycle
            moved = False
            for t in range(T):
                if load_ready[t] is None and (t == 0 or load_done[t - 1] is not None) \
                        and (t < slots or slot_back[t - slots] is not None) \
                        and all(wb_done[s] is not None for s in rows[t]["waits"]):
                    load_ready[t] = cyc
                    moved = True
                if load_ready[t] is not None and load_done[t] is None and rows[t]["load"] == 0:
                    load_done[t] = cyc
                    moved = True
                if c_start[t] is None and load_done[t] is not None and (t == 0 or c_end[t - 1] is not None) \
                        and (t == 0 or c_end[t - 1] <= cyc):
                    c_start[t] = cyc
                    moved = True
                if c_start[t] is not None and c_end[t] is None and c_start[t] + rows[t]["steps"] == cyc:
                    c_end[t] = cyc
                    moved = True
                if c_end[t] is not None and wb_ready[t] is None and (t == 0 or wb_ready[t - 1] is not None):
                    wb_ready[t] = cyc
                    moved = True
                if wb_ready[t] is not None and wb_done[t] is None and rows[t]["store"] == 0:
                    wb_done[t] = slot_back[t] = cyc
                    moved = True
            if not moved:
                break
        if port_job is None:
            best = None
            for t in range(T):
                if wb_ready[t] is not None and wb_done[t] is None and rows[t]["store"] > 0:
                    cand = (wb_ready[t], 0, "wb", t)
                    best = cand if best is None or cand < best else best
                if load_ready[t] is not None and load_done[t] is None and rows[t]["load"] > 0:
                    cand = (load_ready[t], 1, "load", t)
                    best = cand if best is None or cand < best else best
            if best is not None:
                _, _, kind, k = best
                size = rows[k]["load" if kind == "load" else "store"]
                cycles = 0
                while cycles * bpc < size:
                    cycles += 1
                port_job, port_free_at = (kind, k), cyc + cycles
        cyc += 1
    return c_start, c_end, wb_done[T - 1]


def brute(workload, architecture, mapping):
    rows = brute_transfers(workload, mapping)
    bpc = architecture["levels"][-1]["bytes_per_cycle"]
    b = architecture["levels"][-2].get("multiple_buffering", 1)
    runs = {s: brute_pipeline(rows, s, bpc) for s in (1, 2, 3)}
    cs, ce, total = runs[b]
    busy = sum(r["steps"] for r in rows)
    idle = sum(1 for c in range(ce[-1]) if not any(cs[t] <= c < ce[t] for t in range(len(rows))))
    return {"read_bytes": sum(r["load"] for r in rows), "write_bytes": sum(r["store"] for r in rows),
            "compute_cycles": busy, "cycles": total, "compute_idle_cycles": idle,
            "stalled_iterations": sum(1 for t in range(len(rows)) if cs[t] > (ce[t - 1] if t else 0)),
            "cycles_by_buffering": {str(s): runs[s][2] for s in (1, 2, 3)}}


# ------------------------------------------------------------------------------------------
# random small cases
# ------------------------------------------------------------------------------------------

def test_registered():
    assert REFERENCES["pm_pipeline.pipeline"] is pm_pipeline.pipeline
    assert GENERATORS["pm_pipeline.pipeline"] is pm_pipeline.gen_pipeline


@pytest.mark.parametrize("chunk", range(6))
def test_reference_matches_brute_force(chunk):
    per = N_CASES // 6
    for i in range(chunk * per, (chunk + 1) * per):
        case = pm_pipeline.gen_pipeline(np.random.default_rng([17, i]))
        assert pm_pipeline.pipeline(**case) == brute(**case), (i, case)


def test_the_random_cases_exercise_every_rule():
    seen = dict.fromkeys(("readback", "empty_load", "empty_store", "ragged_steps", "halo", "b1", "b3",
                          "buffering_matters", "wait_on_write"), 0)
    for i in range(N_CASES):
        case = pm_pipeline.gen_pipeline(np.random.default_rng([17, i]))
        tab = pm_pipeline.iteration_table(**case)
        seen["readback"] += int(tab["readback"].sum() > 0)
        seen["empty_load"] += int((tab["load_bytes"] == 0).any())
        seen["empty_store"] += int((tab["store_bytes"] == 0).any())
        full = max(tab["compute"])
        seen["ragged_steps"] += int((tab["compute"] < full).any())
        seen["halo"] += int(((0 < tab["fills"]["I"]) & (tab["fills"]["I"] < tab["elems"]["I"])).any())
        b = case["architecture"]["levels"][-2]["multiple_buffering"]
        seen["b1"] += int(b == 1)
        seen["b3"] += int(b == 3)
        r = pm_pipeline.pipeline(**case)
        seen["buffering_matters"] += int(len(set(r["cycles_by_buffering"].values())) > 1)
        seen["wait_on_write"] += int((tab["hazard"] >= 0).any())
    assert all(v >= 10 for v in seen.values()), seen


# ------------------------------------------------------------------------------------------
# hand-worked cases (the conventions the spec pins)
# ------------------------------------------------------------------------------------------

def _arch(b, bpc, fanout=(1, 1)):
    return {"name": "t", "levels": [
        {"name": "GLB", "capacity_bytes": 4096, "fanout": list(fanout), "multiple_buffering": b},
        {"name": "DRAM", "capacity_bytes": None, "fanout": [1, 1], "bytes_per_cycle": bpc}]}


def _gemm(m, n, k, bits=(8, 8, 8, 16)):
    return {"name": "g", "shape": "gemm", "dims": {"M": m, "N": n, "K": k},
            "bits": dict(zip(("I", "W", "O", "psum"), bits))}


def test_output_stationary_gemm_by_hand():
    # t0 (K0 N0), t1 (K1 N0), t2 (K0 N1), t3 (K1 N1): loads of 2 inputs and 1 weight, 2 cycles of
    # compute each; the output column leaves after t1 and t3, complete.
    wl = _gemm(2, 2, 2)
    mp = {"levels": [{"temporal": [["M", 2]]}, {"temporal": [["K", 2], ["N", 2]]}]}
    out = pm_pipeline.pipeline(wl, _arch(2, 1), mp)
    assert out == {"read_bytes": 12, "write_bytes": 4, "compute_cycles": 8, "cycles": 18,
                   "compute_idle_cycles": 8, "stalled_iterations": 4,
                   "cycles_by_buffering": {"1": 24, "2": 18, "3": 18}}
    assert out == brute(wl, _arch(2, 1), mp)


def test_partial_sums_read_back_only_on_return_at_psum_bits():
    # K outermost: the output columns leave after t0 and t1 as partial sums (16 bits) and come back
    # at t2 and t3 (read back at 16 bits); the first entries read nothing.
    wl = _gemm(2, 2, 2)
    mp = {"levels": [{"temporal": [["M", 2]]}, {"temporal": [["N", 2], ["K", 2]]}]}
    tab = pm_pipeline.iteration_table(wl, _arch(2, 1), mp)
    assert tab["readback"].tolist() == [0, 0, 2, 2]
    assert tab["partial"].tolist() == [2, 2, 0, 0] and tab["complete"].tolist() == [0, 0, 2, 2]
    assert tab["store_bytes"].tolist() == [4, 4, 2, 2]
    assert tab["load_bytes"].tolist() == [3, 1, 7, 5]  # inputs only when K changes
    assert tab["hazard"].tolist() == [-1, -1, 0, 1]
    out = pm_pipeline.pipeline(wl, _arch(2, 1), mp)
    assert out["read_bytes"] == 16 and out["write_bytes"] == 12
    assert out == brute(wl, _arch(2, 1), mp)


def _conv(p, r, hin, stride=1, pad=0, bits=(8, 8, 8, 8)):
    return {"name": "c", "shape": "conv", "dims": {"N": 1, "K": 1, "C": 1, "P": p, "Q": 1, "R": r, "S": 1},
            "input_hw": [hin, 1], "stride": [stride, 1], "dilation": [1, 1], "padding": [pad, 0],
            "bits": dict(zip(("I", "W", "O", "psum"), bits))}


def test_input_rows_shared_by_consecutive_windows_stay():
    wl = _conv(4, 3, 6)
    mp = {"levels": [{"temporal": [["R", 3], ["P", 2]]}, {"temporal": [["P", 2]]}]}
    tab = pm_pipeline.iteration_table(wl, _arch(1, 1), mp)
    assert tab["fills"]["I"].tolist() == [4, 2]  # rows 0-3, then 2-5: only rows 4 and 5 arrive
    assert tab["fills"]["W"].tolist() == [3, 0]
    assert pm_pipeline.pipeline(wl, _arch(1, 1), mp) == brute(wl, _arch(1, 1), mp)


def test_a_strided_window_holds_its_bounding_box():
    wl = _conv(4, 1, 7, stride=2)  # a P tile of 2 uses rows 0 and 2: three rows are held
    mp = {"levels": [{"temporal": [["P", 2]]}, {"temporal": [["P", 2]]}]}
    tab = pm_pipeline.iteration_table(wl, _arch(1, 1), mp)
    assert tab["fills"]["I"].tolist() == [3, 3]
    assert pm_pipeline.pipeline(wl, _arch(1, 1), mp) == brute(wl, _arch(1, 1), mp)


def test_padding_rows_never_move():
    wl = _conv(3, 3, 3, pad=1)
    mp = {"levels": [{"temporal": [["R", 3]]}, {"temporal": [["P", 3]]}]}
    tab = pm_pipeline.iteration_table(wl, _arch(1, 1), mp)
    assert tab["fills"]["I"].tolist() == [2, 1, 0]  # rows 0-1, 0-2, 1-2: the last load is empty
    assert tab["load_bytes"].tolist() == [5, 1, 0]
    assert pm_pipeline.pipeline(wl, _arch(2, 1), mp) == brute(wl, _arch(2, 1), mp)


def test_ragged_iterations_skip_empty_steps():
    wl = _gemm(5, 1, 1)
    mp = {"levels": [{"temporal": [["M", 3]]}, {"temporal": [["M", 2]]}]}
    tab = pm_pipeline.iteration_table(wl, _arch(1, 1), mp)
    assert tab["compute"].tolist() == [3, 2]
    # a spatial loop inside a temporal one of the same dimension: the last iteration starts at 4,
    # its temporal offsets are 0 and 2, and only the first gives a real index (4; lane 1 gives 5)
    mp = {"levels": [{"temporal": [["M", 2]], "spatial_x": [["M", 2]]}, {"temporal": [["M", 2]]}]}
    tab = pm_pipeline.iteration_table(wl, _arch(1, 1, fanout=(2, 1)), mp)
    assert tab["compute"].tolist() == [2, 1]
    assert pm_pipeline.pipeline(wl, _arch(1, 1, fanout=(2, 1)), mp) == brute(wl, _arch(1, 1, fanout=(2, 1)), mp)


def test_port_tie_goes_to_the_write_back():
    # L0 [0, 1), C0 [1, 3), L1 [1, 3); at cycle 3 the write-back of 0 and the load of 2 both
    # become ready: the write-back goes first.
    s = pm_pipeline.schedule([1, 2, 1], [2, 2, 2], [1, 1, 1], [-1, -1, -1], 3)
    assert s["store_end"][0] == 4 and s["load_end"][2] == 5
    # the longer-waiting transfer goes first otherwise: the load of 2 (ready at 3) before the
    # write-back of 0 (ready at 4)
    s = pm_pipeline.schedule([1, 2, 1], [3, 2, 2], [1, 1, 1], [-1, -1, -1], 3)
    assert s["load_end"][2] == 4 and s["store_end"][0] == 5


def test_zero_byte_transfers_take_no_port_time():
    s = pm_pipeline.schedule([2, 0, 1], [1, 1, 1], [0, 0, 3], [-1, -1, -1], 2)
    assert s["load_end"] == [2, 2, 4]  # the empty load 1 is done as soon as load 0 is
    assert s["compute_end"] == [3, 4, 5] and s["store_end"] == [3, 4, 8]


def test_slot_is_freed_when_the_write_back_ends():
    # one slot: the load of 1 waits for the write-back of 0 (4 cycles), not its compute end
    s = pm_pipeline.schedule([1, 1], [1, 1], [4, 1], [-1, -1], 1)
    assert s["load_end"] == [1, 7] and s["store_end"] == [6, 9]


def test_a_read_back_waits_for_its_write_back():
    # three slots; iteration 2 reads back what iteration 0 wrote: it waits for that write-back
    s = pm_pipeline.schedule([1, 1, 1], [5, 1, 1], [2, 0, 0], [-1, -1, 0], 3)
    assert s["store_end"][0] == 8 and s["load_end"][2] == 9


# ------------------------------------------------------------------------------------------
# the real-size generator
# ------------------------------------------------------------------------------------------

def test_real_cases_are_real():
    for i in range(6):
        case = pm_pipeline.gen_pipeline(np.random.default_rng([1717, i]), real=True)
        assert case["workload"]["name"].split(".")[0] in ("resnet50", "mobilenetv2", "bert-base", "llama2-7b", "llama3-8b")
        assert 800 <= pm_pipeline._iterations(case["mapping"]) <= 12000
        out = pm_pipeline.pipeline(**case)
        assert out["cycles"] == out["cycles_by_buffering"][str(case["architecture"]["levels"][-2]["multiple_buffering"])]
        assert out["cycles"] >= max(out["compute_cycles"], 1)
        glb = case["mapping"]["levels"][-2]
        assert not glb.get("bypass")
