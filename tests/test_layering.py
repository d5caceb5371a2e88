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


def test_packs_trusted_code_uses_numpy_and_the_shared_references_at_most():
    """A pack's trusted code (host only) may import its own modules, numpy and reference_models;
    the candidate-side files of a pack (solutions, simulators, a kit) only the standard library and numpy."""
    trusted = sorted(ROOT.glob("problems/*/_trusted/**/*.py"))
    assert len(trusted) >= 20
    for f in trusted:
        extra = imports(f) - (set(sys.stdlib_module_names) | {"numpy", "reference_models"})
        assert not extra, f"{f.relative_to(ROOT)} imports {extra}"
    for f in sorted(ROOT.glob("problems/**/*.py")):
        if "_trusted" in f.parts:
            continue
        extra = imports(f) - (set(sys.stdlib_module_names) | {"numpy"})
        assert not extra, f"{f.relative_to(ROOT)} imports {extra}"


def test_third_party_clients_live_in_one_module_each():
    for f in files("grader") + files("sandbox") + files("reference_models"):
        rel = f.relative_to(ROOT).as_posix()
        mods = imports(f)
        if rel != "grader/pipeline/llm.py":
            assert not mods & {"openai", "tenacity"}, f"{rel} imports the model client libraries"
        if not rel.startswith("sandbox/"):
            assert "docker" not in mods, f"{rel} imports docker"
        if rel != "grader/integrations/inspect_tasks.py":
            assert "inspect_ai" not in mods, f"{rel} imports inspect_ai (only the inspect tasks' module may)"


def test_frameworks_are_imported_only_by_their_bridge():
    """verifiers is imported by its bridge alone (and the package verifiers finds it by), so the
    core never needs it installed."""
    bridges = {"grader/integrations/verifiers_env.py"}
    for f in files("grader") + files("sandbox") + files("reference_models"):
        rel = f.relative_to(ROOT).as_posix()
        if rel not in bridges:
            assert "verifiers" not in imports(f), f"{rel} imports verifiers"
    shim = imports(ROOT / "perfgrade_verifiers" / "__init__.py")
    assert shim <= {"grader"}, f"perfgrade_verifiers imports {shim - {'grader'}}: it only re-exports the bridge"


def test_the_harness_is_standard_library_only():
    for f in files("sandbox/harness"):
        extra = imports(f) - set(sys.stdlib_module_names)
        assert not extra, f"{f.relative_to(ROOT)} imports {extra}"


def test_no_import_time_logging_configuration():
    for f in files("grader") + files("sandbox") + files("reference_models"):
        if f.relative_to(ROOT).as_posix() == "grader/cli/app.py":
            continue
        assert "basicConfig" not in f.read_text(), f"{f.relative_to(ROOT)} configures logging"


# The rooms of grader/, lowest first. A module may import from its own room and from rooms below
# it, never from a room above: the base (errors, settings, console) needs nothing; packs (problem
# files, vectors, prompts) stand on the base; grading (scoring, extraction, the sandbox, the
# validator) on packs; results (run directories, statistics, rendering) on grading; pipeline
# (the eval modes, the model client) on results; reward (the grader as a training reward) on the
# pipeline; integrations (bridges to other frameworks: inspect_ai, verifiers) on the reward; the
# CLI on everything.
ROOMS = ["base", "packs", "grading", "results", "pipeline", "reward", "integrations", "cli"]


def _room(rel_parts: tuple[str, ...]) -> str:
    return rel_parts[0] if len(rel_parts) > 1 and rel_parts[0] in ROOMS else "base"


def _grader_imports(path: Path) -> set[tuple[str, ...]]:
    """The grader modules a file imports, as paths inside grader/ (relative imports resolved)."""
    rel = path.relative_to(ROOT / "grader").with_suffix("").parts
    package = rel[:-1] if rel[-1] != "__init__" else rel[:-1]
    out = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - (node.level - 1)] if node.level > 1 else package
                mod = tuple(base) + tuple((node.module or "").split(".")) if node.module else tuple(base)
            elif node.module and node.module.split(".")[0] == "grader":
                mod = tuple(node.module.split(".")[1:])
            else:
                continue
            mod = tuple(m for m in mod if m)
            if node.module is None or not node.level:
                for a in node.names:  # from . import x: x may be a module
                    out.add(mod + (a.name,))
            out.add(mod)
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.split(".")[0] == "grader":
                    out.add(tuple(a.name.split(".")[1:]))
    return out


def test_grader_rooms_import_only_downwards():
    order = {r: i for i, r in enumerate(ROOMS)}
    for f in files("grader"):
        rel = f.relative_to(ROOT / "grader").parts
        if rel == ("__main__.py",):
            continue  # the entry point stands above every room
        mine = _room(rel)
        for target in _grader_imports(f):
            if not target or target[0] not in ROOMS:
                continue  # the base: grader/__init__, errors, settings, console
            theirs = target[0]
            assert order[theirs] <= order[mine], (
                f"grader/{'/'.join(rel)} ({mine}) imports grader.{'.'.join(target)} ({theirs}): "
                "rooms import only from their own room or the rooms below")


def test_every_grader_module_lives_in_a_room():
    loose = [f.name for f in (ROOT / "grader").glob("*.py")
             if f.stem not in {"__init__", "__main__", "errors", "settings", "console"}]
    assert not loose, f"modules outside the rooms of grader/: {loose}"
