"""A memory bomb gets the memory verdict however busy the machine is.

On a loaded host the kernel can take seconds of reclaim at the memory limit before its
out-of-memory killer fires, and a starved candidate reaches the limit late: if the first timer to
fire decided, the bomb would come out as a timeout (this flaked under full-suite load). The
verdict is decided from the kernel's records of the container's memory cgroup, read on the host,
and from the memory use at the moment a time budget ran out; the wall budget does not count
time spent waiting for a CPU, and under gVisor both budgets run on the host kernel's clocks
(relayed by the host), not on the Sentry's. Here the bombs run while other containers burn every
CPU, in per-sample and in batch mode, under runc and gVisor's runsc: the same verdict, always.
benchmarks/stress_verdicts.py does the same 20 times over, with a slow allocator and a CPU burner.
"""

from __future__ import annotations

import os
import uuid
from concurrent.futures import ThreadPoolExecutor

import pytest

from grader.grading.execution import grade_batch, grade_source
from grader.packs import vectors
from support import tight_limits

pytestmark = [pytest.mark.docker, pytest.mark.slow]

LIMITS = tight_limits()  # the hostile corpus's
BOMB = "def double(x):\n    hog = []\n    while True:\n        hog.append(bytearray(32 << 20))\n"
BUSY = "def double(x):\n    while True:\n        pass\n"
CORRECT = 'def double(x):\n    return {"y": 2 * x, "half": x / 2}\n'


@pytest.fixture
def runtime(each_runtime):
    return each_runtime


@pytest.fixture
def cpu_burners(docker_api, sandbox_image, runtime):
    """Containers that keep every CPU of the host busy while the test runs."""
    label = f"perfgrade-test-burner-{uuid.uuid4().hex[:8]}"
    ids = []
    try:
        for _ in range(2 * (os.cpu_count() or 2)):
            cid = docker_api.create_container(
                sandbox_image.tag, entrypoint=["python3", "-c", "while True: pass"], labels={label: "1"},
                network_disabled=True,
                host_config=docker_api.create_host_config(network_mode="none", nano_cpus=10 ** 9,
                                                          runtime=runtime, mem_limit="64m", auto_remove=False),
            )["Id"]
            ids.append(cid)
            docker_api.start(cid)
        yield ids
    finally:
        for cid in ids:
            try:
                docker_api.remove_container(cid, force=True)
            except Exception:  # noqa: BLE001 - best effort; the label names them
                pass


def test_memory_bombs_alone_are_memory_verdicts(tiny_catalog, handle, runtime):
    # "alone": no burners of our own (the rest of the suite may still be running beside it)
    problem = tiny_catalog.find("tiny-pack/sound")
    hidden = vectors.load(problem).hidden
    grades = [grade_source(handle, problem, BOMB, hidden, LIMITS, job_id=f"b{i}")[0] for i in range(2)]
    assert [g.verdict.value for g in grades] == ["memory_limit"] * 2, [g.reason for g in grades]


def test_memory_bombs_under_cpu_load_are_memory_verdicts(tiny_catalog, handle, cpu_burners, runtime):
    problem = tiny_catalog.find("tiny-pack/sound")
    hidden = vectors.load(problem).hidden
    with ThreadPoolExecutor(4) as pool:
        grades = list(pool.map(lambda i: grade_source(handle, problem, BOMB, hidden, LIMITS, job_id=f"b{i}")[0],
                               range(6)))
    assert [g.verdict.value for g in grades] == ["memory_limit"] * 6, [g.reason for g in grades]


def test_batch_mode_under_cpu_load_gives_each_sample_its_own_verdict(tiny_catalog, handle, cpu_burners, runtime):
    # the memory records are read per sample: a busy loop after a bomb is a timeout, not memory
    problem = tiny_catalog.find("tiny-pack/sound")
    hidden = vectors.load(problem).hidden
    items = [("bomb1", BOMB), ("correct", CORRECT), ("bomb2", BOMB), ("busy", BUSY), ("correct2", CORRECT)]
    grades = [g for g, _ in grade_batch(handle, problem, items, hidden, LIMITS)]
    got = [g.verdict.value for g in grades]
    assert got == ["memory_limit", "pass", "memory_limit", "timeout", "pass"], [g.reason for g in grades]
