"""The host's judgement of untrusted mappings (perf-mapper's trusted checker and evaluators of the
M1 problems, ``gemm-energy-mapper`` and ``gemm-edp-mapper`` on the four-level eyeriss-cluster-like
accelerator with what each level holds): schema and caps on hostile JSON, every rule's reason, and
the worked example of the specs (its values, and that they are the optima of its whole space)."""

from __future__ import annotations

import copy
import json
import re

import pytest

from grader.packs.problems import Catalog

from mapper_cases import CLUSTER_ARCH as ARCH
from mapper_cases import CLUSTER_BEST as BEST
from mapper_cases import CLUSTER_FAST as FAST
from mapper_cases import CLUSTER_GOOD as GOOD
from mapper_cases import CLUSTER_WORK as WORK
from mapper_cases import GOOD as THREE_LEVEL_GOOD
from mapper_cases import HOLDS


@pytest.fixture(scope="module")
def problem():
    return Catalog().find("perf-mapper/gemm-energy-mapper")


@pytest.fixture(scope="module")
def edp_problem():
    return Catalog().find("perf-mapper/gemm-edp-mapper")


@pytest.fixture(scope="module")
def evaluate(problem):
    return problem.evaluator_fn


@pytest.fixture(scope="module")
def edp(edp_problem):
    return edp_problem.evaluator_fn


@pytest.fixture(scope="module")
def llm(problem):
    return problem.trusted.submodule("mapper_llm")


def test_the_worked_example_is_the_real_design_scaled_down(llm, problem, edp_problem):
    """The fixture is the specs' tiny instance: the real eyeriss-cluster-like design's levels,
    energies and holds, the capacities, fanouts and multiple buffering the specs give."""
    real = llm.architecture("eyeriss-cluster-like")
    assert [lv["name"] for lv in ARCH["levels"]] == [lv["name"] for lv in real["levels"]] == \
        ["RF", "ClusterBuffer", "GLB", "DRAM"]
    for mine, theirs in zip(ARCH["levels"], real["levels"]):
        for key in ("read_pj_per_byte", "write_pj_per_byte", "bytes_per_cycle"):
            assert mine[key] == theirs[key], (mine["name"], key)
    assert real["levels"][1]["fanout"] == [4, 3] and real["levels"][2]["fanout"] == [4, 4]
    assert HOLDS == [list(h) for h in llm.HOLDS["eyeriss-cluster-like"]]
    for p in (problem, edp_problem):
        spec = p.spec
        assert f"`{json.dumps(HOLDS)}`" in spec.replace("\n", " ")
        shown = json.loads(re.search(r"levels \(name, capacity, fanout, multiple buffering\)\n`([^`]+)`", spec)[1])
        assert shown == [{k: lv[k] for k in ("name", "capacity_bytes", "fanout", "multiple_buffering") if k in lv}
                         for lv in ARCH["levels"]]
        assert f'`{json.dumps(WORK["dims"])}`' in spec


