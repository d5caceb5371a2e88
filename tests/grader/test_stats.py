"""Statistics against hand-computed values."""

from __future__ import annotations

import math

import pytest

from grader.results.stats import Outcome, bootstrap_ci, flakiness, pass_at_k, pass_hat_k, run_rates, spread, summarize


@pytest.mark.parametrize("n, c, k, want", [
    (5, 2, 1, 0.4), (5, 2, 2, 0.7), (5, 2, 3, 0.9), (5, 2, 4, 1.0), (5, 0, 3, 0.0), (5, 5, 5, 1.0),
    (10, 1, 5, 0.5), (20, 3, 10, 1 - math.comb(17, 10) / math.comb(20, 10)),
])
def test_pass_at_k(n, c, k, want):
    assert pass_at_k(n, c, k) == pytest.approx(want, abs=1e-12)


@pytest.mark.parametrize("n, c, k, want", [(5, 2, 1, 0.4), (5, 2, 2, 0.1), (5, 2, 3, 0.0), (4, 4, 4, 1.0),
                                           (10, 5, 2, 10 / 45)])
def test_pass_hat_k(n, c, k, want):
    assert pass_hat_k(n, c, k) == pytest.approx(want, abs=1e-12)


@pytest.mark.parametrize("args", [(3, 4, 1), (3, 1, 4), (3, 1, 0), (0, 0, 1)])
def test_invalid_arguments(args):
    with pytest.raises(ValueError):
        pass_at_k(*args)


def outcomes():
    table = {"A": (["pass", "wrong_answer", "pass"], "F1", "easy"),
             "B": (["timeout", "wrong_answer", "pass"], "F4", "hard"),
             "C": (["infra_error", "pass", "pass"], "F4", "hard")}
    out = []
    for pid, (vs, fam, diff) in table.items():
        for s, v in enumerate(vs):
            out.append(Outcome(problem=pid, sample=s, passed=v == "pass", verdict=v, family=fam, difficulty=diff,
                               counted=v != "infra_error"))
    return out


def test_run_rates_and_spread():
    rates = run_rates(outcomes())
    # run 0: A pass, B fail (C excluded) = 1/2; run 1: 1/3; run 2: 3/3
    assert rates == pytest.approx([0.5, 1 / 3, 1.0])
    sp = spread(rates)
    mean = (0.5 + 1 / 3 + 1) / 3
    assert sp.mean == pytest.approx(mean)
    assert sp.std == pytest.approx(math.sqrt(sum((r - mean) ** 2 for r in rates) / 2))
    assert sp.min == pytest.approx(1 / 3) and sp.max == 1.0
    lo, hi = sp.ci95
    assert lo <= mean <= hi and lo >= 1 / 3 and hi <= 1.0


def test_summary_numbers():
    s = summarize(outcomes(), [1, 2, 3])
    probs = {p["problem"]: p for p in s["problems"]}
    assert probs["A"]["n"] == 3 and probs["A"]["correct"] == 2
    assert probs["C"]["n"] == 2 and probs["C"]["correct"] == 2 and probs["C"]["infra"] == 1
    assert probs["A"]["pass@k"]["2"] == pytest.approx(1.0)  # 1 - C(1,2)/C(3,2) = 1
    assert probs["B"]["pass@k"]["2"] == pytest.approx(1 - 1 / 3)  # 1 - C(2,2)/C(3,2)
    assert probs["B"]["pass^k"]["1"] == pytest.approx(1 / 3)
    h = s["headline"]
    assert h["pass@1"] == pytest.approx((2 / 3 + 1 / 3 + 1.0) / 3)
    assert "3" not in h["pass@k"]  # C has only 2 counted samples: pass@3 is not defined for every problem
    assert h["pass@k"]["2"] == pytest.approx((1.0 + 2 / 3 + 1.0) / 3)
    assert s["samples"] == {"graded": 9, "counted": 8, "infra_excluded": 1}
    assert s["verdicts"]["pass"] == 5 and s["verdicts"]["infra_error"] == 1
    assert s["by_difficulty"]["hard"]["problems"] == 2
    assert s["by_family"]["F1"]["pass@1"] == pytest.approx(2 / 3)


def test_bootstrap_is_reproducible_and_degenerate_cases():
    xs = [0.1, 0.5, 0.9, 0.3]
    assert bootstrap_ci(xs) == bootstrap_ci(xs)
    assert bootstrap_ci([0.7, 0.7, 0.7]) == pytest.approx((0.7, 0.7))
    assert bootstrap_ci([0.5]) is None


def test_flakiness():
    f = flakiness({("A", 0): ["pass", "pass"], ("A", 1): ["pass", "timeout"], ("B", 0): ["pass"]})
    assert f["regraded_samples"] == 2 and f["changed"] == 1 and f["rate"] == 0.5
    assert f["examples"] == ["A#1: pass -> timeout"]


def test_revision_rounds_score_search_problems_and_only_them():
    from grader.results.stats import revision_stats

    def o(problem: str, sample: int, passed: bool, score: float | None = None, tier: str = "guided") -> Outcome:
        return Outcome(problem=problem, sample=sample, passed=passed, verdict="pass" if passed else "wrong_answer",
                       family="F", tier=tier, score=score, instances=2, at_best=2 if passed else 0)

    plain = {0: [o("p/a", 0, False), o("p/a", 1, True)], 1: [o("p/a", 0, True), o("p/a", 1, True)]}
    assert all(r["search"] is None for r in revision_stats(plain)["rounds"])
    mixed = {0: plain[0] + [o("m/x", 0, False, 0.5, "search"), o("m/x", 1, False, 0.25, "search"),
                            o("m/y", 0, True, 1.0, "search"), o("m/y", 1, False, None, "search")],
             1: plain[1] + [o("m/x", 0, False, 0.75, "search"), o("m/x", 1, True, 1.0, "search"),
                            o("m/y", 0, True, 1.0, "search"), o("m/y", 1, False, 0.5, "search")]}
    r0, r1 = revision_stats(mixed)["rounds"]
    assert r0["search"]["score"] == pytest.approx((0.375 + 0.5) / 2)  # no score counts 0
    assert r0["search"]["change"] == 0.0 and r0["search"]["problems"] == 2
    assert r1["search"]["score"] == pytest.approx((0.875 + 0.75) / 2)
    assert r1["search"]["change"] == pytest.approx((0.875 - 0.375 + 0.75 - 0.5) / 2)
