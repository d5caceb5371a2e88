"""The validator's checks of a search problem (``[scoring]``, docs/mapper.md).

* **optimal (brute force)**: on small instances drawn with the proof's options, every mapping of
  the space the search claims to cover is enumerated and judged one by one with the evaluator;
  the least objective must equal the reference search's best, and the search's own mapping must
  reach it;
* **best known**: every hidden instance's best known value is reached by the mapping the search
  recorded (the evaluator agrees with the search), and no bundled candidate beats a proven best;
* **gold** (solution): the bundled solution passes (every instance at the best known);
* **variants below**: every variant fails and scores clearly below the solution;
* **baselines**: each baseline search runs and is scored (its mean score is reported).

The sandbox runs are those of the validator (validate.py); this module judges their grades.
"""

from __future__ import annotations

import json
from typing import Any, Protocol

import numpy as np

from ..packs.problems import Problem
from ..packs.vectors import Vector, plain
from .scoring import Grade, Verdict

CLEAR_MARGIN = 0.05  # a variant's mean score must be at least this far below the solution's


class _Report(Protocol):
    def add(self, name: str, ok: bool, detail: str = "") -> None: ...


def proof_instances(problem: Problem) -> list[dict[str, Any]]:
    """The small instances of the brute-force proof: ``[scoring.proof]`` seed, count and options."""
    sc = problem.data.scoring
    assert sc is not None and sc.proof is not None
    options = {**problem.data.generator.options, **sc.proof.options}
    gen = problem.generator_fn
    return [plain(gen(np.random.default_rng([sc.proof.seed, i]), **options), "proof instance")
            for i in range(sc.proof.count)]


def brute_force(problem: Problem, kwargs: dict[str, Any]) -> tuple[float | None, int, int]:
    """(least objective over the enumerated space, mappings enumerated, valid ones)."""
    sc = problem.data.scoring
    assert sc is not None and sc.space is not None
    space = problem.trusted_table_fn("SPACES", sc.space, "scoring.space")
    evaluate = problem.evaluator_fn
    args = [kwargs[p.name] for p in problem.data.signature.params]
    best, n, valid = None, 0, 0
    for mapping in space(*args):
        n += 1
        out = evaluate(mapping, *args, max_bytes=sc.max_bytes)
        if out["valid"]:
            valid += 1
            if best is None or out["objective"] < best:
                best = out["objective"]
    return best, n, valid


def _close(a: float, b: float) -> bool:
    return abs(a - b) <= 1e-9 * max(1.0, abs(a), abs(b))


def proof_check(problem: Problem, report: _Report) -> None:
    """The brute-force proof that the reference search is optimal (small instances)."""
    sc = problem.data.scoring
    if sc is None or sc.proof is None:
        if sc is not None:
            report.add("optimal (brute force)", True, "no proof declared: the best known values are marked by "
                       "the search itself")
        return
    ref = problem.reference_fn
    params = [p.name for p in problem.data.signature.params]
    bad, sizes = [], []
    for i, kw in enumerate(proof_instances(problem)):
        rec = ref(*[kw[p] for p in params])
        least, n, valid = brute_force(problem, kw)
        sizes.append(f"{n} ({valid} valid)")
        if least is None or not _close(least, rec["best"]) or not rec["proven"]:
            bad.append(f"instance {i}: search {rec['best']:.10g}, brute force {least}")
            continue
        mine = problem.evaluator_fn(json.loads(rec["mapping"]), *[kw[p] for p in params], max_bytes=sc.max_bytes)
        if not mine["valid"] or not _close(mine["objective"], rec["best"]):
            bad.append(f"instance {i}: the search's own mapping evaluates to {mine.get('objective')} "
                       f"({mine.get('reason') or 'valid'}), not {rec['best']:.10g}")
    report.add("optimal (brute force)", not bad,
               f"the search's best equals the least of every mapping enumerated on {len(sizes)} small instances "
               f"({', '.join(sizes)} mappings)" if not bad else "; ".join(bad[:3]))


def best_known_check(problem: Problem, report: _Report, hidden: tuple[Vector, ...]) -> None:
    """Every hidden instance's recorded best mapping is valid and evaluates to the recorded best."""
    sc = problem.data.scoring
    if sc is None:
        return
    bad = []
    for v in hidden:
        out = problem.evaluator_fn(json.loads(v.expected["mapping"]), *v.args, max_bytes=sc.max_bytes)
        if not out["valid"] or not _close(out["objective"], v.expected["best"]):
            bad.append(f"{v.id}: {out.get('reason') or out.get('objective')} vs best {v.expected['best']}")
    proven = sum(bool(v.expected["proven"]) for v in hidden)
    report.add("best known", not bad,
               f"{len(hidden)} hidden instances, {proven} proven optimal; each recorded mapping evaluates to its "
               "best" if not bad else "; ".join(bad[:3]))


def candidate_jobs(problem: Problem) -> list[tuple[str, str]]:
    """The extra sandbox runs of a search problem: its baselines."""
    return [(f"baseline:{b.name}", b.source) for b in problem.baselines]


def judge_runs(problem: Problem, report: _Report, graded: dict[str, Grade]) -> dict[str, float | None]:
    """Judge the grades of the solution, the variants and the baselines of a search problem;
    returns every candidate's mean score (for the report and the README's table)."""
    scores = {name: g.score for name, g in graded.items()}
    sol = graded.get("gold:solution")
    if sol is not None:
        report.add("gold (solution)", sol.verdict is Verdict.PASS,
                   f"all {sol.vectors_total} instances at the best known" if sol.verdict is Verdict.PASS
                   else f"{sol.verdict.value}: {sol.reason}")
    sol_score = sol.score if sol is not None and sol.score is not None else 1.0
    below = []
    for name, g in graded.items():
        if name.startswith("variant:"):
            s = g.score if g.score is not None else 0.0
            if g.verdict is Verdict.PASS or s > sol_score - CLEAR_MARGIN:
                below.append(f"{name.partition(':')[2]} scores {s:.3f}")
    variants = [n for n in graded if n.startswith("variant:")]
    if variants:
        report.add("variants below", not below,
                   ", ".join(f"{n.partition(':')[2]} {scores[n] or 0:.3f}" for n in variants)
                   + f" (solution {sol_score:.3f})" if not below
                   else "not clearly below the solution: " + "; ".join(below))
    base = [n for n in graded if n.startswith("baseline:")]
    if base:
        broken = [n for n in base if graded[n].verdict in (Verdict.INFRA_ERROR, Verdict.LOAD_ERROR,
                                                          Verdict.MISSING_ENTRY, Verdict.CRASHED)]
        report.add("baselines", not broken,
                   ", ".join(f"{n.partition(':')[2]} {scores[n] or 0:.3f}" for n in base) if not broken
                   else "; ".join(f"{n}: {graded[n].verdict.value} {graded[n].reason}" for n in broken))
    beaten = [f"{name} on {', '.join(g.new_best)}" for name, g in graded.items()
              if any(i.new_best and i.proven for i in g.instances)]
    report.add("no candidate beats a proven best", not beaten,
               "no bundled candidate beats a proven optimum" if not beaten
               else "beats a proven optimum (the search or the evaluator is wrong): " + "; ".join(beaten))
    return scores
