"""perf-mapper's constrained objectives (``_trusted/mapper_capped.py``): the specs' worked examples,
the host's reasons on hostile and invalid answers (the caps included), the bundled mapper's capped
closed form against the trusted engine, its local search against brute force on small spaces, each
chain layer's Pareto frontier against every mapping of small spaces, the brute-force proofs, caps
that bind on the hidden instances, and the bundled solution and a variant graded through the real
sandbox."""

from __future__ import annotations

import copy
import json
import math
import random

import numpy as np
import pytest

from grader.grading import mapping_checks
from grader.grading.execution import grade_source
from grader.grading.scoring import Verdict
from grader.packs import vectors
from grader.packs.vectors import plain

from mapper_cases import ARCH, FAST, GOOD, LEAN, WORK, Report

IDS = ("cap-energy-under-latency", "cap-cycles-under-energy", "cap-chain-energy-latency")


@pytest.fixture(scope="module")
def engine(problems):
    return problems[IDS[0]].trusted.submodule("mapper_capped")


@pytest.fixture()
def arch():
    a = copy.deepcopy(ARCH)
    a["levels"][1]["fanout"] = [4, 1]
    a["levels"][2]["bytes_per_cycle"] = 4
    return a


# the specs' worked example: a tiny instance of the five-level Simba-like accelerator with a slow port
TINY = {"name": "tiny", "shape": "gemm", "dims": {"M": 4, "N": 4, "K": 3}, "bits": {"I": 8, "W": 8, "O": 8, "psum": 24}}
HOLDS = [["W"], ["W", "O"], ["I"], ["I", "O"], ["I", "W", "O"]]
LEAST = {"levels": [{"temporal": []}, {"temporal": []}, {"temporal": [["K", 3]]}, {"temporal": []},
                    {"temporal": [["N", 4], ["M", 4]]}]}
QUICK = {"levels": [{"temporal": []}, {"spatial_y": [["N", 2]], "temporal": []}, {"temporal": []}, {"temporal": []},
                    {"temporal": [["K", 3], ["M", 4], ["N", 2]]}]}


@pytest.fixture()
def tiny():
    """The worked example's accelerator, built from the spec's own figures."""
    def level(name, cap, fanout, rd, wr, **kw):
        return {"name": name, "capacity_bytes": cap, "fanout": fanout, "read_pj_per_byte": rd, "write_pj_per_byte": wr, **kw}
    return {"name": "simba-like", "levels": [
        level("WeightReg", {"W": 1}, [1, 1], 0.05, 0.05),
        level("PEBuffer", {"W": 2, "O": 6}, [1, 2], 0.8, 0.9),
        level("PEInputBuffer", {"I": 7}, [1, 1], 1.2, 1.3, multiple_buffering=1),
        level("GlobalBuffer", 14, [2, 1], 2.0, 2.2, multiple_buffering=2),
        level("DRAM", None, [1, 1], 64.0, 64.0, bytes_per_cycle=2)]}


def test_worked_examples_of_the_specs(problems, engine, tiny):
    el = problems["cap-energy-under-latency"].evaluator_fn
    out = el(LEAST, TINY, tiny, HOLDS, 48)
    assert out["valid"] and out["objective"] == pytest.approx(5313.2, rel=1e-12)
    assert {k: out["breakdown"][k] for k in ("steps", "dram_bytes", "port_cycles", "cycles")} == \
        {"steps": 48, "dram_bytes": 76, "port_cycles": 38, "cycles": 48}
    assert el(LEAST, TINY, tiny, HOLDS, 46)["reason"] == "over the latency cap: 48 cycles, the cap is 46"
    out = el(QUICK, TINY, tiny, HOLDS, 46)
    assert out["objective"] == pytest.approx(6118.4, rel=1e-12)
    assert {k: out["breakdown"][k] for k in ("steps", "dram_bytes", "port_cycles", "cycles")} == \
        {"steps": 24, "dram_bytes": 88, "port_cycles": 44, "cycles": 44}
    assert {lv: round(sum(t.values()), 9) for lv, t in out["breakdown"]["per_level_pj"].items()} == \
        {"WeightReg": 2.4, "PEBuffer": 288.0, "PEInputBuffer": 60.0, "GlobalBuffer": 136.0, "DRAM": 5632.0}
    for cap, best in ((48, 5313.2), (47, 6118.4), (46, 6118.4), (44, 6118.4)):  # the whole space, enumerated
        rec = engine.search_energy_latency(TINY, tiny, HOLDS, cap)
        assert rec["proven"] and rec["best"] == pytest.approx(best, rel=1e-12), cap
    with pytest.raises(ValueError, match="no valid mapping within the cap"):
        engine.search_energy_latency(TINY, tiny, HOLDS, 43)

    ce = problems["cap-cycles-under-energy"].evaluator_fn
    assert ce(QUICK, TINY, tiny, HOLDS, 6000.0)["reason"].startswith("over the energy cap: 6118.4 pJ")
    assert ce(LEAST, TINY, tiny, HOLDS, 6000.0)["objective"] == 48.0
    assert ce(QUICK, TINY, tiny, HOLDS, 6118.4)["objective"] == 44.0  # at the cap is under it
    assert engine.search_cycles_energy(TINY, tiny, HOLDS, 6000.0)["best"] == 48.0
    assert engine.search_cycles_energy(TINY, tiny, HOLDS, 6118.4)["best"] == 44.0


