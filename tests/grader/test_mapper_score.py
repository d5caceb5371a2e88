"""Scores of search problems: the arithmetic per instance, one verdict and a score per sandbox
result (grade_mapping), the report's summary of scores and the reward."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from grader.grading.scoring import Verdict, grade, grade_for, grade_mapping, instance_score
from grader.packs.problems import Catalog
from grader.packs.vectors import Vector
from grader.results.stats import Outcome, summarize_scores
from grader.reward import Rewarder
from sandbox.models import CaseResult, ErrorInfo, ExecResult, LoadResult, StopInfo

from mapper_cases import CLUSTER_ARCH as ARCH
from mapper_cases import CLUSTER_BEST as BEST_MAP
from mapper_cases import CLUSTER_GOOD as GOOD
from mapper_cases import CLUSTER_WORK as WORK
from mapper_cases import HOLDS

# the worked example of the M1 specs: the least energy 2136.2 pJ (BEST_MAP), GOOD 2145.2 pJ
BEST, GOOD_PJ = 2136.2, 2145.2
BIG_GLB = json.loads(json.dumps(ARCH))
BIG_GLB["levels"][2]["capacity_bytes"] = 40  # GOOD does not fit here (2 x 22 bytes)


@pytest.fixture(scope="module")
def problem():
    return Catalog().find("perf-mapper/gemm-energy-mapper")


def vec(vid: str, best: float = BEST, proven: bool = True, arch=ARCH) -> Vector:
    return Vector(id=vid, args=[WORK, arch, HOLDS], expected={"best": best, "proven": proven, "mapping": json.dumps(BEST_MAP)})


def ok(vid: str, value) -> CaseResult:
    return CaseResult(id=vid, ok=True, value=value)


def result(*cases: CaseResult, stop: StopInfo | None = None, load: LoadResult | None = None) -> ExecResult:
    return ExecResult(job="t", load=load or LoadResult(ok=True), cases=list(cases), stop=stop, cpu_s=1.0)


@pytest.mark.parametrize("objective,best,expect", [
    (100.0, 100.0, (1.0, True, False)),
    (100.1, 100.0, (100 / 100.1, True, False)),      # within 0.1%: at the best known
    (100.11, 100.0, (100 / 100.11, False, False)),   # just outside
    (200.0, 100.0, (0.5, False, False)),
    (90.0, 100.0, (1.0, True, True)),                # better than the best known: capped, flagged
    (0.0, 0.0, (1.0, True, False)),
    (5.0, 0.0, (0.0, False, False)),
    (math.inf, 100.0, (0.0, False, False)),
    (math.nan, 100.0, (0.0, False, False)),
    (-1.0, 100.0, (0.0, False, False)),
])
def test_instance_score(objective, best, expect):
    s, at, new = instance_score(objective, best, 0.001)
    assert (pytest.approx(s), at, new) == (pytest.approx(expect[0]), expect[1], expect[2])


def test_all_at_best_passes_with_score_one(problem):
    g = grade_mapping(result(ok("h0", BEST_MAP), ok("h1", BEST_MAP)), [vec("h0"), vec("h1")], problem)
    assert g.verdict is Verdict.PASS and g.passed
    assert g.score == 1.0 and g.at_best == 2 and g.vectors_passed == 2 and not g.new_best
    assert [i.objective for i in g.instances] == [BEST, BEST]


def test_a_worse_mapping_scores_below_one_and_fails(problem):
    g = grade_mapping(result(ok("h0", BEST_MAP), ok("h1", GOOD)), [vec("h0"), vec("h1")], problem)
    assert g.verdict is Verdict.WRONG_ANSWER and not g.passed
    assert g.score == pytest.approx((1 + BEST / GOOD_PJ) / 2)
    assert g.instances[1].objective == pytest.approx(GOOD_PJ, rel=1e-12)
    assert g.at_best == 1 and g.failed_vectors == ["h1"]
    assert g.reason.startswith("score 0.998, 1 of 2 instances at the best known")


def test_an_invalid_mapping_scores_zero_with_its_reason(problem):
    g = grade_mapping(result(ok("h0", BEST_MAP), ok("h1", GOOD)), [vec("h0"), vec("h1", arch=BIG_GLB)], problem)
    assert g.verdict is Verdict.WRONG_ANSWER
    assert g.instances[1].score == 0.0 and g.instances[1].invalid == "invalid_mapping: capacity at GLB"
    assert g.score == pytest.approx(0.5)
    assert "invalid_mapping: capacity at GLB on h1" in g.reason
    hostile = grade_mapping(result(ok("h0", {"levels": "x" * 10}), ok("h1", [True])), [vec("h0"), vec("h1")], problem)
    assert hostile.score == 0.0 and all(i.invalid.startswith("invalid_mapping: schema") for i in hostile.instances)


def test_runtime_errors_timeouts_and_load_errors_keep_a_partial_score(problem):
    boom = CaseResult(id="h1", ok=False, error=ErrorInfo(type="ValueError", message="no mapping"))
    g = grade_mapping(result(ok("h0", BEST_MAP), boom), [vec("h0"), vec("h1")], problem)
    assert g.verdict is Verdict.RUNTIME_ERROR and g.score == 0.5
    assert g.instances[1].error.startswith("ValueError") and g.failures[0].vector == "h1"
    stop = StopInfo(reason="cpu_time", phase="case", case="h1", detail="20 s")
    t = grade_mapping(result(ok("h0", BEST_MAP), stop=stop), [vec("h0"), vec("h1")], problem)
    assert t.verdict is Verdict.TIMEOUT and t.score == 0.5 and t.instances[1].error == "not answered"
    load = LoadResult(ok=False, kind="exception", error=ErrorInfo(type="SyntaxError", message="bad"))
    lg = grade_mapping(result(load=load), [vec("h0")], problem)
    assert lg.verdict is Verdict.LOAD_ERROR and lg.score == 0.0
    short = grade_mapping(result(ok("h0", BEST_MAP)), [vec("h0"), vec("h1")], problem)
    assert short.verdict is Verdict.CRASHED and short.score == 0.5


def test_beating_an_unproven_best_is_recorded_and_capped(problem):
    g = grade_mapping(result(ok("h0", GOOD)), [vec("h0", best=2500.0, proven=False)], problem)
    assert g.verdict is Verdict.PASS and g.score == 1.0 and g.new_best == ["h0"]
    assert g.instances[0].proven is False


def test_grade_for_dispatches_on_scoring(problem):
    pf = Catalog().find("perf-core/f1-conv-layer-accounting")
    assert pf.data.scoring is None
    r = result(ok("h0", {}))
    v = Vector(id="h0", args=[{}], expected={f.name: 0 for f in pf.data.outputs})
    assert grade_for(r, [v], pf) == grade(r, [v], pf.data.outputs)
    assert grade_for(r, [v], pf).score is None
    assert grade_for(result(ok("h0", BEST_MAP)), [vec("h0")], problem).score == 1.0


def test_summarize_scores():
    def o(pid, s, score, at, passed=False, tier="search", counted=True, verdict="wrong_answer"):
        return Outcome(problem=pid, sample=s, passed=passed, verdict=verdict, tier=tier, counted=counted,
                       score=score, at_best=at, instances=4)
    outs = [o("p/a", 0, 1.0, 4, passed=True, verdict="pass"), o("p/a", 1, 0.5, 2), o("p/b", 0, 0.8, 1),
            o("p/b", 1, None, 0, verdict="no_code"), o("p/b", 2, 0.9, 0, counted=False, verdict="infra_error"),
            Outcome(problem="q/c", sample=0, passed=True, verdict="pass", tier="model")]
    s = summarize_scores(outs)
    rows = {p["problem"]: p for p in s["problems"]}
    assert set(rows) == {"p/a", "p/b"}  # the pass/fail problem and the infrastructure error are left out
    assert rows["p/a"]["score"] == 0.75 and rows["p/a"]["at_best"] == 6 / 8 and rows["p/a"]["pass@1"] == 0.5
    assert rows["p/b"]["score"] == 0.4 and rows["p/b"]["n"] == 2  # no code scores 0
    assert s["headline"]["score"] == pytest.approx((0.75 + 0.4) / 2)
    assert s["headline"]["at_best"] == 7 / 16
    lo, hi = s["headline"]["score_ci95"]
    assert lo <= s["headline"]["score"] <= hi
    assert s["runs"]["runs"] == [0.9, 0.25]
    assert summarize_scores([outs[-1]]) is None


def test_reward_dense_is_the_score_binary_is_the_pass(problem):
    worse = grade_mapping(result(ok("h0", BEST_MAP), ok("h1", GOOD)), [vec("h0"), vec("h1")], problem)
    best = grade_mapping(result(ok("h0", BEST_MAP)), [vec("h0")], problem)
    r = Rewarder()
    try:
        assert r.reward(worse, partial=False) == 0.0
        assert r.reward(worse, partial=True) == pytest.approx((1 + BEST / GOOD_PJ) / 2)
        assert r.reward(best, partial=False) == 1.0 and r.reward(best, partial=True) == 1.0
    finally:
        r.close()


def test_validator_judges_solution_variants_baselines_and_proven_bests(problem):
    from grader.grading import mapping_checks

    class Report:
        def __init__(self):
            self.checks = {}

        def add(self, name, ok, detail=""):
            self.checks[name] = (ok, detail)

    at_best = grade_mapping(result(ok("h0", BEST_MAP), ok("h1", BEST_MAP)), [vec("h0"), vec("h1")], problem)
    close = grade_mapping(result(ok("h0", BEST_MAP), ok("h1", GOOD)), [vec("h0"), vec("h1")], problem)  # 0.998
    far = grade_mapping(result(ok("h0", GOOD), ok("h1", GOOD)), [vec("h0", arch=BIG_GLB), vec("h1", arch=BIG_GLB)],
                        problem)
    beats = grade_mapping(result(ok("h0", BEST_MAP)), [vec("h0", best=2200.0)], problem)  # "proven" 2200 beaten
    crash = grade_mapping(result(load=LoadResult(ok=False, kind="exception", error=ErrorInfo(type="SyntaxError"))),
                          [vec("h0")], problem)

    good = Report()
    scores = mapping_checks.judge_runs(problem, good, {"gold:solution": at_best, "variant:a": far, "baseline:r": close})
    assert all(ok for ok, _ in good.checks.values()), good.checks
    assert scores == {"gold:solution": 1.0, "variant:a": 0.0, "baseline:r": close.score}
    assert good.checks["baselines"][1] == f"r {close.score:.3f}"

    bad = Report()
    mapping_checks.judge_runs(problem, bad, {"gold:solution": far, "variant:a": close, "variant:b": at_best,
                                             "baseline:r": crash, "baseline:g": beats})
    assert bad.checks["gold (solution)"][0] is False
    assert bad.checks["variants below"][0] is False  # a variant that passes, and one within 0.05 of the solution
    assert "b scores 1.000" in bad.checks["variants below"][1]
    assert bad.checks["baselines"][0] is False and "load_error" in bad.checks["baselines"][1]
    assert bad.checks["no candidate beats a proven best"][0] is False
    assert "baseline:g on h0" in bad.checks["no candidate beats a proven best"][1]


def test_scores_by_family_and_tier_with_their_spread():
    def o(pid, fam, s, score, at, tier="search"):
        return Outcome(problem=pid, sample=s, passed=at == 4, verdict="pass" if at == 4 else "wrong_answer",
                       family=fam, tier=tier, score=score, at_best=at, instances=4)
    outs = [o("p/a", "M1", 0, 1.0, 4), o("p/a", "M1", 1, 0.6, 1), o("p/b", "M1", 0, 0.5, 0), o("p/b", "M1", 1, 0.7, 2),
            o("p/c", "M2", 0, 0.2, 0), o("p/c", "M2", 1, 0.4, 0),
            Outcome(problem="q/d", sample=0, passed=True, verdict="pass", family="F1", tier="model")]
    s = summarize_scores(outs)
    fam = s["by_family"]
    assert set(fam) == {"M1", "M2"}  # only the search problems' families
    assert fam["M1"]["problems"] == 2 and fam["M1"]["score"] == pytest.approx((0.8 + 0.6) / 2)
    assert fam["M1"]["at_best"] == 7 / 16 and fam["M2"]["at_best"] == 0.0
    lo, hi = fam["M1"]["score_ci95"]
    assert 0.6 <= lo <= fam["M1"]["score"] <= hi <= 0.8  # bootstrap over the family's two problems
    assert fam["M2"]["score_ci95"] is None  # one problem: no CI
    # run i = sample i of the family's problems
    assert fam["M1"]["spread"]["runs"] == pytest.approx([0.75, 0.65])
    assert fam["M1"]["spread"]["std"] == pytest.approx(np.std([0.75, 0.65], ddof=1))
    assert fam["M2"]["spread"]["runs"] == pytest.approx([0.2, 0.4])
    assert set(s["by_tier"]) == {"search"} and s["by_tier"]["search"]["score"] == pytest.approx(s["headline"]["score"])
    assert s["by_tier"]["search"]["spread"] == s["runs"]
    rows = {p["problem"]: p for p in s["problems"]}
    assert rows["p/a"]["scores"] == [1.0, 0.6] and rows["p/a"]["std"] == pytest.approx(np.std([1.0, 0.6], ddof=1))
    assert rows["p/a"]["family"] == "M1"


def test_score_charts():
    from grader.results import charts

    h = charts.histogram([0.0, 0.05, 0.5, 0.95, 1.0, 1.0], bins=10)
    assert h["counts"] == [2, 0, 0, 0, 0, 1, 0, 0, 0, 3]  # a score of 1 falls in the last bin
    tallest = max(h["bars"], key=lambda b: b["height"])
    assert tallest["n"] == 3 and tallest["y"] == pytest.approx(1)
    st = charts.score_strip([0.25, 0.25, 1.0], 0.5, [0.25, 1.0], width=108)
    xs = [d["x"] for d in st["dots"]]
    assert xs == [29.0, 29.0, 104.0] and st["mean"] == 54.0 and st["ci"] == (29.0, 104.0)
    assert st["dots"][0]["y"] != st["dots"][1]["y"]  # equal scores stack
