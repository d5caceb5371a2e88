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


# Where gVisor gives a candidate a different (still failing) verdict than runc, and why. Under
# runsc these replace the corpus's expectation; everything else must get the same verdicts.
RUNSC_EXPECT = {
    # Python 3.11 keeps Python-to-Python calls off the C stack, so this recursion grows the heap
    # (frames) toward the memory limit. Under runc it gets there within its 0.5 s CPU budget.
    # Under gVisor each fresh page is a fault the Sentry serves (ptrace platform), and the
    # Sentry counts a task's time in it as CPU time, so the budget runs out first, at about
    # 170 MB of 256: a timeout (memory_limit on a faster host).
    "deep-recursion-raised-limit": frozenset({"timeout", "memory_limit"}),
}


def expected(hostile, runtime: str | None) -> frozenset[str]:
    if runtime == "runsc" and hostile.name in RUNSC_EXPECT:
        return RUNSC_EXPECT[hostile.name]
    return hostile.expect


def test_runsc_differences_name_real_candidates():
    assert set(RUNSC_EXPECT) <= {h.name for h in CORPUS}
    assert all("pass" not in v for v in RUNSC_EXPECT.values())


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
    assert g.verdict.value in expected(hostile, runtime), f"{hostile.name}: {g.verdict.value} ({g.reason})"
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
