"""perf-mapper's layer pipeline (``_trusted/mapper_pipe.py``): the specs' worked example, the host's
reasons on hostile and invalid answers (the shared columns, the shared GLB and the interval cap
included), the exact combination against every answer of small three-layer chains, the space's
count against enumeration, the brute-force proofs, a cap that binds on a hidden instance, and the
bundled solution and a variant graded through the real sandbox."""

from __future__ import annotations

import copy
import itertools
import json
import math

import numpy as np
import pytest

from grader.grading import mapping_checks
from grader.grading.execution import grade_source
from grader.grading.scoring import Verdict
from grader.packs import vectors

from mapper_cases import ARCH, FAST, LEAN, WORK, Report

IDS = ("pipe-chain-edp", "pipe-chain-energy-under-interval")
TWO = [WORK, dict(WORK, name="fc1")]


@pytest.fixture(scope="module")
def engine(problems):
    return problems[IDS[0]].trusted.submodule("mapper_pipe")


@pytest.fixture()
def arch():
    a = copy.deepcopy(ARCH)
    a["levels"][1]["fanout"] = [4, 1]
    return a


def test_worked_example_of_the_specs(problems, engine, arch):
    edp = problems["pipe-chain-edp"].evaluator_fn
    out = edp({"layers": [LEAN, LEAN]}, TWO, arch)
    assert out["valid"] and out["objective"] == 33744.0
    assert {k: out["breakdown"][k] for k in ("energy_pj", "interval", "columns", "glb_bytes")} == \
        {"energy_pj": 4218.0, "interval": 8, "columns": 4, "glb_bytes": 48}
    assert edp({"layers": [FAST, LEAN]}, TWO, arch)["reason"] == "columns: the layers take 6 columns (4 + 2), the array has 4"
    assert engine.search_edp(TWO, arch)["best"] == 33744.0

    energy = problems["pipe-chain-energy-under-interval"].evaluator_fn
    assert energy({"layers": [LEAN, LEAN]}, TWO, arch, 8)["objective"] == 4218.0
    assert energy({"layers": [LEAN, LEAN]}, TWO, arch, 7)["reason"] == \
        "over the interval cap: the slowest layer takes 8 cycles, the cap is 7"
    assert engine.search_energy(TWO, arch, 8)["best"] == 4218.0
    with pytest.raises(ValueError, match="no valid pipeline"):
        engine.search_energy(TWO, arch, 7)
    wide = copy.deepcopy(arch)  # eight columns: both layers fast would fit them, not the GLB
    wide["levels"][1]["fanout"] = [8, 1]
    assert energy({"layers": [FAST, FAST]}, TWO, wide, 4)["reason"] == \
        "capacity at GLB: the layers' footprints take 88 bytes (44 + 44, multiple buffering included), the GLB holds 64"
    with pytest.raises(ValueError, match="no valid pipeline"):
        engine.search_energy(TWO, wide, 4)
    wide["levels"][1]["capacity_bytes"] = 96
    assert energy({"layers": [FAST, FAST]}, TWO, wide, 4)["objective"] == 4236.0
    assert engine.search_energy(TWO, wide, 4)["best"] == 4236.0


HOSTILE = [
    ([LEAN, LEAN], "schema: the mapping must be a dict"),
    ({"levels": LEAN["levels"]}, "schema: unknown key(s) ['levels']"),
    ({"layers": [LEAN, LEAN], "extra": 1}, "schema: unknown key(s) ['extra']"),
    ({"layers": [LEAN, LEAN], "name": 3}, "schema: name must be a string"),
    ({"layers": [LEAN]}, "schema: layers must be a list of 2 mappings"),
    ({}, "schema: layers must be a list of 2 mappings"),
    ({"name": "x", "layers": None}, "schema: layers must be a list of 2 mappings"),
    ({"layers": {"0": LEAN}}, "schema: layers must be a list of 2 mappings"),
    ({"layers": [LEAN, {"levels": [{"temporal": [["K", True]]}, {}, {}]}]}, "layer 1: schema: level RF temporal"),
    ({"layers": [LEAN, {"levels": [{"temporal": [["K", float("nan")]]}, {}, {}]}]}, "schema: the mapping is not plain JSON"),
    ({"layers": [LEAN, {"levels": [{"temporal": [["M", 4], ["N", 2], ["K", 2]]}, {}, {}]}]}, "layer 1: capacity at RF"),
    ({"layers": [{"levels": [{}, {}, {"temporal": [["M", 4], ["N", 2]]}]}, LEAN]}, "layer 0: coverage: the factors of K"),
    ({"layers": [LEAN, {"levels": [{}, {"spatial_x": [["M", 8]]}, {"temporal": [["N", 2], ["K", 2]]}]}]},
     "layer 1: coverage: the factors of M multiply to 8"),
    ({"layers": [LEAN, {"levels": [{}, {"spatial_y": [["M", 4]]}, {"temporal": [["N", 2], ["K", 2]]}]}]},
     "layer 1: rules: GLB does not fan out along Y"),
    ({"layers": [FAST, FAST]}, "columns: the layers take 8 columns (4 + 4), the array has 4"),
    ({"layers": [LEAN, LEAN], "name": "x" * 20000}, "schema: the mapping takes"),
    ({"layers": [[]] * 10 ** 4}, "schema: the mapping takes"),
]


