"""Source closures of reference functions, and self-contained candidate bundles of them.

A reference function lives in a module of a pack's trusted package (or of the shared
``reference_models``) that may import sibling modules and the shared ones. :func:`source_closure`
collects the source of that module and of every such module it imports (transitively); content hashes use it so that editing shared reference code invalidates every
vector that depends on it. :func:`bundle_reference` turns the closure into one source text that
defines the entry point, so the reference itself can be submitted through the sandbox exactly
as a candidate would be (the validator's gold check).
"""

from __future__ import annotations

import ast
import functools
import importlib
import inspect
import json
from collections.abc import Callable
from pathlib import Path

SHARED = "reference_models"
TRUSTED_PREFIX = "perfgrade_trusted_"


def _roots(obj_module: str) -> tuple[str, ...]:
    """The packages whose modules belong to a function's closure: its own and the shared one."""
    top = obj_module.partition(".")[0]
    if top == SHARED:
        return (SHARED,)
    if not top.startswith(TRUSTED_PREFIX):
        raise ValueError(f"{obj_module} is neither a pack's trusted code nor {SHARED}")
    return (top, SHARED)


def canonical_module(name: str) -> str:
    """A module name without the folder-specific tag of a pack's trusted package (for hashes)."""
    top, dot, rest = name.partition(".")
    if top.startswith(TRUSTED_PREFIX):
        return "trusted" + dot + rest
    return name


def _module_source(name: str) -> str:
    module = importlib.import_module(name)
    path = inspect.getsourcefile(module)
    if path is None:
        raise ValueError(f"no source for module {name}")
    return Path(path).read_text(encoding="utf-8")


@functools.lru_cache(maxsize=4096)  # a pack's problems share most modules: each is parsed once per source
def _sibling_imports(name: str, source: str, roots: tuple[str, ...], is_pkg: bool = False) -> tuple[str, ...]:
    """Names of modules of ``roots`` imported by a module (absolute or relative)."""
    tree = ast.parse(source)
    package = name if is_pkg or name in roots else name.rpartition(".")[0]

    def inside(mod: str) -> bool:
        return any(mod == r or mod.startswith(r + ".") for r in roots)

    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if inside(alias.name):
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
            if not inside(mod):
                continue
            if mod in roots or not node.module:
                # `from . import x` / `from reference_models import x`: x is a submodule
                for alias in node.names:
                    found.append(f"{mod}.{alias.name}")
            else:
                found.append(mod)
    return tuple(m for m in found if m not in roots and m != name)


def source_closure(obj: Callable) -> dict[str, str]:
    """Module name -> source for the module defining obj and the modules it imports (transitively).

    Only modules of the function's own trusted package and of the shared ``reference_models``
    count: the standard library and numpy are the same everywhere.
    """
    start = obj.__module__
    roots = _roots(start)
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
        todo.extend(_sibling_imports(name, src, roots))
    return out


def _topological(closure: dict[str, str]) -> list[str]:
    roots = tuple(sorted({n.partition(".")[0] for n in closure}))
    deps = {n: [d for d in _sibling_imports(n, s, roots) if d in closure] for n, s in closure.items()}
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
    packages = sorted({n.partition(".")[0] for n in closure} | {obj.__module__.partition(".")[0]})
    lines = [
        "# A self-contained bundle of a reference implementation (generated; do not edit).",
        "import sys as _sys, types as _types",
        f"_SOURCES = {json.dumps(closure, sort_keys=True)}",
        f"_ORDER = {json.dumps(order)}",
        f"for _p in {json.dumps(packages)}:",
        "    _pkg = _types.ModuleType(_p)",
        "    _pkg.__path__ = []",
        "    _pkg.__package__ = _p",
        "    _sys.modules[_p] = _pkg",
        "for _name in _ORDER:",
        "    _parent, _, _short = _name.rpartition('.')",
        "    if not _parent:",
        "        _mod = _sys.modules[_name]",
        "    else:",
        "        _mod = _types.ModuleType(_name)",
        "        _mod.__package__ = _parent",
        "        _sys.modules[_name] = _mod",
        "        setattr(_sys.modules[_parent], _short, _mod)",
        "    exec(compile(_SOURCES[_name], '<' + _name + '>', 'exec'), _mod.__dict__)",
        f"{entry_point} = getattr(_sys.modules[{obj.__module__!r}], {obj.__name__!r})",
    ]
    return "\n".join(lines) + "\n"
