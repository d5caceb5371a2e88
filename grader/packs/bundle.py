"""Source closures of reference functions, and self-contained candidate bundles of them.

A reference function lives in a module of ``reference_models`` that may import sibling modules.
:func:`source_closure` collects the source of that module and of every sibling it imports
(transitively); content hashes use it so that editing shared reference code invalidates every
vector that depends on it. :func:`bundle_reference` turns the closure into one source text that
defines the entry point, so the reference itself can be submitted through the sandbox exactly
as a candidate would be (the validator's gold check).
"""

from __future__ import annotations

import ast
import importlib
import inspect
import json
from collections.abc import Callable
from pathlib import Path

PACKAGE = "reference_models"


def _module_source(name: str) -> str:
    module = importlib.import_module(name)
    path = inspect.getsourcefile(module)
    if path is None:
        raise ValueError(f"no source for module {name}")
    return Path(path).read_text(encoding="utf-8")


def _sibling_imports(name: str, source: str) -> list[str]:
    """Names of reference_models modules imported by a module (absolute or relative)."""
    tree = ast.parse(source)
    is_pkg = name == PACKAGE
    package = name if is_pkg else name.rpartition(".")[0]
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == PACKAGE or alias.name.startswith(PACKAGE + "."):
                    found.append(alias.name)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base_parts = package.split(".")
                if node.level > 1:
                    base_parts = base_parts[: len(base_parts) - (node.level - 1)]
                base = ".".join(base_parts)
                mod = f"{base}.{node.module}" if node.module else base
            else:
                mod = node.module or ""
            if not (mod == PACKAGE or mod.startswith(PACKAGE + ".")):
                continue
            if mod == PACKAGE or not node.module:
                # `from . import x` / `from reference_models import x`: x is a submodule
                for alias in node.names:
                    found.append(f"{mod}.{alias.name}")
            else:
                found.append(mod)
    return [m for m in found if m != PACKAGE]


def source_closure(obj: Callable) -> dict[str, str]:
    """Module name -> source for the module defining obj and the siblings it imports."""
    start = obj.__module__
    if not start.startswith(PACKAGE + "."):
        raise ValueError(f"{obj!r} is not defined in {PACKAGE}")
    out: dict[str, str] = {}
    todo = [start]
    while todo:
        name = todo.pop()
        if name in out:
            continue
        try:
            src = _module_source(name)
        except ModuleNotFoundError:
            continue  # `from . import CONSTANT` resolves to an attribute, not a module
        out[name] = src
        todo.extend(_sibling_imports(name, src))
    return out


def _topological(closure: dict[str, str]) -> list[str]:
    deps = {n: [d for d in _sibling_imports(n, s) if d in closure] for n, s in closure.items()}
    order: list[str] = []
    state: dict[str, int] = {}

    def visit(n: str) -> None:
        if state.get(n) == 2:
            return
        if state.get(n) == 1:
            raise ValueError(f"import cycle through {n}")
        state[n] = 1
        for d in sorted(deps[n]):
            visit(d)
        state[n] = 2
        order.append(n)

    for n in sorted(closure):
        visit(n)
    return order


def bundle_reference(obj: Callable, entry_point: str) -> str:
    """One self-contained module that defines ``entry_point`` as the reference function."""
    closure = source_closure(obj)
    order = _topological(closure)
    lines = [
        "# A self-contained bundle of a reference implementation (generated; do not edit).",
        "import sys as _sys, types as _types",
        f"_SOURCES = {json.dumps(closure, sort_keys=True)}",
        f"_ORDER = {json.dumps(order)}",
        f"_pkg = _types.ModuleType({PACKAGE!r})",
        "_pkg.__path__ = []",
        f"_pkg.__package__ = {PACKAGE!r}",
        f"_sys.modules[{PACKAGE!r}] = _pkg",
        "for _name in _ORDER:",
        "    _mod = _types.ModuleType(_name)",
        f"    _mod.__package__ = {PACKAGE!r}",
        "    _sys.modules[_name] = _mod",
        "    setattr(_pkg, _name.rpartition('.')[2], _mod)",
        "    exec(compile(_SOURCES[_name], '<' + _name + '>', 'exec'), _mod.__dict__)",
        f"{entry_point} = getattr(_sys.modules[{obj.__module__!r}], {obj.__name__!r})",
    ]
    return "\n".join(lines) + "\n"
