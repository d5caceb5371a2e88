"""Host-side comparison and verdicts (pure: ExecResults are built by hand)."""

from __future__ import annotations

import pytest

from grader.packs.problems import FieldSpec
from grader.grading.scoring import Verdict, compare_output, grade
from grader.packs.vectors import Vector
from sandbox.models import CaseResult, ErrorInfo, ExecResult, LoadResult, StopInfo

OUT = [
    FieldSpec(name="reads", type="int"),
    FieldSpec(name="energy", type="float", rtol=1e-6, atol=1e-9),
    FieldSpec(name="bound", type="enum", choices=["compute", "memory"]),
    FieldSpec(name="per_level", type="map[int]"),
    FieldSpec(name="order", type="list[str]"),
    FieldSpec(name="winners", type="set[str]"),
]
EXP = {"reads": 18, "energy": 130.05, "bound": "memory", "per_level": {"L1": 3, "DRAM": 18},
       "order": ["a", "b"], "winners": ["x", "y"]}
VECS = [Vector(id=f"h{i}", args=[i], expected=EXP) for i in range(3)]


def result(values=None, **kw):
    cases = kw.pop("cases", None)
    if cases is None:
        cases = [CaseResult(id=v.id, ok=True, value=values if values is not None else EXP) for v in VECS]
    return ExecResult(job="j", load=kw.pop("load", LoadResult(ok=True)), cases=cases, **kw)


def test_exact_match_passes_and_tolerance_is_applied():
    got = dict(EXP, energy=130.05 * (1 + 5e-7), winners=["y", "x"])
    g = grade(result(got), VECS, OUT)
    assert g.verdict is Verdict.PASS and g.vectors_passed == 3


@pytest.mark.parametrize("got, verdict, path", [
    (dict(EXP, reads=36), Verdict.WRONG_ANSWER, "reads"),
    (dict(EXP, energy=130.06), Verdict.WRONG_ANSWER, "energy"),
    (dict(EXP, reads=18.0), Verdict.WRONG_TYPE, "reads"),
    (dict(EXP, reads=True), Verdict.WRONG_TYPE, "reads"),
    (dict(EXP, reads="18"), Verdict.WRONG_TYPE, "reads"),
    (dict(EXP, bound="Memory"), Verdict.WRONG_TYPE, "bound"),
    (dict(EXP, per_level={"L1": 3}), Verdict.WRONG_TYPE, "per_level.DRAM"),
    (dict(EXP, per_level={"L1": 3, "DRAM": 18, "L2": 0}), Verdict.WRONG_TYPE, "per_level.L2"),
    (dict(EXP, order=["b", "a"]), Verdict.WRONG_ANSWER, "order[0]"),
    (dict(EXP, order=["a"]), Verdict.WRONG_TYPE, "order"),
    (dict(EXP, winners=["x", "x"]), Verdict.WRONG_ANSWER, "winners"),
    ({k: v for k, v in EXP.items() if k != "reads"}, Verdict.WRONG_TYPE, "reads"),
    (dict(EXP, extra=1), Verdict.WRONG_TYPE, "extra"),
    ([EXP], Verdict.WRONG_TYPE, ""),
])
def test_mismatches(got, verdict, path):
    g = grade(result(got), VECS, OUT)
    assert g.verdict is verdict
    assert any(d.path == path for f in g.failures for d in f.diffs), g.failures[0].diffs


def test_field_summary_exposes_a_constant_ratio():
    g = grade(result(dict(EXP, reads=36)), VECS, OUT)
    s = g.fields["reads"]
    assert s.failed == 3 and s.ratio_min == s.ratio_max == 2.0 and s.diff_min == s.diff_max == 18
    d = g.failures[0].diffs[0]
    assert d.expected == 18 and d.got == 36 and d.rel_err == pytest.approx(1.0)