def test_worked_example_of_the_spec(evaluate, edp, problem, edp_problem):
    out = evaluate(BEST, WORK, ARCH, HOLDS)
    assert out["valid"] and out["reason"] == ""
    assert out["objective"] == 2136.2
    br = out["breakdown"]
    assert br["cycles"] == 8
    assert br["per_level_pj"] == {"RF": {"I": 2.0, "W": 1.0, "O": 0.0},
                                  "ClusterBuffer": {"I": 17.6, "W": 0.0, "O": 9.6},
                                  "GLB": {"I": 52.0, "W": 26.0, "O": 28.0},
                                  "DRAM": {"I": 800.0, "W": 400.0, "O": 800.0}}
    assert sum(br["per_level_pj"]["RF"].values()) == 3.0
    assert sum(br["per_level_pj"]["ClusterBuffer"].values()) == pytest.approx(27.2, rel=1e-12)
    assert sum(br["per_level_pj"]["GLB"].values()) == 106.0
    assert sum(br["per_level_pj"]["DRAM"].values()) == 2000.0
    assert edp(BEST, WORK, ARCH, HOLDS)["objective"] == pytest.approx(2136.2 * 8, rel=1e-12)
    # the least EDP: M across the two clusters too, both clusters' RFs fill the weights
    fast = edp(FAST, WORK, ARCH, HOLDS)
    assert fast["valid"] and fast["objective"] == pytest.approx(8548.8, rel=1e-12)
    assert fast["breakdown"]["energy_pj"] == pytest.approx(2137.2, rel=1e-12) and fast["breakdown"]["cycles"] == 4
    assert fast["breakdown"]["per_level_pj"]["RF"] == {"I": 2.0, "W": 2.0, "O": 0.0}
    assert evaluate(FAST, WORK, ARCH, HOLDS)["objective"] == pytest.approx(2137.2, rel=1e-12)
    good = evaluate(GOOD, WORK, ARCH, HOLDS)
    assert good["objective"] == pytest.approx(2145.2, rel=1e-12) and good["breakdown"]["cycles"] == 4
    assert edp(GOOD, WORK, ARCH, HOLDS)["objective"] == pytest.approx(2145.2 * 4, rel=1e-12)
    # the references' values on this instance, each reached by its own mapping
    best = problem.reference_fn(WORK, ARCH, HOLDS)
    assert best["proven"] is True and best["best"] == pytest.approx(2136.2, rel=1e-12)
    assert evaluate(json.loads(best["mapping"]), WORK, ARCH, HOLDS)["objective"] == pytest.approx(2136.2, rel=1e-12)
    least = edp_problem.reference_fn(WORK, ARCH, HOLDS)
    assert least["proven"] is True and least["best"] == pytest.approx(8548.8, rel=1e-12)
    assert edp(json.loads(least["mapping"]), WORK, ARCH, HOLDS)["objective"] == pytest.approx(8548.8, rel=1e-12)
    # the specs show these figures and mappings
    for figure in ("2136.2", "3.0", "27.2", "17.6", "9.6", "106.0", "52.0", "26.0", "28.0", "2000"):
        assert figure in problem.spec and figure in edp_problem.spec, figure
    assert "8548.8" in edp_problem.spec and "2137.2" in edp_problem.spec and "17089.6" in edp_problem.spec
    blocks = [json.loads(b) for b in re.findall(r"```\n(\{.*?\})\n```", edp_problem.spec, re.S)]
    assert blocks == [BEST, FAST]
    assert [json.loads(b) for b in re.findall(r"```\n(\{.*?\})\n```", problem.spec, re.S)] == [BEST]


def test_the_worked_example_values_are_the_brute_force_optima(llm, evaluate, edp):
    """Every mapping of the worked example's space, each judged by the evaluators: the least energy
    is 2136.2 pJ (BEST reaches it), the least EDP 8548.8 (FAST)."""
    n = valid = 0
    least_energy = least_edp = None
    for mapping in llm.enumerate_space(WORK, ARCH, HOLDS):
        n += 1
        e, d = evaluate(mapping, WORK, ARCH, HOLDS), edp(mapping, WORK, ARCH, HOLDS)
        assert e["valid"] == d["valid"] and e["reason"] == d["reason"]
        if e["valid"]:
            valid += 1
            assert d["objective"] == pytest.approx(e["objective"] * e["breakdown"]["cycles"], rel=1e-12)
            least_energy = e["objective"] if least_energy is None else min(least_energy, e["objective"])
            least_edp = d["objective"] if least_edp is None else min(least_edp, d["objective"])
    assert n > 500 and valid > 100
    assert least_energy == pytest.approx(2136.2, rel=1e-12) == evaluate(BEST, WORK, ARCH, HOLDS)["objective"]
    assert least_edp == pytest.approx(8548.8, rel=1e-12) == edp(FAST, WORK, ARCH, HOLDS)["objective"]


def _with(path, value):
    m = copy.deepcopy(GOOD)
    node = m
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return m


