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
