"""Drawing helpers shared by the input generators: a numpy Generator in, plain ints out."""

from __future__ import annotations

from typing import Any, Sequence


def divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def pick(rng: Any, values: Sequence[Any]) -> Any:
    return values[int(rng.integers(0, len(values)))]


def shares(rng: Any, bound: int, parts: int) -> list[int]:
    """An exact factorization of ``bound`` into ``parts`` factors, drawn in a random order of
    the parts so that no level is favoured."""
    out = [1] * parts
    order = rng.permutation(parts)
    for i in order[:-1]:
        out[i] = int(pick(rng, divisors(bound)))
        bound //= out[i]
    out[order[-1]] = bound
    return out
