"""Read a run directory back: outcomes for statistics, sample records for auditing.

Everything here works from the run directory alone: no model, no Docker, no pack needed.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .runs import RunDir, RunManifest
from .stats import Outcome, summarize


@dataclass
class SampleRecord:
    """Everything the journal holds about one sample (completion and final grades)."""

    problem: str
    sample: int
    completion: dict[str, Any] | None = None
    grades: dict[int, dict[str, Any]] = field(default_factory=dict)  # round -> grade record

    @property
    def grade(self) -> dict[str, Any] | None:
        rec = self.grades.get(0)
        return rec.get("grade") if rec else None

    @property
    def verdict(self) -> str | None:
        g = self.grade
        return g.get("verdict") if g else None


@dataclass
class LoadedRun:
    run: RunDir
    manifest: RunManifest
    outcomes: list[Outcome]
    rounds: dict[tuple[str, int], list[str]]
    ungraded: list[tuple[str, int]]
    generation_failures: int
    events: list[dict[str, Any]]


def load_run(path: Path) -> LoadedRun:
    run = RunDir.open(path)
    manifest = run.manifest
    meta = {p.id: p for p in manifest.problems}
    rounds: dict[tuple[str, int], dict[int, str]] = {}
    passed: dict[tuple[str, int], bool] = {}
    events = []
    completions: set[tuple[str, int]] = set()
    gen_fail = 0
    for rec in run.journal.records():
        if rec["type"] == "event":
            events.append(rec)
            if rec.get("event") == "generation_failed":
                gen_fail += 1
        elif rec["type"] == "completion":
            completions.add((rec["problem"], rec["sample"]))
    for rec in run.final_grades()[0].values():
        key = (rec["problem"], rec["sample"])
        verdict = rec["grade"]["verdict"]
        rounds.setdefault(key, {})[rec.get("round", 0)] = verdict
        if rec.get("round", 0) == 0:
            passed[key] = verdict == "pass"
    outcomes = []
    for (pid, s), by_round in sorted(rounds.items()):
        if 0 not in by_round:
            continue
        m = meta.get(pid)
        outcomes.append(Outcome(problem=pid, sample=s, passed=passed[(pid, s)], verdict=by_round[0],
                                family=m.family if m else "", difficulty=m.difficulty if m else "",
                                counted=by_round[0] != "infra_error"))
    expected = {(p.id, s) for p in manifest.problems for s in range(manifest.samples)}
    graded = {(o.problem, o.sample) for o in outcomes}
    return LoadedRun(
        run=run, manifest=manifest, outcomes=outcomes,
        rounds={k: [v[r] for r in sorted(v)] for k, v in rounds.items()},
        ungraded=sorted(expected - graded), generation_failures=gen_fail, events=events,
    )


def run_summary(loaded: LoadedRun) -> dict[str, Any]:
    m = loaded.manifest
    s = summarize(loaded.outcomes, m.k_values, loaded.rounds)
    s["run"] = {
        "id": m.run_id, "path": str(loaded.run.path), "created": m.created, "source": m.source,
        "model": m.model, "base_url": m.base_url, "samples_per_problem": m.samples,
        "problems": len(m.problems), "pack": m.pack, "image": m.image, "grader_version": m.grader_version,
        "git_commit": m.git_commit, "exec_mode": m.exec_mode, "generation": m.generation,
        "complete": not loaded.ungraded, "ungraded": len(loaded.ungraded),
        "generation_failures": loaded.generation_failures,
    }
    if m.source == "demo" and m.notes:
        s["run"]["notice"] = m.notes[0]  # the demo model's notice, written into the manifest
    return s


def iter_samples(run: RunDir) -> Iterator[SampleRecord]:
    """Every sample with its completion and final grades (holds one run's records in memory)."""
    samples: dict[tuple[str, int], SampleRecord] = {}
    for rec in run.journal.records():
        if rec["type"] == "completion":
            key = (rec["problem"], rec["sample"])
            samples.setdefault(key, SampleRecord(*key)).completion = rec
    for rec in run.final_grades()[0].values():
        key = (rec["problem"], rec["sample"])
        samples.setdefault(key, SampleRecord(*key)).grades[rec.get("round", 0)] = rec
    for key in sorted(samples):
        yield samples[key]


def failing_records(
    run_path: Path,
    problems: list[str] | None = None,
    samples: list[int] | None = None,
    verdicts: list[str] | None = None,
) -> list[dict[str, Any]]:
    """Every failing sample of a run (final verdict not a pass), optionally filtered by problem
    (``pack/id`` or bare id), sample index and verdict, with what an audit shows of it."""
    from .signatures import signature

    run = RunDir.open(run_path)
    m = run.manifest
    titles = {p.id: p.title for p in m.problems}
    out = []
    for rec in iter_samples(run):
        g = rec.grade
        if g is None or g["verdict"] == "pass":
            continue
        if problems and not any(rec.problem == w or rec.problem.split("/", 1)[-1] == w for w in problems):
            continue
        if samples and rec.sample not in samples:
            continue
        if verdicts and g["verdict"] not in verdicts:
            continue
        comp = rec.completion or {}
        out.append({
            "run": m.run_id, "model": m.model, "problem": rec.problem, "title": titles.get(rec.problem, ""),
            "sample": rec.sample, "verdict": g["verdict"], "reason": g["reason"], "signature": signature(g),
            "code": comp.get("code"), "extraction": comp.get("extraction"), "grade": g,
        })
    return out
