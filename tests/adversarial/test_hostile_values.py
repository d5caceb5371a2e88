"""Hostile values with the right keys on real perf-core problems, through the real sandbox and scorer.

``corpus.VALUE_CORPUS`` answers f5-three-level-accesses (int counts in maps) and f2-roofline-gemm
(ints, floats, an enum) with the bundled solution's keys and corrupted values: each must get the
verdict the docs promise, never a pass, in per-sample and in batch mode alike. ``corpus.ACCEPTED``
holds values that differ from the reference's in form only (numpy scalars, ints for integral
floats, key order): they must pass, or the grader would fail honest code.
"""

from __future__ import annotations

import functools
import importlib
import os
from pathlib import Path

import pytest

from corpus import ACCEPTED, CORPUS, ENTRY, LIMITS, VALUE_CORPUS, VISIBLE, Accepted, Hostile, solution

ROOT = Path(__file__).resolve().parents[2]
WATCHED = [ROOT / d for d in ("problems", "reference_models", "tests/data")]
BATCH = 6


def grader_module(name: str):
    """``grader/**/<name>.py`` wherever the package's reorganisation has put it at the moment."""
    errors = []
    for path in sorted((ROOT / "grader").rglob(f"{name}.py")):
        dotted = ".".join(path.relative_to(ROOT).with_suffix("").parts)
        try:
            return importlib.import_module(dotted)
        except ImportError as exc:  # a half-moved module: try the other copy
            errors.append(f"{dotted}: {exc}")
    raise ImportError(f"no importable grader module {name!r}: {errors}")


@functools.cache
def problem(qid: str):
    return grader_module("problems").Catalog().find(qid)


@functools.cache
def vector_set(qid: str):
    return grader_module("vectors").load(problem(qid))


def grade(handle, qid: str, source: str, which: str = "hidden"):
    vs = vector_set(qid)
    vecs = vs.hidden if which == "hidden" else vs.visible
    return grader_module("execution").grade_source(handle, problem(qid), source, vecs, LIMITS, job_id="sample")


def snapshot() -> dict[str, tuple[int, int]]:
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


# ------------------------------------------------------------------------------------------
# the corpus itself (no Docker)
# ------------------------------------------------------------------------------------------

def test_the_value_corpus_is_well_formed():
    names = [h.name for h in VALUE_CORPUS] + [a.name for a in ACCEPTED]
    assert len(set(names)) == len(names)
    assert not set(names) & {h.name for h in CORPUS}
    assert {h.problem for h in VALUE_CORPUS} == set(ENTRY)
    assert {h.category for h in VALUE_CORPUS} >= {"types", "numpy", "forging", "lingering", "special-casing"}
    for h in [*VALUE_CORPUS, *ACCEPTED]:
        compile(h.source, h.name, "exec")
        assert f"def {ENTRY[h.problem]}(" in h.source, h.name
        assert problem(h.problem).entry_point == ENTRY[h.problem]
    # the old entries keep answering the tiny problem
    assert {h.problem for h in CORPUS} == {"tiny-pack/sound"}


@pytest.mark.parametrize("qid", sorted(VISIBLE))
def test_the_special_casers_table_is_the_prompts_examples(qid):
    visible = vector_set(qid).visible
    assert [(v.args, v.expected) for v in visible] == [(list(a), e) for a, e in VISIBLE[qid]]


def test_the_scorer_survives_an_int_too_big_for_a_float_field():
    """A float output accepts ints; one too big for a float must be a wrong answer, not an exception.

    grader scoring ``compare`` (the ``float`` branch) calls ``float(got)``, which raises
    OverflowError for ``10 ** 400`` although ``check_value`` has just accepted it as a number.
    """
    scoring = grader_module("scoring")
    p = problem("perf-core/f2-roofline-gemm")
    vec = vector_set(p.qualified_id).hidden[0]
    for bad in (10 ** 400, -(10 ** 400), 2 ** 1024):
        got = dict(vec.expected, intensity=bad)
        diffs = scoring.compare_output(p.data.outputs, vec.expected, got)
        assert [(d.path, d.kind) for d in diffs] == [("intensity", "value")], bad


