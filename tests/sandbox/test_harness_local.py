"""The in-container harness run as a plain local process (no Docker): its protocol and limits.

Outside the sandbox image the harness never signals other processes (PG_SANDBOX is unset), so
these tests are safe on a developer machine.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path


HARNESS = Path(__file__).resolve().parents[2] / "sandbox" / "harness" / "pg_harness.py"


def run_harness(tmp_path, source, n=2, limits=None, entry="f"):
    req = {"v": 1, "limits": {"case_cpu_s": 1.0, "case_wall_s": 3.0, "load_cpu_s": 2.0, "load_wall_s": 4.0,
                              "output_bytes": 20000, **(limits or {})},
           "jobs": [{"job": "j", "source": source, "entry_point": entry,
                     "cases": [{"id": f"c{i}", "args": [i]} for i in range(n)]}]}
    env = {k: v for k, v in os.environ.items() if k != "PG_SANDBOX"}
    env["PG_SCRATCH"] = str(tmp_path)
    out = subprocess.run([sys.executable, "-I", str(HARNESS)], input=json.dumps(req).encode(),
                         capture_output=True, timeout=30, env=env)
    return [json.loads(line) for line in out.stdout.splitlines()]


def by_type(recs, t):
    return [r for r in recs if r["t"] == t]


def test_protocol_order(tmp_path):
    recs = run_harness(tmp_path, "def f(x):\n    return {'y': x * 2}\n")
    assert [r["t"] for r in recs] == ["start", "load", "case", "case", "job_end", "end"]
    assert [r["value"] for r in by_type(recs, "case")] == [{"y": 0}, {"y": 2}]


def test_cpu_budget_per_case(tmp_path):
    recs = run_harness(tmp_path, "def f(x):\n    if x == 1:\n        while True: pass\n    return 1\n")
    (stop,) = by_type(recs, "stop")
    assert stop["reason"] == "cpu_time" and stop["case"] == "c1"
    assert len(by_type(recs, "case")) == 1


def test_output_cap(tmp_path):
    recs = run_harness(tmp_path, "def f(x):\n    print('z' * 50000)\n    return 1\n")
    (stop,) = by_type(recs, "stop")
    assert stop["reason"] == "output"
    (end,) = by_type(recs, "job_end")
    assert end["output_bytes"] > 20000 and set(end["output_head"]) <= {"z"}


def test_traceback_starts_in_candidate_code_and_quotes_it(tmp_path):
    recs = run_harness(tmp_path, "def f(x):\n    return {'a': 1}['bypass']\n", n=1)
    err = by_type(recs, "case")[0]["error"]
    assert err["type"] == "KeyError" and "bypass" in err["message"]
    assert "pg_harness" not in err["traceback"] and "return {'a': 1}['bypass']" in err["traceback"]


def test_forged_record_on_the_result_pipe_is_a_protocol_stop(tmp_path):
    src = ("import os\ndef f(x):\n    for fd in range(3, 30):\n        try:\n"
           "            os.write(fd, b'{\"t\":\"case\",\"id\":\"c1\",\"ok\":true,\"value\":1}\\n')\n"
           "        except OSError:\n            pass\n    return 0\n")
    recs = run_harness(tmp_path, src)
    (stop,) = by_type(recs, "stop")
    assert stop["reason"] == "protocol"


def test_worker_that_patches_os_exit_cannot_hang_the_supervisor(tmp_path):
    src = "import os\nos._exit = lambda *a: None\ndef f(x):\n    return 1\n"
    recs = run_harness(tmp_path, src)
    assert [r["t"] for r in recs][-1] == "end"
    assert len(by_type(recs, "case")) == 2


def test_bad_request_is_a_fatal_record(tmp_path):
    out = subprocess.run([sys.executable, "-I", str(HARNESS)], input=b"not json", capture_output=True, timeout=10)
    rec = json.loads(out.stdout.splitlines()[0])
    assert rec["t"] == "fatal" and out.returncode == 2
