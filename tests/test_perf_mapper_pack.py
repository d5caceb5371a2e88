"""The perf-mapper pack: self-contained but sharing perf-model's format, its README true (every
problem listed, the baselines' mean scores the ones they get on the hidden instances)."""

from __future__ import annotations

import json
import re

import pytest

from grader.grading.scoring import instance_score
from grader.packs import vectors
from grader.packs.problems import Catalog

CATALOG = Catalog()
PACK = CATALOG.pack("perf-mapper")


def test_the_preamble_is_perf_models_format():
    model = CATALOG.pack("perf-model")
    assert PACK.preamble == model.preamble
    assert PACK.tier == "search"


def test_readme_lists_every_problem():
    readme = (PACK.dir / "README.md").read_text()
    for p in PACK.problems:
        assert f"`{p.id}`" in readme, p.id
        assert p.data.scoring is not None


# the words a title or summary uses for each objective; an EDP problem is never "least-energy"
OBJECTIVE_WORDS = {"energy": ("energy",), "edp": ("energy-delay product", "energy x interval", "energy times the interval"),
                   "cycles": ("cycles", "latency"), "traffic": ("traffic",)}


@pytest.mark.parametrize("problem", PACK.problems, ids=lambda p: p.id)
def test_title_and_summary_name_the_objective(problem):
    words = OBJECTIVE_WORDS[problem.data.scoring.objective]
    for text in (problem.data.title, problem.data.summary):
        assert any(w in text for w in words), (problem.id, text)
        if problem.data.scoring.objective != "energy":
            assert "least-energy" not in text and "least data-movement energy" not in text, (problem.id, text)


def _mean_score(problem, source: str) -> float:
    ns: dict = {}
    exec(compile(source, problem.qualified_id, "exec"), ns)  # the pack's own bundled baseline, on the host
    fn = ns[problem.entry_point]
    scores = []
    for v in vectors.load(problem).hidden:
        out = problem.evaluator_fn(json.loads(json.dumps(fn(*v.args))), *v.args)
        scores.append(instance_score(out["objective"], v.expected["best"], problem.data.scoring.tolerance)[0]
                      if out["valid"] else 0.0)
    return sum(scores) / len(scores)


@pytest.mark.parametrize("problem", PACK.problems, ids=lambda p: p.id)
def test_readme_baseline_scores_are_true(problem):
    readme = (PACK.dir / "README.md").read_text()
    row = re.search(rf"^\| `{problem.id}` \| ([0-9.]+) \| ([0-9.]+) \|", readme, re.M)
    assert row, f"no score row for {problem.id}"
    for base, shown in zip(problem.baselines, row.groups()):
        assert _mean_score(problem, base.source) == pytest.approx(float(shown), abs=0.0005), base.name


@pytest.mark.parametrize("problem", PACK.problems, ids=lambda p: p.id)
def test_every_problem_bundles_the_wrong_on_purpose_variants_validate_needs(problem):
    """``problems validate`` fails a problem with fewer than MIN_VARIANTS variants (each scored
    below the solution there): cheap to check here for the whole pack."""
    from grader.grading.validate import MIN_VARIANTS

    assert len(problem.variants) >= MIN_VARIANTS, [v.name for v in problem.variants]


# ------------------------------------------------------------------------------------------
# pilots (README "Pilots")
# ------------------------------------------------------------------------------------------

PILOTS = ("s1", "s2", "s3", "c1", "c2")
CONDITION = {"s": "single-completion", "c": "checked"}


def _pilot_rows() -> list[dict]:
    return [json.loads(line) for line in (PACK.dir / "pilots.jsonl").read_text().splitlines()]


def _pilot_table() -> dict[str, dict[str, str]]:
    """{problem id: {pilot: cell}} from the README's pilots table."""
    readme = (PACK.dir / "README.md").read_text()
    section = readme[readme.index("## Pilots"):]
    table = {}
    for m in re.finditer(r"^\| `([^`]+)` \| [^|]+ \|((?: [^|]+ \|){6})$", section, re.M):
        cells = [c.strip() for c in m[2].strip(" |").split("|")]
        table[m[1]] = dict(zip((*PILOTS, "mean"), cells))
    return table


def test_every_problem_has_three_single_completion_and_two_checked_pilots():
    got: dict[str, list[tuple[str, str, int]]] = {}
    for r in _pilot_rows():
        assert set(r) >= {"problem", "sample", "text", "condition", "pilot"}
        assert r["condition"] == CONDITION[r["pilot"][0]], r["pilot"]
        got.setdefault(r["problem"], []).append((r["pilot"], r["condition"], r["sample"]))
    assert sorted(got) == sorted(p.qualified_id for p in PACK.problems)
    for pid, pilots in got.items():
        assert sorted(p for p, _, _ in pilots) == sorted(PILOTS), pid
        assert len({s for _, _, s in pilots}) == len(PILOTS), f"{pid}: two pilots share a sample number"
    assert set(_pilot_table()) == {p.id for p in PACK.problems}


@pytest.mark.docker
def test_the_pilot_completions_score_what_the_readme_reports(tmp_path):
    """Regrading pilots.jsonl through the sandbox gives every pilot the score the README's table
    shows (three decimals), and each row's mean: a change to a problem's instances, its evaluator
    or the grader that moves a pilot's score shows here."""
    from grader.cli import main
    from grader.results.runs import RunDir

    rows = _pilot_rows()
    label = {(r["problem"], r["sample"]): r["pilot"] for r in rows}
    samples = 1 + max(r["sample"] for r in rows)
    assert main(["eval", "--completions", str(PACK.dir / "pilots.jsonl"), "--pack", "perf-mapper",
                 "--samples", str(samples), "--runs-dir", str(tmp_path), "--name", "pilots", "--quiet"]) == 0
    scores: dict[str, dict[str, float]] = {}
    for rec in RunDir.open(tmp_path / "pilots").journal.records():
        if rec["type"] == "grade":
            pid = rec["problem"]
            scores.setdefault(pid.split("/", 1)[1], {})[label[(pid, rec["sample"])]] = rec["grade"].get("score") or 0.0
    assert sum(len(v) for v in scores.values()) == len(rows)
    table = _pilot_table()
    for pid, got in scores.items():
        shown = table[pid]
        for pilot in PILOTS:
            assert shown[pilot] == f"{got[pilot]:.3f}", (pid, pilot)
        assert shown["mean"] == f"{sum(got.values()) / len(got):.3f}", pid