HOSTILE = [
    ("a list", [1, 2], "schema: the mapping must be a dict"),
    ("None", None, "schema: the mapping must be a dict"),
    ("extra key", {**GOOD, "bypass": []}, "schema: unknown key(s) ['bypass']"),
    ("levels not a list", {"levels": {"0": {}}}, "schema: levels must be a list of 4 entries"),
    ("three levels", {"levels": GOOD["levels"][:3]}, "schema: levels must be a list of 4 entries"),
    ("the three-level answer", THREE_LEVEL_GOOD, "schema: levels must be a list of 4 entries"),
    ("level not a dict", _with(["levels", 0], "K2"), "schema: level 0 (RF) must be a dict"),
    ("cluster level not a dict", _with(["levels", 1], None), "schema: level 1 (ClusterBuffer) must be a dict"),
    ("bypass key", _with(["levels", 0, "bypass"], ["W"]), "schema: level RF: unknown key(s) ['bypass']"),
    ("the holds' own bypass", _with(["levels", 1, "bypass"], ["W"]),
     "schema: level ClusterBuffer: unknown key(s) ['bypass']"),
    ("bool factor", _with(["levels", 0, "temporal"], [["K", True]]), "schema: level RF temporal: each loop is a [str, int] pair"),
    ("float factor", _with(["levels", 0, "temporal"], [["K", 2.0]]), "schema: level RF temporal: each loop is a [str, int] pair"),
    ("numeric string", _with(["levels", 0, "temporal"], [["K", "2"]]), "each loop is a [str, int] pair"),
    ("triple", _with(["levels", 0, "temporal"], [["K", 2, 1]]), "each loop is a [str, int] pair"),
    ("zero factor", _with(["levels", 0, "temporal"], [["K", 0]]), "factor 0 of \"K\" is out of range"),
    ("huge factor", _with(["levels", 0, "temporal"], [["K", 10 ** 30]]), "out of range"),
    ("negative factor", _with(["levels", 0, "temporal"], [["K", -2]]), "out of range"),
    ("too many loops", _with(["levels", 0, "temporal"], [["K", 1]] * 17), "has 17 loops (at most 16)"),
    ("too large", {**GOOD, "name": "x" * 20000}, "more than 16384"),
    ("name not str", {**GOOD, "name": 3}, "schema: name must be a string"),
    ("unknown dim", _with(["levels", 0, "temporal"], [["Q", 2]]), "coverage: unknown dimension \"Q\" at RF"),
    ("short factors", _with(["levels", 3, "temporal"], []), "coverage: the factors of N multiply to 1, its size is 2"),
    ("overshoot", _with(["levels", 3, "temporal"], [["N", 4]]), "coverage: the factors of N multiply to 4, its size is 2"),
    ("two loops of a dim", _with(["levels", 0, "temporal"], [["K", 1], ["K", 2]]), "rules: K has more than one temporal loop at RF"),
    ("two loops of a dim at DRAM", _with(["levels", 3, "temporal"], [["N", 2], ["N", 1]]),
     "rules: N has more than one temporal loop at DRAM"),
    ("spatial at RF", _with(["levels", 0, "spatial_x"], [["K", 1]]), "rules: RF does not fan out along X"),
    ("spatial along Y at the cluster", _with(["levels", 1, "spatial_y"], [["M", 1]]),
     "rules: ClusterBuffer does not fan out along Y"),
    ("spatial along X at the GLB", _with(["levels", 2, "spatial_x"], [["M", 1]]), "rules: GLB does not fan out along X"),
    ("spatial at DRAM", _with(["levels", 3, "spatial_y"], [["N", 1]]), "rules: DRAM does not fan out along Y"),
    ("two spatial loops", _with(["levels", 1, "spatial_x"], [["M", 2], ["K", 1]]), "rules: at most one spatial_x loop per level"),
    ("two spatial loops at the GLB", _with(["levels", 2, "spatial_y"], [["M", 2], ["N", 1]]),
     "rules: at most one spatial_y loop per level"),
]


@pytest.mark.parametrize("label,mapping,reason", HOSTILE, ids=[h[0] for h in HOSTILE])
def test_hostile_mappings_are_invalid_with_their_reason(evaluate, edp, label, mapping, reason):
    for judge in (evaluate, edp):
        out = judge(mapping, WORK, ARCH, HOLDS)
        assert out["valid"] is False and out["objective"] is None
        assert reason in out["reason"], out["reason"]


