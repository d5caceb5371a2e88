"""Statistics of a run, computed from per-sample outcomes only (pure functions, no I/O).

* per problem: n, correct, pass@1, pass@k by the unbiased estimator (Chen et al. 2021)
  ``1 - C(n-c, k) / C(n, k)`` for every requested k <= n, and pass^k ``C(c, k) / C(n, k)``
  (the chance that k samples drawn without replacement all pass);
* per run (run i = sample i of every problem): the pass rate; across runs the mean, the sample
  standard deviation, min, max and a 95% bootstrap confidence interval of the mean;
* the headline pass@1 (mean over problems) with a 95% bootstrap confidence interval over
  problems;
* the same by family and by difficulty; verdict counts; with re-grading, the share of samples
  whose verdict changed between gradings (the grader's own flakiness).

Samples whose grading hit a persistent infrastructure error are excluded from every rate and
counted apart. Bootstrap resampling uses a fixed seed so a report is reproducible.
"""

from __future__ import annotations

import math
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

BOOTSTRAP_RESAMPLES = 10_000
BOOTSTRAP_SEED = 20240521


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased estimate of P(at least one of k samples passes) from c passes in n samples."""
    if not 0 <= c <= n or k < 1 or k > n:
        raise ValueError(f"pass@k needs 0 <= c <= n and 1 <= k <= n (n={n}, c={c}, k={k})")
    if n - c < k:
        return 1.0
    if k == 1:
        return c / n
    # 1 - prod_{i=n-c+1}^{n} (1 - k/i), numerically stable
    return 1.0 - float(np.prod(1.0 - k / np.arange(n - c + 1, n + 1)))


def pass_hat_k(n: int, c: int, k: int) -> float:
    """P(all of k samples drawn without replacement pass) = C(c, k) / C(n, k)."""
    if not 0 <= c <= n or k < 1 or k > n:
        raise ValueError(f"pass^k needs 0 <= c <= n and 1 <= k <= n (n={n}, c={c}, k={k})")
    if c < k:
        return 0.0
    return math.comb(c, k) / math.comb(n, k)


def bootstrap_ci(values: Sequence[float], *, resamples: int = BOOTSTRAP_RESAMPLES, seed: int = BOOTSTRAP_SEED,
                 level: float = 0.95) -> tuple[float, float] | None:
    """Percentile bootstrap CI of the mean. None with fewer than two values."""
    x = np.asarray(values, dtype=float)
    if x.size < 2:
        return None
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, x.size, size=(resamples, x.size))
    means = x[idx].mean(axis=1)
    lo, hi = np.quantile(means, [(1 - level) / 2, 1 - (1 - level) / 2])
    return float(lo), float(hi)


@dataclass(frozen=True)
class Outcome:
    """One graded sample, as statistics see it."""

    problem: str
    sample: int
    passed: bool
    verdict: str
    family: str = ""
    difficulty: str = ""
    counted: bool = True  # False for a persistent infrastructure error
    tier: str = ""
    mode: str = "code"
    item: str = ""  # the Q&A item
    fields: tuple[tuple[str, bool], ...] = ()  # Q&A: (output field, answered correctly)
    score: float | None = None  # search problems: mean over the instances of best known / objective
    at_best: int = 0  # search problems: instances within the tolerance of the best known
    instances: int = 0  # search problems: hidden instances scored
    new_best: int = 0  # search problems: instances where the mapping beat the best known


@dataclass(frozen=True)
class Spread:
    runs: list[float]
    mean: float | None
    std: float | None
    min: float | None
    max: float | None
    ci95: tuple[float, float] | None

    def to_json(self) -> dict:
        return {"runs": self.runs, "mean": self.mean, "std": self.std, "min": self.min, "max": self.max,
                "ci95": list(self.ci95) if self.ci95 else None}


def spread(rates: Sequence[float]) -> Spread:
    xs = [float(r) for r in rates]
    if not xs:
        return Spread([], None, None, None, None, None)
    arr = np.asarray(xs)
    return Spread(
        runs=xs,
        mean=float(arr.mean()),
        std=float(arr.std(ddof=1)) if arr.size > 1 else None,
        min=float(arr.min()),
        max=float(arr.max()),
        ci95=bootstrap_ci(xs),
    )


@dataclass(frozen=True)
class ProblemStats:
    problem: str
    family: str
    difficulty: str
    tier: str
    n: int
    correct: int
    infra: int
    pass_at: dict[int, float]
    pass_hat: dict[int, float]
    verdicts: dict[str, int]

    @property
    def pass1(self) -> float | None:
        return self.correct / self.n if self.n else None

    def to_json(self) -> dict:
        return {"problem": self.problem, "family": self.family, "difficulty": self.difficulty, "tier": self.tier,
                "n": self.n,
                "correct": self.correct, "infra": self.infra, "pass@1": self.pass1,
                "pass@k": {str(k): v for k, v in self.pass_at.items()},
                "pass^k": {str(k): v for k, v in self.pass_hat.items()}, "verdicts": self.verdicts}


def problem_stats(outcomes: Iterable[Outcome]) -> list[ProblemStats]:
    """Per problem: n, correct, and pass@k / pass^k for every k <= n."""
    groups: dict[str, list[Outcome]] = defaultdict(list)
    for o in outcomes:
        groups[o.problem].append(o)
    out = []
    for pid in sorted(groups, key=natural_key):
        os_ = groups[pid]
        counted = [o for o in os_ if o.counted]
        n = len(counted)
        c = sum(o.passed for o in counted)
        out.append(ProblemStats(
            problem=pid,
            family=os_[0].family,
            difficulty=os_[0].difficulty,
            tier=os_[0].tier,
            n=n,
            correct=c,
            infra=len(os_) - n,
            pass_at={k: pass_at_k(n, c, k) for k in range(1, n + 1)},
            pass_hat={k: pass_hat_k(n, c, k) for k in range(1, n + 1)},
            verdicts=dict(Counter(o.verdict for o in os_)),
        ))
    return out


def run_rates(outcomes: Iterable[Outcome]) -> list[float]:
    """Pass rate of each run i (sample i of every problem), over counted samples."""
    by_run: dict[int, list[bool]] = defaultdict(list)
    for o in outcomes:
        if o.counted:
            by_run[o.sample].append(o.passed)
    return [sum(v) / len(v) for _, v in sorted(by_run.items()) if v]


def headline(pstats: Sequence[ProblemStats], ks: Sequence[int]) -> dict:
    scored = [p for p in pstats if p.n > 0]
    p1 = [p.pass1 for p in scored if p.pass1 is not None]
    out: dict = {
        "problems": len(scored),
        "pass@1": float(np.mean(p1)) if p1 else None,
        "pass@1_ci95": list(ci) if (ci := bootstrap_ci(p1)) else None,
        "pass@k": {},
        "pass^k": {},
    }
    for k in ks:
        have = [p.pass_at[k] for p in scored if k in p.pass_at]
        if have and len(have) == len(scored):
            out["pass@k"][str(k)] = float(np.mean(have))
            out["pass^k"][str(k)] = float(np.mean([p.pass_hat[k] for p in scored]))
    return out


def natural_key(text: str) -> tuple:
    """F2 before F10; easy, medium, hard in that order."""
    order = {"easy": 0, "medium": 1, "hard": 2}
    if text in order:
        return (0, order[text])
    return (1,) + tuple(int(t) if t.isdigit() else t for t in re.split(r"(\d+)", text))


def grouped(outcomes: Sequence[Outcome], pstats: Sequence[ProblemStats], key: str) -> dict[str, dict]:
    """pass@1 and run-to-run spread by family or difficulty."""
    groups: dict[str, list[ProblemStats]] = defaultdict(list)
    for p in pstats:
        groups[getattr(p, key)].append(p)
    out = {}
    for g in sorted(groups, key=natural_key):
        members = {p.problem for p in groups[g]}
        p1 = [p.pass1 for p in groups[g] if p.pass1 is not None]
        rates = run_rates(o for o in outcomes if o.problem in members)
        out[g] = {"problems": len(groups[g]), "pass@1": float(np.mean(p1)) if p1 else None,
                  "spread": spread(rates).to_json()}
    return out


def flakiness(rounds: dict[tuple[str, int], list[str]]) -> dict:
    """Share of re-graded samples whose verdict was not the same in every grading."""
    regraded = {k: v for k, v in rounds.items() if len(v) > 1}
    changed = [k for k, v in regraded.items() if len(set(v)) > 1]
    return {
        "regraded_samples": len(regraded),
        "changed": len(changed),
        "rate": len(changed) / len(regraded) if regraded else None,
        "examples": [f"{p}#{s}: {' -> '.join(rounds[(p, s)])}" for p, s in sorted(changed)[:10]],
    }


def summarize(outcomes: Sequence[Outcome], ks: Sequence[int],
              rounds: dict[tuple[str, int], list[str]] | None = None) -> dict:
    """Every statistic of a run as one JSON-ready dict."""
    outcomes = list(outcomes)
    pstats = problem_stats(outcomes)
    rates = run_rates(outcomes)
    verdicts = Counter(o.verdict for o in outcomes)
    return {
        "headline": headline(pstats, ks),
        "runs": spread(rates).to_json(),
        "samples": {"graded": len(outcomes), "counted": sum(o.counted for o in outcomes),
                    "infra_excluded": sum(not o.counted for o in outcomes)},
        "verdicts": dict(sorted(verdicts.items(), key=lambda kv: -kv[1])),
        "by_family": grouped(outcomes, pstats, "family"),
        "by_difficulty": grouped(outcomes, pstats, "difficulty"),
        "by_tier": grouped(outcomes, pstats, "tier"),
        "problems": [p.to_json() for p in pstats],
        "flakiness": flakiness(rounds or {}),
    }


# ------------------------------------------------------------------------------------------
# Q&A mode, the reasoning-vs-code gap and self-revision
# ------------------------------------------------------------------------------------------

def paired_bootstrap_ci(diffs: Sequence[float], *, resamples: int = BOOTSTRAP_RESAMPLES,
                        seed: int = BOOTSTRAP_SEED) -> tuple[float, float] | None:
    """95% CI of the mean of paired differences, resampling the pairs (problems)."""
    return bootstrap_ci(diffs, resamples=resamples, seed=seed)


def summarize_qa(outcomes: Sequence[Outcome]) -> dict:
    """Q&A accuracy: per problem (items fully correct, over items and samples) and per field,
    the headline with its CI over problems, the run-to-run spread, by kind, family, difficulty and tier."""
    outcomes = list(outcomes)
    pstats = problem_stats(outcomes)
    per_field: dict[str, dict[str, list[int]]] = defaultdict(lambda: defaultdict(lambda: [0, 0]))
    by_kind: dict[str, list[bool]] = defaultdict(list)
    for o in outcomes:
        if not o.counted:
            continue
        choice = o.item.startswith("c")
        mapping = o.score is not None or o.tier == "search"
        by_kind["choice" if choice else "mapping" if mapping else "value"].append(o.passed)
        for name, ok in () if choice else o.fields:
            cell = per_field[o.problem][name]
            cell[0] += ok
            cell[1] += 1
    problems = []
    for p in pstats:
        row = p.to_json()
        row.pop("pass@k"), row.pop("pass^k")
        row["accuracy"] = row.pop("pass@1")
        row["fields"] = {name: c / n for name, (c, n) in per_field.get(p.problem, {}).items() if n}
        problems.append(row)
    h = headline(pstats, [])
    return {
        "headline": {"problems": h["problems"], "accuracy": h["pass@1"], "accuracy_ci95": h["pass@1_ci95"]},
        "runs": spread(run_rates(outcomes)).to_json(),
        "samples": {"graded": len(outcomes), "counted": sum(o.counted for o in outcomes),
                    "infra_excluded": sum(not o.counted for o in outcomes)},
        "verdicts": dict(sorted(Counter(o.verdict for o in outcomes).items(), key=lambda kv: -kv[1])),
        "by_kind": {k: {"items": len(v), "accuracy": sum(v) / len(v)} for k, v in sorted(by_kind.items()) if v},
        "by_family": grouped(outcomes, pstats, "family"),
        "by_difficulty": grouped(outcomes, pstats, "difficulty"),
        "by_tier": grouped(outcomes, pstats, "tier"),
        "problems": problems,
    }


def _paired_gap(code: dict[str, float], qa: dict[str, float], qa_key: str, code_key: str) -> dict:
    """Q&A minus code per shared problem and overall, with a paired bootstrap CI over problems."""
    shared = sorted(set(code) & set(qa), key=natural_key)
    rows = [{"problem": pid, "qa": qa[pid], "code": code[pid], "gap": qa[pid] - code[pid]} for pid in shared]
    diffs = [r["gap"] for r in rows]
    ci = paired_bootstrap_ci(diffs)
    return {
        "problems": len(rows),
        qa_key: float(np.mean([r["qa"] for r in rows])) if rows else None,
        code_key: float(np.mean([r["code"] for r in rows])) if rows else None,
        "gap": float(np.mean(diffs)) if diffs else None,
        "gap_ci95": list(ci) if ci else None,
        "qa_wins": [r["problem"] for r in rows if r["gap"] > 0],
        "code_wins": [r["problem"] for r in rows if r["gap"] < 0],
        "ties": [r["problem"] for r in rows if r["gap"] == 0],
        "rows": rows,
    }


def mode_gap(code_problems: Sequence[dict], qa_problems: Sequence[dict]) -> dict:
    """Q&A accuracy minus code pass@1, per problem and overall (paired bootstrap CI over problems)."""
    code = {p["problem"]: p["pass@1"] for p in code_problems if p.get("pass@1") is not None}
    qa = {p["problem"]: p["accuracy"] for p in qa_problems if p.get("accuracy") is not None}
    return _paired_gap(code, qa, "qa_accuracy", "code_pass@1")


def score_gap(code_scores: Sequence[dict], qa_scores: Sequence[dict]) -> dict:
    """Search problems' mode gap: Q&A mean score minus code mean score, per problem and overall
    (paired bootstrap CI over problems); the rows are :func:`summarize_scores`' problems."""
    code = {p["problem"]: p["score"] for p in code_scores if p.get("score") is not None}
    qa = {p["problem"]: p["score"] for p in qa_scores if p.get("score") is not None}
    return _paired_gap(code, qa, "qa_score", "code_score")


