"""The reference search of perf-mapper and its proof: the closed forms the searches use equal the
trusted engine (pm_core) on every mapping of small spaces (the bundled kit's, of the M1 problems on
the four-level eyeriss-cluster-like accelerator, and the three-level ``mapper`` module's, which the
capped chain and the pipelined problems search with), the reference's optimum equals brute force,
the validator's proof catches a wrong search, the best known values are cached with the vectors,
and the problem format refuses inconsistent [scoring] declarations."""

from __future__ import annotations

import json
import math
import tomllib
from dataclasses import dataclass, field

import numpy as np
import pytest
from pydantic import ValidationError

from grader.errors import PackError
from grader.grading import mapping_checks
from grader.packs import vectors
from grader.packs.problems import Catalog, ProblemFile, load_pack
from grader.packs.vectors import plain

from mapper_cases import CLUSTER_ARCH, CLUSTER_WORK, HOLDS

DIMS = ("M", "N", "K")


@pytest.fixture(scope="module")
def energy():
    return Catalog().find("perf-mapper/gemm-energy-mapper")


@pytest.fixture(scope="module")
def edp():
    return Catalog().find("perf-mapper/gemm-edp-mapper")


@pytest.fixture(scope="module")
def engine(energy):
    """The three-level module (``_trusted/mapper.py``): no M1 problem's any more, the capped chain's
    and the pipelined problems' closed form."""
    return energy.trusted.submodule("mapper")


@pytest.fixture(scope="module")
def llm(energy):
    return energy.trusted.submodule("mapper_llm")


@dataclass
class Report:
    checks: list = field(default_factory=list)

    def add(self, name, ok, detail=""):
        self.checks.append((name, ok, detail))

    def get(self, name):
        return next(c for c in self.checks if c[0] == name)


def closed_form(engine, mapping, work, arch):
    """The search's vectorised closed form, on one mapping of the space."""
    lv = mapping["levels"]
    one = {"r": dict.fromkeys(DIMS, 1), "g": dict.fromkeys(DIMS, 1), "D": dict.fromkeys(DIMS, 1)}
    for key, level in (("r", 0), ("g", 1), ("D", 2)):
        for d, f in lv[level].get("temporal", []):
            one[key][d] = f
    s = dict.fromkeys(DIMS, 1)
    for d, f in lv[1].get("spatial_x", []) + lv[1].get("spatial_y", []):
        s[d] *= f

    def order(level):
        named = [d for d, _ in lv[level].get("temporal", [])]
        return tuple(named + [d for d in DIMS if d not in named])

    arr = {k: {d: np.asarray([v[d]], dtype=np.int64) for d in DIMS} for k, v in one.items()}
    if not engine._fits(work, arch, s, arr["r"], arr["g"])[0]:
        return None
    e, c = engine._costs(work, arch, s, arr["r"], arr["g"], arr["D"], order(1), order(2))
    return float(e[0]), int(c[0])


@pytest.mark.parametrize("seed", [0, 1])
def test_closed_form_equals_the_engine_on_every_mapping(engine, seed):
    inst = engine.gen_gemm_mapping(np.random.default_rng([77, seed]), small=True)
    work, arch = inst["workload"], inst["architecture"]
    n_valid = 0
    for mapping in engine.enumerate_space(work, arch):
        ev = engine.evaluate_energy(mapping, work, arch)
        cf = closed_form(engine, mapping, work, arch)
        assert (cf is not None) == ev["valid"], (mapping, ev["reason"])
        if cf is not None:
            n_valid += 1
            assert cf[0] == pytest.approx(ev["objective"], rel=1e-12), mapping
            assert cf[1] == ev["breakdown"]["cycles"]
    assert n_valid > 20


def _small_instances(problem, seeds):
    """Small instances of the problem's kind (its generator with the proof's options), as arguments."""
    options = {**problem.data.generator.options, **problem.data.scoring.proof.options}
    out = []
    for seed in seeds:
        kw = plain(problem.generator_fn(np.random.default_rng([77, seed]), **options), "t")
        out.append([kw[p.name] for p in problem.data.signature.params])
    return out


def test_the_kits_closed_form_equals_the_engine_on_every_mapping(energy, edp, llm):
    """The M1 problems: on every mapping of small four-level spaces (the specs' worked example and
    small drawn instances), the bundled kit's closed form (``_kit/llm_mapper.py``'s ``Problem.cost``,
    which the solutions search with) gives the evaluators' energy, cycles and EDP, and infinity
    exactly where the evaluator finds the mapping invalid."""
    kit = llm._KIT
    n_valid = 0
    for args in [[CLUSTER_WORK, CLUSTER_ARCH, HOLDS]] + _small_instances(energy, range(6)):
        assert args[1]["name"] == "eyeriss-cluster-like" and len(args[1]["levels"]) == 4 and args[2] == HOLDS
        prob = {o: kit["Problem"](*args, o) for o in ("energy", "edp")}
        for f, order in llm._points(prob["energy"]):
            mapping = prob["energy"].mapping(f, order)
            ev = energy.evaluator_fn(mapping, *args)
            value, pj, cycles = prob["energy"].cost(f, order)
            assert math.isfinite(value) == ev["valid"], (mapping, ev["reason"])
            if ev["valid"]:
                n_valid += 1
                assert value == pytest.approx(ev["objective"], rel=1e-12) and pj == value, mapping
                assert cycles == ev["breakdown"]["cycles"]
                assert prob["edp"].cost(f, order)[0] == pytest.approx(edp.evaluator_fn(mapping, *args)["objective"],
                                                                      rel=1e-12)
    assert n_valid > 300


