"""Helpers shared by tests (a plain module: conftest modules are not importable by name)."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TINY_PACK = ROOT / "tests" / "data" / "packs" / "tiny-pack"


def tight_limits():
    """The resource attacks' tight limits (the hostile corpus, the memory-under-load faults), so that
    they end quickly. The CPU budget is about twice what a memory bomb needs to fill 256 MB under
    gVisor, where the Sentry's page faults count as the container's CPU time (0.3-0.45 s for 224 MB
    in 32 MB blocks, measured on 2 cores; 0.15-0.2 s under runc): at 0.5 s the bomb raced the
    budget and came out `timeout` beside a busy torch job. benchmarks/stress_verdicts.py uses the same."""
    from sandbox.models import Limits

    return Limits(case_cpu_s=1.0, load_cpu_s=1.0, wall_factor=2.0, wall_slack_s=0.5, memory_mb=256)


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
