"""Grading on a Ray cluster: every grading job is a Ray task on a node, in that node's own Docker engine.

:class:`RayEngine` is a :class:`GradingEngine`: the eval pipeline and the reward API use it exactly
as they use the local engine, and generation, the journal and the statistics stay on the driver.

What crosses the wire (only plain JSON values are pickled: no pydantic objects, no closures):

* to a node: the candidates' sources, the entry point, the limits, the run id and the hidden
  vectors' *inputs* (id and arguments);
* back: the candidates' raw answers, the :class:`sandbox.ExecResult` of each job as plain JSON.

The expected outputs never leave the driver: the answers are scored here, by the same
:func:`grade` as in local mode, so verdicts are the local ones by construction. The task
functions are module-level functions that Ray pickles by reference, so every node needs this
project installed (the same checkout: each node checks that its sandbox build context, the
Dockerfile and harness, has the driver's digest).

Nodes and slots. A node grades when it advertises the custom resource ``perfgrade_grading``
(``ray start --resources='{"perfgrade_grading": N}'``, N = its safe number of grading
containers); when no node advertises it, every node with CPUs grades and its slots are derived
from its CPUs and memory as in local mode (twice the CPUs, at most 8, capped so the containers'
memory limits fit in half the host). Each task asks for one slot. The first time a node is
needed, a probe task verifies the content-hashed sandbox image on it (building it, offline if no
registry answers, when it is missing), sweeps containers left there by dead graders, and reports
what the node has; a node that cannot run the sandbox is reported by name and never used.

Placement and backpressure are decided on the driver: a job goes to the ready node with the
most free slots (a hard node affinity), and no more jobs are in flight than the ready nodes have
slots. Faults: a node lost mid-job (raylet killed, machine gone), a task that cannot be
scheduled, a crashed worker or an infrastructure error inside the node's sandbox is an
infrastructure failure of that attempt, never a verdict: the job runs again, on another node
when its node is gone, at most ``attempts`` times in all (then it is an ``infra_error`` grade,
reported apart and never counted against the model). Ray's own task retries are off, so the
cap is this one. Which node ran what is kept in :attr:`RayEngine.jobs_by_node`.

``ray`` is imported here only, and only when an engine is made: the grader works without it.

Exceptions: :class:`ClusterError` (a :class:`GraderError`) when no node of the cluster can grade;
:class:`ConfigError` when ray is not installed or the cluster cannot be reached.
"""

from __future__ import annotations

import fcntl
import hashlib
import logging
import os
import socket
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from sandbox import ExecResult, Limits

from ..errors import ConfigError, GraderError
from ..packs.problems import Problem
from ..packs.vectors import Vector
from .execution import DEFAULT_LIMITS, INFRA_ATTEMPTS, GradingEngine, host_memory_mb, safe_workers
from .scoring import Grade, grade_for, infra_grade

log = logging.getLogger(__name__)

SLOT_RESOURCE = "perfgrade_grading"
INSTALL_HINT = 'the Ray engine needs ray: pip install -e ".[ray]"'
PROBE_TIMEOUT_S = 1800.0  # a fresh node may have to build the image (debootstrap: minutes)
TASK_GRACE_S = 120.0  # beyond the sandbox's own backstop: scheduling, a worker process starting
REFRESH_S = 5.0  # how often a grading worker waiting for a slot looks for new or lost nodes
LOCAL_OBJECT_STORE_MB = 200


class ClusterError(GraderError):
    """No node of the Ray cluster can grade (each node's reason is in the message)."""


def _ray():
    try:
        import ray
    except ImportError:
        raise ConfigError(INSTALL_HINT) from None
    return ray


