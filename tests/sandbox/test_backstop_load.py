"""The host's wall-clock backstop does not count time a container spent waiting for a CPU.

The budgets that decide a verdict are CPU budgets; wall budgets only catch code that sleeps or
waits, and the supervisor already leaves out the worker's run-queue wait. The host's own backstop
must do the same, or a busy host turns a candidate within its CPU budget into ``wall_time``.

A container held to a tenth of a CPU (``cpus=0.1``: the kernel's bandwidth control keeps its
threads runnable but waiting, exactly what a loaded host does) runs a candidate that needs 1.2 s
of CPU: over 12 s of wall time, past the 9 s backstop.

Under runc, where the candidate's own CPU clock is the kernel's. (Under gVisor the Sentry's clock
runs on while the host holds its threads back, so the same candidate stops early; the host reads
the same run-queue records there, through the same code, and the supervisor leaves out at most
two thirds of a phase's wall time as wait: see ``sandbox.harness.HOST_WAIT_SHARE``.)
"""

from __future__ import annotations

import pytest

from sandbox.models import Case, Job, Limits

pytestmark = [pytest.mark.docker, pytest.mark.slow]

# backstop = startup 2 + load wall 2.5 + one case 2.5 + 2 = 9 s of wall time
SLOW_HOST = Limits(case_cpu_s=2.0, load_cpu_s=2.0, wall_factor=1.0, wall_slack_s=0.5,
                   startup_s=2.0, cpus=0.1)

BURNER = """
import time
def f(x):
    t = time.process_time()
    while time.process_time() - t < 1.2:
        pass
    return {"y": x}
"""

SLEEPER = """
import time
def f(x):
    time.sleep(30)
    return {"y": x}
"""


@pytest.fixture
def runtime():
    return "runc"


def test_a_candidate_within_its_cpu_budget_passes_however_long_it_waits_for_a_cpu(sandbox):
    assert SLOW_HOST.backstop_s(1) == pytest.approx(9.0)
    r = sandbox.run(Job(id="j", source=BURNER, entry_point="f", cases=[Case(id="c0", args=[3])]), SLOW_HOST)
    assert r.stop is None, (r.stop, r.wall_s)
    assert r.completed and r.values() == {"c0": {"y": 3}}
    assert r.container.host_wall_s > SLOW_HOST.backstop_s(1), "the container never waited: the test proves nothing"


def test_a_sleeper_is_still_stopped_by_the_wall_budget(sandbox):
    r = sandbox.run(Job(id="j", source=SLEEPER, entry_point="f", cases=[Case(id="c0", args=[3])]), SLOW_HOST)
    assert r.stop is not None and r.stop.reason == "wall_time", r.stop
    assert r.container.host_wall_s < SLOW_HOST.backstop_s(1)  # the supervisor's budget, long before the host's
