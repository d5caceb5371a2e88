"""The mapping problems of perf-mapper built on ``_trusted/mapper_llm.py`` (LLM layers on TPU-like and
NVDLA-like arrays, pointwise convolutions on a five-level Simba-like one):
the evaluator's reasons on hostile and invalid mappings, the closed form the search uses equal to the
trusted engine, the local search (forced on small spaces) against brute force, the space estimate
against a full count, and the bundled solution and a variant graded through the real sandbox."""

from __future__ import annotations

import json
import math
import random

import numpy as np
import pytest

from grader.grading.execution import grade_source
from grader.grading.scoring import Verdict
from grader.packs.vectors import Vector, plain

IDS = ("llm-prefill-energy-tpu", "llm-attention-edp-nvdla", "pointwise-energy-simba", "pointwise-edp-simba")


@pytest.fixture(scope="module")
def llm(problems):
    return problems[IDS[0]].trusted.submodule("mapper_llm")


def _small(problem, seed, count):
    out = []
    for i in range(count):
        kw = plain(problem.generator_fn(np.random.default_rng([seed, i]),
                                        **{**problem.data.generator.options, "small": True}), "t")
        out.append([kw[p.name] for p in problem.data.signature.params])
    return out


def test_invalid_and_hostile_mappings_are_named_not_raised(llm):
    inst = llm.gen_llm_mapping(np.random.default_rng(5), layers="decode", arch="nvdla-like")
    args = (inst["workload"], inst["architecture"], inst["holds"])
    d = inst["workload"]["dims"]
    outside = {"levels": [{"temporal": []}] * 3 + [{"temporal": [[k, v] for k, v in d.items() if v > 1]}]}
    assert llm.evaluate_edp(outside, *args)["valid"]

    def level(i, **kw):
        m = json.loads(json.dumps(outside))
        m["levels"][i].update(kw)
        return m

    cases = {
        "schema: the mapping must be a dict": [1, 2],
        "schema: levels must be a list of 4": {"levels": []},
        "schema: level Accumulator: unknown key(s) ['bypass']": level(1, bypass=["I"]),
        "schema: level WeightReg temporal: each loop is a [str, int] pair": level(0, temporal=[["M", True]]),
        "schema: level WeightReg temporal: factor": level(0, temporal=[["M", 2 ** 40]]),
        "coverage: unknown dimension \"Q\"": level(0, temporal=[["Q", 1]]),
        "coverage: the factors of K multiply to": level(1, temporal=[["K", 2]]),
        "rules: WeightReg does not fan out along X": level(0, spatial_x=[["K", 1]]),
        "rules: ConvBuffer does not fan out along X": level(2, spatial_x=[["K", 1]]),
        "rules: at most one spatial_y loop per level": level(2, spatial_y=[["N", 1], ["K", 1]]),
        "rules: N has more than one temporal loop at Accumulator": level(1, temporal=[["N", 1], ["N", 1]]),
    }
    for reason, mapping in cases.items():
        out = llm.evaluate_edp(mapping, *args)
        assert not out["valid"] and out["reason"].startswith(reason), (reason, out["reason"])
    # fan-out and capacity name the level; the weight register holds one weight
    big = json.loads(json.dumps(outside))
    big["levels"][1]["spatial_x"] = [["K", 128]]
    big["levels"][3]["temporal"] = [[k, v // 128 if k == "K" else v] for k, v in big["levels"][3]["temporal"]]
    assert llm.evaluate_edp(big, *args)["reason"] == "fan-out at Accumulator: spatial_x uses 128 instances, the level has 64"
    two = json.loads(json.dumps(outside))
    two["levels"][0]["temporal"] = [["K", 2]]
    two["levels"][3]["temporal"] = [[k, v // 2 if k == "K" else v] for k, v in two["levels"][3]["temporal"]]
    assert llm.evaluate_edp(two, *args)["reason"] == "capacity at WeightReg"
    deep = []
    for _ in range(10000):
        deep = [deep]
    out = llm.evaluate_edp({"levels": deep}, *args)
    assert not out["valid"] and out["reason"].startswith("schema")


def test_the_closed_form_equals_the_engine(llm):
    """On random points of every problem's instances (small and real), the kit's closed form the
    search optimises gives the evaluator's value, and infinity exactly where the evaluator finds
    the mapping invalid."""
    kit = llm._KIT
    checked = valid = 0
    for arch, layers in (("tpu-like", "prefill"), ("tpu-v4i-like", "prefill"), ("nvdla-like", "decode"),
                         ("nvdla-like", "attention"), ("tpu-like", "attention"), ("simba-like", "pointwise")):
        for seed in range(4):
            inst = llm.gen_llm_mapping(np.random.default_rng([77, seed]), layers=layers, arch=arch, small=seed < 2)
            args = (inst["workload"], inst["architecture"], inst["holds"])
            prob = kit["Problem"](*args, "edp")
            rng = random.Random(seed)
            points = [prob.random_point(rng) for _ in range(40)]
            points.append(kit["local_search"](prob, starts=2, kicks=2)[1:])
            for f, order in points:
                v = prob.cost(f, order)[0]
                out = llm.evaluate_edp(prob.mapping(f, order), *args)
                checked += 1
                assert out["valid"] == math.isfinite(v), out["reason"]
                if out["valid"]:
                    valid += 1
                    assert out["objective"] == pytest.approx(v, rel=1e-12)
    assert valid > 50 and checked > 600


def test_the_local_search_reaches_the_brute_force_optimum_on_small_spaces(problems, llm):
    """The search that makes the real instances' best known values (not the enumeration the
    reference uses on small spaces) finds the optimum of every mapping enumerated."""
    kit = llm._KIT
    for pid, problem in problems.items():
        objective = problem.data.scoring.objective
        for args in _small(problem, 6161, 3):
            least = min((out["objective"] for m in llm.enumerate_space(*args)
                         if (out := problem.evaluator_fn(m, *args))["valid"]), default=None)
            rec = problem.reference_fn(*args)
            assert rec["proven"] and rec["best"] == pytest.approx(least, rel=1e-12)
            found = kit["local_search"](kit["Problem"](*args, objective))
            assert found[0] == pytest.approx(least, rel=1e-12), (pid, args[0]["dims"])


@pytest.mark.parametrize("pid", ["llm-attention-edp-nvdla", "pointwise-energy-simba", "llm-prefill-energy-tpu"])
def test_space_estimate_matches_a_full_count(problems, llm, pid):
    problem = problems[pid]
    for args in _small(problem, 6262, 2):
        exact = sum(1 for m in llm.enumerate_space(*args) if problem.evaluator_fn(m, *args)["valid"])
        assert llm.space_size(*args) == pytest.approx(exact, rel=0.25)


def test_real_instances_are_searched_not_enumerated(problems, llm):
    """A real prefill instance is far beyond enumeration; the reference proves its optimum by the
    exact search all the same (since 0.9.1), and the batched attention's by none (local search)."""
    problem = problems["llm-prefill-energy-tpu"]
    kw = plain(problem.generator_fn(np.random.default_rng([1, 0]), **problem.data.generator.options), "t")
    args = [kw[p.name] for p in problem.data.signature.params]
    assert llm._split_count(llm._KIT["Problem"](*args, "energy")) > 10 ** 9  # factor choices alone, orders aside
    rec = problem.reference_fn(*args)
    assert rec["proven"] is True
    assert problem.evaluator_fn(json.loads(rec["mapping"]), *args)["objective"] == rec["best"]
    local = llm._KIT["deep_search"](llm._KIT["Problem"](*args, "energy"), 2, kicks=20)[0]
    assert rec["best"] <= local * (1 + 1e-12)  # no local search goes below a proven optimum
    attention = problems["llm-attention-edp-nvdla"]
    kw = plain(attention.generator_fn(np.random.default_rng([1, 0]), **attention.data.generator.options), "t")
    assert attention.reference_fn(*[kw[p.name] for p in attention.data.signature.params])["proven"] is False


@pytest.mark.parametrize("pid", ["pointwise-energy-simba", "pointwise-edp-simba", "llm-attention-edp-nvdla",
                                 "llm-prefill-energy-tpu"])
def test_hidden_spaces_hold_ten_billion_valid_mappings(problems, llm, pid):
    """Every hidden and shown instance of these problems holds at least the generator's
    ``min_valid`` (10^10 or more) valid mappings by the estimate the README gives, is of the shapes
    its spec states, and its best known value is the documented search's (proven where it is exact)."""
    from grader.packs import vectors

    problem = problems[pid]
    floor = problem.data.generator.options["min_valid"]
    assert floor >= 1e10
    vs = vectors.load(problem)
    for v in vs.hidden + vs.visible:
        name, dims = v.args[0]["name"], v.args[0]["dims"]
        assert llm.space_size(*v.args) >= floor, name
        if pid.startswith("pointwise"):
            assert 196 <= dims["M"] <= 12544 and 16 <= min(dims["N"], dims["K"]) <= max(dims["N"], dims["K"]) <= 1024
        elif pid.startswith("llm-prefill"):
            assert 128 <= dims["M"] <= 2048 and 768 <= min(dims["N"], dims["K"]) <= max(dims["N"], dims["K"]) <= 14336
            assert [lv["name"] for lv in v.args[1]["levels"]] == ["WeightReg", "UnifiedBuffer", "CMEM", "DRAM"]
        else:
            assert dims["B"] in (8, 16) and (dims["G"], dims["H"], dims["M"]) == (8, 4, 1), name
        # the GEMMs' best known values are the exact search's (since 0.9.1), attention's a local search's
        assert v.expected["proven"] is (pid != "llm-attention-edp-nvdla")


def test_an_instance_below_the_floor_is_drawn_again(llm, monkeypatch):
    """``min_valid`` draws again until the estimate reaches it (single-sequence decode attention
    holds about 10^9 valid mappings, the batched products 10^11), and says so when it cannot."""
    rng = lambda: np.random.default_rng([7, 0])  # noqa: E731 (its first draw is a single sequence)
    first = llm.gen_llm_mapping(rng(), layers="attention", arch="nvdla-like")
    assert first["workload"]["dims"]["B"] == 1 and llm.space_size(**first) < 1e10
    got = llm.gen_llm_mapping(rng(), layers="attention", arch="nvdla-like", min_valid=1.5e10)
    assert got["workload"]["dims"]["B"] >= 8 and llm.space_size(**got) >= 1.5e10
    monkeypatch.setattr(llm, "MIN_VALID_TRIES", 3)
    with pytest.raises(ValueError, match=r"no prefill layer on tpu-like drawn in 3 tries has 1.0e\+10 valid mappings"):
        llm.gen_llm_mapping(rng(), layers="prefill", arch="tpu-like", min_valid=1e10)


@pytest.mark.docker
def test_solution_and_a_variant_through_the_sandbox(handle, problems):
    problem = problems["llm-attention-edp-nvdla"]
    small = tuple(Vector(id=f"s{i}", args=args, expected=plain(problem.reference_fn(*args), "t"))
                  for i, args in enumerate(_small(problem, 6363, 3)))
    g, _ = grade_source(handle, problem, problem.solution_source, small)
    assert g.verdict is Verdict.PASS, g.reason
    assert g.score == 1.0 and g.at_best == len(small)
    prefill = problems["llm-prefill-energy-tpu"]
    real = tuple(Vector(id=f"r{i}", args=args, expected=plain(prefill.reference_fn(*args), "t"))
                 for i, args in enumerate([[kw[p.name] for p in prefill.data.signature.params] for kw in
                                          [plain(prefill.generator_fn(np.random.default_rng([1, 0]),
                                                                      **prefill.data.generator.options), "t")]]))
    variant = next(v for v in prefill.variants if v.name == "psum_as_output")
    g, _ = grade_source(handle, prefill, variant.source, real)
    assert g.verdict is Verdict.WRONG_ANSWER
    assert g.score == 0.0 and g.instances[0].invalid.startswith("invalid_mapping: capacity at UnifiedBuffer")