def test_the_chain_worked_example(problems, engine, arch):
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


@pytest.mark.parametrize("pid,cap", [("cap-energy-under-latency", 1000), ("cap-cycles-under-energy", 1e9)])
def test_the_layer_evaluators_keep_the_mapping_rules_reasons(problems, tiny, pid, cap):
    evaluate = problems[pid].evaluator_fn
    free = [{"temporal": []}] * 4
    for bad, reason in [(None, "schema: the mapping must be a dict"),
                        ({"levels": [{"temporal": []}] * 3}, "schema: levels must be a list of 5"),
                        ({"levels": [*free, {"temporal": [["M", 4], ["N", 4], ["K", 3]], "bypass": ["I"]}]}, "schema"),
                        ({"levels": [{"temporal": [["K", 3]]}, *free[1:], {"temporal": [["M", 4], ["N", 4]]}]},
                         "capacity at WeightReg"),
                        ({"levels": [*free[:3], {"spatial_x": [["M", 4]]}, {"temporal": [["N", 4], ["K", 3]]}]},
                         "fan-out at GlobalBuffer: spatial_x uses 4 instances"),
                        ({"levels": [*free, {"temporal": [["M", 2], ["N", 4], ["K", 3]]}]}, "coverage: the factors of M")]:
        out = evaluate(bad, TINY, tiny, HOLDS, cap)
        assert not out["valid"] and out["reason"].startswith(reason), out["reason"]


def test_the_capped_closed_form_is_the_engine(engine):
    """On random points of small and real instances and around a local optimum, the bundled
    mapper's energy and cycles (time steps or the port) equal the trusted engine's (infinite exactly
    where the engine finds the mapping invalid), and its capped value is the objective within the
    cap and above every such value over it."""
    kit = engine.mapper_llm._KIT
    checked = valid = over = 0
    for seed in range(8):
        drawn = engine._deep_draw(np.random.default_rng([41, seed]), "pointwise", "simba-like", seed < 4, 0.0)
        args = (drawn["workload"], drawn["architecture"], drawn["holds"])
        free = kit["Problem"](*args, "cycles")
        rng = random.Random(seed)
        best = kit["local_search"](free, starts=2, kicks=2)
        points = [free.random_point(rng) for _ in range(30)] + list(free.neighbours(best[1], best[2]))[:60]
        for f, order in points:
            _, energy, cycles = free.cost(f, order)
            why, br = engine._judge(free.mapping(f, order), *args[:2], 16384, args[2])
            checked += 1
            assert (why is None) == math.isfinite(energy), why
            if why is not None:
                continue
            valid += 1
            assert br["energy_pj"] == pytest.approx(energy, rel=1e-12) and br["cycles"] == cycles
            cap = max(1, cycles - rng.randrange(2))
            value = kit["Problem"](*args, "energy", limit=("cycles", cap)).cost(f, order)[0]
            assert (value == pytest.approx(energy, rel=1e-12)) if cycles <= cap else value >= kit["PENALTY"]
            over += cycles > cap
    assert checked > 500 and valid > 100 and over > 30


