"""References for the domain test pack (its trusted code)."""

from __future__ import annotations


def double(x: int) -> dict:
    return {"y": 2 * x, "n": abs(x)}


def spread(x: int) -> dict:
    # broken on purpose: a count that goes negative for x < 0, in a list and in a map
    return {"counts": [x, x + 1], "by_name": {"a": x - 1}}


def ratio(a: int, b: int) -> dict:
    # broken on purpose: divides by zero when b == 0, an infinite number when b == 1
    return {"q": a // b, "r": float("inf") if b == 1 else a / b}


def gen_x(rng, low: int = -50, high: int = 50) -> dict:
    return {"x": int(rng.integers(low, high))}


def gen_ab(rng) -> dict:
    return {"a": int(rng.integers(0, 100)), "b": int(rng.integers(0, 6))}


REFERENCES = {
    "domain_testing.double": double,
    "domain_testing.spread": spread,
    "domain_testing.ratio": ratio,
}
GENERATORS = {"domain_testing.x": gen_x, "domain_testing.ab": gen_ab}