def _short(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return (text[0] if text else type(exc).__name__)[:300]


# ------------------------------------------------------------------------------------------
# what runs on a node (in a Ray worker process)
# ------------------------------------------------------------------------------------------

class _NodeUnusable(Exception):
    pass


_NODE_SANDBOXES: dict[tuple[str, str], tuple[Any, str]] = {}  # (run id, context) -> (Sandbox, image id)
_BUILD_LOCK = "/tmp/perfgrade-sandbox-build.lock"


def context_digest() -> str:
    """Digest of the sandbox build context (Dockerfile and harness) of this checkout."""
    from sandbox.image import context_files

    h = hashlib.sha256(b"perfgrade-sandbox-context\0")
    for name, data in sorted(context_files().items()):
        h.update(name.encode() + b"\0" + hashlib.sha256(data).digest())
    return h.hexdigest()


def _identity() -> dict[str, Any]:
    import ray

    return {"node_id": ray.get_runtime_context().get_node_id(), "hostname": socket.gethostname(),
            "pid": os.getpid()}


def _node_image(expected_context: str, build: bool):
    """(client, tag, image id) of the current sandbox image on this node's engine."""
    from sandbox.engine import connect
    from sandbox.image import build as build_image
    from sandbox.image import status

    mine = context_digest()
    if mine != expected_context:
        raise _NodeUnusable(f"its sandbox build context ({mine[:12]}) differs from the driver's "
                            f"({expected_context[:12]}): install the same checkout of perfgrade on every node")
    client = connect()
    st = status(client)
    if not st.current:
        if not build:
            raise _NodeUnusable(f"sandbox image not usable: {st.reason}")
        with open(_BUILD_LOCK, "a") as lock:  # one build per machine, whichever worker gets here first
            fcntl.flock(lock, fcntl.LOCK_EX)
            st = status(client)
            if not st.current:
                st = build_image(client, base="auto")
    assert st.tag is not None and st.image_id is not None
    return client, st.tag, st.image_id


def probe_node(expected_context: str) -> dict[str, Any]:
    """Verify (or build) the sandbox image on this node and sweep orphaned containers."""
    from sandbox.engine import sweep
    from sandbox.errors import SandboxError

    out = _identity()
    out.update(cpus=os.cpu_count(), host_mb=host_memory_mb())
    try:
        client, tag, image_id = _node_image(expected_context, build=True)
        out.update(image_tag=tag, image_id=image_id, swept=sweep(client, orphans_only=True))
        client.close()
    except SandboxError as exc:
        out["error"] = _short(exc) + (f" (fix: {exc.hint})" if exc.hint else "")
    except (_NodeUnusable, OSError) as exc:
        out["error"] = _short(exc)
    return out


def run_on_node(request: dict[str, Any]) -> dict[str, Any]:
    """Run the jobs of one request in this node's sandbox; the candidates' raw answers as JSON."""
    from sandbox.errors import SandboxError
    from sandbox.models import Case, Job
    from sandbox.runner import Sandbox

    out = _identity()
    key = (request["run_id"], request["context"])
    try:
        if key not in _NODE_SANDBOXES:
            client, tag, image_id = _node_image(request["context"], build=False)
            _NODE_SANDBOXES[key] = (Sandbox(tag, run_id=request["run_id"], client=client), image_id)
        sandbox, image_id = _NODE_SANDBOXES[key]
    except (_NodeUnusable, SandboxError, OSError) as exc:
        out["unusable"] = _short(exc)
        return out
    cases = [Case(id=cid, args=args) for cid, args in request["cases"]]
    jobs = [Job(id=jid, source=src, entry_point=request["entry_point"], cases=cases) for jid, src in request["jobs"]]
    try:
        results = sandbox.run_many(jobs, Limits.model_validate(request["limits"]))
    except SandboxError as exc:  # the engine restarted, a stream broke, ...: retried by the driver
        _NODE_SANDBOXES.pop(key, None)
        out["infra"] = _short(exc)
        return out
    out["image_id"] = image_id
    out["results"] = [r.model_dump(mode="json") for r in results]
    return out


def sweep_on_node(run_id: str) -> int:
    from sandbox.engine import LABEL_RUN, connect, sweep

    client = connect()
    try:
        return sweep(client, {LABEL_RUN: run_id})
    finally:
        client.close()


# ------------------------------------------------------------------------------------------
# the driver side
# ------------------------------------------------------------------------------------------

@dataclass
class _Node:
    node_id: str
    address: str
    state: str = "probing"  # probing | ready | unusable | lost
    reason: str = ""
    hostname: str = ""
    slots: int = 0
    cpus_per_slot: float = 0.0  # > 0 when the slots are derived from CPUs (no custom resource)
    image_id: str | None = None
    image_tag: str | None = None
    in_flight: int = 0
    jobs: int = 0

    @property
    def name(self) -> str:
        return f"{self.hostname or self.address} ({self.address}, node {self.node_id[:8]})"

    def to_json(self) -> dict[str, Any]:
        return {"node_id": self.node_id, "hostname": self.hostname, "address": self.address, "state": self.state,
                "reason": self.reason, "slots": self.slots, "image_id": self.image_id}


@dataclass
class _Outcome:
    kind: str  # done | infra | node | stopped
    detail: str = ""
    results: list[dict[str, Any]] = field(default_factory=list)


class RayEngine(GradingEngine):
    """Gradings as Ray tasks on the nodes of a cluster, one slot each.

    ``address``: a Ray address (``host:port``, ``auto``, ``ray://...``); None uses the connection
    this process already has, else $RAY_ADDRESS, else starts a one-node cluster on this machine
    (stopped again by :meth:`close`). ``memory_mb``: the largest container memory limit of the
    run, used to derive slots when nodes do not advertise ``perfgrade_grading``.
    """

    name = "ray"

    def __init__(self, address: str | None = None, *, run_id: str | None = None,
                 memory_mb: int = DEFAULT_LIMITS.memory_mb, attempts: int = INFRA_ATTEMPTS,
                 resource: str = SLOT_RESOURCE) -> None:
        ray = _ray()
        self._ray = ray
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        self._affinity = NodeAffinitySchedulingStrategy
        self.run_id = run_id or f"ray-{os.urandom(4).hex()}"
        self.memory_mb = memory_mb
        self.attempts = max(1, attempts)
        self.resource = resource
        self.notes: list[str] = []  # what went wrong with nodes, in order (also logged)
        self.jobs_by_node: dict[str, int] = {}  # node id -> requests it answered
        self._nodes: dict[str, _Node] = {}
        self._cv = threading.Condition()
        self._refreshing = False
        self._last_refresh = 0.0
        self._owns = False
        self.address = self._connect(address)
        self.context = context_digest()
        self._run = ray.remote(run_on_node)
        self._probe = ray.remote(probe_node)
        self._sweep = ray.remote(sweep_on_node)
        try:
            self._refresh()
            ready = [n for n in self._nodes.values() if n.state == "ready"]
            if not ready:
                raise ClusterError(self._nobody_can_grade())
        except BaseException:
            self.close()
            raise
        self.slots = sum(n.slots for n in ready)
        ids = sorted({n.image_id or "" for n in ready})
        tags = sorted({n.image_tag or "" for n in ready})
        # one image everywhere (one engine, or nodes that built from the same base) or one per node
        self.image_id = ids[0] if len(ids) == 1 else "per-node:" + hashlib.sha256(",".join(ids).encode()).hexdigest()[:16]
        self.image_tag = tags[0] if len(tags) == 1 else f"per-node ({len(tags)} tags)"

    # -- connection --------------------------------------------------------------------------
    def _connect(self, address: str | None) -> str:
        ray = self._ray
        if ray.is_initialized():  # this process is already a driver: use its cluster, leave it open
            current = ray.get_runtime_context().gcs_address
            if address and address not in ("auto", current):
                log.warning("this process is already connected to the Ray cluster at %s; using it, not %s",
                            current, address)
            return current
        address = address or os.environ.get("RAY_ADDRESS") or None
        common = {"namespace": "perfgrade", "log_to_driver": False, "logging_level": logging.WARNING,
                  "ignore_reinit_error": True}
        try:
            if address:
                ray.init(address=address, **common)
            else:  # a one-node cluster on this machine, for as long as this engine lives
                ray.init(num_cpus=os.cpu_count() or 1, object_store_memory=LOCAL_OBJECT_STORE_MB << 20,
                         include_dashboard=False, **common)
        except (ConnectionError, RuntimeError, ValueError) as exc:
            raise ConfigError(f"cannot connect to the Ray cluster at {address or '(new local cluster)'}: "
                              f"{_short(exc)}") from None
        self._owns = True
        return ray.get_runtime_context().gcs_address

    def close(self) -> None:
        if self._owns and self._ray.is_initialized():
            self._ray.shutdown()
        self._owns = False

    # -- nodes -------------------------------------------------------------------------------
    def _nobody_can_grade(self) -> str:
        if not self._nodes:
            what = f"the resource {self.resource!r} or CPUs"
            return f"no node of the Ray cluster at {self.address} offers {what}"
        reasons = "; ".join(f"{n.name}: {n.state} ({n.reason})" for n in self._nodes.values())
        return f"no node of the Ray cluster at {self.address} can run the sandbox: {reasons}"

    def _note(self, text: str) -> None:
        self.notes.append(text)
        log.warning("%s", text)

    def _mark(self, node: _Node, state: str, reason: str) -> None:
        with self._cv:
            if node.state == state or node.state in ("unusable", "lost"):
                return
            node.state, node.reason = state, reason
            self._cv.notify_all()
        if state == "unusable":
            self._note(f"Ray node {node.name} cannot run the sandbox and is not used: {reason}")
        else:
            self._note(f"Ray node {node.name} was lost ({reason}); its jobs run again elsewhere")

    def _refresh(self) -> None:
        """Learn the cluster's nodes; probe the new ones; mark the dead ones lost."""
        ray = self._ray
        nodes = ray.nodes()
        advertised = any(n.get("Alive") and n.get("Resources", {}).get(self.resource, 0) > 0 for n in nodes)
        fresh: list[tuple[_Node, dict]] = []
        for info in nodes:
            nid = info["NodeID"]
            known = self._nodes.get(nid)
            if not info.get("Alive"):
                if known is not None and known.state in ("ready", "probing"):
                    self._mark(known, "lost", "it left the cluster")
                continue
            res = info.get("Resources", {})
            if known is not None or (res.get(self.resource, 0) <= 0 if advertised else res.get("CPU", 0) <= 0):
                continue
            node = _Node(node_id=nid, address=info.get("NodeManagerAddress", "?"),
                         hostname=info.get("NodeManagerHostname", ""))
            with self._cv:
                self._nodes[nid] = node
            fresh.append((node, res))
        if fresh:
            self._probe_nodes(fresh, advertised)
        self._last_refresh = time.monotonic()

    def _probe_nodes(self, fresh: list[tuple[_Node, dict]], advertised: bool) -> None:
        ray = self._ray
        refs = {}
        for node, res in fresh:
            ref = self._probe.options(num_cpus=0, max_retries=0, name="perfgrade-probe",
                                      scheduling_strategy=self._affinity(node.node_id, soft=False)).remote(self.context)
            refs[ref] = (node, res)
        ready, _ = ray.wait(list(refs), num_returns=len(refs), timeout=PROBE_TIMEOUT_S)
        for ref, (node, res) in refs.items():
            if ref not in ready:
                self._cancel(ref)
                self._mark(node, "unusable", f"the probe gave no answer within {PROBE_TIMEOUT_S:.0f}s")
                continue
            try:
                out = ray.get(ref)
            except ray.exceptions.RayTaskError as exc:
                self._mark(node, "unusable", f"the probe failed there: {_short(exc.cause or exc)}")
                continue
            except ray.exceptions.RayError as exc:
                self._mark(node, "lost", type(exc).__name__)
                continue
            node.hostname = out.get("hostname") or node.hostname
            if out.get("error"):
                self._mark(node, "unusable", out["error"])
                continue
            if advertised:
                slots, per_slot = max(1, int(res[self.resource])), 0.0
            else:
                cpus = float(res.get("CPU", 1))
                slots = safe_workers(min(8, max(1, int(2 * cpus))), self.memory_mb, out.get("host_mb"))[0]
                per_slot = cpus / slots
            if out.get("swept"):
                log.info("swept %d orphaned container(s) on %s", out["swept"], node.name)
            with self._cv:
                node.slots, node.cpus_per_slot = slots, per_slot
                node.image_id, node.image_tag = out.get("image_id"), out.get("image_tag")
                node.state = "ready"
                self._cv.notify_all()

    def _refresh_in_background(self) -> None:
        with self._cv:
            if self._refreshing or time.monotonic() - self._last_refresh < REFRESH_S:
                return
            self._refreshing = True

        def run() -> None:
            try:
                self._refresh()
            except Exception as exc:  # noqa: BLE001 - a failed look at the cluster is retried later
                log.warning("looking at the Ray cluster failed: %s", _short(exc))
            finally:
                with self._cv:
                    self._refreshing = False
                    self._last_refresh = time.monotonic()
                    self._cv.notify_all()

        threading.Thread(target=run, name="ray-refresh", daemon=True).start()

    def _cancel(self, ref) -> None:
        try:
            self._ray.cancel(ref, force=True)
        except Exception as exc:  # noqa: BLE001 - the task or its node may be gone already
            log.info("cancelling a Ray task failed: %s", _short(exc))

    def _alive(self, node_id: str) -> bool:
        try:
            return any(n["NodeID"] == node_id and n.get("Alive") for n in self._ray.nodes())
        except Exception:  # noqa: BLE001 - no answer from the cluster: assume the worst
            return False

    def _acquire(self, stop: threading.Event | None) -> _Node | None:
        """A slot on the ready node with the most room (None once ``stop`` is set)."""
        waited_since = time.monotonic()
        with self._cv:
            while True:
                if stop is not None and stop.is_set():
                    return None
                free = [n for n in self._nodes.values() if n.state == "ready" and n.in_flight < n.slots]
                if free:
                    node = min(free, key=lambda n: (n.in_flight / n.slots, n.jobs, n.node_id))
                    node.in_flight += 1
                    node.jobs += 1
                    return node
                if not any(n.state in ("ready", "probing") for n in self._nodes.values()) and not self._refreshing:
                    raise ClusterError(self._nobody_can_grade())
                self._cv.wait(0.5)
                if time.monotonic() - waited_since > REFRESH_S:
                    self._cv.release()
                    try:
                        self._refresh_in_background()
                    finally:
                        self._cv.acquire()

    def _release(self, node: _Node) -> None:
        with self._cv:
            node.in_flight -= 1
            self._cv.notify_all()

    # -- grading -----------------------------------------------------------------------------
    def _options(self, node: _Node) -> dict[str, Any]:
        opts: dict[str, Any] = {"max_retries": 0, "name": "perfgrade-grade",
                                "scheduling_strategy": self._affinity(node.node_id, soft=False)}
        if node.cpus_per_slot:
            opts["num_cpus"] = node.cpus_per_slot
        else:
            opts.update(num_cpus=0, resources={self.resource: 1})
        return opts

    def _attempt(self, node: _Node, request: dict[str, Any], budget_s: float,
                 stop: threading.Event | None) -> _Outcome:
        ray = self._ray
        ref = self._run.options(**self._options(node)).remote(request)
        deadline = time.monotonic() + budget_s
        while True:
            ready, _ = ray.wait([ref], timeout=0.5)
            if ready:
                break
            if stop is not None and stop.is_set():
                self._cancel(ref)
                return _Outcome("stopped", "interrupted")
            if time.monotonic() > deadline:
                self._cancel(ref)
                return _Outcome("infra", f"no answer from node {node.name} within {budget_s:.0f}s")
        try:
            out = ray.get(ref)
        except ray.exceptions.RayTaskError as exc:  # our own code failed there (not importable, ...)
            self._mark(node, "unusable", f"the grading task failed there: {_short(exc.cause or exc)}")
            return _Outcome("node", f"node {node.name} cannot grade")
        except ray.exceptions.RayError as exc:  # node died, worker crashed, unschedulable, result lost
            if not self._alive(node.node_id) or isinstance(exc, _unschedulable(ray)):
                self._mark(node, "lost", type(exc).__name__)
                self._refresh_in_background()
                return _Outcome("node", f"node {node.name} lost ({type(exc).__name__})")
            return _Outcome("infra", f"on node {node.name}: {type(exc).__name__}: {_short(exc)}")
        if "unusable" in out:
            self._mark(node, "unusable", out["unusable"])
            return _Outcome("node", f"node {node.name} cannot grade: {out['unusable']}")
        if "infra" in out:
            return _Outcome("infra", f"on node {node.name}: {out['infra']}")
        with self._cv:
            self.jobs_by_node[out["node_id"]] = self.jobs_by_node.get(out["node_id"], 0) + 1
        return _Outcome("done", results=out["results"])

    def grade(self, problem: Problem, items: list[tuple[str, str]], hidden: tuple[Vector, ...],
              limits: Limits, stop: threading.Event | None = None) -> list[tuple[Grade, list[str]]]:
        request = {
            "run_id": self.run_id, "context": self.context, "entry_point": problem.entry_point,
            "limits": limits.model_dump(mode="json"), "jobs": [[jid, src] for jid, src in items],
            "cases": [[v.id, v.args] for v in hidden],  # inputs only: expected values stay here
        }
        # a batch may need a second container for the jobs a crashing candidate kept from starting
        budget = 2 * limits.backstop_ceiling_s(len(hidden), len(items)) + TASK_GRACE_S
        notes: list[str] = []
        delay = 0.5
        results: list[dict[str, Any]] | None = None
        for attempt in range(1, self.attempts + 1):
            node = self._acquire(stop)
            if node is None:
                notes.append(f"attempt {attempt}: interrupted")
                break
            try:
                outcome = self._attempt(node, request, budget, stop)
            finally:
                self._release(node)
            if outcome.kind == "done":
                results = outcome.results
                break
            notes.append(f"attempt {attempt}: {outcome.detail}")
            if outcome.kind == "stopped":
                break
            log.warning("grading attempt %d/%d failed: %s", attempt, self.attempts, outcome.detail)
            if outcome.kind == "infra" and attempt < self.attempts:
                if stop is not None and stop.wait(delay):
                    break
                if stop is None:
                    time.sleep(delay)
                delay = min(8.0, delay * 2)
        if results is None or [r.get("job") for r in results] != [jid for jid, _ in items]:
            g = infra_grade("; ".join(notes[-2:]) or "no node answered", len(hidden))
            return [(g, notes) for _ in items]
        return [(grade_for(ExecResult.model_validate(r), hidden, problem), notes) for r in results]

    # -- housekeeping ------------------------------------------------------------------------
    def sweep(self) -> int:
        """Remove this run's containers on every node still in the cluster."""
        ray = self._ray
        if not ray.is_initialized():
            return 0
        refs = [self._sweep.options(num_cpus=0, max_retries=0, name="perfgrade-sweep",
                                    scheduling_strategy=self._affinity(n.node_id, soft=False)).remote(self.run_id)
                for n in self._nodes.values() if n.state in ("ready", "probing", "unusable") and self._alive(n.node_id)]
        total = 0
        for ref in refs:
            try:
                total += ray.get(ref, timeout=120)
            except Exception:  # noqa: BLE001 - best effort: leftovers carry labels for the next sweep
                pass
        return total

    def nodes(self) -> list[dict[str, Any]]:
        with self._cv:
            return [n.to_json() for n in self._nodes.values()]

    def in_flight(self) -> dict[str, int]:
        """Jobs in flight per node id (for progress and tests)."""
        with self._cv:
            return {n.node_id: n.in_flight for n in self._nodes.values()}

    def describe(self) -> dict[str, Any]:
        """What the run manifest records about the engine and the cluster."""
        return {"name": self.name, "address": self.address, "ray_version": self._ray.__version__,
                "slots": self.slots, "slot_resource": self.resource, "attempts": self.attempts,
                "sandbox_context": self.context, "nodes": self.nodes()}


def _unschedulable(ray) -> tuple[type, ...]:
    cls = getattr(ray.exceptions, "TaskUnschedulableError", None)
    return (cls,) if cls is not None else ()
