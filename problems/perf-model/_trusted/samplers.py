"""Domain samplers of the perf-model pack: inputs drawn from the whole domain a problem states.

A sampler is written from the problem's spec, the pack's FORMAT.md and its ``[[domain]]`` rules
alone, and shares no code with the generators (the validator checks that no module is shared):
where a generator draws the traps it knows, a sampler draws everything the text allows, so a
corner no generator reaches still shows up in the validator's coverage and adequacy checks.
``sample(rng, **options) -> {parameter: value}``, drawn from ``rng`` only.
"""

from __future__ import annotations

from typing import Any

# Projection GEMMs the specs name (BERT-base, Llama 2 7B, Llama 3 8B), as (N, K) = (output
# features, input features), and their token counts (M): prefill sequences and decode batches.
PROJECTIONS = ((768, 768), (2304, 768), (3072, 768), (768, 3072),
               (4096, 4096), (11008, 4096), (4096, 11008), (1024, 4096), (14336, 4096), (4096, 14336))
TOKENS = (1, 8, 16, 128, 512, 2048)
BUFFERS = (4096, 65536, 131072, 524288, 2097152)


def _choice(rng: Any, values: tuple | list) -> Any:
    return values[int(rng.integers(0, len(values)))]


def _size(rng: Any, top: int) -> int:
    """A size in 1..top, log-uniform (small sizes as likely as large ones)."""
    return max(1, min(top, int(2 ** rng.uniform(0, top.bit_length()))))


def _factors(rng: Any, size: int, inner: int, outer: int) -> tuple[list[int], list[int]]:
    """Loop factors of one dimension, innermost first, split into the buffer's ``inner`` loops and
    DRAM's ``outer`` loops, valid by FORMAT.md: they multiply to at least ``size`` and the last
    iteration of the outermost loop contains a real index. Factors may overshoot anywhere (ragged
    tiles, empty iterations above the buffer), and a factor-1 outermost loop lets the loops inside
    it overshoot freely."""
    count = inner + outer
    if count == 0:
        return [], []
    factors: list[int] = []
    covered = 1
    for _ in range(count - 1):
        left = -(-size // covered)
        if left <= 1 or rng.random() < 0.1:
            f = 1 if rng.random() < 0.7 else int(rng.integers(1, 4))
        elif rng.random() < 0.5:  # a divisor of what is left: perfect so far
            divisors = [d for d in range(2, min(left, 64) + 1) if left % d == 0] or [left]
            f = int(_choice(rng, divisors))
        else:
            f = int(rng.integers(2, min(left, 64) + 1)) if left > 2 else 2
        factors.append(f)
        covered *= f
    last = -(-size // covered) if covered < size else 1  # the largest valid outermost factor
    factors.append(last)
    return factors[:inner], factors[inner:]


def _interleave(rng: Any, per_dim: dict[str, list[int]]) -> list[list[Any]]:
    """One level's loop list, innermost first: each dimension's loops keep their order, the
    dimensions are shuffled among each other."""
    slots = [d for d, fs in per_dim.items() for _ in fs]
    order = [slots[i] for i in rng.permutation(len(slots))]
    taken = {d: 0 for d in per_dim}
    out = []
    for d in order:
        out.append([d, per_dim[d][taken[d]]])
        taken[d] += 1
    return out


def sample_gemm_dram_traffic(rng: Any, real_share: float = 0.3) -> dict[str, Any]:
    """perf-model/f4-gemm-dram-traffic: any GEMM (small, or a BERT-base / Llama projection) on a
    buffer and DRAM, any temporal-only two-level mapping the format allows: zero to three loops of
    a dimension at each level, factor-1 loops, imperfect factors, outer loops that overshoot."""
    if rng.random() < real_share:
        n, k = _choice(rng, PROJECTIONS)
        dims = {"M": int(_choice(rng, TOKENS)), "N": n, "K": k}
    else:
        top = int(_choice(rng, (4, 12, 40, 300)))
        dims = {d: _size(rng, top) for d in ("M", "N", "K")}
    o = int(_choice(rng, (8, 16, 32)))
    bits = {"I": int(_choice(rng, (4, 8, 16))), "W": int(_choice(rng, (4, 8, 16))), "O": o,
            "psum": int(_choice(rng, [b for b in (8, 16, 24, 32) if b >= o]))}
    workload = {"name": "sampled.gemm", "shape": "gemm", "dims": dims, "bits": bits}

    buffer: dict[str, Any] = {"name": str(_choice(rng, ("Buffer", "GlobalBuffer", "GLB"))), "fanout": [1, 1]}
    buffer["capacity_bytes"] = (int(_choice(rng, BUFFERS)) if rng.random() < 0.8 else
                                {t: int(_choice(rng, BUFFERS)) // 4 for t in ("I", "W", "O")})
    if rng.random() < 0.15:
        buffer["multiple_buffering"] = int(rng.integers(1, 4))
    architecture = {"name": "sampled-buffer", "levels": [
        buffer, {"name": "DRAM", "capacity_bytes": None, "fanout": [1, 1]}]}

    inner: dict[str, list[int]] = {}
    outer: dict[str, list[int]] = {}
    counts = (0, 1, 1, 1, 2, 2, 3)
    for d, size in dims.items():
        if size == 1 and rng.random() < 0.7:
            n_in, n_out = 0, 0
        else:
            n_in, n_out = int(_choice(rng, counts)), int(_choice(rng, counts))
            if size > 1 and n_in + n_out == 0:
                n_out = 1
        inner[d], outer[d] = _factors(rng, size, n_in, n_out)
    levels = [{"temporal": _interleave(rng, inner)}, {"temporal": _interleave(rng, outer)}]
    for lv in levels:  # a factor-1 loop of any dimension, now and then, anywhere
        if rng.random() < 0.15:
            lv["temporal"].insert(int(rng.integers(0, len(lv["temporal"]) + 1)), [str(_choice(rng, list(dims))), 1])
    return {"workload": workload, "architecture": architecture, "mapping": {"levels": levels}}


SAMPLERS = {
    "samplers.gemm_dram_traffic": sample_gemm_dram_traffic,
}
