"""Helpers shared by tests (a plain module: conftest modules are not importable by name)."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TINY_PACK = ROOT / "tests" / "data" / "packs" / "tiny-pack"


def leftovers(client, run_id: str) -> list:
    """Containers (any state) still carrying a run's label."""
    from sandbox.engine import LABEL_RUN

    return client.containers(all=True, filters={"label": f"{LABEL_RUN}={run_id}"})


def trusted(pack: str):
    """A built-in pack's trusted code: ``.references``, ``.generators``, ``.submodule(name)``."""
    from grader.packs.trusted import load_trusted

    folder = ROOT / "problems" / pack / "_trusted"
    return load_trusted(pack, folder, folder.parent / "pack.toml")


def variant_source(problem: str, name: str) -> str:
    """A built-in problem's variant, materialised from its declared change (``pack/id``, variant name)."""
    from grader.packs.problems import load_pack

    pack, _, pid = problem.partition("/")
    (p,) = [q for q in load_pack(ROOT / "problems" / pack).problems if q.id == pid]
    (v,) = [v for v in p.variants if v.name == name]
    return v.source