@pytest.mark.parametrize("answer,reason", HOSTILE)
@pytest.mark.parametrize("pid", IDS)
def test_the_evaluators_name_every_broken_rule(problems, arch, pid, answer, reason):
    extra = () if pid == "pipe-chain-edp" else (100,)
    out = problems[pid].evaluator_fn(answer, TWO, arch, *extra)
    assert out["valid"] is False and out["objective"] is None
    assert out["reason"].startswith(reason), out["reason"]


def test_the_shared_glb_counts_the_multiple_buffering(problems, arch):
    """Two layers of 24 bytes each (12 single-buffered) in a 40-byte GLB: each fits alone, not together."""
    small = copy.deepcopy(arch)
    small["levels"][1]["capacity_bytes"] = 40
    out = problems["pipe-chain-edp"].evaluator_fn({"layers": [LEAN, LEAN]}, TWO, small)
    assert out["reason"] == ("capacity at GLB: the layers' footprints take 48 bytes (24 + 24, multiple "
                             "buffering included), the GLB holds 40")
    small["levels"][1]["multiple_buffering"] = 1
    assert problems["pipe-chain-edp"].evaluator_fn({"layers": [LEAN, LEAN]}, TWO, small)["valid"]


def _tiny_chains(engine):
    """Three-layer chains whose every answer can be judged: tiny dims, every layer a few mappings."""
    for seed in range(12):
        rng = np.random.default_rng([53, seed])
        works, arch = engine._chain(rng, True)
        widths = [int(rng.choice([1, 2])) for _ in range(4)]
        works = [{**works[0], "name": f"fc{i}", "dims": {"M": 2, "N": widths[i + 1], "K": widths[i]}} for i in range(3)]
        arch["levels"][1]["fanout"][0] = int(rng.integers(3, 6))
        yield works, arch


def test_the_search_and_the_count_are_exact_on_every_answer_of_small_three_layer_chains(engine):
    """Each layer's mappings judged once by the host (energy, cycles, columns, GLB bytes), every
    combination of one per layer checked against the shared limits: the least value equals the
    search's (the product and every interval cap), and their number the space's count (with and
    without each interval cap)."""
    tried = 0
    for works, arch in _tiny_chains(engine):
        rows = []
        for w in works:
            rows.append([])
            for m in engine.mapper.enumerate_space(w, arch):
                why, br = engine.judge({"layers": [m]}, [w], arch, 16384)
                if why is None:
                    rows[-1].append((br["energy_pj"], br["interval"], br["columns"], br["glb_bytes"]))
        if math.prod(len(r) for r in rows) > 20000:
            continue
        fx, cap = engine._limits(arch)
        combos = [c for c in itertools.product(*rows)
                  if sum(x[2] for x in c) <= fx and sum(x[3] for x in c) <= cap]
        per_layer, joint = engine.space_size(works, arch)
        assert per_layer == [len(r) for r in rows] and round(joint) == len(combos)
        for t in sorted({x[1] for r in rows for x in r}):  # the answers within each interval cap
            within = [c for c in combos if max(x[1] for x in c) <= t]
            assert round(engine.space_size(works, arch, t)[1]) == len(within)
        if not combos:
            continue
        tried += 1
        least = min(sum(x[0] for x in c) * max(x[1] for x in c) for c in combos)
        assert engine.search_edp(works, arch)["best"] == pytest.approx(least, rel=1e-12)
        for t in sorted({max(x[1] for x in c) for c in combos}):
            within = min(sum(x[0] for x in c) for c in combos if max(x[1] for x in c) <= t)
            assert engine.search_energy(works, arch, t)["best"] == pytest.approx(within, rel=1e-12)
    assert tried >= 4


@pytest.mark.parametrize("pid", IDS)
def test_the_brute_force_proof_passes(problems, pid):
    report = Report()
    mapping_checks.proof_check(problems[pid], report)
    name, ok, detail = report.checks[0]
    assert name == "optimal (brute force)" and ok, detail


def test_the_cap_of_a_hidden_instance_binds(problems, engine):
    problem = problems["pipe-chain-energy-under-interval"]
    v = vectors.load(problem).hidden[0]
    works, arch, cap = v.args
    fx, room = engine._limits(arch)
    pts = [engine.points(w, arch) for w in works]
    least = engine._best_within(pts, fx, room, math.inf)
    assert max(int(p["cycles"][i]) for p, i in zip(pts, least[1])) > cap  # the least-energy answer is over it
    assert v.expected["proven"] is True and v.expected["best"] > least[0]
    answer = json.loads(v.expected["mapping"])
    assert problem.evaluator_fn(answer, works, arch, cap)["breakdown"]["interval"] <= cap


@pytest.mark.docker
def test_solution_passes_and_a_variant_overflows_the_columns_in_the_sandbox(handle, problems):
    problem = problems["pipe-chain-edp"]
    hidden = vectors.load(problem).hidden[:1]
    g, _ = grade_source(handle, problem, problem.solution_source, hidden)
    assert g.verdict is Verdict.PASS, g.reason
    assert g.score == 1.0
    variant = next(v for v in problem.variants if v.name == "whole_array")
    g, _ = grade_source(handle, problem, variant.source, hidden)
    assert g.verdict is Verdict.WRONG_ANSWER and g.score == 0.0
    assert all(i.invalid.startswith("invalid_mapping: columns: the layers take") for i in g.instances)
