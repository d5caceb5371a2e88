"""A pack's trusted code: its references, input generators and the engines they share.

A pack declares one subfolder as its trusted code (``trusted = "_trusted"`` in ``pack.toml``): a
Python package whose ``__init__.py`` defines two dicts, ``REFERENCES`` (key -> reference function)
and ``GENERATORS`` (key -> input generator), and optionally a third, ``SAMPLERS`` (key -> domain
sampler, written apart from the generators). ``problem.toml`` names its reference, generator and
sampler by those keys. The package is imported here, on the host only, under a name of its own
(``perfgrade_trusted_<pack>``), so two packs never share module names and nothing needs to be
installed or registered anywhere else. It may import its own modules (relative imports), the
standard library, numpy and the modules shared across packs in ``reference_models``.

Trusted code never reaches a candidate: the sandbox image holds only the harness, and a
candidate's container receives its own source and the inputs, nothing else.
"""

from __future__ import annotations

import hashlib
import importlib.util
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from ..errors import PackError

MODULE_PREFIX = "perfgrade_trusted_"
SHARED_PACKAGE = "reference_models"


def package_name(pack_name: str, directory: Path) -> str:
    """The import name of a pack's trusted package: ``perfgrade_trusted_perf_model_<hash of its folder>``.

    The folder's hash keeps two copies of one pack (a pack and its edited copy) apart in one process.
    Content hashes never include this name (see bundle.canonical_module).
    """
    tag = hashlib.sha256(str(directory.resolve()).encode()).hexdigest()[:10]
    return f"{MODULE_PREFIX}{re.sub(r'[^A-Za-z0-9_]', '_', pack_name)}_{tag}"


@dataclass(frozen=True)
class TrustedCode:
    """A pack's imported trusted package and its registries."""

    package: str
    dir: Path
    module: ModuleType
    references: dict[str, Callable[..., Any]] = field(default_factory=dict)
    generators: dict[str, Callable[..., Any]] = field(default_factory=dict)
    samplers: dict[str, Callable[..., Any]] = field(default_factory=dict)

    def submodule(self, name: str) -> ModuleType:
        """One module of the package (``trusted.submodule("loopnest")``), imported on first use."""
        return importlib.import_module(f"{self.package}.{name}")


_LOADED: dict[str, tuple[str, TrustedCode]] = {}


def _tree_digest(directory: Path) -> str:
    """Names and bytes of every Python file of the folder: an edited file means a fresh import."""
    h = hashlib.sha256()
    for path in sorted(directory.rglob("*.py")):
        if "__pycache__" in path.parts:
            continue
        h.update(str(path.relative_to(directory)).encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()


def load_trusted(pack_name: str, directory: Path, where: Path) -> TrustedCode:
    """Import the trusted package in ``directory`` for the pack ``pack_name``.

    ``where`` is the file to name in errors (the pack's ``pack.toml``). The same pack directory is
    imported once per process, and again when one of its files changed on disk.
    """
    directory = directory.resolve()
    name = package_name(pack_name, directory)
    digest = _tree_digest(directory)
    cached = _LOADED.get(name)
    if cached is not None:
        if cached[0] == digest:
            return cached[1]
        for key in [k for k in sys.modules if k == name or k.startswith(name + ".")]:
            del sys.modules[key]  # edited on disk since it was imported: import it afresh
    init = directory / "__init__.py"
    if not init.is_file():
        raise PackError(where, f"the trusted code folder {directory.name}/ has no __init__.py", "trusted")
    spec = importlib.util.spec_from_file_location(name, init, submodule_search_locations=[str(directory)])
    if spec is None or spec.loader is None:  # pragma: no cover - only for odd file systems
        raise PackError(where, f"cannot import {init}", "trusted")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as exc:  # noqa: BLE001 - a broken pack is reported, never skipped
        for key in [k for k in sys.modules if k == name or k.startswith(name + ".")]:
            del sys.modules[key]
        raise PackError(init, f"importing the pack's trusted code failed: {type(exc).__name__}: {exc}") from exc
    registries = []
    for attr in ("REFERENCES", "GENERATORS", "SAMPLERS"):
        table = getattr(module, attr, {} if attr == "SAMPLERS" else None)  # SAMPLERS is optional
        if not isinstance(table, dict) or not all(isinstance(k, str) and callable(v) for k, v in table.items()):
            del sys.modules[name]
            raise PackError(init, f"{attr} must be a dict from string keys to functions")
        registries.append(dict(table))
    code = TrustedCode(package=name, dir=directory, module=module, references=registries[0],
                       generators=registries[1], samplers=registries[2])
    _LOADED[name] = (digest, code)
    return code
