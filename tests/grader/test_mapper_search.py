"""The reference search of perf-mapper and its proof: the closed form it searches with equals the
trusted engine (pm_core) on every mapping of small spaces, its optimum equals brute force, the
validator's proof catches a wrong search, the best known values are cached with the vectors, and
the problem format refuses inconsistent [scoring] declarations."""

from __future__ import annotations

import json
import tomllib
from dataclasses import dataclass, field

import numpy as np
import pytest
from pydantic import ValidationError

from grader.errors import PackError
from grader.grading import mapping_checks
from grader.packs import vectors
from grader.packs.problems import Catalog, ProblemFile, load_pack

DIMS = ("M", "N", "K")


@pytest.fixture(scope="module")
def energy():
    return Catalog().find("perf-mapper/gemm-energy-mapper")


@pytest.fixture(scope="module")
def engine(energy):
    return energy.trusted.submodule("mapper")


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


def test_proof_passes_and_catches_a_wrong_search(energy, engine, monkeypatch):
    report = Report()
    mapping_checks.proof_check(energy, report)
    name, ok, detail = report.get("optimal (brute force)")
    assert ok, detail
    assert "3 small instances" in detail

    def worse(workload, architecture):  # a "search" that misses the optimum (skips every spatial unrolling)
        rec = engine.search_energy(workload, architecture)
        return {**rec, "best": rec["best"] * 1.01}

    monkeypatch.setitem(energy.trusted.references, energy.data.reference, worse)
    first = mapping_checks.proof_instances(energy)[:1]
    monkeypatch.setattr(mapping_checks, "proof_instances", lambda problem: first)
    bad = Report()
    mapping_checks.proof_check(energy, bad)
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
    p.write_text(p.read_text().replace('evaluator = "mapper.evaluate_energy"', 'evaluator = "mapper.nope"'))
    prob = next(x for x in load_pack(dst).problems if x.id == "gemm-energy-mapper")
    with pytest.raises(PackError, match="unknown evaluator 'mapper.nope'"):
        prob.evaluator_fn
