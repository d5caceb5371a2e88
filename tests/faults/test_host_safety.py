"""Many memory-hungry candidates at full concurrency leave the host responsive."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from grader.packs import vectors
from grader.grading.execution import grade_batch, grade_source, host_memory_mb, safe_workers
from sandbox.models import Limits

pytestmark = [pytest.mark.docker, pytest.mark.slow]

BOMB = "def double(x):\n    hog = []\n    while True:\n        hog.append(bytearray(16 << 20))\n"


def test_safe_workers_caps_by_memory():
    assert safe_workers(8, 512, host_mb=24000) == (8, None)
    n, note = safe_workers(64, 512, host_mb=24000)
    assert n == 23 and "lowered from 64 to 23" in note
    assert safe_workers(4, 4096, host_mb=4000)[0] == 1


def mem_available_mb() -> int:
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) // 1024
    raise AssertionError("no MemAvailable")


def test_memory_bombs_at_full_concurrency(tiny_catalog, handle):
    problem = tiny_catalog.find("tiny-pack/sound")
    hidden = vectors.load(problem).hidden
    limits = Limits(memory_mb=512, case_cpu_s=2.0)
    workers, _ = safe_workers(8, limits.memory_mb)
    assert workers == min(8, int(host_memory_mb() * 0.5) // 512)

    stop = threading.Event()
    worst = {"late": 0.0, "mem": mem_available_mb()}

    def heartbeat():
        while not stop.is_set():
            t = time.monotonic()
            time.sleep(0.01)
            worst["late"] = max(worst["late"], time.monotonic() - t - 0.01)
            worst["mem"] = min(worst["mem"], mem_available_mb())

    hb = threading.Thread(target=heartbeat, daemon=True)
    hb.start()
    start_mem = mem_available_mb()
    with ThreadPoolExecutor(workers) as pool:
        grades = list(pool.map(lambda _: grade_source(handle, problem, BOMB, hidden, limits)[0], range(2 * workers)))
        # batch mode: three bombs per container, each in its own process, the same verdict
        batches = list(pool.map(lambda k: grade_batch(handle, problem, [(f"b{k}-{i}", BOMB) for i in range(3)],
                                                      hidden, limits), range(workers)))
    stop.set()
    hb.join()
    # decided from the kernel's records of each container's memory cgroup, not from which timer
    # fired first: the same at full concurrency as alone (tests/faults/test_memory_under_load.py)
    assert {g.verdict.value for g in grades} == {"memory_limit"}, {g.reason for g in grades}
    assert {g.verdict.value for b in batches for g, _ in b} == {"memory_limit"}
    # the containers' limits together stay well inside the host: it kept memory and kept scheduling
    assert worst["mem"] > start_mem - workers * limits.memory_mb - 512
    assert worst["mem"] > 1024
    assert worst["late"] < 1.0, f"the host stalled for {worst['late']:.2f}s"