def revision_stats(after: dict[int, Sequence[Outcome]]) -> dict:
    """Per round r: the pass rate after round r (CI over problems, run-to-run spread), its change
    from round 0 (paired bootstrap CI over problems), the transitions from round r-1 to r, and the
    same by family and tier. ``after[r]`` holds every sample's state after round r."""
    rounds = sorted(after)
    if not rounds:
        return {}
    base = {(o.problem, o.mode, o.item, o.sample): o for o in after[rounds[0]] if o.counted}
    base_rate = {p.problem: p.pass1 for p in problem_stats(base.values())}
    base_scores = _problem_scores(base.values())
    prev = base
    out_rounds = []
    for r in rounds:
        cur = {(o.problem, o.mode, o.item, o.sample): o for o in after[r] if o.counted}
        pst = problem_stats(cur.values())
        h = headline(pst, [])
        diffs = [p.pass1 - base_rate[p.problem] for p in pst if p.pass1 is not None and base_rate.get(p.problem) is not None]
        ci = paired_bootstrap_ci(diffs)
        shared = set(cur) & set(prev)
        trans = Counter()
        for k in shared:
            a, b = prev[k].passed, cur[k].passed
            trans["stayed passing" if a and b else "fixed" if b else "broken" if a else "stayed failing"] += 1
        change = float(np.mean(diffs)) if diffs else None
        verdict = "no change"
        if ci is not None and change is not None:
            verdict = "helped" if ci[0] > 0 else "hurt" if ci[1] < 0 else "neither helped nor hurt (the CI includes 0)"
        elif change:
            verdict = "helped" if change > 0 else "hurt"
        out_rounds.append({
            "round": r, "rate": h["pass@1"], "rate_ci95": h["pass@1_ci95"],
            "change": change if r != rounds[0] else 0.0, "change_ci95": (list(ci) if ci else None) if r != rounds[0] else None,
            "verdict": verdict if r != rounds[0] else "",
            "transitions": {k: trans.get(k, 0) for k in ("fixed", "broken", "stayed passing", "stayed failing")}
            if r != rounds[0] else {},
            "runs": spread(run_rates(cur.values())).to_json(),
            "by_family": {g: v["pass@1"] for g, v in grouped(list(cur.values()), pst, "family").items()},
            "by_tier": {g: v["pass@1"] for g, v in grouped(list(cur.values()), pst, "tier").items()},
            "search": _round_scores(cur.values(), base_scores, first=r == rounds[0]),
        })
        prev = cur
    last = out_rounds[-1]
    return {"rounds": out_rounds, "overall": last["verdict"] if len(out_rounds) > 1 else "",
            "final_change": last["change"], "final_change_ci95": last["change_ci95"]}