@pytest.mark.parametrize("pid", IDS[:2])
def test_the_local_search_reaches_the_brute_force_optimum_on_small_spaces(problems, engine, pid):
    """The search that makes the real instances' best known values (not the enumeration the
    reference uses on small spaces) finds the optimum within the cap on small instances."""
    problem = problems[pid]
    kit = engine.mapper_llm._KIT
    for i in range(3):
        kw = plain(problem.generator_fn(np.random.default_rng([6161, i]), **{**problem.data.generator.options, "small": True}), "t")
        args = [kw[p.name] for p in problem.data.signature.params]
        rec = problem.reference_fn(*args)
        least = min(out["objective"] for m in engine.enumerate_capped(*args)
                    if (out := problem.evaluator_fn(m, *args))["valid"])
        assert rec["proven"] and rec["best"] == pytest.approx(least, rel=1e-12)
        objective, limit = (("energy", ("cycles", args[3])) if pid == "cap-energy-under-latency"
                            else ("cycles", ("energy", args[3])))
        prob = kit["Problem"](*args[:3], objective, limit=limit)
        found = kit["local_search"](prob)
        assert problem.evaluator_fn(prob.mapping(found[1], found[2]), *args)["objective"] == pytest.approx(least, rel=1e-12)


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


def test_the_chain_count_within_the_cap_is_every_valid_answer_of_small_chains(problems, engine):
    """chain_space_size against every combination of one mapping per layer judged by the
    evaluator: the answers within the latency cap (and within tighter and looser caps), and every
    layer's valid mappings."""
    problem = problems["cap-chain-energy-latency"]
    cut = 0
    for i in range(3):
        kw = engine.gen_chain(np.random.default_rng([555, i]), small=True)
        works, arch, cap = kw["workloads"], kw["architecture"], kw["latency_cap"]
        per_layer, _ = engine.chain_space_size(works, arch)
        assert per_layer == [sum(engine._judge(m, w, arch, 16384)[0] is None for m in engine.mapper.enumerate_space(w, arch))
                             for w in works]
        for c in (cap - 2, cap, cap + 5):
            valid = sum(problem.evaluator_fn(a, works, arch, c)["valid"] for a in engine.enumerate_chain(works, arch, c))
            assert round(engine.chain_space_size(works, arch, c)[1]) == valid
            cut += valid < math.prod(per_layer)
    assert cut  # the cap turns answers away


@pytest.mark.parametrize("pid", IDS[:2])
def test_the_count_within_the_cap_is_every_valid_mapping_of_small_spaces(problems, engine, pid):
    """within_cap_size with every split and loop order judged (samples and orders above the
    strata's sizes) against every mapping of the proof's small instances judged by the evaluator:
    the valid ones, and those within every cap from the tightest to one that holds them all."""
    problem = problems[pid]
    what = "cycles" if pid == "cap-energy-under-latency" else "energy"
    judged = 0
    for i in range(4):
        kw = plain(problem.generator_fn(np.random.default_rng([7070, i]), **{**problem.data.generator.options, "small": True}), "t")
        args = [kw[p.name] for p in problem.data.signature.params][:3]
        rows = [br for m in engine.enumerate_capped(*args, None)
                if (br := engine._judge(m, *args[:2], 16384, args[2]))[0] is None]
        values = sorted({br[1]["cycles" if what == "cycles" else "energy_pj"] for br in rows})
        assert engine.within_cap_size(*args, samples=10**6, orders=10**6) == (len(rows), len(rows))
        for cap in values:
            within = sum(problem.evaluator_fn(m, *args, cap)["valid"] for m in engine.enumerate_capped(*args, cap))
            assert engine.within_cap_size(*args, (what, cap), samples=10**6, orders=10**6) == (len(rows), within)
            judged += 0 < within < len(rows)
    assert judged >= 4  # caps that cut the space, not only all or nothing


