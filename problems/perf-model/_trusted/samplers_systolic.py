"""Domain sampler of the perf-model pack for the weight-stationary systolic timeline (F11,
``f11-systolic-ws-timeline``).

Written from the problem's spec and ``[[domain]]`` rules alone, sharing no code with the
generator (the validator checks it): any array from a single PE to 256 x 256 (one row, one
column, wider than tall), single- or double-buffered weight registers, blocks of K, N and M from
one index to more than the dimension holds (idle rows and columns in every fold), ragged last
blocks, the DRAM loops in any order (weights kept across consecutive folds or reloaded), small
GEMMs and the projections the spec names (BERT-base, Llama 2 7B and Llama 3 8B at decode and at
prefill, up to Llama 3's 8192 tokens) on a TPU-like array, their K or N blocks now and then as
narrow as the spec allows (one index up: thousands of blocks). Input reads and accumulator
accesses pass 2^31 at 2048 tokens and more. ``sample(rng, **options) -> {parameter: value}``.
"""

from __future__ import annotations

from typing import Any

from .samplers_mapping import PROJECTIONS, choice, log_size

TOKENS = (1, 8, 16, 128, 512, 2048, 4096, 8192)  # decode batches; prefills up to Llama 3's context


def _bits(rng: Any) -> dict[str, int]:
    o = int(choice(rng, (8, 16, 32)))
    return {"I": int(choice(rng, (4, 8, 16))), "W": int(choice(rng, (4, 8, 16))), "O": o, "psum": max(o, 24)}


def _block(rng: Any, size: int, width: int) -> int:
    """A block of a dimension along an array side of ``width`` PEs: the whole side, a part of it,
    or (as often) one the dimension does not fill."""
    r = rng.random()
    if width == 1 or r < 0.1:
        return 1
    if r < 0.55:
        return width
    return int(rng.integers(2, width + 1))


def _mapping(rng: Any, dims: dict[str, int], r: int, c: int, mt: int) -> dict[str, Any]:
    dram = [[d, -(-dims[d] // w)] for d, w in (("K", r), ("N", c), ("M", mt)) if dims[d] > w]
    dram = [dram[int(i)] for i in rng.permutation(len(dram))]
    return {"levels": [
        {"temporal": [], "spatial_x": [], "spatial_y": []},
        {"temporal": [["M", mt]] if mt > 1 else [], "spatial_x": [["N", c]] if c > 1 else [],
         "spatial_y": [["K", r]] if r > 1 else []},
        {"temporal": dram, "spatial_x": [], "spatial_y": []}]}


def _architecture(rows: int, cols: int, mb: int) -> dict[str, Any]:
    return {"name": f"sampled-{rows}x{cols}", "levels": [
        {"name": "WeightReg", "capacity_bytes": {"W": mb}, "fanout": [1, 1], "multiple_buffering": mb},
        {"name": "UnifiedBuffer", "capacity_bytes": {"I": 1 << 22, "O": 1 << 20}, "fanout": [cols, rows]},
        {"name": "DRAM", "capacity_bytes": None, "fanout": [1, 1]}]}


def _narrow(rng: Any, dims: dict[str, int], r: int, c: int, side: int, most_blocks: int) -> tuple[int, int]:
    """Narrow K blocks, N blocks or both (one index to a quarter of the array side), widened
    again, as little as it takes, where the weight blocks would number more than ``most_blocks``."""
    K, N = dims["K"], dims["N"]
    which = choice(rng, ("K", "N", "KN"))
    if "K" in which:
        r = log_size(rng, side // 4)
    if "N" in which:
        c = log_size(rng, side // 4)
    while -(-K // r) * -(-N // c) > most_blocks:
        if which == "N" or (which == "KN" and c < r):
            c = -(-N // max(1, most_blocks // -(-K // r))) if which == "N" else 2 * c
        else:
            r = -(-K // max(1, most_blocks // -(-N // c))) if which == "K" else 2 * r
    return min(r, side), min(c, side)


def sample_systolic_ws_timeline(rng: Any, real_share: float = 0.15, most_folds: int = 1500,
                                narrow_share: float = 0.5, most_blocks: int = 12000) -> dict[str, Any]:
    """perf-model/f11-systolic-ws-timeline: a small GEMM on an array of 1 to 8 rows and columns,
    or (``real_share``) a BERT-base or Llama projection of 1 to 8192 tokens on a 128 x 128 or
    256 x 256 array with blocks of half the array to all of it, or (``narrow_share`` of those)
    narrower K or N blocks, up to ``most_blocks`` weight blocks; any block of M, large enough at
    real size to keep the folds near ``most_folds`` where the weight blocks allow."""
    mb = int(choice(rng, (1, 2)))
    if rng.random() < real_share:
        k, n = choice(rng, PROJECTIONS)
        dims = {"M": int(choice(rng, TOKENS)), "N": int(n), "K": int(k)}
        side = int(choice(rng, (128, 256)))
        rows, cols = side, side
        r = side if rng.random() < 0.6 else int(rng.integers(side // 2, side + 1))
        c = side if rng.random() < 0.6 else int(rng.integers(side // 2, side + 1))
        if rng.random() < narrow_share:
            r, c = _narrow(rng, dims, r, c, side, most_blocks)
        blocks = -(-dims["K"] // r) * -(-dims["N"] // c)
        fewest = -(-dims["M"] // max(1, most_folds // blocks))
        mt = max(fewest, dims["M"] if rng.random() < 0.4 else log_size(rng, dims["M"]))
        name = "llama" if max(k, n) > 3072 else "bert-base"
    else:
        rows, cols = log_size(rng, 8), log_size(rng, 8)
        dims = {"M": log_size(rng, 12), "N": log_size(rng, 20), "K": log_size(rng, 20)}
        r, c = _block(rng, dims["K"], rows), _block(rng, dims["N"], cols)
        mt = 1 if rng.random() < 0.25 else log_size(rng, dims["M"] + 3)
        name = "small"
    workload = {"name": f"sampled.{name}.gemm", "shape": "gemm", "dims": dims, "bits": _bits(rng)}
    return {"workload": workload, "architecture": _architecture(rows, cols, mb),
            "mapping": _mapping(rng, dims, r, c, mt)}


SAMPLERS = {
    "samplers_systolic.systolic_ws_timeline": sample_systolic_ws_timeline,
}
