"""References for the tiny test pack (its trusted code)."""

from __future__ import annotations


def double(x: int) -> dict:
    return {"y": 2 * x, "half": x / 2}


def double_needs_pydantic(x: int) -> dict:
    # broken on purpose: the sandbox image has no pydantic, so this fails inside the container
    import pydantic  # noqa: F401

    return {"y": 2 * x, "half": x / 2}


def gen_x(rng, high: int = 1000) -> dict:
    return {"x": int(rng.integers(-high, high))}


REFERENCES = {
    "tiny_testing.double": double,
    "tiny_testing.double_needs_pydantic": double_needs_pydantic,
}
GENERATORS = {"tiny_testing.x": gen_x}
