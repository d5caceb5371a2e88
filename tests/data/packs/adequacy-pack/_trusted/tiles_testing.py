"""Reference and generator of adequacy-pack/tiles.

The generator is kind on purpose: by default it draws only sizes that the tile divides, all
small, so a partial model that rounds down, or that wraps at 32 bits, passes every such vector.
``ragged`` and ``large`` draw the corners it otherwise misses.
"""

from __future__ import annotations


def tiles(n: int, t: int) -> dict:
    count = -(-n // t)
    return {"tiles": count, "padded": count * t, "waste": count * t - n}


def gen_tiles(rng, ragged: bool = False, large: bool = False) -> dict:
    t = int(rng.integers(2, 65))
    k = 1 if rng.random() < 0.1 else int(rng.integers(2, 1000))
    if large:
        t = int(rng.integers(2, 1 << 12))
        k = int(rng.integers(1 << 20, 1 << 28))
    n = t * k + (int(rng.integers(1, t)) if ragged else 0)
    return {"n": n, "t": t}


def lazy_sampler(rng) -> dict:
    # shares the generator's code: the validator refuses it as a domain sampler
    return gen_tiles(rng, ragged=bool(rng.random() < 0.5))


REFERENCES = {"tiles_testing.tiles": tiles}
GENERATORS = {"tiles_testing.tiles": gen_tiles}
SAMPLERS = {"tiles_testing.lazy": lazy_sampler}
