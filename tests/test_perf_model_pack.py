"""The perf-model pack: a model tier whose specs state the hardware, never the model.

Without Docker: the pack loads as tier "model" with its FORMAT.md preamble; every problem has
real-size vectors, a bundled brute-force simulator, 50+ small hidden vectors and 3+ variants;
no spec (nor the preamble) contains a formula; the README lists every problem; the kit-built
files are current and self-contained. With Docker: every problem passes the validator (gold,
mutants, the simulator passes the small vectors and runs out of time on the real ones).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from grader.packs.problems import Catalog

ROOT = Path(__file__).resolve().parents[1]
PACK_DIR = ROOT / "problems" / "perf-model"
CATALOG = Catalog()
PACK = CATALOG.pack("perf-model")
PROBLEMS = list(PACK.problems)
FAMILIES = {"F3", "F4", "F5", "F6", "F7", "F8", "F9", "F10", "F11", "F13", "F15", "F16", "F17", "F18"}


# ------------------------------------------------------------------------------------------
# the formula heuristic
# ------------------------------------------------------------------------------------------

_CALLS = re.compile(r"\b(ceil|floor|min|max|prod|sum|round|abs)\(", re.I)
_WORDS = re.compile(r"product of|multiplied by|divided by|times the|minus the|formula|closed form|"
                    r"worked example|stationarity rule|\bdelta\s*=", re.I)
_EQUATION = re.compile(r"[A-Za-z_\])][\w\])]*\s*(?<![=!<>])=(?!=)\s*[A-Za-z_(\d]")
_ARITH = re.compile(r"[\w\])]\s+[*/+-]\s+[\w(]|[\w\])][*/][\w(]")


def formula_lines(text: str, workload_blocks: bool = False) -> list[str]:
    """Lines that look like a formula. Fenced code blocks may hold the workload's loop nests
    (``workload_blocks``: index definitions such as ``h = p*stride + ...`` are the workload,
    not the model) but never a rounding or reduction call."""
    bad, fenced = [], False
    for line in text.splitlines():
        if line.strip().startswith("```"):
            fenced = not fenced
            continue
        if fenced:
            if _CALLS.search(line) or not workload_blocks:
                bad.append(line)
            continue
        if _CALLS.search(line) or _WORDS.search(line) or _EQUATION.search(line):
            bad.append(line)
            continue
        for code in re.findall(r"`([^`]*)`", line):
            if _ARITH.search(code) or _EQUATION.search(code):
                bad.append(line)
                break
    return bad


@pytest.mark.parametrize("line", [
    "fills = tile x the bounds of every loop outside",
    "the count is `tile * outer`",
    "use ceil(P / p) tiles",
    "the product of the factors of the inner loops",
    "reads are `updates - partition`",
    "```\nx = ceil(a / b)\n```",
])
def test_the_heuristic_catches_formulas(line):
    assert formula_lines(line)


def test_the_heuristic_lets_hardware_prose_through():
    text = ("An element that several child instances receive in the same iteration is read once.\n"
            "Keys are `\"<level name>.<tensor>\"`, for example `\"GLB.I\"`; `eyeriss-like` has `fanout` `[14, 12]`.\n")
    assert formula_lines(text) == []


@pytest.mark.parametrize("problem", PROBLEMS, ids=lambda p: p.id)
def test_spec_states_no_formula(problem):
    assert formula_lines(problem.spec) == [], problem.id


def test_format_states_no_formula():
    assert formula_lines(PACK.preamble, workload_blocks=True) == []


# ------------------------------------------------------------------------------------------
# structure
# ------------------------------------------------------------------------------------------

def test_pack_is_the_model_tier_with_its_format():
    assert PACK.tier == "model" and PACK.data.preamble == "FORMAT.md"
    changelog = (PACK.dir / "CHANGELOG.md").read_text()
    assert f"## {PACK.version}" == next(line for line in changelog.splitlines() if line.startswith("## "))
    assert "### What the hardware does" in PACK.preamble


@pytest.mark.parametrize("problem", PROBLEMS, ids=lambda p: p.id)
def test_problem_is_model_tier(problem):
    d = problem.data
    assert problem.tier == "model"
    assert d.family in FAMILIES
    assert d.generator.real is not None and 8 <= d.generator.real.count <= 16
    assert d.generator.real.options.get("real") is True
    assert d.generator.hidden_count >= 50
    assert problem.simulator_source is not None
    assert len(problem.variants) >= 3
    for src in [problem.solution_source, problem.simulator_source] + [v.source for v in problem.variants]:
        assert "reference_models" not in src and "_trusted" not in src  # self-contained
        assert problem.entry_point in src
        compile(src, problem.id, "exec")


def test_the_kit_is_written_once():
    """Kit-built problems are assembled from _kit/ and declare their variants as switches: no
    problem directory holds a copy of the engine, and every switch a variant sets is read."""
    kit = [p for p in PROBLEMS if p.data.solution is not None]
    assert len(kit) >= 20
    for p in PROBLEMS:
        names = sorted(f.name for f in p.dir.iterdir() if f.name != "partial_models")
        assert names in (["problem.toml", "spec.md"], ["problem.toml", "simulator.py", "solution.py", "spec.md"])
        for f in (p.dir / "partial_models").glob("*.py"):  # a short closed form, never a copy of the engine
            assert len(f.read_text().splitlines()) < 100, f
    for p in kit:
        assert p.data.solution.assemble[0] == "_kit/engine.py"
        assert all(v.switches for v in p.data.variants)


def _section(text: str, title: str) -> str:
    """The text of a README section, up to the next section of its level."""
    body = text.split(f"\n## {title}\n", 1)[1]
    return body.split("\n## ", 1)[0]


def test_readme_lists_every_problem():
    readme = (PACK_DIR / "README.md").read_text()
    for part in (_section(readme, "Problems"), _section(readme, "Pilots")):  # the problem table, and the pilots' table
        listed = [line.split("`")[1] for line in part.splitlines() if line.startswith("| `")]
        assert sorted(listed) == sorted(p.id for p in PROBLEMS)


@pytest.mark.parametrize("problem", [p for p in PROBLEMS if p.data.sampler is not None], ids=lambda p: p.id)
def test_readme_shows_the_current_coverage(problem):
    """The README's coverage table is the one the validator computes, and it states the adequacy
    the validator proves (test_problem_is_sound: every check passes)."""
    from grader.grading.adequacy import coverage, coverage_markdown
    from grader.packs import vectors
    from grader.packs.sampling import draw_sample

    section = _section((PACK_DIR / "README.md").read_text(), "Coverage and adequacy")
    table, errors = coverage(problem, vectors.load(problem).hidden, draw_sample(problem))
    assert not errors and all(c.ok for c in table)
    assert "Coverage of " + coverage_markdown(problem, table) in section
    n_var, n_part = len(problem.variants), len(problem.partial_models)
    assert f"adequacy {n_var + n_part}/{n_var + n_part} ({n_var} variants, {n_part} partial models)" in " ".join(section.split())


def test_the_pilot_completions_cover_every_problem_five_times():
    import json

    rows = [json.loads(line) for line in (PACK_DIR / "pilots.jsonl").read_text().splitlines()]
    by_problem: dict[str, list[str]] = {}
    for r in rows:
        assert set(r) >= {"problem", "sample", "text", "condition"}
        by_problem.setdefault(r["problem"], []).append(r["condition"])
    assert sorted(by_problem) == sorted(p.qualified_id for p in PROBLEMS)
    for pid, conds in by_problem.items():
        assert sorted(conds) == ["checked", "checked", "one-shot", "one-shot", "one-shot"], pid


# ------------------------------------------------------------------------------------------
# through the sandbox
# ------------------------------------------------------------------------------------------

@pytest.mark.docker
def test_the_pilot_completions_get_the_verdicts_the_readme_reports(tmp_path):
    """Regrading pilots.jsonl through the sandbox gives, per problem and condition, the passes the
    README's pilots table reports: a change to a problem's vectors, its comparison or the grader
    that turns a pilot's verdict shows here (every hidden vector added since piloting included)."""
    import json

    from grader.cli import main
    from grader.results.runs import RunDir

    rows = [json.loads(line) for line in (PACK_DIR / "pilots.jsonl").read_text().splitlines()]
    condition = {(r["problem"], r["sample"]): r["condition"] for r in rows}
    samples = 1 + max(r["sample"] for r in rows)
    assert main(["eval", "--completions", str(PACK_DIR / "pilots.jsonl"), "--pack", "perf-model",
                 "--samples", str(samples), "--runs-dir", str(tmp_path), "--name", "pilots", "--quiet"]) == 0
    got: dict[tuple[str, str], list[int]] = {}
    graded = set()
    for rec in RunDir.open(tmp_path / "pilots").journal.records():
        if rec["type"] != "grade":
            continue
        key = (rec["problem"], rec["sample"])
        graded.add(key)
        tally = got.setdefault((rec["problem"], condition[key]), [0, 0])
        tally[0] += rec["grade"]["verdict"] == "pass"
        tally[1] += 1
    assert graded == set(condition)
    table = _section((PACK_DIR / "README.md").read_text(), "Pilots")
    reported = 0
    for line in table.splitlines():
        m = re.match(r"\| `([^`]+)` \| (\d+) of (\d+) \| (\d+) of (\d+) \|", line)
        if not m:
            continue
        pid = f"perf-model/{m[1]}"
        assert got[(pid, "one-shot")] == [int(m[2]), int(m[3])], f"{pid} one-shot"
        assert got[(pid, "checked")] == [int(m[4]), int(m[5])], f"{pid} checked"
        reported += 1
    assert reported == len(PROBLEMS)

@pytest.mark.docker
@pytest.mark.parametrize("problem", PROBLEMS, ids=lambda p: p.id)
def test_problem_is_sound(problem, handle):
    from grader.grading.validate import validate_problem

    # the simulator's timeouts cost 2 s of CPU each: three real-size vectors per problem prove the
    # point here, and adequacy is decided from as few host runs as settle each model's verdict (the
    # same verdicts); `problems validate perf-model` checks every real-size vector and counts in full
    report = validate_problem(problem, handle, analytical_sample=3, exhaustive=False)
    failed = [f"{c.name}: {c.detail}" for c in report.checks if not c.ok]
    assert not failed, failed
    names = {c.name for c in report.checks}
    assert {"tier", "simulator (small)", "analytical", "gold (reference)", "gold (solution)", "mutants"} <= names
    assert report.kill_rate == 1.0
