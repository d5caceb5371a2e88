"""Read a run directory back: outcomes for statistics, sample records for auditing.

Everything here works from the run directory alone: no model, no Docker, no pack needed.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .runs import RunDir, RunManifest, record_key, sample_key
from .stats import Outcome, mode_gap, revision_stats, score_gap, summarize, summarize_qa, summarize_scores


@dataclass
class SampleRecord:
    """Everything the journal holds about one sample: its completions, feedback and final grades
    by revision round (``grades[round][regrade]``)."""

    problem: str
    mode: str
    item: str
    sample: int
    completions: dict[int, dict[str, Any]] = field(default_factory=dict)
    feedback: dict[int, dict[str, Any]] = field(default_factory=dict)
    grades: dict[int, dict[int, dict[str, Any]]] = field(default_factory=dict)

    @property
    def last_round(self) -> int | None:
        graded = [r for r, g in self.grades.items() if 0 in g]
        return max(graded) if graded else None

    def grade_at(self, round_: int) -> dict[str, Any] | None:
        rec = self.grades.get(round_, {}).get(0)
        return rec.get("grade") if rec else None

    @property
    def completion(self) -> dict[str, Any] | None:
        return self.completions.get(0)

    @property
    def grade(self) -> dict[str, Any] | None:
        """The round-0 grade (the one-shot verdict)."""
        return self.grade_at(0)

    @property
    def final_grade(self) -> dict[str, Any] | None:
        last = self.last_round
        return None if last is None else self.grade_at(last)

    @property
    def verdict(self) -> str | None:
        g = self.grade
        return g.get("verdict") if g else None


@dataclass
class LoadedRun:
    run: RunDir
    manifest: RunManifest
    outcomes: list[Outcome]  # code mode, round 0 (the one-shot verdicts)
    rounds: dict[tuple[str, int], list[str]]  # code mode, round 0: verdict of each regrade
    ungraded: list[tuple]
    generation_failures: int
    events: list[dict[str, Any]]
    qa_outcomes: list[Outcome] = field(default_factory=list)  # Q&A mode, round 0
    after: dict[str, dict[int, list[Outcome]]] = field(default_factory=dict)  # mode -> round -> state after it
    open_failures: int = 0  # failed requests whose sample still has no completion for that round


PASSING = ("pass", "correct")


def _fields(grade: dict[str, Any]) -> tuple[tuple[str, bool], ...]:
    return tuple((name, not f.get("failed")) for name, f in (grade.get("fields") or {}).items())


def load_run(path: Path) -> LoadedRun:
    run = RunDir.open(path)
    manifest = run.manifest
    meta = {p.id: p for p in manifest.problems}
    events = []
    gen_fail: set[tuple] = set()
    completed: set[tuple] = set()
    for rec in run.journal.records():
        if rec["type"] == "event":
            events.append(rec)
            if rec.get("event") == "generation_failed":
                gen_fail.add(record_key({**rec, "type": "completion"}))
        elif rec["type"] == "completion":
            completed.add(record_key(rec))
    verdicts: dict[tuple, dict[int, dict[int, dict[str, Any]]]] = {}
    for key, rec in run.final_grades()[0].items():
        sk, r, g = key[:4], key[4], key[5]
        verdicts.setdefault(sk, {}).setdefault(r, {})[g] = rec["grade"]

    def outcome(sk: tuple, grade: dict[str, Any]) -> Outcome:
        pid, mode, item, s = sk
        m = meta.get(pid)
        return Outcome(problem=pid, sample=s, passed=grade["verdict"] in PASSING, verdict=grade["verdict"],
                       family=m.family if m else "", difficulty=m.difficulty if m else "",
                       counted=grade["verdict"] != "infra_error", tier=m.tier if m else "", mode=mode, item=item,
                       fields=_fields(grade) if mode == "qa" else (), score=grade.get("score"),
                       at_best=sum(bool(i.get("at_best")) for i in grade.get("instances") or ()),
                       instances=len(grade.get("instances") or ()),
                       new_best=sum(bool(i.get("new_best")) for i in grade.get("instances") or ()))

    outcomes, qa_outcomes = [], []
    regrades: dict[tuple[str, int], list[str]] = {}
    after: dict[str, dict[int, list[Outcome]]] = {}
    for sk in sorted(verdicts):
        by_round = verdicts[sk]
        if 0 not in by_round or 0 not in by_round[0]:
            continue
        o = outcome(sk, by_round[0][0])
        (outcomes if sk[1] == "code" else qa_outcomes).append(o)
        if sk[1] == "code":
            regrades[(sk[0], sk[3])] = [by_round[0][g]["verdict"] for g in sorted(by_round[0])]
        if manifest.rounds > 1:
            graded = sorted(r for r in by_round if 0 in by_round[r])
            for r in range(manifest.rounds):
                done = [x for x in graded if x <= r]
                after.setdefault(sk[1], {}).setdefault(r, []).append(outcome(sk, by_round[done[-1]][0]))
    expected = set()
    for p in manifest.problems:
        for mode in manifest.modes:
            for item in ([""] if mode == "code" else p.qa_items):
                expected.update((p.id, mode, item, s) for s in range(manifest.samples))
    graded = {(o.problem, o.mode, o.item, o.sample) for o in outcomes + qa_outcomes}
    return LoadedRun(
        run=run, manifest=manifest, outcomes=outcomes, rounds=regrades,
        ungraded=sorted(expected - graded), generation_failures=len(gen_fail), events=events,
        qa_outcomes=qa_outcomes, after=after, open_failures=len(gen_fail - completed),
    )


def run_summary(loaded: LoadedRun) -> dict[str, Any]:
    m = loaded.manifest
    s = summarize(loaded.outcomes, m.k_values, loaded.rounds)
    s["modes"] = list(m.modes)
    s["run"] = {
        "id": m.run_id, "path": str(loaded.run.path), "created": m.created, "source": m.source,
        "model": m.model, "base_url": m.base_url, "samples_per_problem": m.samples,
        "problems": len(m.problems), "pack": m.pack, "image": m.image, "grader_version": m.grader_version,
        "git_commit": m.git_commit, "exec_mode": m.exec_mode, "generation": m.generation,
        "modes": list(m.modes), "rounds": m.rounds, "feedback": m.feedback, "revise_all": m.revise_all,
        "instance_seed": m.instance_seed,
        "complete": not loaded.ungraded, "ungraded": len(loaded.ungraded),
        "generation_failures": loaded.generation_failures, "generation_failures_open": loaded.open_failures,
        "cost_usd": _cost(loaded.run),
    }
    if m.source == "demo" and m.notes:
        s["run"]["notice"] = m.notes[0]  # the demo model's notice, written into the manifest
    search = summarize_scores(loaded.outcomes)
    if search is not None:
        s["search"] = search
    if "qa" in m.modes:
        s["qa"] = summarize_qa(loaded.qa_outcomes)
        qa_search = summarize_scores(loaded.qa_outcomes)  # search problems' Q&A items: scores
        if qa_search is not None:
            s["qa"]["search"] = qa_search
    if "qa" in m.modes and "code" in m.modes:
        # a search problem's mode gap is a score difference (gap.search), not a pass-rate one
        scored = {p["problem"] for p in (s.get("search") or {}).get("problems") or ()} \
            | {p["problem"] for p in (s["qa"].get("search") or {}).get("problems") or ()}
        s["gap"] = mode_gap([p for p in s["problems"] if p["problem"] not in scored],
                            [p for p in s["qa"]["problems"] if p["problem"] not in scored])
        if s.get("search") and s["qa"].get("search"):
            s["gap"]["search"] = score_gap(s["search"]["problems"], s["qa"]["search"]["problems"])
    if m.rounds > 1:
        s["revision"] = {mode: revision_stats(by_round) for mode, by_round in loaded.after.items()}
    return s


def _cost(run: RunDir) -> dict[str, Any]:
    """Tokens and cost of the run's model calls, per revision round (cached calls cost nothing)."""
    per_round: dict[int, dict[str, float]] = {}
    for rec in run.journal.records():
        if rec["type"] != "completion":
            continue
        meta = rec.get("meta") or {}
        if meta.get("cached"):
            continue
        row = per_round.setdefault(rec.get("round", 0), {"calls": 0, "prompt_tokens": 0, "completion_tokens": 0,
                                                           "usd": 0.0})
        usage = meta.get("usage") or {}
        row["calls"] += 1
        row["prompt_tokens"] += usage.get("prompt_tokens", 0)
        row["completion_tokens"] += usage.get("completion_tokens", 0)
        row["usd"] += meta.get("cost_usd") or 0.0
    total = {k: sum(r[k] for r in per_round.values()) for k in ("calls", "prompt_tokens", "completion_tokens", "usd")}
    return {"total": total, "by_round": {str(k): v for k, v in sorted(per_round.items())}}


