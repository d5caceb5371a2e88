"""F17 double-buffered pipeline latency (our own model; the spec states every rule).

Tiles flow through three engines, each working on one tile at a time and on the tiles in order:
a load engine (DRAM -> input buffer), the compute unit, and a store engine (output buffer ->
DRAM). The input and the output buffer each have `buffers` slots. With B slots:

* load i   starts at max(end of load i-1, end of compute i-B)   (its input slot is free again)
* compute i starts at max(end of load i, end of compute i-1, end of store i-B)
* store i  starts at max(end of compute i, end of store i-1)

A transfer of b bytes takes setup_cycles + ceil(b / bytes_per_cycle) cycles. The latency is the
end of the last store.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import numpy as np


def transfer_cycles(nbytes: int, bytes_per_cycle: int, setup: int) -> int:
    return setup + -(-nbytes // bytes_per_cycle)


def schedule(tiles: list[dict[str, Any]], dma: dict[str, Any], buffers: int) -> dict[str, list[int]]:
    """Start and end times of every load, compute and store."""
    n = len(tiles)
    load = [transfer_cycles(t["load_bytes"], dma["load_bytes_per_cycle"], dma["setup_cycles"]) for t in tiles]
    store = [transfer_cycles(t["store_bytes"], dma["store_bytes_per_cycle"], dma["setup_cycles"]) for t in tiles]
    comp = [t["compute_cycles"] for t in tiles]
    ls, le, cs, ce, ss, se = ([0] * n for _ in range(6))
    for i in range(n):
        ls[i] = max(le[i - 1] if i else 0, ce[i - buffers] if i >= buffers else 0)
        le[i] = ls[i] + load[i]
        cs[i] = max(le[i], ce[i - 1] if i else 0, se[i - buffers] if i >= buffers else 0)
        ce[i] = cs[i] + comp[i]
        ss[i] = max(ce[i], se[i - 1] if i else 0)
        se[i] = ss[i] + store[i]
    return {"load": load, "store": store, "compute": comp, "load_start": ls, "load_end": le,
            "compute_start": cs, "compute_end": ce, "store_start": ss, "store_end": se}


def pipeline_latency(tiles: list[dict[str, Any]], dma: dict[str, Any], buffers: int) -> dict[str, Any]:
    s = schedule(tiles, dma, buffers)
    total = s["store_end"][-1]
    serial = sum(s["load"]) + sum(s["compute"]) + sum(s["store"])
    return {
        "total_cycles": total,
        "compute_start": s["compute_start"],
        "serial_cycles": serial,
        "compute_utilization": float(Fraction(sum(s["compute"]), total)),
    }


def gen_pipeline(rng: np.random.Generator, max_tiles: int = 24, large: bool = False) -> dict[str, Any]:
    """Tile streams that are load-, compute- or store-bound, phases that switch between them, one
    to three buffer slots, transfer sizes that do not divide the bandwidth, setup costs. ``large``
    draws the base tile time log-uniform in 2^48..2^54 cycles (transfers past 2^53 cycles)."""
    n = int(rng.integers(1, max_tiles + 1)) if rng.random() < 0.9 else int(rng.integers(1, 4))
    dma = {"load_bytes_per_cycle": int(rng.choice((4, 8, 16, 32, 64))),
           "store_bytes_per_cycle": int(rng.choice((4, 8, 16, 32))),
           "setup_cycles": int(rng.choice((0, 1, 2, 5, 10, 20, 50)))}
    buffers = int(rng.choice((1, 2, 2, 2, 3)))
    regime = rng.choice(("load", "compute", "store", "mixed", "mixed"))
    base = int(2 ** rng.uniform(48, 54)) if large else int(rng.integers(20, 400))
    tiles = []
    for _ in range(n):
        r = str(rng.choice(("load", "compute", "store"))) if regime == "mixed" else str(regime)
        scale = {k: float(rng.uniform(0.2, 1.0)) for k in ("load", "compute", "store")}
        scale[r] = float(rng.uniform(1.0, 3.0))
        tiles.append({
            "load_bytes": max(1, int(base * scale["load"] * dma["load_bytes_per_cycle"] + rng.integers(-3, 4))),
            "compute_cycles": max(1, int(base * scale["compute"])),
            "store_bytes": max(1, int(base * scale["store"] * dma["store_bytes_per_cycle"] + rng.integers(-3, 4))),
        })
        if large:  # the float products above are multiples of the bandwidth: make the transfers ragged
            tiles[-1]["load_bytes"] += int(rng.integers(1, dma["load_bytes_per_cycle"]))
            tiles[-1]["store_bytes"] += int(rng.integers(1, dma["store_bytes_per_cycle"]))
    return {"tiles": tiles, "dma": dma, "buffers": buffers}


REFERENCES = {
    "pipeline.pipeline_latency": pipeline_latency,
}

GENERATORS = {
    "pipeline.tiles": gen_pipeline,
}
