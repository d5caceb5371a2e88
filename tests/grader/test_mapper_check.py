"""The host's judgement of untrusted mappings (perf-mapper's trusted checker and evaluators):
schema and caps on hostile JSON, every rule's reason, and the worked example of the spec."""

from __future__ import annotations

import copy
import json

import pytest

from grader.packs.problems import Catalog

from mapper_cases import ARCH, GOOD, WORK


@pytest.fixture(scope="module")
def problem():
    return Catalog().find("perf-mapper/gemm-energy-mapper")


@pytest.fixture(scope="module")
def evaluate(problem):
    return problem.evaluator_fn


@pytest.fixture(scope="module")
def edp(problem):
    return Catalog().find("perf-mapper/gemm-edp-mapper").evaluator_fn


def test_worked_example_of_the_spec(evaluate, edp, problem):
    out = evaluate(GOOD, WORK, ARCH)
    assert out["valid"] and out["reason"] == ""
    assert out["objective"] == 2142.0
    br = out["breakdown"]
    assert br["cycles"] == 8
    assert sum(br["per_level_pj"]["RF"].values()) == 12.0
    assert sum(br["per_level_pj"]["GLB"].values()) == 130.0
    assert sum(br["per_level_pj"]["DRAM"].values()) == 2000.0
    assert edp(GOOD, WORK, ARCH)["objective"] == 2142.0 * 8
    best = problem.reference_fn(WORK, ARCH)
    assert best["proven"] is True and best["best"] == 2109.0
    assert evaluate(json.loads(best["mapping"]), WORK, ARCH)["objective"] == 2109.0
    assert "2142" in problem.spec and "2109" in problem.spec


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
    ("levels not a list", {"levels": {"0": {}}}, "schema: levels must be a list of 3 entries"),
    ("two levels", {"levels": GOOD["levels"][:2]}, "schema: levels must be a list of 3 entries"),
    ("level not a dict", _with(["levels", 0], "K2"), "schema: level 0 (RF) must be a dict"),
    ("bypass key", _with(["levels", 0, "bypass"], ["W"]), "schema: level RF: unknown key(s) ['bypass']"),
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
    ("short factors", _with(["levels", 2, "temporal"], []), "coverage: the factors of N multiply to 1, its size is 2"),
    ("overshoot", _with(["levels", 2, "temporal"], [["N", 4]]), "coverage: the factors of N multiply to 4, its size is 2"),
    ("two loops of a dim", _with(["levels", 0, "temporal"], [["K", 1], ["K", 2]]), "rules: K has more than one temporal loop at RF"),
    ("spatial at RF", _with(["levels", 0, "spatial_x"], [["K", 1]]), "rules: RF does not fan out along X"),
    ("spatial along Y", _with(["levels", 1, "spatial_y"], [["M", 1]]), "rules: GLB does not fan out along Y"),
    ("two spatial loops", _with(["levels", 1, "spatial_x"], [["M", 2], ["K", 1]]), "rules: at most one spatial_x loop per level"),
]


@pytest.mark.parametrize("label,mapping,reason", HOSTILE, ids=[h[0] for h in HOSTILE])
def test_hostile_mappings_are_invalid_with_their_reason(evaluate, label, mapping, reason):
    out = evaluate(mapping, WORK, ARCH)
    assert out["valid"] is False and out["objective"] is None
    assert reason in out["reason"], out["reason"]


def test_fan_out_and_capacity_reasons(evaluate):
    wide = {"levels": [{"temporal": [["K", 2]]}, {"temporal": [], "spatial_x": [["M", 4]]}, {"temporal": [["N", 2]]}]}
    assert evaluate(wide, WORK, ARCH)["reason"] == "fan-out at GLB: spatial_x uses 4 instances, the level has 2"
    rf = {"levels": [{"temporal": [["M", 4]]}, {"temporal": []}, {"temporal": [["N", 2], ["K", 2]]}]}
    assert evaluate(rf, WORK, ARCH)["reason"] == "capacity at RF"
    small = copy.deepcopy(ARCH)
    small["levels"][1]["capacity_bytes"] = 40  # GOOD needs 2 x 24 = 48 bytes at the GLB
    assert evaluate(GOOD, WORK, small)["reason"] == "capacity at GLB"
    single = copy.deepcopy(small)
    single["levels"][1]["multiple_buffering"] = 1  # 24 bytes fit once
    assert evaluate(GOOD, WORK, single)["valid"]


def test_max_bytes_cap_is_the_problems(evaluate):
    size = len(json.dumps(GOOD, separators=(",", ":")))
    assert evaluate(GOOD, WORK, ARCH, max_bytes=size)["valid"]
    assert evaluate(GOOD, WORK, ARCH, max_bytes=size - 1)["reason"] == (
        f"schema: the mapping takes {size} bytes as compact JSON, more than {size - 1}")


def test_deep_nesting_is_refused_without_recursion(evaluate):
    deep: list = []
    for _ in range(5000):
        deep = [deep]
    out = evaluate({"levels": deep}, WORK, ARCH)
    assert out["valid"] is False and out["reason"].startswith("schema:")
