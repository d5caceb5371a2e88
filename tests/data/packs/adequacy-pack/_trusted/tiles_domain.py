"""The domain sampler of adequacy-pack/tiles, written from its spec alone (no generator code):
any size and tile of at least 1, small and large alike."""

from __future__ import annotations


def sample_tiles(rng, max_bits: int = 40) -> dict:
    def size() -> int:
        return int(2 ** rng.uniform(0, max_bits)) if rng.random() < 0.5 else int(rng.integers(1, 65))

    return {"n": size(), "t": size()}


def sample_outside(rng) -> dict:
    # broken on purpose: draws sizes of 0, outside the domain
    return {"n": int(rng.integers(0, 3)), "t": int(rng.integers(1, 4))}


SAMPLERS = {"tiles_domain.tiles": sample_tiles, "tiles_domain.outside": sample_outside}
