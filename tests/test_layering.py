"""The dependency direction of the house, kept true by walking every import."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            out.add(node.module.split(".")[0])
    return out


def files(package: str):
    return sorted((ROOT / package).rglob("*.py"))


def test_sandbox_and_reference_models_never_import_each_other_or_the_grader():
    for f in files("sandbox"):
        bad = imports(f) & {"grader", "reference_models", "openai", "tenacity"}
        assert not bad, f"{f.relative_to(ROOT)} imports {bad}"
    for f in files("reference_models"):
        bad = imports(f) & {"grader", "sandbox", "docker", "openai", "tenacity", "pydantic", "rich"}
        assert not bad, f"{f.relative_to(ROOT)} imports {bad}"


def test_reference_models_use_numpy_at_most():
    allowed = set(sys.stdlib_module_names) | {"numpy", "reference_models"}
    for f in files("reference_models"):
        extra = imports(f) - allowed
        assert not extra, f"{f.relative_to(ROOT)} imports {extra}"


def test_third_party_clients_live_in_one_module_each():
    for f in files("grader") + files("sandbox") + files("reference_models"):
        rel = f.relative_to(ROOT).as_posix()
        mods = imports(f)
        if rel != "grader/llm.py":
            assert not mods & {"openai", "tenacity"}, f"{rel} imports the model client libraries"
        if not rel.startswith("sandbox/"):
            assert "docker" not in mods, f"{rel} imports docker"


def test_the_harness_is_standard_library_only():
    for f in files("sandbox/harness"):
        extra = imports(f) - set(sys.stdlib_module_names)
        assert not extra, f"{f.relative_to(ROOT)} imports {extra}"


def test_no_import_time_logging_configuration():
    for f in files("grader") + files("sandbox") + files("reference_models"):
        if f.name == "cli.py":
            continue
        assert "basicConfig" not in f.read_text(), f"{f.relative_to(ROOT)} configures logging"
