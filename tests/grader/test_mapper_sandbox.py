"""Search problems through the real sandbox: the bundled solution reaches the best known, a
variant scores clearly below it, hostile answers score 0, and `eval` journals the score and
`report` shows it (a real run on the pack's real hidden instances)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from grader.cli import main
from grader.grading.execution import grade_source
from grader.grading.scoring import Verdict
from grader.packs.problems import Catalog
from grader.packs import vectors
from grader.packs.vectors import Vector, plain
from grader.results.runs import RunDir

pytestmark = pytest.mark.docker


@pytest.fixture(scope="module")
def problem():
    return Catalog().find("perf-mapper/gemm-energy-mapper")


@pytest.fixture(scope="module")
def small(problem):
    """Hidden-like instances small enough to grade fast (drawn with the proof's options): the
    four-level eyeriss-cluster-like accelerator, what each level holds."""
    gen, ref = problem.generator_fn, problem.reference_fn
    options = {**problem.data.generator.options, **problem.data.scoring.proof.options}
    out = []
    for i in range(4):
        kw = plain(gen(np.random.default_rng([9090, i]), **options), "t")
        args = [kw[p.name] for p in problem.data.signature.params]
        assert len(args[1]["levels"]) == len(args[2]) == 4
        out.append(Vector(id=f"s{i}", args=args, expected=plain(ref(*args), "t")))
    return tuple(out)


def test_solution_reaches_the_best_known_in_the_sandbox(handle, problem, small):
    g, _ = grade_source(handle, problem, problem.solution_source, small)
    assert g.verdict is Verdict.PASS, g.reason
    assert g.score == 1.0 and g.at_best == len(small)


def test_a_variant_scores_clearly_below(handle, problem, small):
    variant = next(v for v in problem.variants if v.name == "psum_as_output")  # its tiles overflow
    g, _ = grade_source(handle, problem, variant.source, small)
    assert g.verdict is Verdict.WRONG_ANSWER, g.reason
    assert g.score is not None and g.score < 0.95
    assert g.at_best < len(small)
    assert any(i.invalid and i.invalid.startswith("invalid_mapping: capacity at") for i in g.instances)


HOSTILE = '''
class Loop(list):
    def __eq__(self, other):
        return True

def map_gemm(workload, architecture, holds):
    d = workload["dims"]
    kind = (d["M"] + 2 * d["N"] + 4 * d["K"]) % 3
    if kind == 0:
        return {"levels": [{"temporal": [Loop(["M", 1])]}, {}, {}, {}]}
    if kind == 1:
        return {"levels": [{"temporal": [["M", float("nan")]]}, {}, {}, {}]}
    return {"levels": [{}, {}, {}, {"temporal": [["M", 10 ** 40]]}]}
'''


def test_hostile_answers_score_zero(handle, problem, small):
    kinds = {(d["M"] + 2 * d["N"] + 4 * d["K"]) % 3 for d in (v.args[0]["dims"] for v in small)}
    assert kinds == {0, 1, 2}  # every kind of answer
    g, _ = grade_source(handle, problem, HOSTILE, small)
    assert not g.passed
    assert g.score == 0.0
    assert all(i.invalid or i.error for i in g.instances)


CONSTANT = '''
def map_gemm(workload, architecture, holds):
    d = workload["dims"]
    return {"levels": [{"temporal": []}, {"temporal": []}, {"temporal": []},
                       {"temporal": [[k, d[k]] for k in ("M", "N", "K") if d[k] > 1]}]}
'''


def fenced(code: str) -> str:
    return f"My mapper:\n\n```python\n{code}```\n"


def test_eval_journals_the_score_and_report_shows_it(problem, tmp_path, capsys):
    comp = tmp_path / "completions.jsonl"
    lines = [{"problem": problem.qualified_id, "sample": 0, "text": fenced(CONSTANT)},
             {"problem": problem.qualified_id, "sample": 1, "text": "no code here"}]
    comp.write_text("".join(json.dumps(x) + "\n" for x in lines))
    summary = tmp_path / "summary.json"
    rc = main(["eval", "--pack", "perf-mapper", "--problem", "gemm-energy-mapper", "--completions", str(comp),
               "--samples", "2", "--runs-dir", str(tmp_path / "runs"), "--name", "mapper", "--json", str(summary),
               "--quiet"])
    assert rc == 0
    run = RunDir.open(tmp_path / "runs" / "mapper")
    grades = [r["grade"] for r in run.journal.records() if r["type"] == "grade"]
    by_verdict = {g["verdict"]: g for g in grades}
    g0 = by_verdict["wrong_answer"]
    assert 0 < g0["score"] < 0.5  # every loop at DRAM: valid, far from the best
    assert len(g0["instances"]) == problem.data.generator.hidden_count
    assert all(i["objective"] > i["best"] for i in g0["instances"])
    assert by_verdict["no_code"]["score"] is None
    s = json.loads(summary.read_text())["search"]
    row = s["problems"][0]
    assert row["n"] == 2 and row["score"] == pytest.approx(g0["score"] / 2)
    assert row["at_best"] == 0.0 and s["headline"]["problems"] == 1
    capsys.readouterr()
    assert main(["report", str(tmp_path / "runs" / "mapper")]) == 0
    out = capsys.readouterr().out
    assert "search problems: score against the best known" in out and f"{row['score']:.3f}" in out

    # audit: every instance against the best known, the worst returned mapping beside the best one
    assert all(i["mapping"] for i in g0["instances"])  # none at the best known: each kept
    assert main(["audit", str(tmp_path / "runs" / "mapper"), "--verdict", "wrong_answer", "--no-code"]) == 0
    out = capsys.readouterr().out
    assert "signature: wrong_answer: below the best known on every instance" in out
    first = g0["instances"][0]
    assert first["vector"] in out and f"{first['best']:.6g}" in out
    worst = min(g0["instances"], key=lambda i: i["score"])
    assert f"returned mapping on {worst['vector']}" in out and f"best known mapping on {worst['vector']}:" in out
    best = next(v for v in vectors.load(problem).hidden if v.id == worst["vector"]).expected["mapping"]
    assert best in out.replace("\n", "")
