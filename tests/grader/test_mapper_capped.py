"""perf-mapper's constrained objectives (``_trusted/mapper_capped.py``): the specs' worked examples,
the host's reasons on hostile and invalid answers (the caps included), each layer's Pareto frontier
against every mapping of small spaces, the brute-force proofs, caps that bind on the hidden
instances, and the bundled solution and a variant graded through the real sandbox."""

from __future__ import annotations

import copy
import json

import numpy as np
import pytest

from grader.grading import mapping_checks
from grader.grading.execution import grade_source
from grader.grading.scoring import Verdict
from grader.packs import vectors
from grader.packs.problems import Catalog

from mapper_cases import ARCH, FAST, GOOD, LEAN, WORK, Report

IDS = ("cap-energy-under-latency", "cap-cycles-under-energy", "cap-chain-energy-latency")


@pytest.fixture(scope="module")
def problems():
    return {pid: Catalog().find(f"perf-mapper/{pid}") for pid in IDS}


@pytest.fixture(scope="module")
def engine(problems):
    return problems[IDS[0]].trusted.submodule("mapper_capped")


@pytest.fixture()
def arch():
    a = copy.deepcopy(ARCH)
    a["levels"][1]["fanout"] = [4, 1]
    a["levels"][2]["bytes_per_cycle"] = 4
    return a


def test_worked_examples_of_the_specs(problems, engine, arch):
    el = problems["cap-energy-under-latency"].evaluator_fn
    out = el(GOOD, WORK, arch, 8)
    assert out["valid"] and out["objective"] == 2142.0
    assert {k: out["breakdown"][k] for k in ("steps", "dram_bytes", "port_cycles", "cycles")} == \
        {"steps": 8, "dram_bytes": 20, "port_cycles": 5, "cycles": 8}
    assert el(GOOD, WORK, arch, 6)["reason"] == "over the latency cap: 8 cycles, the cap is 6"
    assert el(FAST, WORK, arch, 6)["objective"] == 2118.0
    assert engine.search_energy_latency(WORK, arch, 6)["best"] == 2118.0
    assert engine.search_energy_latency(WORK, arch, 8)["best"] == 2109.0

    ce = problems["cap-cycles-under-energy"].evaluator_fn
    assert ce(GOOD, WORK, arch, 2115.0)["reason"].startswith("over the energy cap: 2142 pJ")
    assert ce(FAST, WORK, arch, 2115.0)["reason"].startswith("over the energy cap: 2118 pJ")
    assert ce(LEAN, WORK, arch, 2115.0)["objective"] == 8.0
    assert ce(FAST, WORK, arch, 2118.0)["objective"] == 5.0  # at the cap is under it
    assert engine.search_cycles_energy(WORK, arch, 2115.0)["best"] == 8.0

    ch = problems["cap-chain-energy-latency"].evaluator_fn
    two = [WORK, dict(WORK, name="fc1")]
    assert ch({"layers": [FAST, LEAN]}, two, arch, 13)["objective"] == 4227.0
    assert ch({"layers": [LEAN, LEAN]}, two, arch, 13)["reason"] == "over the latency cap: 16 cycles in all, the cap is 13"
    assert engine.search_chain(two, arch, 13)["best"] == 4227.0
    assert engine.search_chain(two, arch, 12)["best"] == 4236.0  # an even split: both layers fast


HOSTILE_CHAIN = [
    ([FAST, LEAN], "schema: the answer must be a dict with the key layers"),
    ({"levels": FAST["levels"]}, "schema: the answer must be a dict with the key layers"),
    ({"layers": [FAST, LEAN], "extra": 1}, "schema: the answer must be a dict with the key layers"),
    ({"layers": [FAST, LEAN], "name": 3}, "schema: name must be a string"),
    ({"layers": [FAST]}, "schema: layers must be a list of 2 mappings"),
    ({"layers": {"0": FAST}}, "schema: layers must be a list of 2 mappings"),
    ({"layers": [FAST, {"levels": [{"temporal": [["K", True]]}, {}, {}]}]}, "layer 1: schema: level RF temporal"),
    ({"layers": [FAST, {"levels": [{"temporal": [["K", float("nan")]]}, {}, {}]}]}, "schema: the answer is not plain JSON"),
    ({"layers": [FAST, {"levels": [{"temporal": [["M", 4], ["N", 2], ["K", 2]]}, {}, {}]}]}, "layer 1: capacity at RF"),
    ({"layers": [{"levels": [{}, {}, {"temporal": [["M", 4], ["N", 2]]}]}, LEAN]}, "layer 0: coverage: the factors of K"),
    ({"layers": [FAST, {"levels": [{}, {"spatial_y": [["M", 4]]}, {"temporal": [["N", 2], ["K", 2]]}]}]},
     "layer 1: rules: GLB does not fan out along Y"),
    ({"layers": [FAST, LEAN], "name": "x" * 20000}, "schema: the answer takes"),
]