@pytest.mark.parametrize("pid", ["gemm-energy-mapper", "gemm-edp-mapper"])
def test_the_reference_is_the_brute_force_optimum_on_small_spaces(pid, llm):
    """Whatever search makes the best known values, on small spaces it finds the least objective
    of every mapping enumerated (each judged by the evaluator), proven, with a mapping reaching it."""
    problem = Catalog().find(f"perf-mapper/{pid}")
    for args in [[CLUSTER_WORK, CLUSTER_ARCH, HOLDS]] + _small_instances(problem, range(6, 12)):
        least = min((out["objective"] for m in llm.enumerate_space(*args)
                     if (out := problem.evaluator_fn(m, *args))["valid"]), default=None)
        rec = problem.reference_fn(*args)
        assert least is not None and rec["proven"] is True
        assert rec["best"] == pytest.approx(least, rel=1e-9), (pid, args[0]["dims"])
        assert problem.evaluator_fn(json.loads(rec["mapping"]), *args)["objective"] == pytest.approx(least, rel=1e-9)


@pytest.mark.parametrize("pid", ["gemm-energy-mapper", "gemm-edp-mapper"])
def test_proof_passes_and_catches_a_wrong_search(pid, monkeypatch):
    problem = Catalog().find(f"perf-mapper/{pid}")
    report = Report()
    mapping_checks.proof_check(problem, report)
    name, ok, detail = report.get("optimal (brute force)")
    assert ok, detail
    assert f"{problem.data.scoring.proof.count} small instances" in detail and "6 small instances" in detail

    reference = problem.reference_fn

    def worse(*args):  # a "search" that misses the optimum by 1%
        rec = reference(*args)
        return {**rec, "best": rec["best"] * 1.01}

    monkeypatch.setitem(problem.trusted.references, problem.data.reference, worse)
    assert problem.reference_fn is worse
    first = mapping_checks.proof_instances(problem)[:1]
    monkeypatch.setattr(mapping_checks, "proof_instances", lambda problem: first)
    bad = Report()
    mapping_checks.proof_check(problem, bad)
    assert bad.get("optimal (brute force)")[1] is False
    assert "brute force" in bad.get("optimal (brute force)")[2]


def test_best_known_values_are_the_cached_vectors(energy, tmp_path, monkeypatch):
    monkeypatch.setenv("PERFGRADE_CACHE", str(tmp_path))
    vs = vectors.load(energy)
    assert len(vs.hidden) == energy.data.generator.hidden_count
    assert all(v.expected["proven"] is True and v.expected["best"] > 0 for v in vs.hidden)
    assert all(json.loads(v.expected["mapping"])["levels"] for v in vs.hidden)
    cached = list(tmp_path.rglob("*.json"))
    assert cached, "the vectors (with the best known values) are cached"
    assert any(energy.content_hash in p.name or energy.content_hash in p.read_text() for p in cached)
    again = vectors.load(energy)
    assert again.digest == vs.digest
    report = Report()
    mapping_checks.best_known_check(energy, report, vs.hidden)
    assert report.get("best known")[1], report.get("best known")[2]


def _problem_dict(energy):
    return tomllib.loads((energy.dir / "problem.toml").read_text())


def test_scoring_needs_the_three_recorded_outputs(energy):
    data = _problem_dict(energy)
    ProblemFile.model_validate(data)
    wrong = {**data, "outputs": [o for o in data["outputs"] if o["name"] != "proven"]}
    with pytest.raises(ValidationError, match="records exactly the outputs"):
        ProblemFile.model_validate(wrong)
    half = {**data, "scoring": {k: v for k, v in data["scoring"].items() if k != "proof"}}
    with pytest.raises(ValidationError, match="give both space and proof"):
        ProblemFile.model_validate(half)
    bad_kind = {**data, "scoring": {**data["scoring"], "kind": "ranking"}}
    with pytest.raises(ValidationError):
        ProblemFile.model_validate(bad_kind)


def test_scoring_problems_live_in_search_packs(energy, tmp_path):
    import shutil

    dst = tmp_path / "perf-mapper"
    shutil.copytree(energy.pack.dir, dst, ignore=shutil.ignore_patterns("__pycache__"))
    load_pack(dst)
    toml = dst / "pack.toml"
    toml.write_text(toml.read_text().replace('tier = "search"', 'tier = "model"'))
    with pytest.raises(PackError, match="exactly when its pack's tier is search"):
        load_pack(dst)


def test_unknown_evaluator_is_a_clear_error(energy, tmp_path):
    import shutil

    dst = tmp_path / "perf-mapper"
    shutil.copytree(energy.pack.dir, dst, ignore=shutil.ignore_patterns("__pycache__"))
    p = dst / "gemm-energy-mapper" / "problem.toml"
    text = p.read_text()
    assert 'evaluator = "mapper_llm.evaluate_energy"' in text
    p.write_text(text.replace('evaluator = "mapper_llm.evaluate_energy"', 'evaluator = "mapper_llm.nope"'))
    prob = next(x for x in load_pack(dst).problems if x.id == "gemm-energy-mapper")
    with pytest.raises(PackError, match="unknown evaluator 'mapper_llm.nope'"):
        prob.evaluator_fn