def test_the_sampled_count_within_the_cap_is_unbiased(problems, engine):
    """With fewer samples than a stratum's splits and fewer orders than a point's, the estimate
    averaged over seeds comes to the exact count (the real instances' figures are such estimates)."""
    problem = problems["cap-energy-under-latency"]
    for i in range(40):  # a small instance whose strata are sampled
        kw = plain(problem.generator_fn(np.random.default_rng([7071, i]), **{**problem.data.generator.options, "small": True}), "t")
        args = [kw[p.name] for p in problem.data.signature.params]
        exact = engine.within_cap_size(*args[:3], ("cycles", args[3]), samples=10**6, orders=10**6)
        if exact[1] >= 20 and engine.within_cap_size(*args[:3], ("cycles", args[3]), samples=4, orders=2) != exact:
            break
    else:
        pytest.fail("no small instance with sampled strata")
    runs = np.array([engine.within_cap_size(*args[:3], ("cycles", args[3]), samples=4, orders=2, seed=s) for s in range(200)])
    error = runs.std(axis=0, ddof=1) / math.sqrt(len(runs))  # the standard error of the mean
    assert np.all(np.abs(runs.mean(axis=0) - exact) <= 4 * error) and np.all(error < 0.1 * np.asarray(exact))


@pytest.mark.parametrize("pid", IDS)
def test_the_brute_force_proof_passes(problems, pid):
    report = Report()
    mapping_checks.proof_check(problems[pid], report)
    name, ok, detail = report.checks[0]
    assert name == "optimal (brute force)" and ok, detail


def test_chain_instances_hold_min_valid_answers_within_their_cap(problems, engine):
    """Every hidden and shown chain holds at least the generator's ``min_valid`` (10^10 or more)
    answers within its latency cap, counted exactly, and the cap cuts the answers."""
    problem = problems["cap-chain-energy-latency"]
    floor = problem.data.generator.options["min_valid"]
    assert floor >= 1e10
    vs = vectors.load(problem)
    for v in vs.hidden + vs.visible:
        works, arch, cap = v.args
        _, every = engine.chain_space_size(works, arch)
        assert floor <= engine.chain_space_size(works, arch, cap)[1] < every, v.id


def test_the_cap_of_a_chain_hidden_instance_binds(problems, engine):
    for v in vectors.load(problems["cap-chain-energy-latency"]).hidden[:1]:  # a chain's three frontiers take seconds
        works, arch, cap = v.args
        fronts = [engine.frontier(w, arch) for w in works]
        assert sum(f[0][0] for f in fronts) <= cap < sum(f[0][-1] for f in fronts)
        assert v.expected["proven"] is True


@pytest.mark.parametrize("pid", IDS[:2])
def test_real_instances_hold_ten_billion_mappings_and_a_binding_cap(problems, engine, pid):
    """Every hidden and shown instance holds at least ``min_valid`` (10^10 or more) valid mappings,
    is a real pointwise layer, and its cap binds on the generator's own search: the least-energy
    mapping it finds is over the latency cap (the fastest one over the energy cap), while the best
    known mapping is within it."""
    problem = problems[pid]
    floor = problem.data.generator.options["min_valid"]
    assert floor >= 1e10
    vs = vectors.load(problem)
    for v in vs.hidden + vs.visible:
        *args, cap = v.args
        dims = args[0]["dims"]
        assert 196 <= dims["M"] <= 12544 and 16 <= min(dims["N"], dims["K"]) <= max(dims["N"], dims["K"]) <= 1024
        assert engine.mapper_llm.space_size(*args) >= floor
        assert v.expected["proven"] is False
        assert problem.evaluator_fn(json.loads(v.expected["mapping"]), *v.args)["objective"] == v.expected["best"]
    *args, cap = vs.hidden[0].args
    least, fastest = engine._deep_anchors(dict(zip(("workload", "architecture", "holds"), args)))
    if pid == "cap-energy-under-latency":
        assert fastest["cycles"] <= cap < least["cycles"]
    else:
        assert least["energy_pj"] <= cap < fastest["energy_pj"]


@pytest.mark.docker
def test_solution_passes_and_a_variant_is_over_the_cap_in_the_sandbox(handle, problems):
    problem = problems["cap-energy-under-latency"]
    hidden = vectors.load(problem).hidden[:1]
    g, _ = grade_source(handle, problem, problem.solution_source, hidden)
    assert g.verdict is Verdict.PASS, g.reason
    assert g.score == 1.0
    variant = next(v for v in problem.variants if v.name == "no_port")
    g, _ = grade_source(handle, problem, variant.source, hidden)
    assert g.verdict is Verdict.WRONG_ANSWER and g.score == 0.0
    assert all(i.invalid.startswith("invalid_mapping: over the latency cap") for i in g.instances)