def test_fan_out_and_capacity_reasons(evaluate):
    wide = {"levels": [{"temporal": [["K", 2]]}, {"temporal": [], "spatial_x": [["M", 4]]}, {"temporal": []},
                       {"temporal": [["N", 2]]}]}
    assert evaluate(wide, WORK, ARCH, HOLDS)["reason"] == \
        "fan-out at ClusterBuffer: spatial_x uses 4 instances, the level has 2"
    clusters = {"levels": [{"temporal": [["K", 2]]}, {"temporal": []}, {"temporal": [], "spatial_y": [["M", 4]]},
                           {"temporal": [["N", 2]]}]}
    assert evaluate(clusters, WORK, ARCH, HOLDS)["reason"] == "fan-out at GLB: spatial_y uses 4 instances, the level has 2"
    rf = {"levels": [{"temporal": [["M", 4]]}, {"temporal": []}, {"temporal": []}, {"temporal": [["N", 2], ["K", 2]]}]}
    assert evaluate(rf, WORK, ARCH, HOLDS)["reason"] == "capacity at RF"
    psums = {"levels": [{"temporal": []}, {"temporal": [["M", 4]]}, {"temporal": []}, {"temporal": [["N", 2], ["K", 2]]}]}
    assert evaluate(psums, WORK, ARCH, HOLDS)["reason"] == "capacity at ClusterBuffer"  # 4 partial sums: 12 > 6 bytes
    # the weights bypass the ClusterBuffer (``holds``): a 2 x 2 weight tile there takes no room; kept
    # there, they need a partition, and a 2-byte one does not hold the tile
    bypass = {"levels": [{"temporal": []}, {"temporal": [["N", 2], ["K", 2]]}, {"temporal": []}, {"temporal": [["M", 4]]}]}
    assert evaluate(bypass, WORK, ARCH, HOLDS)["valid"]
    keeps_all = [["I", "W", "O"]] * 4
    assert evaluate(bypass, WORK, ARCH, keeps_all)["reason"] == \
        "format: level ClusterBuffer has no partition for ['W'] (bypass them or give capacity)"
    with_w = copy.deepcopy(ARCH)
    with_w["levels"][1]["capacity_bytes"]["W"] = 2
    assert evaluate(bypass, WORK, with_w, keeps_all)["reason"] == "capacity at ClusterBuffer"
    assert evaluate(bypass, WORK, with_w, HOLDS)["valid"]
    small = copy.deepcopy(ARCH)
    small["levels"][2]["capacity_bytes"] = 40  # GOOD needs 2 x 22 = 44 bytes at the GLB
    assert evaluate(GOOD, WORK, ARCH, HOLDS)["valid"]
    assert evaluate(GOOD, WORK, small, HOLDS)["reason"] == "capacity at GLB"
    single = copy.deepcopy(small)
    single["levels"][2]["multiple_buffering"] = 1  # 22 bytes fit once
    assert evaluate(GOOD, WORK, single, HOLDS)["valid"]
    tight = copy.deepcopy(single)
    tight["levels"][2]["capacity_bytes"] = 21
    assert evaluate(GOOD, WORK, tight, HOLDS)["reason"] == "capacity at GLB"


def test_max_bytes_cap_is_the_problems(evaluate):
    size = len(json.dumps(GOOD, separators=(",", ":")))
    assert evaluate(GOOD, WORK, ARCH, HOLDS, max_bytes=size)["valid"]
    assert evaluate(GOOD, WORK, ARCH, HOLDS, max_bytes=size - 1)["reason"] == (
        f"schema: the mapping takes {size} bytes as compact JSON, more than {size - 1}")


def test_deep_nesting_is_refused_without_recursion(evaluate):
    deep: list = []
    for _ in range(5000):
        deep = [deep]
    out = evaluate({"levels": deep}, WORK, ARCH, HOLDS)
    assert out["valid"] is False and out["reason"].startswith("schema:")
