"""A real two-node Ray cluster on this machine, shared by the Ray tests that run in one process.

``ray.cluster_utils.Cluster`` starts a head node and a second node: separate raylets (each with its
own object store and worker processes) joined to one GCS, the way ``ray start --head`` and
``ray start --address`` do on two machines. Each node advertises one grading slot
(``perfgrade_grading: 1``), so two jobs in flight must land one on each node. Nodes are small
(one CPU, a 200 MB object store) and the health checks fast, so that a killed node is noticed in
about two seconds rather than thirty. Every node uses this machine's Docker engine.

The fixture is session-scoped: under pytest-xdist the Ray tests may be spread over the workers
(``xdist_group`` is not honoured with pytest 9 and pytest-xdist 3.8: ``--dist loadgroup`` sets a
node id attribute pytest 9 no longer reads), and a module-scoped cluster would be torn down and
started again each time a worker moved between modules. So each worker that runs Ray tests starts
one cluster, at most, and stops it when its session ends.

These tests never skip: without ray installed they fail, saying how to install it.
"""

from __future__ import annotations

import os
import signal
import time
from dataclasses import dataclass
from typing import Any

import pytest

NODE = {"num_cpus": 1, "object_store_memory": 200 << 20}
FAST_HEALTH_CHECKS = {"health_check_period_ms": 500, "health_check_failure_threshold": 3,
                      "health_check_timeout_ms": 500}
SLOT = "perfgrade_grading"


def _ray():
    try:
        import ray
        import ray.cluster_utils  # noqa: F401
    except ImportError:
        pytest.fail('ray is not installed: pip install -e ".[dev,ray]" (bin/setup does it)', pytrace=False)
    return ray


@dataclass
class RayCluster:
    cluster: Any
    address: str
    head_id: str
    second_id: str

    def add_node(self, slots: int = 1, **kw) -> Any:
        return self.cluster.add_node(**NODE, resources={SLOT: slots}, **kw)

    def kill_node(self, node) -> None:
        """Take a node away as a lost machine would: SIGKILL its raylet and its worker processes."""
        raylet = node.all_processes["raylet"][0].process.pid
        children = [pid for pid in _pids() if _ppid(pid) == raylet]
        os.kill(raylet, signal.SIGKILL)
        for pid in children:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass

    def forget(self, node) -> None:
        """Reap what is left of a node removed by a test."""
        self.cluster.remove_node(node, allow_graceful=False)


def _pids() -> list[int]:
    return [int(p) for p in os.listdir("/proc") if p.isdigit()]


def _ppid(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return None


@pytest.fixture(scope="session")
def ray_cluster():
    ray = _ray()
    from ray.cluster_utils import Cluster

    if ray.is_initialized():
        ray.shutdown()
    t0 = time.monotonic()
    cluster = Cluster(initialize_head=True, head_node_args={
        **NODE, "include_dashboard": False, "resources": {SLOT: 1}, "_system_config": FAST_HEALTH_CHECKS})
    try:
        second = cluster.add_node(**NODE, resources={SLOT: 1})
        ray.init(address=cluster.address, namespace="perfgrade-tests", log_to_driver=False,
                 logging_level="WARNING")
        print(f"ray cluster up in {time.monotonic() - t0:.1f}s")
        yield RayCluster(cluster, cluster.address, cluster.head_node.node_id, second.node_id)
    finally:
        ray.shutdown()
        cluster.shutdown()
