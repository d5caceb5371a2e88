"""The explicit registries of reference functions and input generators.

Each family module defines two dicts, ``REFERENCES`` and ``GENERATORS``, whose keys start with
the module's short name (``"workload.conv_layer_accounting"``). This module merges the modules
listed in ``_MODULES`` and refuses duplicate or misnamed keys, so a problem's ``reference`` and
``generator.name`` always resolve to exactly one function.

A reference is ``f(*args) -> dict`` taking the problem's parameters in signature order and
returning plain JSON values. A generator is ``g(rng, **options) -> dict`` returning the arguments
by parameter name, drawn from ``rng`` (a ``numpy.random.Generator``) only.
"""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any

from . import (
    attention,
    cycles,
    energy,
    loopnest,
    maestro,
    pipeline,
    pm_e2e,
    pm_flash,
    pm_fused,
    pm_pipeline,
    pm_search,
    pm_select,
    pm_systolic,
    pm_traffic,
    ranking,
    roofline,
    systolic,
    tiles,
    workload,
)

_MODULES: tuple[ModuleType, ...] = (
    workload,
    roofline,
    tiles,
    loopnest,
    cycles,
    energy,
    systolic,
    maestro,
    ranking,
    pipeline,
    attention,
    pm_traffic,
    pm_select,
    pm_e2e,
    pm_flash,
    pm_search,
    pm_fused,
    pm_systolic,
    pm_pipeline,
)


def _merge(attr: str) -> dict[str, Callable[..., Any]]:
    merged: dict[str, Callable[..., Any]] = {}
    for module in _MODULES:
        short = module.__name__.rpartition(".")[2]
        for key, fn in getattr(module, attr).items():
            if not key.startswith(short + "."):
                raise RuntimeError(f"{module.__name__}.{attr}: key {key!r} must start with {short!r}.")
            if key in merged:
                raise RuntimeError(f"duplicate {attr} key {key!r}")
            merged[key] = fn
    return merged


REFERENCES: dict[str, Callable[..., dict[str, Any]]] = _merge("REFERENCES")
GENERATORS: dict[str, Callable[..., dict[str, Any]]] = _merge("GENERATORS")