@pytest.mark.parametrize("answer,reason", HOSTILE_CHAIN)
def test_the_chain_evaluator_names_every_broken_rule(problems, arch, answer, reason):
    two = [WORK, dict(WORK, name="fc1")]
    out = problems["cap-chain-energy-latency"].evaluator_fn(answer, two, arch, 100)
    assert out["valid"] is False and out["objective"] is None
    assert out["reason"].startswith(reason), out["reason"]


@pytest.mark.parametrize("pid,cap", [("cap-energy-under-latency", 100), ("cap-cycles-under-energy", 1e9)])
def test_the_layer_evaluators_keep_mappers_reasons(problems, arch, pid, cap):
    evaluate = problems[pid].evaluator_fn
    for bad, reason in [(None, "schema: the mapping must be a dict"),
                        ({"levels": [{"temporal": [["M", 4], ["N", 2], ["K", 2]]}, {}, {}]}, "capacity at RF"),
                        ({"levels": [{}, {"spatial_x": [["M", 8]]}, {"temporal": [["N", 2], ["K", 2]]}]},
                         "coverage: the factors of M multiply to 8")]:
        out = evaluate(bad, WORK, arch, cap)
        assert not out["valid"] and out["reason"].startswith(reason), out["reason"]


def test_each_frontier_is_exact_on_every_mapping_of_small_spaces(engine):
    mapper = engine.mapper
    for seed in range(2):
        w, a = engine._instance(np.random.default_rng([31, seed]), True)
        cyc, en, maps = engine.frontier(w, a)
        points = []
        for m in mapper.enumerate_space(w, a):
            why, br = engine._judge(m, w, a, 16384)
            if why is None:
                points.append((br["cycles"], br["energy_pj"]))
        assert len(points) > 20
        for c, e, m in zip(cyc, en, maps):  # each point is reached, and no mapping beats it in both
            why, br = engine._judge(json.loads(m), w, a, 16384)
            assert why is None and (br["cycles"], br["energy_pj"]) == pytest.approx((c, e), rel=1e-12)
            assert not any(pc <= c and pe < e * (1 - 1e-12) for pc, pe in points)
        for pc, pe in points:  # and every mapping is matched or beaten by a point of the frontier
            assert any(c <= pc and e <= pe * (1 + 1e-12) for c, e in zip(cyc, en))


@pytest.mark.parametrize("pid", IDS)
def test_the_brute_force_proof_passes(problems, pid):
    report = Report()
    mapping_checks.proof_check(problems[pid], report)
    name, ok, detail = report.checks[0]
    assert name == "optimal (brute force)" and ok, detail


@pytest.mark.parametrize("pid", IDS[:2])  # a chain's three frontiers take a minute here: the generator's loop is the same
def test_the_cap_of_a_hidden_instance_binds(problems, engine, pid):
    for v in vectors.load(problems[pid]).hidden[:1]:  # one: a real instance's frontier takes seconds
        *works, arch, cap = v.args
        works = works[0] if pid.startswith("cap-chain") else works
        fronts = [engine.frontier(w, arch) for w in works]
        if pid == "cap-cycles-under-energy":
            (cyc, en, _), = fronts
            assert en[-1] <= cap < en[0]  # the least energy fits, the fastest mapping does not
        else:
            assert sum(f[0][0] for f in fronts) <= cap < sum(f[0][-1] for f in fronts)
        assert v.expected["proven"] is True


@pytest.mark.docker
def test_solution_passes_and_a_variant_is_over_the_cap_in_the_sandbox(handle, problems):
    problem = problems["cap-energy-under-latency"]
    hidden = vectors.load(problem).hidden[:2]
    g, _ = grade_source(handle, problem, problem.solution_source, hidden)
    assert g.verdict is Verdict.PASS, g.reason
    assert g.score == 1.0
    variant = next(v for v in problem.variants if v.name == "no_cap")
    g, _ = grade_source(handle, problem, variant.source, hidden)
    assert g.verdict is Verdict.WRONG_ANSWER and g.score == 0.0
    assert all(i.invalid.startswith("invalid_mapping: over the latency cap") for i in g.instances)
