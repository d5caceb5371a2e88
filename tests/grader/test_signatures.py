"""Failure signatures and clustering from a crafted run directory (no Docker, no model)."""

from __future__ import annotations

import argparse
import json

from grader.cli.results_cmd import audit_records, compare_runs, group_failures
from grader.results.runs import ProblemEntry, RunDir, RunManifest
from grader.results.signatures import field_pattern, signature


def fs(failed, answered, rmin=None, rmax=None, dmin=None, dmax=None, type_errors=0):
    return {"failed": failed, "answered": answered, "ratio_min": rmin, "ratio_max": rmax, "diff_min": dmin,
            "diff_max": dmax, "type_errors": type_errors}


def test_field_patterns():
    assert field_pattern(fs(60, 60, 2.0, 2.0, 5, 900)) == "off by exactly x2 on every vector"
    assert field_pattern(fs(60, 60, 0.125, 0.125, -900, -5)) == "off by exactly x1/8 on every vector"
    assert field_pattern(fs(7, 60, 1.1, 1.5, 1, 1)) == "off by +1 on some vectors"
    assert field_pattern(fs(7, 60, 1.1, 1.5, 1, 9)) == "too high on some vectors"
    assert field_pattern(fs(7, 60, 0.5, 0.9, -9, -1)) == "too low on some vectors"
    assert field_pattern(fs(3, 60, type_errors=3)) == "wrong type or shape on some vectors"


def grade(verdict, fields=None, failures=None, stop=None):
    return {"verdict": verdict, "reason": "r", "fields": fields or {}, "failures": failures or [],
            "stop_reason": stop, "vectors_total": 60, "vectors_passed": 0}


def test_signatures():
    assert signature(grade("pass")) == ""
    g = grade("wrong_answer", {"dram_read_bytes": fs(60, 60, 2.0, 2.0, 8, 64), "cycles": fs(0, 60)})
    assert signature(g) == "wrong_answer: dram_read_bytes off by exactly x2 on every vector"
    g = grade("runtime_error", failures=[{"error_type": "KeyError", "error_message": "'bypass'"}])
    assert signature(g) == "runtime_error: KeyError 'bypass'"
    g = grade("runtime_error", failures=[{"error_type": "IndexError", "error_message": "index 12 is out of bounds"}])
    assert signature(g) == "runtime_error: IndexError index N is out of bounds"
    assert signature(grade("timeout", stop="cpu_time")) == "timeout: cpu_time"


def make_run(tmp_path, name, model, grades, pack_hash="h1"):
    problems = [ProblemEntry(id=f"p/{pid}", family="F4", difficulty="easy", title=f"T {pid}", content_hash="c",
                             vectors_digest="d", n_hidden=60) for pid in sorted({g[0] for g in grades})]
    m = RunManifest(run_id=name, created="2026-01-01T00:00:00+00:00", source="model", model=model, samples=3,
                    k_values=[1], pack={"p": {"version": "1.0.0", "hash": pack_hash}}, problems=problems)
    run = RunDir.create(tmp_path, m)
    lines = []
    for pid, sample, g in grades:
        lines.append({"type": "completion", "problem": f"p/{pid}", "sample": sample, "text": "x", "code": "def f(): pass",
                      "extraction": {"method": "fenced", "blocks": 1, "reason": ""}})
        lines.append({"type": "grade", "problem": f"p/{pid}", "sample": sample, "round": 0, "grade": g})
    (run.path / "journal.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    return run.path


X2 = grade("wrong_answer", {"reads": fs(60, 60, 2.0, 2.0, 4, 40)})
KEYERR = grade("runtime_error", failures=[{"error_type": "KeyError", "error_message": "'bypass'"}])
PASS = grade("pass")


def test_grouping_finds_the_known_clusters(tmp_path):
    a = make_run(tmp_path, "a", "model-a", [("t1", 0, X2), ("t1", 1, X2), ("t2", 0, X2), ("t2", 1, KEYERR), ("t3", 0, PASS)])
    b = make_run(tmp_path, "b", "model-b", [("t1", 0, X2), ("t3", 0, KEYERR), ("t3", 1, PASS)])
    args = argparse.Namespace(problem=None, sample=None, verdict=None)
    records = audit_records(a, args) + audit_records(b, args)
    clusters = group_failures(records)
    assert [(c["count"], c["signature"]) for c in clusters] == [
        (4, "wrong_answer: reads off by exactly x2 on every vector"),
        (2, "runtime_error: KeyError 'bypass'"),
    ]
    assert clusters[0]["problems"] == ["p/t1", "p/t2"] and clusters[0]["models"] == ["model-a", "model-b"]
    assert clusters[1]["problems"] == ["p/t2", "p/t3"]
    filtered = audit_records(a, argparse.Namespace(problem=["t2"], sample=None, verdict=["runtime_error"]))
    assert [(r["problem"], r["sample"]) for r in filtered] == [("p/t2", 1)]


def test_compare_against_hand_computed_differences(tmp_path):
    # A: t1 1/3, t2 2/3, t3 0/3 ; B: t1 3/3, t2 2/3, t3 1/3
    a = make_run(tmp_path, "a", "A", [("t1", 0, PASS), ("t1", 1, X2), ("t1", 2, X2), ("t2", 0, PASS), ("t2", 1, PASS),
                                      ("t2", 2, X2), ("t3", 0, X2), ("t3", 1, X2), ("t3", 2, X2)])
    b = make_run(tmp_path, "b", "B", [("t1", 0, PASS), ("t1", 1, PASS), ("t1", 2, PASS), ("t2", 0, PASS), ("t2", 1, X2),
                                      ("t2", 2, PASS), ("t3", 0, PASS), ("t3", 1, X2), ("t3", 2, X2)], pack_hash="h2")
    c = compare_runs(a, b)
    assert c["shared_problems"] == 3 and c["shared_samples"] == 9
    assert abs(c["pass1_a"] - 1 / 3) < 1e-12 and abs(c["pass1_b"] - 2 / 3) < 1e-12
    assert abs(c["diff"] - 1 / 3) < 1e-12  # (2/3 + 0 + 1/3) / 3
    lo, hi = c["diff_ci95"]
    assert 0 <= lo <= c["diff"] <= hi <= 2 / 3
    assert (c["wins_b"], c["wins_a"], c["ties"]) == (2, 0, 1)
    assert any("different pack contents" in w for w in c["warnings"])
