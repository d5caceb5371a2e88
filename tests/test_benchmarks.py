"""The scripts in benchmarks/ stay runnable: nothing else imports them, so a renamed function they
use would otherwise go unnoticed until someone measures. Each one starts and prints its usage, and
the search benchmark's host-side timing runs on a real problem. (Their figures are not checked
here: timing belongs in the benchmarks, not in tests.)"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

from grader.packs import vectors
from grader.packs.problems import Catalog

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"
SCRIPTS = sorted(BENCH.glob("*.py"))


def test_there_are_benchmarks():
    assert {p.name for p in SCRIPTS} >= {"bench_search.py", "bench_grading.py", "stress_verdicts.py"}


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_each_benchmark_starts_and_prints_its_usage(script):
    out = subprocess.run([sys.executable, str(script), "--help"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "usage:" in out.stdout


def test_the_search_benchmark_times_the_evaluator_on_best_known_mappings():
    spec = importlib.util.spec_from_file_location("bench_search", BENCH / "bench_search.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    problem = Catalog().find("perf-mapper/fuse-mbv2-traffic")  # exact best known values, built in seconds
    hidden = vectors.load(problem).hidden
    assert bench.evaluator_ms(problem, hidden, repeat=1) > 0
    names = [name for name, _ in bench.candidates(problem)]
    assert names[0] == "solution" and any(n.startswith("baseline:") for n in names)
    assert any(n.startswith("variant:") for n in names)


def test_the_search_benchmark_refuses_an_unknown_problem():
    out = subprocess.run([sys.executable, str(BENCH / "bench_search.py"), "--problem", "perf-mapper/nope"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 2
    assert "--problem: not a search problem: perf-mapper/nope" in out.stderr