def test_runtime_error_outranks_wrong_answers():
    cases = [CaseResult(id="h0", ok=True, value=dict(EXP, reads=1)),
             CaseResult(id="h1", ok=False, error=ErrorInfo(type="KeyError", message="'bypass'")),
             CaseResult(id="h2", ok=True, value=EXP)]
    g = grade(result(cases=cases), VECS, OUT)
    assert g.verdict is Verdict.RUNTIME_ERROR and g.exception_type == "KeyError"
    assert g.vectors_passed == 1 and "KeyError" in g.reason


def test_unsupported_result_is_a_wrong_type():
    cases = [CaseResult(id=v.id, ok=False, error=ErrorInfo(type="UnsupportedResult", message="non-finite"))
             for v in VECS]
    assert grade(result(cases=cases), VECS, OUT).verdict is Verdict.WRONG_TYPE


@pytest.mark.parametrize("reason, verdict", [("cpu_time", Verdict.TIMEOUT), ("wall_time", Verdict.TIMEOUT),
                                             ("memory", Verdict.MEMORY_LIMIT), ("output", Verdict.OUTPUT_LIMIT),
                                             ("exit", Verdict.CRASHED), ("signal", Verdict.CRASHED),
                                             ("protocol", Verdict.CRASHED), ("harness", Verdict.CRASHED)])
def test_stops_map_to_verdicts(reason, verdict):
    r = result(cases=[CaseResult(id="h0", ok=True, value=EXP)],
               stop=StopInfo(reason=reason, phase="case", case="h1", detail="d"))
    g = grade(r, VECS, OUT)
    assert g.verdict is verdict and "h1" in g.reason and g.vectors_passed == 1


@pytest.mark.parametrize("kind, verdict", [("syntax", Verdict.LOAD_ERROR), ("import", Verdict.LOAD_ERROR),
                                           ("exception", Verdict.LOAD_ERROR), ("missing_entry", Verdict.MISSING_ENTRY),
                                           ("not_callable", Verdict.MISSING_ENTRY)])
def test_load_failures(kind, verdict):
    r = result(cases=[], load=LoadResult(ok=False, kind=kind, error=ErrorInfo(type="SyntaxError", message="bad")))
    assert grade(r, VECS, OUT).verdict is verdict


def test_missing_answers_are_a_crash_never_a_pass():
    g = grade(result(cases=[CaseResult(id="h0", ok=True, value=EXP)]), VECS, OUT)
    assert g.verdict is Verdict.CRASHED


def test_compare_output_float_field_accepts_ints_but_not_bools():
    out = [FieldSpec(name="x", type="float", rtol=0.0, atol=0.0)]
    assert compare_output(out, {"x": 2.0}, {"x": 2}) == []
    assert compare_output(out, {"x": 2.0}, {"x": True})[0].kind == "type"


def test_a_runtime_error_after_many_wrong_answers_is_still_one_verdict():
    """The failures kept are the first few; the worst verdict may come from a vector not kept."""
    vecs = [Vector(id=f"h{i}", args=[i], expected=EXP) for i in range(8)]
    wrong = dict(EXP, reads=36)
    cases = [CaseResult(id=v.id, ok=True, value=wrong) for v in vecs[:7]]
    cases.append(CaseResult(id="h7", ok=False, error=ErrorInfo(type="ZeroDivisionError", message="division by zero")))
    g = grade(result(cases=cases), vecs, OUT)
    assert g.verdict is Verdict.RUNTIME_ERROR
    assert "ZeroDivisionError" in g.reason and "8 of 8" in g.reason


def test_an_integer_beyond_the_float_range_is_a_wrong_answer_not_a_crash():
    g = grade(result(dict(EXP, energy=10**400)), VECS, OUT)
    assert g.verdict is Verdict.WRONG_ANSWER
    assert any(d.path == "energy" and "beyond the range" in d.note for f in g.failures for d in f.diffs)


def test_extra_keys_are_listed_up_to_a_cap():
    got = dict(EXP, **{f"k{i}": i for i in range(5000)})
    diffs = compare_output(OUT, EXP, got)
    assert 0 < len(diffs) <= 24 and all(d.kind == "extra" for d in diffs)