def _problem_scores(outcomes: Iterable[Outcome]) -> dict[str, float]:
    """Each search problem's mean score over its samples (a sample without a score scores 0)."""
    return {p["problem"]: p["score"] for p in (summarize_scores(list(outcomes)) or {}).get("problems", [])}


def _round_scores(outcomes: Iterable[Outcome], base: dict[str, float], first: bool) -> dict | None:
    """The search problems' figures after one revision round: the mean score over problems (CI by
    bootstrap over them) and its change from round 0 (paired bootstrap CI over problems). None when
    the run has no search problem."""
    now = _problem_scores(outcomes)
    if not now:
        return None
    means = list(now.values())
    diffs = [v - base[p] for p, v in now.items() if p in base]
    ci = None if first else paired_bootstrap_ci(diffs)
    return {"problems": len(now), "score": sum(means) / len(means),
            "score_ci95": list(c) if (c := bootstrap_ci(means)) else None,
            "change": 0.0 if first else (float(np.mean(diffs)) if diffs else None),
            "change_ci95": list(ci) if ci else None}


# ------------------------------------------------------------------------------------------
# search problems: continuous scores against the best known (docs/mapper.md)
# ------------------------------------------------------------------------------------------

def _score_group(rows: Sequence[Outcome], problems: Sequence[dict]) -> dict:
    """Mean score over ``problems`` (CI by bootstrap over them), the share of ``rows``' instances at
    the best known, the new best known values and the run-to-run spread of the mean score."""
    means = [p["score"] for p in problems]
    per_run: dict[int, list[float]] = defaultdict(list)
    for o in rows:
        per_run[o.sample].append(o.score or 0.0)
    inst = sum(o.instances for o in rows)
    return {"problems": len(problems), "score": sum(means) / len(means) if means else None,
            "score_ci95": list(ci) if (ci := bootstrap_ci(means)) else None,
            "at_best": sum(o.at_best for o in rows) / inst if inst else 0.0,
            "new_best": sum(o.new_best for o in rows),
            "spread": spread([sum(v) / len(v) for _, v in sorted(per_run.items())]).to_json()}


