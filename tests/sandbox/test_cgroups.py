"""The host's reading of a container's memory cgroup, the runtime helpers and the sync protocol,
without Docker (fake cgroup trees, a fake engine client, the harness as a local process)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sandbox.cgroups import LIMIT_MARGIN, CgroupLocator, HostCgroup, MemorySnapshot, cgroup_version, memory_evidence
from sandbox.channel import ChannelAssembler
from sandbox.models import Case, Job
from sandbox.runtimes import (RuntimeNotRegistered, extra_ulimits, host_pids_limit, normalize_runtime,
                              require_runtime)

HARNESS = Path(__file__).resolve().parents[2] / "sandbox" / "harness" / "pg_harness.py"
MB = 1 << 20


def snap(**kw) -> MemorySnapshot:
    return MemorySnapshot(**{"limit": 256 * MB, "peak": 10 * MB, **kw})


@pytest.mark.parametrize("before, after, version, says", [
    (snap(), snap(), 1, None),
    (snap(), snap(oom_kills=1), 1, "out-of-memory killer"),
    (snap(), snap(ooms=1), 1, "out of memory"),
    (snap(ooms=3), snap(ooms=3), 2, None),
    (snap(ooms=3), snap(ooms=4), 2, "ran out of memory"),
    (snap(), snap(limit_hits=2), 2, "reached the limit"),
    (snap(), snap(peak=256 * MB), 1, "reached the 256 MiB limit"),
    (snap(), snap(peak=256 * MB - LIMIT_MARGIN // 2), 1, "reached the 256 MiB limit"),
    (snap(), snap(peak=200 * MB), 1, None),
    # a high-water mark already at the limit when the sample started says nothing about it
    (snap(peak=256 * MB), snap(peak=256 * MB), 1, None),
], ids=["nothing", "oom-kill", "v1-under-oom", "v2-old-oom", "v2-oom", "limit-hits", "peak", "peak-margin",
        "peak-below", "peak-before"])
def test_memory_evidence(before, after, version, says):
    why = memory_evidence(before, after, version)
    assert (why is None) if says is None else (why is not None and says in why), why


def write(d: Path, files: dict[str, str]) -> None:
    d.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (d / name).write_text(text)


def test_v1_cgroup_is_found_read_and_its_peak_reset(tmp_path):
    cid = "a" * 64
    root = tmp_path / "cg"
    write(root / "memory", {"memory.usage_in_bytes": "0\n"})
    d = root / "memory" / "docker" / cid
    write(d, {"memory.oom_control": "oom_kill_disable 0\nunder_oom 0\noom_kill 2\n", "memory.failcnt": "0\n",
              "memory.memsw.failcnt": "3\n", "memory.max_usage_in_bytes": f"{256 * MB}\n",
              "memory.limit_in_bytes": f"{256 * MB}\n", "memory.memsw.limit_in_bytes": f"{512 * MB}\n"})
    assert cgroup_version(str(root)) == 1
    cg = CgroupLocator(str(root)).locate(cid)
    assert cg is not None and cg.path == str(d)
    assert cg.snapshot() == MemorySnapshot(oom_kills=2, ooms=0, limit_hits=3, peak=256 * MB, limit=256 * MB)
    assert cg.reset_peak() and (d / "memory.max_usage_in_bytes").read_text() == "0"
    assert CgroupLocator(str(root)).locate("b" * 64) is None


def test_v2_cgroup_under_systemd(tmp_path):
    cid = "c" * 64
    root = tmp_path / "cg"
    write(root, {"cgroup.controllers": "cpu memory pids\n"})
    d = root / "system.slice" / f"docker-{cid}.scope"
    write(d, {"memory.events": "low 0\nhigh 0\nmax 5\noom 1\noom_kill 1\n", "memory.peak": f"{100 * MB}\n",
              "memory.max": f"{128 * MB}\n"})
    assert cgroup_version(str(root)) == 2
    cg = CgroupLocator(str(root)).locate(cid)
    assert cg is not None and cg.version == 2
    assert cg.snapshot() == MemorySnapshot(oom_kills=1, ooms=1, limit_hits=5, peak=100 * MB, limit=128 * MB)


def test_a_gone_cgroup_reads_as_none(tmp_path):
    assert HostCgroup(str(tmp_path / "gone"), 1).snapshot() is None
    assert HostCgroup(str(tmp_path / "gone"), 2).snapshot() is None
    assert not HostCgroup(str(tmp_path / "gone"), 1).reset_peak()


def test_no_memory_controller_means_no_host_evidence(tmp_path):
    loc = CgroupLocator(str(tmp_path))
    assert not loc.available and loc.locate("d" * 64) is None


class FakeClient:
    def __init__(self, runtimes, default="runc"):
        self._info = {"Runtimes": {r: {} for r in runtimes}, "DefaultRuntime": default}

    def info(self):
        return self._info


def test_require_runtime_says_how_to_register_runsc():
    assert require_runtime(FakeClient(["runc", "runsc"]), "runsc") == "runsc"
    assert require_runtime(FakeClient(["runc"]), None) == "runc"
    with pytest.raises(RuntimeNotRegistered) as err:
        require_runtime(FakeClient(["runc"]), "runsc")
    assert str(err.value) == "runtime runsc is not registered with the Docker engine: run bin/setup --runsc"
    assert "bin/setup --runsc" in err.value.hint
    with pytest.raises(RuntimeNotRegistered, match="kata is not registered"):
        require_runtime(FakeClient(["runc"]), "kata")


def test_runtime_limits():
    assert normalize_runtime(None) is None and normalize_runtime(" ") is None and normalize_runtime("default") is None
    assert host_pids_limit("runc", 64) == 64 and host_pids_limit(None, 64) == 64
    assert host_pids_limit("runsc", 64) > 64 * 4
    # under gVisor the worker uid's process limit leaves room for init and the supervisor (root)
    assert extra_ulimits("runsc", 64) == [("nproc", 62)] and extra_ulimits("runc", 64) == []


def jobs(n=2):
    return [Job(id=f"j{i}", source="", entry_point="f", cases=[Case(id="c0", args=[])]) for i in range(n)]


def rec(**kw) -> bytes:
    return json.dumps(kw).encode()


def finish(a: ChannelAssembler, jid: str) -> None:
    for r in (rec(t="start", job=jid), rec(t="load", job=jid, ok=True),
              rec(t="case", job=jid, id="c0", ok=True, value=1), rec(t="job_end", job=jid)):
        a.feed_line(r)


def test_sync_records_only_between_jobs_once_each():
    a = ChannelAssembler(jobs())
    a.feed_line(rec(t="sync", n=0))
    finish(a, "j0")
    a.feed_line(rec(t="sync", n=1))
    finish(a, "j1")
    a.feed_line(rec(t="sync", n=2))
    a.feed_line(rec(t="end"))
    assert a.protocol_error is None and a.ended and a.pending_syncs == [0, 1, 2]

    for bad in ([rec(t="sync", n=0), rec(t="sync", n=0)],  # twice
                [rec(t="sync", n=1)],  # ahead of the jobs
                [rec(t="start", job="j0"), rec(t="sync", n=0)]):  # inside a job
        b = ChannelAssembler(jobs())
        for line in bad:
            b.feed_line(line)
        assert b.protocol_error is not None and "sync" in b.protocol_error


def test_retire_only_between_two_jobs():
    a = ChannelAssembler(jobs(3))
    finish(a, "j0")
    a.feed_line(rec(t="retire", detail="System V shm objects can be neither listed nor found by id"))
    assert a.ended and a.retired and a.started() == {"j0"}
    b = ChannelAssembler(jobs())
    b.feed_line(rec(t="retire", detail="x"))
    assert b.protocol_error is not None


def test_the_harness_waits_for_the_hosts_answer_and_ignores_forged_ones(tmp_path):
    req = {"v": 1, "sync": "tok", "limits": {"case_cpu_s": 1.0, "case_wall_s": 3.0},
           "jobs": [{"job": f"j{i}", "source": "def f(x):\n    return x\n", "entry_point": "f",
                     "cases": [{"id": "c0", "args": [i]}]} for i in range(2)]}
    env = {k: v for k, v in os.environ.items() if k != "PG_SANDBOX"}
    env["PG_SCRATCH"] = str(tmp_path)
    proc = subprocess.Popen([sys.executable, "-I", str(HARNESS)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            env=env)
    proc.stdin.write(json.dumps(req).encode() + b"\n")
    proc.stdin.flush()
    seen = []

    def next_record():
        r = json.loads(proc.stdout.readline())
        seen.append(r["t"])
        return r

    for n in range(3):
        while (r := next_record())["t"] != "sync":
            pass
        assert r["n"] == n
        # a forged answer (wrong token, wrong number) must not release the harness
        proc.stdin.write(f"forged:{n}\ntok:{n + 7}\n".encode() + b"x" * 5000 + f"\ntok:{n}\n".encode())
        proc.stdin.flush()
    assert next_record()["t"] == "end"
    proc.stdin.close()
    assert proc.wait(timeout=30) == 0
    assert seen == ["sync", "start", "load", "case", "job_end", "sync", "start", "load", "case", "job_end",
                    "sync", "end"]


def test_boundary_records_need_the_supervisors_mac():
    from sandbox.channel import record_mac

    key = b"k" * 32

    def signed(**kw):
        return json.dumps({**kw, "mac": record_mac(key, kw)}).encode()

    a = ChannelAssembler(jobs(1), key=key)
    for line in (signed(t="sync", n=0), signed(t="start", job="j0"), rec(t="load", job="j0", ok=True),
                 rec(t="case", job="j0", id="c0", ok=True, value=1), rec(t="job_end", job="j0"),
                 signed(t="sync", n=1), signed(t="end")):
        a.feed_line(line)
    assert a.protocol_error is None and a.ended
    for forged in (rec(t="start", job="j0"), json.dumps({"t": "start", "job": "j0", "mac": "0" * 32}).encode(),
                   json.dumps({"t": "start", "job": "j0", "mac": record_mac(key, {"t": "start", "job": "j1"})}).encode()):
        b = ChannelAssembler(jobs(1), key=key)
        b.feed_line(forged)
        assert b.protocol_error == "unauthenticated start record"


def test_current_use_cpu_time_and_threads_v1(tmp_path):
    cid = "e" * 64
    root = tmp_path / "cg"
    write(root / "memory", {"memory.usage_in_bytes": "0\n"})
    write(root / "memory" / "docker" / cid, {
        "memory.oom_control": "oom_kill 0\n", "memory.usage_in_bytes": f"{255 * MB}\n",
        "memory.limit_in_bytes": f"{256 * MB}\n", "memory.memsw.limit_in_bytes": f"{256 * MB}\n"})
    write(root / "cpu,cpuacct" / "docker" / cid, {"cpuacct.usage": "1234567890\n", "tasks": f"{os.getpid()}\n"})
    cg = CgroupLocator(str(root)).locate(cid)
    assert cg is not None
    assert cg.usage() == (255 * MB, 256 * MB)
    assert cg.cpu_ns() == 1234567890
    assert cg.threads() == [os.getpid()]


def test_current_use_and_cpu_time_v2(tmp_path):
    cid = "f" * 64
    root = tmp_path / "cg"
    write(root, {"cgroup.controllers": "cpu memory\n"})
    write(root / "docker" / cid, {"memory.events": "max 0\n", "memory.current": f"{10 * MB}\n",
                                  "memory.max": f"{128 * MB}\n", "cpu.stat": "usage_usec 2500\nuser_usec 2000\n",
                                  "cgroup.threads": "1\n2\n"})
    cg = CgroupLocator(str(root)).locate(cid)
    assert cg is not None
    assert cg.usage() == (10 * MB, 128 * MB) and cg.cpu_ns() == 2_500_000 and cg.threads() == [1, 2]
    (root / "docker" / cid / "memory.max").write_text("max\n")
    assert cg.usage() is None  # no limit: nothing to be at


def test_run_queue_wait_only_grows_as_threads_come_and_go(tmp_path):
    from sandbox.cgroups import RunQueueWait

    d = tmp_path / "cpu"
    d.mkdir()
    cg = HostCgroup(str(tmp_path / "mem"), 1, str(d))
    me = os.getpid()
    (d / "tasks").write_text(f"{me}\n")
    wait = RunQueueWait()
    first = wait.sample(cg)
    with open(f"/proc/{me}/schedstat") as f:
        assert first == int(f.read().split()[1]) or first > 0
    (d / "tasks").write_text("999999999\n")  # the thread is gone: the total stays
    assert wait.sample(cg) == first
    (d / "tasks").write_text(f"{me}\n")  # seen again as a new thread: its whole wait counts once more
    assert wait.sample(cg) >= first


def run_with_ticks(tmp_path, ticks_after_load: list[str | float], case_wall_s: float = 20.0) -> dict:
    """The harness (a local process) with a host that answers syncs and sends clock ticks.

    The candidate sleeps: it uses no CPU of its own, so only the host's ticks can move the
    clock. A number in ``ticks_after_load`` is a pause (seconds). Returns the job's stop record.
    """
    req = {"v": 1, "sync": "tok",
           "limits": {"case_cpu_s": 0.5, "case_wall_s": case_wall_s, "load_cpu_s": 5.0, "load_wall_s": 20.0},
           "jobs": [{"job": "j", "source": "import time\ndef f(x):\n    time.sleep(15)\n", "entry_point": "f",
                     "cases": [{"id": "c0", "args": [0]}]}]}
    env = {k: v for k, v in os.environ.items() if k != "PG_SANDBOX"}
    env["PG_SCRATCH"] = str(tmp_path)
    proc = subprocess.Popen([sys.executable, "-I", str(HARNESS)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            env=env)
    try:
        proc.stdin.write(json.dumps(req).encode() + b"\n")
        proc.stdin.flush()

        def until(kind):
            while True:
                r = json.loads(proc.stdout.readline())
                if r["t"] == kind:
                    return r

        until("sync")
        # the first tick comes before the first answer, as the host sends them
        proc.stdin.write(f"tok:t:0:{MB}:{256 * MB}:0\ntok:0\n".encode())
        proc.stdin.flush()
        until("load")
        for tick in ticks_after_load:
            if isinstance(tick, float):
                time.sleep(tick)
                continue
            proc.stdin.write(tick.encode())
            proc.stdin.flush()
        stop = until("stop")
        until("sync")
        proc.stdin.write(b"tok:1\n")
        proc.stdin.close()
        until("end")
        assert proc.wait(timeout=20) == 0
        return stop
    finally:
        proc.kill()


def test_the_hosts_ticks_are_the_cpu_clock(tmp_path):
    stop = run_with_ticks(tmp_path, [f"tok:t:{10 ** 9}:{MB}:{256 * MB}:0\n"])
    assert stop["reason"] == "cpu_time" and stop["case"] == "c0", stop


def test_memory_at_the_limit_when_the_budget_ran_out_is_a_memory_stop(tmp_path):
    stop = run_with_ticks(tmp_path, [f"tok:t:{10 ** 9}:{256 * MB - MB}:{256 * MB}:0\n"])
    assert stop["reason"] == "memory" and "limit" in stop["detail"] and "used 1.00s of CPU" in stop["detail"], stop


def test_the_hosts_run_queue_wait_is_not_held_against_the_wall_budget(tmp_path):
    # 1.5 s of wall budget; the host says the container waited 60 s for a CPU meanwhile, so the
    # sleeping candidate is still within its budget 2 s later, when a CPU tick ends it
    ticks = [f"tok:t:0:{MB}:{256 * MB}:{60 * 10 ** 9}\n", 2.0, f"tok:t:{10 ** 9}:{MB}:{256 * MB}:{60 * 10 ** 9}\n"]
    stop = run_with_ticks(tmp_path, ticks, case_wall_s=1.5)
    assert stop["reason"] == "cpu_time", stop


def test_the_hosts_run_queue_wait_stretches_the_wall_budget_threefold_at_most(tmp_path):
    # a sum over the sandbox's threads can outgrow the wall clock; a sleeper still ends on wall time
    stop = run_with_ticks(tmp_path, [f"tok:t:0:{MB}:{256 * MB}:{600 * 10 ** 9}\n"], case_wall_s=0.5)
    assert stop["reason"] == "wall_time" and "waiting for a CPU, not counted" in stop["detail"], stop


def test_ticks_without_the_token_or_malformed_are_ignored(tmp_path):
    forged = ["forged:t:99000000000:0:1:0\n", f"tok:t:{10 ** 9}:1:2\n", "tok:t:-5:1:2:3\n",
              "tok:t:" + "9" * 30 + ":1:2:3\n", "x" * 100_000 + "\n", "tok:t:" + "9" * 300 + "\n"]
    # none of them moves the clock: the sleeping candidate ends on its wall budget instead
    stop = run_with_ticks(tmp_path, forged, case_wall_s=1.5)
    assert stop["reason"] == "wall_time", stop
