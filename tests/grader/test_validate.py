"""The pack validator on a tiny pack with a broken reference and an undetected variant."""

from __future__ import annotations

import pytest

from grader.grading.validate import validate

pytestmark = pytest.mark.docker


def test_validate_reports_broken_reference_and_surviving_variant(tiny_catalog, handle):
    reports = {r.problem.id: r for r in validate(tiny_catalog.problems("tiny-pack"), handle)}

    sound = reports["sound"]
    assert sound.ok, [c for c in sound.checks if not c.ok]
    assert sound.kill_rate == 1.0

    broken = reports["broken-reference"]
    assert not broken.ok
    gold = {c.name: c for c in broken.checks}["gold (reference)"]
    assert not gold.ok and "ModuleNotFoundError" in gold.detail and "pydantic" in gold.detail
    assert {c.name: c for c in broken.checks}["gold (solution)"].ok

    weak = reports["weak-variant"]
    assert not weak.ok
    mutants = {c.name: c for c in weak.checks}["mutants"]
    assert not mutants.ok and "same_answer" in mutants.detail
    assert weak.kill_rate == pytest.approx(2 / 3)
    survivor = [v for v in weak.variants if not v.killed]
    assert [v.name for v in survivor] == ["same_answer"] and survivor[0].verdict == "pass"


def test_static_checks_catch_spec_gaps_and_signature_mismatch(pack_copy, monkeypatch):
    from grader.packs.problems import load_pack

    spec = pack_copy / "sound" / "spec.md"
    spec.write_text("Double it. Return y (an integer).\n")
    pack = load_pack(pack_copy)
    monkeypatch.setitem(pack.trusted.references, "tiny_testing.double", lambda value: {"y": 2 * value, "half": value / 2})
    (report,) = validate([p for p in pack.problems if p.id == "sound"], None)
    checks = {c.name: c for c in report.checks}
    assert not checks["spec coverage"].ok and "half" in checks["spec coverage"].detail and "x" in checks["spec coverage"].detail
    assert not checks["signature"].ok and "(value)" in checks["signature"].detail
    assert checks["determinism"].ok
