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


def test_a_flood_is_charged_to_the_case_that_wrote_it(tmp_path):
    # the module stops the supervisor while it loads, so the load's record and the first case's
    # flood are both waiting when the supervisor runs again (a busy host does this by chance):
    # the record, sent first, is read first, and the flood is the case's
    src = """
import os, signal, sys, threading, time
_sup = os.getppid()
os.kill(_sup, signal.SIGSTOP)
def _wake():
    time.sleep(0.5)
    os.kill(_sup, signal.SIGCONT)
threading.Thread(target=_wake, daemon=True).start()
def f(x):
    while True:
        sys.stdout.write('x' * 65536)
        sys.stdout.flush()
"""
    recs = run_harness(tmp_path, src, limits={"load_wall_s": 20.0, "case_wall_s": 20.0})  # a slow wake-up is no stop
    (load,) = by_type(recs, "load")
    assert load["ok"]
    (stop,) = by_type(recs, "stop")
    assert stop["reason"] == "output" and stop["phase"] == "case" and stop["case"] == "c0", stop


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


def harness_module():
    """The harness imported as a module (outside the sandbox: PG_SANDBOX unset)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("pg_harness_under_test", HARNESS)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert not mod.IN_SANDBOX
    return mod


def test_nesting_is_bounded_before_parsing():
    h = harness_module()
    assert h.json_depth(b'{"a": [1, [2, {"b": "]]]]{{{{"}]]}') == 4
    assert h.json_depth(b'"[[[[\\"[[[[\\\\"') == 0  # brackets in strings, escaped quotes and backslashes
    assert h.json_depth(b'["\\\\", ["x"]]') == 2
    assert h.json_depth(b"7") == 0 and h.json_depth(b"") == 0
    deep = b"[" * 500_000 + b"]" * 500_000
    assert h.json_depth(deep) == 500_000  # json.loads would raise RecursionError on this
    for line, why in ((deep, "nested deeper"), (b"x" * 20_000, "bytes, more than"),
                      (b'{"v": ' + b"1" * 5000 + b"}", "unreadable"), (b"\xff\xfe[]", "unreadable"),
                      (b"[1, 2]", "not an object")):
        try:
            h.parse_bounded(line, 1_100_000 if line is deep else 10_000, 40)
        except h.ProtocolError as exc:
            assert why in str(exc), exc
        else:
            raise AssertionError(f"accepted {line[:40]!r}")
    assert h.parse_bounded(b'{"t": "case", "value": [[1]]}', 1000, 4) == {"t": "case", "value": [[1]]}


def test_the_depth_check_reads_hostile_text_in_linear_passes():
    # texts that make a string-stripping regular expression backtrack for minutes (an
    # unterminated string full of escapes): the depth check only splits, translates and sums
    h = harness_module()
    assert h.json_depth(b'"a\\' * 300_000) == 0
    assert h.json_depth(b'"' * 1_000_001) == 0
    assert h.json_depth(b"\\" * 1_000_000) == 0
    assert h.json_depth(b'"' + b'[\\"' * 250_000) == 0  # one unterminated string
    assert h.json_depth(b"[]" * 500_000) == 1
    assert h.json_depth(b"[" * 1_000_000) == 1_000_000


def test_a_hostile_scratch_is_wiped_without_recursion_or_following_anything(tmp_path):
    h = harness_module()
    top = tmp_path / "scratch"
    top.mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep").write_text("kept")
    fd = os.open(top, os.O_RDONLY)
    for _ in range(1200):  # deeper than Python's recursion limit, longer than PATH_MAX
        os.mkdir("dddd", dir_fd=fd)
        nfd = os.open("dddd", os.O_RDONLY, dir_fd=fd)
        os.close(fd)
        fd = nfd
    os.mkdir("locked", dir_fd=fd)
    os.close(fd)
    os.symlink("loop2", top / "loop1")
    os.symlink("loop1", top / "loop2")
    os.symlink(outside, top / "out")
    os.symlink(".", top / "self")
    os.mkfifo(top / "fifo")
    for name in (b"\n", b"\xff\xfe", b"-rf", b" ", b"...", b"x" * 255):
        with open(os.path.join(os.fsencode(top), name), "wb") as f:
            f.write(b"1")
    for mode in (0o000, 0o100, 0o200, 0o500):
        d = top / f"mode{mode:o}"
        d.mkdir()
        (d / "inner").mkdir()
        (d / "inner" / "file").write_text("x")
        os.mkfifo(d / "inner" / "fifo")
        d.chmod(mode)
    assert h._wipe_tree(str(top)) is None
    assert os.listdir(top) == []
    assert (outside / "keep").read_text() == "kept"
    assert h._wipe_tree(str(tmp_path / "absent")) is None


def test_a_scratch_too_large_to_wipe_is_given_up_on(tmp_path):
    h = harness_module()
    for i in range(50):
        (tmp_path / f"f{i}").write_text("x")
    why = h._wipe_tree(str(tmp_path), budget=20)
    assert why is not None and "more than 20 entries" in why