def iter_samples(run: RunDir) -> Iterator[SampleRecord]:
    """Every sample with its completions, feedback and final grades (holds one run's records in memory)."""
    samples: dict[tuple, SampleRecord] = {}
    for rec in run.journal.records():
        if rec["type"] in ("completion", "feedback"):
            sk = sample_key(rec)
            smp = samples.setdefault(sk, SampleRecord(*sk))
            (smp.completions if rec["type"] == "completion" else smp.feedback)[rec.get("round", 0)] = rec
    for key, rec in run.final_grades()[0].items():
        sk = key[:4]
        samples.setdefault(sk, SampleRecord(*sk)).grades.setdefault(key[4], {})[key[5]] = rec
    for key in sorted(samples):
        yield samples[key]


def failing_records(
    run_path: Path,
    problems: list[str] | None = None,
    samples: list[int] | None = None,
    verdicts: list[str] | None = None,
    modes: list[str] | None = None,
) -> list[dict[str, Any]]:
    """Every failing sample of a run (final verdict not a pass), optionally filtered by problem
    (``pack/id`` or bare id), sample index, verdict and mode, with what an audit shows of it: the
    code (or the Q&A answer), and, when the sample was revised, every round one after another."""
    from .signatures import signature

    run = RunDir.open(run_path)
    m = run.manifest
    titles = {p.id: p.title for p in m.problems}
    tiers = {p.id: p.tier for p in m.problems}
    hashes = {p.id: p.content_hash for p in m.problems}
    out = []
    for rec in iter_samples(run):
        g = rec.final_grade
        if g is None or g["verdict"] in PASSING:
            continue
        if problems and not any(rec.problem == w or rec.problem.split("/", 1)[-1] == w for w in problems):
            continue
        if samples and rec.sample not in samples:
            continue
        if verdicts and g["verdict"] not in verdicts:
            continue
        if modes and rec.mode not in modes:
            continue
        last = rec.last_round or 0
        comp = rec.completions.get(last) or {}
        history = []
        for r in sorted(rec.grades):
            c = rec.completions.get(r) or {}
            gr = rec.grade_at(r)
            history.append({"round": r, "verdict": gr["verdict"] if gr else None, "reason": gr["reason"] if gr else "",
                            "code": c.get("code"), "answer": c.get("answer"), "text": c.get("text"),
                            "grade": gr, "feedback": (rec.feedback.get(r) or {}).get("message")})
        out.append({
            "run": m.run_id, "model": m.model, "problem": rec.problem, "title": titles.get(rec.problem, ""),
            "tier": tiers.get(rec.problem, ""), "mode": rec.mode, "item": rec.item, "sample": rec.sample, "round": last,
            "verdict": g["verdict"], "reason": g["reason"], "signature": signature(g),
            "code": comp.get("code"), "answer": comp.get("answer"), "text": comp.get("text"),
            "extraction": comp.get("extraction"), "grade": g, "rounds": history,
            "content_hash": hashes.get(rec.problem, ""), "instance_seed": m.instance_seed,
        })
    return out