def search_outcomes(outcomes: Iterable[Outcome]) -> list[Outcome]:
    """The counted samples of search problems (tier ``search`` or carrying a score)."""
    return [o for o in outcomes if o.counted and (o.tier == "search" or o.score is not None)]


def summarize_scores(outcomes: Sequence[Outcome]) -> dict | None:
    """Mean score per problem (95% bootstrap CI over its samples), the share of instances at the
    best known, each sample's score and the run-to-run spread, the same by family and by tier
    (mean over the group's problems, CI by bootstrap over them), and the headline (mean over
    problems, CI by bootstrap over problems), for the search problems among ``outcomes`` (those
    of tier ``search`` or carrying a score). A counted sample without a score (no code, a load
    error) scores 0. None when the run has no search problem."""
    rows = search_outcomes(outcomes)
    if not rows:
        return None
    by_problem: dict[str, list[Outcome]] = defaultdict(list)
    for o in rows:
        by_problem[o.problem].append(o)
    problems = []
    for pid in sorted(by_problem, key=natural_key):
        os_ = sorted(by_problem[pid], key=lambda o: o.sample)
        scores = [o.score or 0.0 for o in os_]
        inst = sum(o.instances for o in os_)
        problems.append({
            "problem": pid, "family": os_[0].family, "difficulty": os_[0].difficulty, "tier": os_[0].tier,
            "n": len(os_),
            "score": sum(scores) / len(scores), "score_ci95": list(ci) if (ci := bootstrap_ci(scores)) else None,
            "pass@1": sum(o.passed for o in os_) / len(os_),
            "at_best": sum(o.at_best for o in os_) / inst if inst else 0.0,
            "new_best": sum(o.new_best for o in os_),
            "min": min(scores), "max": max(scores),
            "std": float(np.std(scores, ddof=1)) if len(scores) > 1 else None,
            "scores": scores,
        })

    def by(key: str) -> dict[str, dict]:
        names = sorted({p[key] for p in problems}, key=natural_key)
        return {g: _score_group([o for o in rows if getattr(o, key) == g], [p for p in problems if p[key] == g])
                for g in names}

    whole = _score_group(rows, problems)
    return {
        "headline": {k: whole[k] for k in ("problems", "score", "score_ci95", "at_best", "new_best")},
        "runs": whole["spread"],
        "by_family": by("family"),
        "by_tier": by("tier"),
        "problems": problems,
    }


def score_state(outcomes: Iterable[Outcome]) -> dict[tuple[str, str, int], float]:
    """(problem, item, sample) -> score, for the counted samples of search problems (0 for a
    sample without a score): what ``compare`` pairs."""
    return {(o.problem, o.item, o.sample): o.score or 0.0 for o in search_outcomes(outcomes)}