# ------------------------------------------------------------------------------------------
# through the sandbox
# ------------------------------------------------------------------------------------------

@pytest.mark.docker
@pytest.mark.parametrize("hostile", VALUE_CORPUS, ids=lambda h: h.name)
def test_hostile_value(hostile: Hostile, handle, docker_api, run_label, tmp_path):
    from support import leftovers

    sentinel = tmp_path / "sentinel.txt"
    sentinel.write_text("untouched")
    before = snapshot()

    g, notes = grade(handle, hostile.problem, hostile.source)
    assert g.verdict.value != "pass", f"{hostile.name} passed: {g.reason}"
    assert g.verdict.value in hostile.expect, f"{hostile.name}: {g.verdict.value} ({g.reason})"
    assert not notes

    assert leftovers(docker_api, run_label) == []
    assert sentinel.read_text() == "untouched"
    assert snapshot() == before, "host files changed"


@pytest.mark.docker
@pytest.mark.parametrize("accepted", ACCEPTED, ids=lambda a: a.name)
def test_accepted_value(accepted: Accepted, handle):
    g, notes = grade(handle, accepted.problem, accepted.source)
    assert g.verdict.value == "pass", f"{accepted.name} ({accepted.why}): {g.verdict.value} ({g.reason})"
    assert not notes


@pytest.mark.docker
@pytest.mark.parametrize("name", ["f5-visible-examples-only", "f2-visible-examples-only"])
def test_the_special_casers_pass_the_visible_examples(name, handle):
    """They are real special-casers: right on the prompt's examples, wrong on the hidden vectors."""
    h = next(h for h in VALUE_CORPUS if h.name == name)
    g, _ = grade(handle, h.problem, h.source, which="visible")
    assert g.verdict.value == "pass", g.reason


def _verdicts(results, qid: str) -> list[str]:
    """Each result scored on its own: an exception of the scorer is that entry's outcome."""
    scoring = grader_module("scoring")
    p = problem(qid)
    out = []
    for r in results:
        try:
            out.append(scoring.grade(r, vector_set(qid).hidden, p.data.outputs).verdict.value)
        except Exception as exc:  # noqa: BLE001 - reported as this entry's outcome
            out.append(f"scorer raised {type(exc).__name__}")
    return out


@pytest.mark.docker
@pytest.mark.parametrize("qid", sorted(ENTRY))
def test_the_value_corpus_gets_the_same_verdicts_in_batch_mode(qid, handle):
    """Batched with the bundled solution after every entry: the same verdicts as one by one."""
    make_job = grader_module("execution").make_job
    p = problem(qid)
    hidden = vector_set(qid).hidden
    entries = [h for h in VALUE_CORPUS if h.problem == qid]
    items = []
    for h in entries:
        items.append((h.name, h.source))
        items.append((f"{h.name}--after", solution(qid)))
    batched: dict[str, str] = {}
    for k in range(0, len(items), BATCH):
        chunk = items[k:k + BATCH]
        results = handle.sandbox.run_many([make_job(n, p, s, hidden) for n, s in chunk], LIMITS)
        batched.update(zip((n for n, _ in chunk), _verdicts(results, qid)))
    mismatches = []
    for h in entries:
        single = _verdicts([handle.sandbox.run_many([make_job(h.name, p, h.source, hidden)], LIMITS)[0]], qid)[0]
        if batched[h.name] != single:
            mismatches.append(f"{h.name}: batch {batched[h.name]}, alone {single}")
        if batched[f"{h.name}--after"] != "pass":
            mismatches.append(f"the solution after {h.name}: {batched[f'{h.name}--after']}")
    assert not mismatches, mismatches
