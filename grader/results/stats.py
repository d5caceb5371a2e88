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
        return {"problem": self.problem, "family": self.family, "difficulty": self.difficulty, "n": self.n,
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
        "problems": [p.to_json() for p in pstats],
        "flakiness": flakiness(rounds or {}),
    }
