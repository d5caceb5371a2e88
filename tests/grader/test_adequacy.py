"""The domain sampler, feature coverage and hidden-set adequacy.

The format's new fields and their errors; the host runner (hostrun.py) that runs variants and
partial models out of process; and the validator's checks on tests/data/packs/adequacy-pack,
whose generator is kind on purpose (sizes the tile divides, all small): its partial models
(floor division, int32 arithmetic) pass every hidden vector until corner vectors are added.
"""

from __future__ import annotations

import json
import shutil
import zlib
from pathlib import Path

import pytest

from grader.errors import PackError
from grader.grading.adequacy import FeatureCoverage, ModelResult
from grader.grading.hostrun import HostRunError, run_on_host
from grader.grading.validate import validate
from grader.packs.problems import load_pack
from grader.packs.sampling import draw_sample, sampler_seed

ROOT = Path(__file__).resolve().parents[2]
ADEQUACY_PACK = ROOT / "tests" / "data" / "packs" / "adequacy-pack"

CORNERS = '''
[generator.corners]
seed = 34
count = 8
options = { ragged = true, large = true }
says = "ragged tiles of sizes past 2^31, which the main draw never reaches"
'''


@pytest.fixture
def adequacy_copy(tmp_path):
    dst = tmp_path / "packs" / "adequacy-pack"
    shutil.copytree(ADEQUACY_PACK, dst)
    return dst


def _toml(pack: Path) -> Path:
    return pack / "tiles" / "problem.toml"


def _edit(pack: Path, old: str, new: str) -> None:
    path = _toml(pack)
    text = path.read_text()
    assert text.count(old) == 1, old
    path.write_text(text.replace(old, new))


def _report(pack: Path):
    (problem,) = load_pack(pack).problems
    (report,) = validate([problem], None)
    return report, {c.name: c for c in report.checks}


# ------------------------------------------------------------------------------------------
# the format
# ------------------------------------------------------------------------------------------

def test_the_pack_loads_its_sampler_features_and_partial_models():
    (p,) = load_pack(ADEQUACY_PACK).problems
    assert p.data.sampler is not None and p.data.sampler.count == 400
    assert [f.name for f in p.data.features] == ["ragged", "one_tile"]
    assert [f.min for f in p.data.features] == [3, 1]
    assert [m.name for m in p.partial_models] == ["floor_division", "int32_arithmetic"]
    assert "count = n // t\n" in p.partial_models[0].source  # a replace change of the solution
    assert "np.int32" in p.partial_models[1].source  # a whole file
    assert p.partial_models[0].rule == "n % t == 0"
    assert p.sampler_fn.__name__ == "sample_tiles"


@pytest.mark.parametrize("old, new, words", [
    ('[[partial_models]]\nname = "floor_division"\nrestricted = "right when the tile divides the size"',
     '[[partial_models]]\nname = "floor_division"\nrestricted = "right when the tile divides the size"\n'
     'switches = { x = true }', "exactly one of switches, replace, patch and file"),
    ('[[partial_models]]\nname = "floor_division"\n', '[[partial_models]]\n', "needs a name"),
    ('restricted = "right when the tile divides the size"', 'restricted = "right"', "at least 10 characters"),
    ('file = "partial_models/int32_arithmetic.py"', 'file = "variants/int32_arithmetic.py"', "partial_models"),
    ('rule = "n % t == 0"', 'rule = "m % t == 0"', "reads m: not a parameter"),
    ('rule = "n % t == 0"', 'rule = "n % t =="', "does not parse"),
    ('name = "floor_division"', 'name = "swapped"', "duplicate variant and partial model names: swapped"),
    ('name = "one_tile"', 'name = "ragged"', "duplicate feature names: ragged"),
    ('rule = "t >= n"', 'rule = "t >= size"', "reads size: not a parameter"),
    ('min = 1', 'min = 0', "greater than or equal to 1"),
    ('[sampler]\nname = "tiles_domain.tiles"\ncount = 400\n', '', "declare [sampler]"),
    ('count = 400', 'count = 0', "greater than or equal to 1"),
    ('visible_seed = 32\n', 'visible_seed = 32\n' + CORNERS.replace("seed = 34", "seed = 31"),
     "corners.seed must all differ"),
    ('visible_seed = 32\n', 'visible_seed = 32\n' + CORNERS.replace('says = "ragged tiles of sizes past 2^31, '
                                                                       'which the main draw never reaches"\n', ""),
     "says"),
])
def test_format_errors_name_the_field(adequacy_copy, old, new, words):
    _edit(adequacy_copy, old, new)
    with pytest.raises(PackError) as err:
        load_pack(adequacy_copy)
    assert words in str(err.value)


