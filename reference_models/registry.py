"""Merging the registries of a pack's trusted modules.

A pack's trusted package (``problems/<pack>/_trusted/``) defines ``REFERENCES`` and
``GENERATORS``, the dicts its problem files name keys of. A package of several modules, each with
dicts of its own, merges them with :func:`merge`, which refuses duplicate or misnamed keys, so a
key always resolves to exactly one function and says which module holds it.

A reference is ``f(*args) -> dict`` taking the problem's parameters in signature order and
returning plain JSON values. A generator is ``g(rng, **options) -> dict`` returning the arguments
by parameter name, drawn from ``rng`` (a ``numpy.random.Generator``) only.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from types import ModuleType
from typing import Any


def merge(modules: Iterable[ModuleType], attr: str) -> dict[str, Callable[..., Any]]:
    """Merge the ``attr`` dict (``REFERENCES`` or ``GENERATORS``) of several modules.

    Keys must start with the module's short name and a dot (``"loopnest.gemm_traffic"``), and no
    key may be defined twice.
    """
    merged: dict[str, Callable[..., Any]] = {}
    for module in modules:
        short = module.__name__.rpartition(".")[2]
        for key, fn in getattr(module, attr).items():
            if not key.startswith(short + "."):
                raise RuntimeError(f"{module.__name__}.{attr}: key {key!r} must start with {short!r}.")
            if key in merged:
                raise RuntimeError(f"duplicate {attr} key {key!r}")
            merged[key] = fn
    return merged
