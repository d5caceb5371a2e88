"""Domain sampler of the perf-model pack for causal attention computed block by block (F15,
``f15-tiled-causal-attention``).

Written from the problem's spec and ``[[domain]]`` rules alone, sharing no code with the
generator (the validator checks it): any number of key/value heads and query heads per group,
any head dimension, chunks from one decode token to far longer than a real prompt, caches from
empty to far past a real context, query and key blocks of any size (ragged last blocks, blocks
larger than the chunk or than all the keys), any heads per pass (a ragged last pass), both key
orders, any precisions (ones that end inside a byte as often as not), one to four K/V copies and
a capacity around the room the schedule needs (both fitting and not, exactly full at times).
``sample(rng, **options) -> {parameter: value}``.
"""

from __future__ import annotations

from typing import Any

# Llama attention layers the spec names: (key/value heads G, query heads per key/value head H,
# head dimension D) of Llama-2-7B, Llama-2-70B, Llama-3-8B and Llama-3-70B.
LLAMA_HEADS = ((32, 1, 128), (8, 8, 128), (8, 4, 128), (8, 8, 128))
BIT_KEYS = ("Q", "K", "V", "O", "S", "acc", "stat")


def _pick(rng: Any, values: tuple | list) -> Any:
    return values[int(rng.integers(0, len(values)))]


def _log(rng: Any, low: int, high: int) -> int:
    """An integer in low..high, log-uniform (small sizes as likely as large ones)."""
    if high <= low:
        return low
    return max(low, min(high, int(2 ** rng.uniform(low.bit_length() - 1, high.bit_length()))))


def _bits(rng: Any) -> dict[str, int]:
    if rng.random() < 0.5:
        kv = int(_pick(rng, (4, 8, 16)))
        return {"Q": int(_pick(rng, (8, 16))), "K": kv, "V": kv, "O": int(_pick(rng, (8, 16))),
                "S": int(_pick(rng, (16, 32))), "acc": int(_pick(rng, (16, 32))), "stat": int(_pick(rng, (16, 32)))}
    return {k: int(_pick(rng, (1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 13, 16, 24, 32))) for k in BIT_KEYS}


def _room(G: int, H: int, M: int, D: int, cached: int, bits: dict[str, int], Br: int, Bc: int, hp: int,
          copies: int) -> int:
    """The buffer room of the spec's "Buffer room" section: the largest blocks are the first ones
    (a ragged block is only ever the last), every item rounded up to a whole byte on its own."""
    rows, keys, heads = min(Br, M), min(Bc, cached + M), min(hp, H)

    def nbytes(n: int, b: int) -> int:
        return -(-n * b // 8)

    return (nbytes(heads * rows * D, bits["Q"]) + copies * nbytes(keys * D, bits["K"])
            + copies * nbytes(keys * D, bits["V"]) + nbytes(heads * rows * keys, bits["S"])
            + nbytes(heads * rows * D, bits["acc"]) + nbytes(2 * heads * rows, bits["stat"]))


def _block(rng: Any, size: int, top: int) -> int:
    """A block length for ``size`` rows or keys: a power of two, a divisor, one past a divisor, or
    any length up to a bit past ``size`` (blocks larger than everything there is included)."""
    r = rng.random()
    if r < 0.3:
        return 1 << int(rng.integers(0, max(1, min(top, 2 * size).bit_length())))
    if r < 0.5 and size > 1:
        divisors = [d for d in range(1, min(size, 4096) + 1) if size % d == 0]
        d = int(_pick(rng, divisors))
        return d + 1 if rng.random() < 0.3 else d
    return _log(rng, 1, max(1, min(top, size + size // 2 + 2)))


def sample_tiled_causal_attention(rng: Any, real_share: float = 0.3, huge_share: float = 0.1,
                                  most_passes: int = 4000) -> dict[str, Any]:
    """perf-model/f15-tiled-causal-attention: a small layer, a Llama layer (decode tokens or a
    prefill chunk against a cache of up to 128k tokens) with ``real_share``, or with
    ``huge_share`` a layer far past any real one (caches up to 2^40 tokens, head dimensions up to
    2^31, counts past 2^53).
    The blocks are redrawn until the schedule has at most ``most_passes`` passes (each pass is
    one step of the reference's loop), whatever the tokens."""
    r = rng.random()
    scale = "huge" if r < huge_share else "llama" if r < huge_share + real_share else "small"
    for _ in range(1000):
        if scale == "small":
            G, H = _log(rng, 1, 4), _log(rng, 1, 6)
            D = _log(rng, 1, 16)
            M = _log(rng, 1, 48)
            cached = 0 if rng.random() < 0.3 else _log(rng, 1, 64)
        elif scale == "llama":
            G, H, D = _pick(rng, LLAMA_HEADS)
            M = _log(rng, 1, 16) if rng.random() < 0.4 else _log(rng, 16, 8192)
            cached = 0 if rng.random() < 0.15 else _log(rng, 1, 131072)
        else:
            G, H = _log(rng, 1, 128), _log(rng, 1, 16)
            D = _log(rng, 1, 1 << 31)
            M = _log(rng, 1, 1 << 24)
            cached = _log(rng, 1, 1 << 40)
        T = cached + M
        Br = _block(rng, M, 1 << 30)
        Bc = _block(rng, T, 1 << 30)
        hp = _log(rng, 1, H) if rng.random() < 0.7 else int(_pick(rng, [1, H]))
        if G * -(-M // Br) * -(-H // hp) > most_passes:
            continue
        bits = _bits(rng)
        copies = int(_pick(rng, (1, 2, 2, 3, 4)))
        room = _room(G, H, M, D, cached, bits, Br, Bc, hp, copies)
        c = rng.random()
        capacity = room if c < 0.15 else room - 1 if c < 0.25 else _log(rng, max(1, room // 4), 4 * room + 4)
        capacity = max(1, capacity)
        return {
            "workload": {"name": f"{scale}-attention", "shape": "attention", "dims": {"G": G, "H": H, "M": M, "D": D},
                         "cached": cached, "bits": bits},
            "architecture": {"name": f"{scale}-buffer", "levels": [
                {"name": "Buffer", "capacity_bytes": capacity, "multiple_buffering": copies},
                {"name": "DRAM", "capacity_bytes": None}]},
            "mapping": {"Br": Br, "Bc": Bc, "heads_per_pass": hp, "kv_order": str(_pick(rng, ("ascending", "alternating")))},
        }
    raise AssertionError("no schedule with few enough passes drawn")  # pragma: no cover


SAMPLERS = {"samplers_flash.tiled_causal_attention": sample_tiled_causal_attention}