def test_a_partial_model_file_must_exist_and_every_file_be_declared(adequacy_copy):
    extra = adequacy_copy / "tiles" / "partial_models" / "stray.py"
    extra.write_text("def tiles(n, t):\n    return {}\n")
    with pytest.raises(PackError, match="not declared in problem.toml \\[\\[partial_models\\]\\]"):
        load_pack(adequacy_copy)
    extra.unlink()
    (adequacy_copy / "tiles" / "partial_models" / "int32_arithmetic.py").unlink()
    with pytest.raises(PackError, match="partial model file partial_models/int32_arithmetic.py not found"):
        load_pack(adequacy_copy)


def test_samplers_must_be_a_dict_of_functions(adequacy_copy):
    init = adequacy_copy / "_trusted" / "__init__.py"
    init.write_text(init.read_text().replace("SAMPLERS = {**tiles_domain.SAMPLERS, **tiles_testing.SAMPLERS}",
                                             "SAMPLERS = ['tiles_domain.tiles']"))
    with pytest.raises(PackError, match="SAMPLERS must be a dict from string keys to functions"):
        load_pack(adequacy_copy)


def test_samplers_are_optional(tiny_catalog):
    assert tiny_catalog.pack("tiny-pack").trusted.samplers == {}


def test_a_partial_model_that_no_longer_applies_names_itself(adequacy_copy):
    sol = adequacy_copy / "tiles" / "solution.py"
    sol.write_text(sol.read_text().replace("count = -(-n // t)", "count = (n + t - 1) // t"))
    (p,) = load_pack(adequacy_copy).problems
    with pytest.raises(PackError, match="partial model 'floor_division' no longer applies to the solution"):
        p.partial_models[0].source


# ------------------------------------------------------------------------------------------
# the host runner
# ------------------------------------------------------------------------------------------

HOSTILE = '''
import numpy as np
print("noise on stdout")

def f(x):
    if x == 1:
        raise ValueError("one")
    if x == 2:
        while True:
            pass
    if x == 3:
        return {"v": object()}
    return {"v": np.int64(x) * 2, "a": np.arange(2), "f": np.float32(0.5)}
'''


def test_the_host_runner_returns_each_answer_or_why_not():
    answers = run_on_host(HOSTILE, "f", [[0], [1], [2], [3], [5]], case_cpu_s=0.3)
    assert answers[0].value == {"v": 0, "a": [0, 1], "f": 0.5} and answers[0].error is None
    assert answers[1].error == "ValueError: one"
    assert answers[2].error.startswith("Timeout")
    assert "unsupported result type builtins.object" in answers[3].error
    assert answers[4].value["v"] == 10 and type(answers[4].value["v"]) is int


def test_the_host_runner_reports_a_module_that_cannot_load():
    with pytest.raises(HostRunError, match="no function named 'f'"):
        run_on_host("def g(x):\n    return {}\n", "f", [[1]])
    with pytest.raises(HostRunError, match="SyntaxError"):
        run_on_host("def f(:\n", "f", [[1]])
    with pytest.raises(HostRunError, match="did not finish"):
        run_on_host("import time\ntime.sleep(30)\ndef f(x):\n    return {}\n", "f", [[1]], timeout_s=1)


