"""Every perf-core problem passes the generic checks, through the real sandbox.

It loads; its reference (bundled as a candidate) and its solution pass every hidden vector;
vectors are deterministic; the spec names every input and output; every wrong-on-purpose variant
fails. The same candidates graded in batch mode get the same verdicts as in per-sample mode.
Without Docker: every problem declares its input domain, and every hidden and visible input (and
many more draws of its generator) lies inside it.
"""

from __future__ import annotations

import numpy as np
import pytest

from grader.packs import vectors
from grader.packs.domain import violations
from grader.grading.execution import grade_batch
from grader.packs.problems import Catalog
from grader.grading.validate import validate_problem

CATALOG = Catalog()
PROBLEMS = CATALOG.problems("perf-core")


def test_the_pack_meets_its_size_and_coverage_targets():
    families = {p.family for p in PROBLEMS}
    assert len(PROBLEMS) >= 24
    assert len(families) >= 12
    assert families >= {"F3", "F4", "F5", "F6", "F7", "F10", "F11", "F12"} and families & {"F13", "F16"}
    assert sum(p.family == "F4" for p in PROBLEMS) >= 3
    tiers = {d: sum(p.difficulty == d for p in PROBLEMS) for d in ("easy", "medium", "hard")}
    assert all(n >= len(PROBLEMS) // 5 for n in tiers.values()), tiers


@pytest.mark.parametrize("problem", PROBLEMS, ids=lambda p: p.id)
def test_every_vector_satisfies_the_domain(problem):
    rules = problem.data.domain
    assert rules, "every perf-core problem declares its input domain ([[domain]] in problem.toml)"
    vs = vectors.load(problem)
    bad = [f"{v.id} {x.describe()}" for v in vs.hidden + vs.visible for x in violations(rules, v.kwargs(problem))]
    assert not bad, bad[:5]


@pytest.mark.parametrize("problem", PROBLEMS, ids=lambda p: p.id)
def test_the_generator_stays_inside_the_domain(problem):
    """Draws beyond the pack's seeds: a generator that only happens to miss its domain's edge fails."""
    gen, options = problem.generator_fn, problem.data.generator.options
    bad = []
    for i in range(200):
        args = gen(np.random.default_rng([987_654, i]), **options)
        bad += [f"draw {i} {x.describe()}" for x in violations(problem.data.domain, args)]
    assert not bad, bad[:5]


def test_the_conv_array_generator_keeps_filters_inside_the_input():
    """perf-core 1.0.0 drew a square input smaller than a non-square filter (hidden vector h36 of
    f11-systolic-conv-dataflows, filter_w 3 > ifmap_w 2) about once in 400 draws."""
    from support import trusted

    gen_conv_array = trusted("perf-core").submodule("systolic").gen_conv_array

    for i in range(3000):
        layer = gen_conv_array(np.random.default_rng([4242, i]))["layer"]
        assert layer["filter_w"] <= layer["ifmap_w"] and layer["filter_h"] <= layer["ifmap_h"], (i, layer)


@pytest.mark.docker
@pytest.mark.parametrize("problem", PROBLEMS, ids=lambda p: p.id)
def test_problem_is_sound(problem, handle):
    # adequacy decided from as few host runs as settle each model's verdict (the same verdicts);
    # `problems validate perf-core` counts in full
    report = validate_problem(problem, handle, exhaustive=False)
    failed = [f"{c.name}: {c.detail}" for c in report.checks if not c.ok]
    assert not failed, failed
    assert report.kill_rate == 1.0
    by_name = {v.name: v.verdict for v in report.variants}

    hidden = vectors.load(problem).hidden
    items = [("solution", problem.solution_source)] + [(v.name, v.source) for v in problem.variants]
    batched = dict(zip([n for n, _ in items], grade_batch(handle, problem, items, hidden)))
    assert batched["solution"][0].verdict.value == "pass"
    for name, verdict in by_name.items():
        assert batched[name][0].verdict.value == verdict, f"{name}: batch {batched[name][0].verdict.value} vs {verdict}"


@pytest.mark.parametrize("problem", [p for p in PROBLEMS if p.data.sampler is not None], ids=lambda p: p.id)
def test_readme_shows_the_current_coverage(problem):
    """The README's coverage table is the one the validator computes, and it states the adequacy
    the validator proves (test_problem_is_sound: every check passes)."""
    from grader.grading.adequacy import coverage, coverage_markdown
    from grader.packs.sampling import draw_sample

    readme = (CATALOG.pack("perf-core").dir / "README.md").read_text()
    section = readme.split("\n## Coverage and adequacy\n", 1)[1].split("\n## ", 1)[0]
    table, errors = coverage(problem, vectors.load(problem).hidden, draw_sample(problem))
    assert not errors and all(c.ok for c in table)
    assert "Coverage of " + coverage_markdown(problem, table) in section
    n_var, n_part = len(problem.variants), len(problem.partial_models)
    assert f"adequacy {n_var + n_part}/{n_var + n_part} ({n_var} variants, {n_part} partial models)" in " ".join(section.split())


def test_pack_readme_and_changelog_are_current():
    pack = CATALOG.pack("perf-core")
    readme = (pack.dir / "README.md").read_text()
    table = readme.split("\n## Problems\n", 1)[1].split("\n## ", 1)[0]
    listed = [line.split("`")[1] for line in table.splitlines() if line.startswith("| `")]
    assert sorted(listed) == sorted(p.id for p in PROBLEMS)
    tiers = {d: sum(p.difficulty == d for p in PROBLEMS) for d in ("easy", "medium", "hard")}
    assert (f"{len(PROBLEMS)} problems over all {len({p.family for p in PROBLEMS})} families "
            f"({tiers['easy']} easy, {tiers['medium']} medium, {tiers['hard']} hard)") in readme
    assert f"## {pack.version}" in (pack.dir / "CHANGELOG.md").read_text()
