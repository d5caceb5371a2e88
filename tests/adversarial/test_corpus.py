"""Every hostile candidate through the real sandbox and the real scorer: none passes, nothing leaks.

After each one: no container with the run's label remains, the host's files are untouched, the
grader is alive, and a correct candidate graded next still passes.
"""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path

import pytest

from corpus import CORPUS, CORRECT, LIMITS
from grader.packs import vectors
from grader.grading.execution import grade_source

pytestmark = pytest.mark.docker

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def runtime(each_runtime):
    """The corpus runs under runc and under gVisor's runsc."""
    return each_runtime


WATCHED = [ROOT / d for d in ("sandbox", "grader", "reference_models", "problems", "tests/data", "bin")]


def snapshot() -> dict[str, tuple[int, int]]:
    """Size and mtime of every file of the grader's own code and data on the host."""
    out = {}
    for top in WATCHED:
        for dirpath, dirnames, filenames in os.walk(top):
            dirnames[:] = [d for d in dirnames if d != "__pycache__"]
            for f in filenames:
                p = os.path.join(dirpath, f)
                try:
                    st = os.stat(p)
                except OSError:
                    continue
                out[p] = (st.st_size, st.st_mtime_ns)
    return out


def test_the_corpus_covers_every_threat_category():
    cats = Counter(h.category for h in CORPUS)
    assert set(cats) >= {"control", "types", "exits", "forging", "resources", "escape", "channel"}
    assert len(CORPUS) >= 35
    assert len({h.name for h in CORPUS}) == len(CORPUS)


@pytest.mark.parametrize("hostile", CORPUS, ids=lambda h: h.name)
def test_hostile_candidate(hostile, tiny_catalog, handle, docker_api, run_label, tmp_path, runtime):
    from support import leftovers

    problem = tiny_catalog.find("tiny-pack/sound")
    hidden = vectors.load(problem).hidden
    sentinel = tmp_path / "sentinel.txt"
    sentinel.write_text("untouched")
    before = snapshot()

    g, notes = grade_source(handle, problem, hostile.source, hidden, LIMITS, job_id="sample")
    assert g.verdict.value != "pass", f"{hostile.name} passed: {g.reason}"
    # the same verdicts under runc and runsc: the budgets run on the host kernel's clocks under both
    assert g.verdict.value in hostile.expect, f"{hostile.name}: {g.verdict.value} ({g.reason})"
    assert g.verdict.value != "infra_error" and not notes

    assert leftovers(docker_api, run_label) == []
    assert sentinel.read_text() == "untouched"
    assert snapshot() == before, "host files changed"
    after, _ = grade_source(handle, problem, CORRECT, hidden, LIMITS, job_id="sample")
    assert after.verdict.value == "pass", after.reason


def test_a_huge_completion_and_binary_junk_are_verdicts(tiny_catalog):
    from grader.grading.extract import extract_code

    problem = tiny_catalog.find("tiny-pack/sound")
    huge = "```python\n" + "x = 1\n" * 400_000 + CORRECT + "```"
    assert extract_code(huge, problem.entry_point).code is None
    junk = bytes(range(256)).decode("latin-1") * 100
    ex = extract_code(junk, problem.entry_point)
    assert ex.code is None and ex.method == "none"
