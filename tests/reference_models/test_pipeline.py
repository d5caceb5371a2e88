"""The pipeline reference against a discrete-event simulation that knows nothing of the
recurrence: engines, slot counters, completions processed before starts at every event time."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from support import trusted  # noqa: E402
_TRUSTED = trusted("perf-core")
pl = _TRUSTED.submodule("pipeline")

N_RANDOM = 300


def simulate(tiles: list[dict], dma: dict, buffers: int) -> dict:
    n = len(tiles)
    dur = {
        "load": [dma["setup_cycles"] + math.ceil(Fraction(t["load_bytes"], dma["load_bytes_per_cycle"])) for t in tiles],
        "compute": [t["compute_cycles"] for t in tiles],
        "store": [dma["setup_cycles"] + math.ceil(Fraction(t["store_bytes"], dma["store_bytes_per_cycle"])) for t in tiles],
    }
    active: dict[str, tuple[int, int] | None] = {"load": None, "compute": None, "store": None}  # (tile, end)
    nxt = {"load": 0, "compute": 0, "store": 0}
    free_in, free_out = buffers, buffers
    loaded, computed, stored = set(), set(), set()
    compute_start = [None] * n
    t = 0
    finish = 0
    while len(stored) < n:
        # completions at time t free engines and slots
        for eng, done in (("load", loaded), ("compute", computed), ("store", stored)):
            if active[eng] is not None and active[eng][1] == t:
                done.add(active[eng][0])
                active[eng] = None
                if eng == "compute":
                    free_in += 1  # the tile's input is consumed
                if eng == "store":
                    free_out += 1
                    finish = t
        # starts at time t, each engine in tile order
        i = nxt["load"]
        if active["load"] is None and i < n and free_in > 0:
            free_in -= 1
            active["load"] = (i, t + dur["load"][i])
            nxt["load"] += 1
        i = nxt["compute"]
        if active["compute"] is None and i < n and i in loaded and free_out > 0:
            free_out -= 1
            active["compute"] = (i, t + dur["compute"][i])
            compute_start[i] = t
            nxt["compute"] += 1
        i = nxt["store"]
        if active["store"] is None and i < n and i in computed:
            active["store"] = (i, t + dur["store"][i])
            nxt["store"] += 1
        pending = [a[1] for a in active.values() if a is not None]
        if not pending:
            assert len(stored) == n, "deadlock"
            break
        t = min(pending)  # jump to the next event
    serial = sum(map(sum, dur.values()))
    return {"total_cycles": finish, "compute_start": compute_start, "serial_cycles": serial,
            "compute_utilization": float(Fraction(sum(dur["compute"]), finish))}


EXAMPLE = [{"load_bytes": 64, "compute_cycles": 10, "store_bytes": 32},
           {"load_bytes": 160, "compute_cycles": 5, "store_bytes": 16},
           {"load_bytes": 40, "compute_cycles": 8, "store_bytes": 60}]
EXAMPLE_DMA = {"load_bytes_per_cycle": 16, "store_bytes_per_cycle": 8, "setup_cycles": 2}


def test_worked_example():
    got = pl.pipeline_latency(EXAMPLE, EXAMPLE_DMA, 2)
    assert got == {"total_cycles": 41, "compute_start": [6, 18, 23], "serial_cycles": 66,
                   "compute_utilization": 23 / 41}
    assert pl.pipeline_latency(EXAMPLE, EXAMPLE_DMA, 1)["total_cycles"] == 56
    assert simulate(EXAMPLE, EXAMPLE_DMA, 2) == got


def test_hand_cases():
    one = {"load_bytes_per_cycle": 1, "store_bytes_per_cycle": 1, "setup_cycles": 0}
    # a single tile never overlaps: load + compute + store
    assert pl.pipeline_latency([{"load_bytes": 3, "compute_cycles": 4, "store_bytes": 5}], one, 2)["total_cycles"] == 12
    # uniform tiles, double buffered, compute-bound: L + n*C + S
    tiles = [{"load_bytes": 2, "compute_cycles": 5, "store_bytes": 2}] * 4
    assert pl.pipeline_latency(tiles, one, 2)["total_cycles"] == 2 + 4 * 5 + 2
    # single buffered: the next load waits for the compute, so nothing overlaps with compute
    assert pl.pipeline_latency(tiles, one, 1)["total_cycles"] == 2 + 5 + 2 + 5 + 2 + 5 + 2 + 5 + 2
    # load-bound with double buffering: n*L + C + S
    tiles = [{"load_bytes": 9, "compute_cycles": 2, "store_bytes": 1}] * 5
    assert pl.pipeline_latency(tiles, one, 2)["total_cycles"] == 5 * 9 + 2 + 1
    # ceil per transfer: 17 bytes at 8 B/cycle = 3 cycles, plus setup 1
    dma = {"load_bytes_per_cycle": 8, "store_bytes_per_cycle": 8, "setup_cycles": 1}
    assert pl.pipeline_latency([{"load_bytes": 17, "compute_cycles": 1, "store_bytes": 17}], dma, 2)["total_cycles"] == 9


def _check(args: dict) -> dict:
    got = pl.pipeline_latency(args["tiles"], args["dma"], args["buffers"])
    want = simulate(args["tiles"], args["dma"], args["buffers"])
    assert got == want
    s = pl.schedule(args["tiles"], args["dma"], args["buffers"])
    assert got["total_cycles"] >= max(sum(s["load"]), sum(s["compute"]), sum(s["store"]))
    assert got["total_cycles"] <= got["serial_cycles"]
    return got


def test_random_against_event_simulation():
    differs = 0
    for i in range(N_RANDOM):
        args = pl.gen_pipeline(np.random.default_rng([41, i]))
        got = _check(args)
        # more buffers never hurt, and the slot constraint matters in many cases
        more = pl.pipeline_latency(args["tiles"], args["dma"], args["buffers"] + 1)
        assert more["total_cycles"] <= got["total_cycles"]
        differs += more["total_cycles"] < got["total_cycles"]
    assert differs >= N_RANDOM // 5


def test_small_random_against_event_simulation():
    for i in range(N_RANDOM):
        r = np.random.default_rng([42, i])
        n = int(r.integers(1, 8))
        args = {"tiles": [{"load_bytes": int(r.integers(1, 30)), "compute_cycles": int(r.integers(1, 12)),
                           "store_bytes": int(r.integers(1, 30))} for _ in range(n)],
                "dma": {"load_bytes_per_cycle": int(r.integers(1, 6)), "store_bytes_per_cycle": int(r.integers(1, 6)),
                        "setup_cycles": int(r.integers(0, 4))},
                "buffers": int(r.integers(1, 4))}
        _check(args)


def test_generator_is_deterministic():
    for i in range(20):
        assert pl.gen_pipeline(np.random.default_rng([43, i])) == pl.gen_pipeline(np.random.default_rng([43, i]))