def test_the_host_runner_runs_isolated(tmp_path, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    (tmp_path / "sneaky.py").write_text("X = 1\n")
    (answer,) = run_on_host("import sys, os\ndef f():\n    return {'path': sys.path, 'cwd': os.getcwd(), "
                            "'env': sorted(os.environ)}\n", "f", [[]])
    assert str(tmp_path) not in answer.value["path"] and answer.value["cwd"] == "/"
    assert "PYTHONPATH" not in answer.value["env"] and "PERFGRADE_CACHE" not in answer.value["env"]


# ------------------------------------------------------------------------------------------
# the domain sample
# ------------------------------------------------------------------------------------------

def test_the_domain_sample_is_deterministic_and_cached():
    (p,) = load_pack(ADEQUACY_PACK).problems
    assert sampler_seed(p) == zlib.crc32(b"adequacy-pack/tiles")
    first = draw_sample(p, use_cache=False)
    assert len(first.draws) == 400 and len(first.accepted) == 400
    assert first.draws[0].id == "d000" and first.draws[-1].id == "d399"
    cached = draw_sample(p)
    again = draw_sample(p)  # from the cache this time
    assert [d.args for d in first.draws] == [d.args for d in cached.draws] == [d.args for d in again.draws]
    assert [d.expected for d in first.draws] == [d.expected for d in again.draws]
    assert [d.features for d in first.draws] == [d.features for d in again.draws]


def test_inputs_outside_the_domain_are_named(adequacy_copy):
    _edit(adequacy_copy, 'name = "tiles_domain.tiles"', 'name = "tiles_domain.outside"')
    _, checks = _report(adequacy_copy)
    c = checks["domain sample"]
    assert not c.ok and "not accepted" in c.detail and "breaks rule 1 `n >= 1 and t >= 1`" in c.detail


def test_a_sampler_sharing_code_with_the_generator_is_refused(adequacy_copy):
    _edit(adequacy_copy, 'name = "tiles_domain.tiles"', 'name = "tiles_testing.lazy"')
    _, checks = _report(adequacy_copy)
    c = checks["sampler"]
    assert not c.ok and "shares code with the generator" in c.detail and "trusted.tiles_testing" in c.detail


def test_an_unknown_sampler_is_named(adequacy_copy):
    _edit(adequacy_copy, 'name = "tiles_domain.tiles"', 'name = "tiles_domain.nothing"')
    _, checks = _report(adequacy_copy)
    assert not checks["sampler"].ok and "unknown sampler 'tiles_domain.nothing'" in checks["sampler"].detail


# ------------------------------------------------------------------------------------------
# coverage and adequacy
# ------------------------------------------------------------------------------------------

def test_a_kind_hidden_set_fails_coverage_and_adequacy():
    report, checks = _report(ADEQUACY_PACK)
    cov = checks["coverage"]
    assert not cov.ok
    assert "ragged 0/3 hidden vectors (95% of the domain sample)" in cov.detail
    assert "int >= 2^31 0/3 hidden vectors" in cov.detail
    assert report.covered == (1, 3)  # one_tile is covered; int >= 2^53 is not in the domain sample
    by = {c.name: c for c in report.coverage}
    assert by["int >= 2^53"].required is False and by["int >= 2^53"].cell() == "-"

    adq = checks["adequacy"]
    assert not adq.ok and adq.detail.startswith("hidden-set adequacy 3/5")
    assert "floor_division is wrong on 95% of the domain sample but passes every hidden vector" in adq.detail
    assert "int32_arithmetic is wrong on" in adq.detail
    models = {m.name: m for m in report.adequacy}
    assert models["floor_division"].hidden_wrong == 0 and models["floor_division"].rule_breaks == 0
    assert models["off_by_one"].ok and models["off_by_one"].kind == "variant"
    assert models["int32_arithmetic"].kind == "partial model"
    example = models["floor_division"].example
    assert example.startswith("d") and "expected" in example
    assert json.loads(models["floor_division"].example_input)  # the input, for the JSON report
    assert report.adequate == (3, 5)
    assert not report.ok


def test_corner_vectors_make_the_hidden_set_adequate(adequacy_copy):
    _edit(adequacy_copy, 'visible_seed = 32\n', 'visible_seed = 32\n' + CORNERS)
    report, checks = _report(adequacy_copy)
    assert checks["coverage"].ok, checks["coverage"].detail
    assert checks["adequacy"].ok, checks["adequacy"].detail
    assert report.adequate == (5, 5) and report.covered == (3, 3)
    assert report.ok, [c for c in report.checks if not c.ok]
    hidden_ids = [m.hidden_total for m in report.adequacy]
    assert hidden_ids == [58] * 5  # 50 from the main draw and 8 corners
    out = report.to_json()
    assert out["adequate"] == [5, 5] and out["covered"] == [3, 3]
    assert out["domain_sample"] == {"seed": sampler_seed(report.problem), "drawn": 400, "accepted": 400}
    ragged = next(c for c in out["coverage"] if c["feature"] == "ragged")
    assert ragged["hidden"] == 8 and ragged["ok"] and ragged["sample"] == 379
    assert all(m["ok"] for m in out["adequacy"])


def test_corner_sets_small_and_real_size_leave_the_qa_items_alone(adequacy_copy):
    """Several corner sets, one of them real-size: ids c.., c1-.., rc..; the real-size ones count
    as real (the validator's analytical check and budgets take them so), and no corner set moves a
    Q&A item (those come from the main and [generator.real] options only)."""
    from grader.packs.vectors import generate, generate_hidden, is_real

    _edit(adequacy_copy, 'visible_seed = 32\n',
          'visible_seed = 32\n\n[generator.real]\nseed = 35\ncount = 3\noptions = { ragged = true }\n')
    (before,) = load_pack(adequacy_copy).problems
    qa_before = generate(before, "qa", count=6)
    sets = ('\n[[generator.corners]]\nseed = 36\ncount = 4\noptions = { ragged = true }\nsays = "ragged tiles"\n'
            '\n[[generator.corners]]\nseed = 37\ncount = 3\noptions = { large = true }\nreal = true\n'
            'says = "sizes past 2^31, at real size"\n'
            '\n[[generator.corners]]\nseed = 38\ncount = 2\noptions = { ragged = true, large = true }\n'
            'says = "ragged tiles past 2^31"\n')
    _edit(adequacy_copy, '[qa]\n', sets + '\n[qa]\n')
    (after,) = load_pack(adequacy_copy).problems
    assert [c.real for c in after.data.generator.corners] == [False, True, False]
    hidden = generate_hidden(after)
    ids = [v.id for v in hidden]
    assert ids == [f"h{i:02d}" for i in range(50)] + ["c0", "c1", "c2", "c3", "rc0", "rc1", "rc2", "c1-0", "c1-1",
                                                      "r0", "r1", "r2"]
    assert [v.id for v in hidden if is_real(v)] == ["rc0", "rc1", "rc2", "r0", "r1", "r2"]
    assert all(v.args[0] >= 2 ** 31 for v in hidden if v.id.startswith("rc"))
    assert generate(after, "qa", count=6) == qa_before
    assert generate(after, "real") == generate(before, "real")
    # an instance seed redraws each set from a stream of its own
    fresh = generate_hidden(after, instance_seed=5)
    assert [v.id for v in fresh] == ids and [v.args for v in fresh] != [v.args for v in hidden]


def test_a_partial_model_must_be_right_where_its_rule_says(adequacy_copy):
    _edit(adequacy_copy, 'rule = "n % t == 0"', 'rule = "n >= 1"')
    report, checks = _report(adequacy_copy)
    m = next(m for m in report.adequacy if m.name == "floor_division")
    assert m.rule_breaks == m.sample_wrong > 0
    assert "floor_division is wrong on" in checks["adequacy"].detail
    assert "input(s) its rule accepts" in checks["adequacy"].detail


def test_a_partial_model_right_everywhere_is_no_partial_model(adequacy_copy):
    _edit(adequacy_copy, 'new = "count = n // t"', 'new = "count = (n + t - 1) // t"')
    _, checks = _report(adequacy_copy)
    assert "floor_division is right on the whole domain sample and on every hidden vector" in checks["adequacy"].detail


@pytest.mark.parametrize("state", ["kind", "corners", "rule_too_wide", "right_everywhere"])
def test_decisive_adequacy_reaches_the_exhaustive_verdicts_from_fewer_inputs(adequacy_copy, state, monkeypatch):
    """The suite's quick proof (exhaustive=False) decides each model as the full run does: a rule's
    inputs all run, the rest only until one answer is wrong; its counts are lower bounds."""
    from grader.grading import adequacy as adq
    from grader.packs.vectors import generate_hidden

    edits = {"corners": ('visible_seed = 32\n', 'visible_seed = 32\n' + CORNERS),
             "rule_too_wide": ('rule = "n % t == 0"', 'rule = "n >= 1"'),
             "right_everywhere": ('new = "count = n // t"', 'new = "count = (n + t - 1) // t"')}
    if state in edits:
        _edit(adequacy_copy, *edits[state])
    (problem,) = load_pack(adequacy_copy).problems
    hidden, sample = generate_hidden(problem), draw_sample(problem)
    ran: list[int] = []
    real_run = adq._run
    monkeypatch.setattr(adq, "_run", lambda p, m, inputs, limits: ran.append(len(inputs)) or real_run(p, m, inputs, limits))
    full = adq.adequacy(problem, hidden, sample, use_cache=False)
    full_inputs, ran[:] = sum(ran), []
    quick = adq.adequacy(problem, hidden, sample, use_cache=False, exhaustive=False)
    # a model right on all it runs (or one whose rule takes the whole sample) runs everything
    assert sum(ran) < full_inputs / (4 if state in ("kind", "corners") else 1.5), (sum(ran), full_inputs)

    def verdict(m):
        return m.ok, m.finding() is None, m.error, bool(m.sample_wrong), bool(m.hidden_wrong), bool(m.rule_breaks)

    assert [verdict(m) for m in quick] == [verdict(m) for m in full]
    for q, f in zip(quick, full):
        assert not q.exhaustive and f.exhaustive
        assert q.sample_wrong <= f.sample_wrong and q.hidden_wrong <= f.hidden_wrong
        assert q.rule_breaks <= f.rule_breaks
        if q.finding() is not None:  # the same finding, up to the counts
            assert q.finding().split(" is ")[0] == f.finding().split(" is ")[0]


def test_findings_say_what_is_missing():
    few = FeatureCoverage("ragged", "", 3, False, hidden=1, hidden_total=60, sample=120, sample_total=400)
    assert few.finding() == "ragged 1/3 hidden vectors (30% of the domain sample)"
    unreached = FeatureCoverage("one_tile", "", 1, False, hidden=0, hidden_total=60, sample=0, sample_total=400)
    assert "neither the domain sample nor the hidden vectors" in unreached.finding()
    blind = FeatureCoverage("int >= 2^31", "", 3, True, hidden=4, hidden_total=60, sample=0, sample_total=400)
    assert blind.required and "the sampler misses part of the domain" in blind.finding()
    absent = FeatureCoverage("int >= 2^53", "", 3, True, hidden=0, hidden_total=60, sample=0, sample_total=400)
    assert absent.ok and absent.finding() is None
    missed = ModelResult("v", "variant", "", sample_wrong=0, sample_total=400, hidden_wrong=3, hidden_total=60)
    assert "the sampler misses a corner the generator draws" in missed.finding()
    broken = ModelResult("v", "variant", "", error="the module does not load: SyntaxError")
    assert broken.finding() == "v could not run on the host: the module does not load: SyntaxError"


def test_problems_without_a_sampler_have_no_coverage_or_adequacy(tiny_catalog):
    (report,) = validate([tiny_catalog.find("tiny-pack/sound")], None)
    names = {c.name for c in report.checks}
    assert not names & {"sampler", "domain sample", "coverage", "adequacy"}
    assert report.covered is None and report.adequate is None
    assert "coverage" not in report.to_json()


def test_the_command_line_shows_coverage_and_adequacy():
    import subprocess
    import sys

    def grader(*args):
        return subprocess.run([sys.executable, "-m", "grader", *args, "--pack-path", str(ADEQUACY_PACK)],
                              capture_output=True, text=True, cwd=ROOT, timeout=300)

    out = grader("problems", "validate", "adequacy-pack", "--static", "--json")
    assert out.returncode == 1, out.stderr
    data = json.loads(out.stdout)
    assert data["adequacy"] == [3, 5]
    (problem,) = data["problems"]
    assert problem["covered"] == [1, 3] and problem["adequate"] == [3, 5]

    out = grader("problems", "validate", "adequacy-pack", "--static")
    assert out.returncode == 1
    assert "coverage 1/3  adequacy 3/5" in out.stdout
    assert "hidden-set adequacy 3/5 over the 1 problem(s) with a domain sampler" in out.stdout

    out = grader("problems", "coverage", "adequacy-pack")
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("`tiles` (50 hidden vectors, a domain sample of 400 inputs):")
    assert "| `ragged` | the tile does not divide the size | 0 (min 3) | 95% |" in out.stdout
