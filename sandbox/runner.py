"""Run untrusted candidates in disposable, hardened Docker containers.

One request (one or more jobs) runs in one fresh container that is always destroyed. The host
writes the request on the container's stdin, reads the channel on its stdout with a byte cap and
a wall-clock backstop, and removes the container. Every Docker call has a timeout. The only
exceptions raised are :mod:`sandbox.errors` infrastructure errors; everything the candidate does
comes back as :class:`ExecResult` data.
"""

from __future__ import annotations

import json
import os
import secrets
import select
import socket
import struct
import threading
import time
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field

import docker
import docker.errors
from docker.types import LogConfig, Ulimit

from .cgroups import CgroupLocator, HostCgroup, MemorySnapshot, RunQueueWait, memory_evidence
from .channel import ChannelAssembler
from .engine import (
    API_ERRORS,
    API_TIMEOUT_S,
    LABEL_MANAGED,
    LABEL_OWNER,
    LABEL_RUN,
    connect,
    engine_identity,
    owner_tag,
    short_error,
    sweep,
)
from .errors import ImageMissing, InfrastructureError
from .models import HOST_WAIT_SHARE, ContainerInfo, ExecResult, Job, Limits, StopInfo
from .runtimes import extra_ulimits, host_pids_limit, is_gvisor, normalize_runtime

# The container starts as root with these capabilities only (and no-new-privileges): the
# supervisor needs them to start each worker under uid 65534 (SETUID, SETGID) and to kill every
# process of that uid between samples (KILL). A worker holds no capability at all.
SUPERVISOR_CAPS = ["SETUID", "SETGID", "KILL"]
SUPERVISOR_USER = "0:0"

STDERR_KEEP = 8192
STDERR_CAP = 1 << 20
DRAIN_BYTES = 64 << 20
DRAIN_SECONDS = 10.0
# a stop that the kernel's memory records turn into a memory verdict (the job ran out of time, was
# killed, or took the container down while its memory was at the limit); a voluntary exit, an
# output flood or a protocol violation stays what it is
POST_MORTEM_EVENTS_S = 1.0
MEMORY_UPGRADABLE = frozenset({"cpu_time", "wall_time", "signal", "harness"})
# under gVisor the host relays the container's CPU time and memory use to the supervisor this
# often (the Sentry's own CPU clock counts the time the host took its threads away)
TICK_S = 0.02
WAIT_READ_S = 0.25  # how often the backstop reads the run-queue wait of the container's threads


class _MemoryWatch:
    """The host's reading of one container's memory cgroup at each sync point."""

    def __init__(self, cgroup: HostCgroup | None) -> None:
        self.cgroup = cgroup
        self.ticking = False  # relay the cgroup's CPU time and memory use to the supervisor (gVisor)
        self.wait = RunQueueWait()
        self.base: MemorySnapshot | None = None
        self.evidence: dict[int, str] = {}  # job index -> why the kernel says memory ran out

    def mark(self, job_index: int | None) -> None:
        """Read the records; attribute what changed to job_index; start the next job's window."""
        if self.cgroup is None:
            return
        now = self.cgroup.snapshot()
        if now is None:
            return
        if job_index is not None and self.base is not None:
            why = memory_evidence(self.base, now, self.cgroup.version)
            if why:
                self.evidence[job_index] = why
        if self.cgroup.reset_peak():
            now = self.cgroup.snapshot() or now
        self.base = now


@dataclass
class _Stream:
    """Demultiplexed reading of an attach socket (stdout = channel, stderr = supervisor)."""

    sock: socket.socket
    buf: bytearray = field(default_factory=bytearray)
    channel: bytearray = field(default_factory=bytearray)
    channel_bytes: int = 0
    stderr_bytes: int = 0
    stderr_tail: bytearray = field(default_factory=bytearray)
    eof: bool = False

    def pump(self, deadline: float, wait: float = 5.0) -> bool:
        """Read once (blocking until data, ``wait`` or the deadline). False at EOF or deadline."""
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return False
        self.sock.settimeout(min(remaining, wait))
        try:
            data = self.sock.recv(1 << 16)
        except socket.timeout:
            return True
        if not data:
            self.eof = True
            return False
        self.buf += data
        while len(self.buf) >= 8:
            kind = self.buf[0]
            (size,) = struct.unpack(">I", self.buf[4:8])
            if len(self.buf) < 8 + size:
                break
            payload = bytes(self.buf[8 : 8 + size])
            del self.buf[: 8 + size]
            if kind == 1:
                self.channel += payload
                self.channel_bytes += size
            elif kind == 2:
                self.stderr_bytes += size
                self.stderr_tail += payload
                if len(self.stderr_tail) > STDERR_KEEP:
                    del self.stderr_tail[: len(self.stderr_tail) - STDERR_KEEP]
        return True

    def lines(self) -> Iterable[bytes]:
        while True:
            nl = self.channel.find(b"\n")
            if nl < 0:
                return
            line = bytes(self.channel[:nl])
            del self.channel[: nl + 1]
            yield line


def _drain_and_close(sock: socket.socket) -> None:
    """Keep reading (bounded) so the engine is never blocked on an unread stream, then close."""

    def run() -> None:
        end = time.monotonic() + DRAIN_SECONDS
        total = 0
        try:
            while time.monotonic() < end and total < DRAIN_BYTES:
                sock.settimeout(max(0.05, end - time.monotonic()))
                try:
                    data = sock.recv(1 << 16)
                except socket.timeout:
                    break
                if not data:
                    break
                total += len(data)
        except OSError:
            pass
        finally:
            try:
                sock.close()
            except OSError:
                pass

    threading.Thread(target=run, name="sandbox-drain", daemon=True).start()


def _send_tick(watch: _MemoryWatch, sock: socket.socket, token: str, *, block: bool) -> None:
    """Tell the supervisor the container's CPU time, memory use and run-queue wait as the host
    kernel counts them (under gVisor, whose Sentry cannot see them).

    Without ``block`` a tick is skipped when the stream cannot take it at once (the next one
    carries the same news); a line is never left half written.
    """
    cgroup = watch.cgroup
    assert cgroup is not None
    cpu = cgroup.cpu_ns()
    mem = cgroup.usage()
    if cpu is None or mem is None:
        return
    wait = watch.wait.sample(cgroup)
    data = f"{token}:t:{cpu}:{mem[0]}:{mem[1]}:{wait}\n".encode()
    try:
        if not block:
            _, writable, _ = select.select([], [sock], [], 0)
            if not writable:
                return
            sent = sock.send(data, socket.MSG_DONTWAIT)
            data = data[sent:]
        if data:
            sock.sendall(data)
    except (BlockingIOError, InterruptedError):
        if not block:
            return
    except OSError:
        pass  # the container is gone: the stream says the rest


class Sandbox:
    """Runs jobs in fresh hardened containers of one image.

    ``run_id`` labels every container so that a run's leftovers can be swept; containers also
    carry the owner process, so containers orphaned by a killed grader are found at next start.
    """

    def __init__(
        self,
        image: str,
        *,
        run_id: str | None = None,
        client: docker.APIClient | None = None,
        api_timeout: float = API_TIMEOUT_S,
        runtime: str | None = None,
    ) -> None:
        self.image = image
        self.run_id = run_id or uuid.uuid4().hex[:12]
        self.client = client or connect(api_timeout)
        self.owner = owner_tag()
        self.labels = {LABEL_MANAGED: "1", LABEL_RUN: self.run_id, LABEL_OWNER: self.owner}
        # the daemon answering on DOCKER_HOST; a change means it restarted under a running container
        self.engine_id = engine_identity()
        # "runc" (the engine's default) or "runsc" for gVisor (bin/setup --runsc registers it);
        # see sandbox.runtimes.require_runtime for the check a caller makes first
        self.runtime = normalize_runtime(runtime or os.environ.get("PERFGRADE_DOCKER_RUNTIME"))
        # the host reads each container's memory cgroup where it can see it (a local engine)
        self.cgroups = CgroupLocator() if self.engine_id is not None else None
        self.runtime_label = self.runtime or "default"

    # -- public API ------------------------------------------------------------------------
    def run(self, job: Job, limits: Limits | None = None) -> ExecResult:
        """Run one candidate on its cases in a fresh container."""
        return self.run_many([job], limits)[0]

    def run_many(self, jobs: list[Job], limits: Limits | None = None) -> list[ExecResult]:
        """Run several candidates one after another in one fresh container (batch mode).

        Each job gets a fresh worker process; between jobs every leftover process is killed, the
        scratch space, /dev/shm and /dev/mqueue wiped and every System V IPC object removed (a
        container that cannot be made clean is retired: the rest run in a fresh one), and the
        host reads the kernel's memory records of the container for each job on its own.
        Results come back in job order. If a candidate
        takes the whole container down (kills the supervisor, floods the channel), it gets the
        verdict it earned and the jobs that had not started yet run again in a fresh container,
        so no sample's result depends on which other samples shared its container.
        """
        if not jobs:
            return []
        ids = [j.id for j in jobs]
        if len(set(ids)) != len(ids):
            raise ValueError("job ids must be unique within a request")
        limits = limits or Limits()
        done: dict[str, ExecResult] = {}
        pending = list(jobs)
        while pending:
            results, started = self._execute(pending, limits)
            for job, res in zip(pending, results):
                if job.id in started:
                    done[job.id] = res
            rest = [j for j in pending if j.id not in started]
            if len(rest) == len(pending):
                raise InfrastructureError("the container ended before the harness started any job")
            pending = rest
        return [done[j.id] for j in jobs]

    @staticmethod
    def _request(jobs: list[Job], limits: Limits, token: str | None = None, key: str | None = None) -> bytes:
        return json.dumps(
            {
                "v": 1,
                "limits": limits.harness_limits(),
                **({"sync": token} if token else {}),
                **({"key": key} if key else {}),
                "jobs": [
                    {"job": j.id, "source": j.source, "entry_point": j.entry_point,
                     "cases": [{"id": c.id, "args": c.args} for c in j.cases]}
                    for j in jobs
                ],
            },
            separators=(",", ":"),
        ).encode() + b"\n"

    def sweep(self) -> int:
        """Remove every container of this run. Returns how many were removed."""
        return sweep(self.client, {LABEL_RUN: self.run_id})

    def close(self) -> None:
        try:
            self.client.close()
        except Exception:  # noqa: BLE001 - closing is best effort
            pass

    # -- internals -------------------------------------------------------------------------
    def _host_config(self, limits: Limits) -> dict:
        mem = f"{limits.memory_mb}m"
        return self.client.create_host_config(
            network_mode="none",
            cap_drop=["ALL"],
            cap_add=SUPERVISOR_CAPS,
            security_opt=["no-new-privileges"],
            pids_limit=host_pids_limit(self.runtime, limits.pids),
            mem_limit=mem,
            memswap_limit=mem,
            nano_cpus=int(limits.cpus * 1e9),
            read_only=True,
            tmpfs={
                "/scratch": f"rw,nosuid,nodev,noexec,size={limits.scratch_mb}m,mode=1777",
                # gVisor mounts a writable tmpfs at /tmp when the spec has none; a read-only one
                # keeps /tmp as unwritable as the rest of the root under every runtime
                "/tmp": "ro,nosuid,nodev,noexec,size=64k",
            },
            shm_size=f"{max(1, min(limits.scratch_mb, 64))}m",
            ulimits=[
                Ulimit(name="nofile", soft=limits.nofile, hard=limits.nofile),
                Ulimit(name="fsize", soft=limits.fsize_mb << 20, hard=limits.fsize_mb << 20),
                Ulimit(name="core", soft=0, hard=0),
                *(Ulimit(name=n, soft=v, hard=v) for n, v in extra_ulimits(self.runtime, limits.pids)),
            ],
            init=True,
            ipc_mode="private",
            log_config=LogConfig(type="none"),
            auto_remove=False,
            privileged=False,
            runtime=self.runtime,
        )

    def _create(self, limits: Limits) -> str:
        try:
            created = self.client.create_container(
                self.image,
                user=SUPERVISOR_USER,
                stdin_open=True,  # with detach=False this also sets StdinOnce
                detach=False,
                tty=False,
                network_disabled=True,
                hostname="sandbox",
                working_dir="/scratch",
                labels=self.labels,
                host_config=self._host_config(limits),
            )
        except docker.errors.ImageNotFound:
            raise ImageMissing(f"sandbox image {self.image} is not present") from None
        except API_ERRORS as exc:
            raise InfrastructureError(f"creating a container failed: {short_error(exc)}") from exc
        return created["Id"]

    def _remove(self, cid: str) -> None:
        for attempt in range(3):
            try:
                self.client.remove_container(cid, force=True)
                return
            except docker.errors.NotFound:
                return
            except API_ERRORS:
                if attempt == 2:
                    return  # left for the sweep: it carries our labels
                time.sleep(0.2 * (attempt + 1))

    def _execute(self, jobs: list[Job], limits: Limits) -> tuple[list[ExecResult], set[str]]:
        """One container for one request. Returns the results and the ids of the jobs it started."""
        token = uuid.uuid4().hex
        key = secrets.token_hex(16)  # MAC key of the boundary records (see ChannelAssembler)
        payload = self._request(jobs, limits, token, key)
        backstop = limits.backstop_s(max(len(j.cases) for j in jobs), len(jobs))
        # every record is bounded: a value, an error (message + traceback) or a summary
        channel_cap = (64 << 10) + sum(len(j.cases) * (limits.value_bytes + (32 << 10)) + (128 << 10) for j in jobs)
        t0 = time.monotonic()
        wall_start = time.time()
        cid = self._create(limits)
        sock = None
        try:
            try:
                raw = self.client.attach_socket(
                    cid, params={"stdin": 1, "stdout": 1, "stderr": 1, "stream": 1}
                )
                sock = getattr(raw, "_sock", raw)
                self.client.start(cid)
            except API_ERRORS as exc:
                raise InfrastructureError(f"starting the container failed: {short_error(exc)}") from exc
            deadline = t0 + backstop
            try:
                sock.settimeout(max(1.0, deadline - time.monotonic()))
                sock.sendall(payload)  # stdin stays open: the host answers the sync points on it
            except OSError as exc:
                raise InfrastructureError(f"writing the request failed: {short_error(exc)}") from exc
            stream = _Stream(sock=sock)
            assembler = ChannelAssembler(jobs, key=key.encode())
            watch = _MemoryWatch(None)
            watch.ticking = is_gvisor(self.runtime)
            host_stop: StopInfo | None = None
            last_tick = 0.0
            last_wait = 0.0
            waited_s = 0.0
            try:
                while not assembler.ended:
                    ticking = watch.ticking and watch.cgroup is not None
                    now = time.monotonic()
                    if watch.cgroup is not None and (now - last_wait >= WAIT_READ_S or now >= deadline):
                        # the backstop does not count time the container's threads waited for a
                        # CPU (a busy host), as the supervisor's wall budgets do not
                        waited_s = min(watch.wait.sample(watch.cgroup) / 1e9, (now - t0) * HOST_WAIT_SHARE)
                        deadline = t0 + backstop + waited_s
                        last_wait = now
                    alive = stream.pump(deadline, TICK_S if ticking else 5.0)
                    for line in stream.lines():
                        assembler.feed_line(line)
                        if assembler.pending_syncs:
                            self._answer_syncs(assembler, watch, cid, sock, token)
                    if ticking and time.monotonic() - last_tick >= TICK_S:
                        _send_tick(watch, sock, token, block=False)
                        last_tick = time.monotonic()
                    if assembler.protocol_error is not None:
                        break
                    if stream.channel_bytes > channel_cap or len(stream.channel) > channel_cap:
                        host_stop = StopInfo(reason="output", phase="container", by_host=True,
                                             detail=f"channel exceeded {channel_cap} bytes")
                        break
                    if stream.stderr_bytes > STDERR_CAP:
                        host_stop = StopInfo(reason="output", phase="container", by_host=True,
                                             detail=f"container stderr exceeded {STDERR_CAP} bytes")
                        break
                    if not alive:
                        if not stream.eof:
                            host_stop = StopInfo(
                                reason="wall_time", phase="container", by_host=True,
                                detail=f"container ran past the {backstop:.1f}s backstop"
                                + (f" ({waited_s:.1f}s more of waiting for a CPU not counted)" if waited_s >= 0.1 else ""),
                            )
                        break
            except OSError as exc:
                raise InfrastructureError(f"the container stream broke: {short_error(exc)}") from exc

            if host_stop is not None or assembler.protocol_error is not None:
                # the container is still there: what did the kernel record for the job in progress?
                watch.mark(assembler.current_index())
            exit_code: int | None = None
            oom = False
            if not assembler.ended and host_stop is None and assembler.protocol_error is None:
                # the stream ended early: learn from the engine how the container died
                exit_code, oom = self._post_mortem(cid, wall_start)
                if oom:
                    host_stop = StopInfo(reason="memory", phase="container", by_host=True,
                                         detail="the container was killed by the out-of-memory killer",
                                         exit_code=exit_code)
                else:
                    host_stop = StopInfo(
                        reason="harness", phase="container", by_host=True, exit_code=exit_code,
                        detail=f"the container exited (code {exit_code}) before the harness finished",
                    )
            results = assembler.results(host_stop)
            info = ContainerInfo(
                exit_code=exit_code,
                oom_killed=oom,
                host_wall_s=round(time.monotonic() - t0, 6),
                channel_bytes=stream.channel_bytes,
                stderr_bytes=stream.stderr_bytes,
                stderr_tail=bytes(stream.stderr_tail).decode("utf-8", "backslashreplace"),
                runtime=self.runtime_label,
                host_cgroup=watch.cgroup is not None,
            )
            out = []
            for i, r in enumerate(results):
                why = watch.evidence.get(i)
                if why and r.stop is not None and r.stop.reason in MEMORY_UPGRADABLE:
                    r = r.model_copy(update={"stop": r.stop.model_copy(update={
                        "reason": "memory",
                        "detail": f"{why} (read on the host); it then stopped: {r.stop.reason}: {r.stop.detail}"[:500],
                    })})
                out.append(r.model_copy(update={"container": info}))
            return out, assembler.started()
        finally:
            if sock is not None:
                _drain_and_close(sock)
            self._remove(cid)

    def _answer_syncs(self, assembler: ChannelAssembler, watch: _MemoryWatch, cid: str,
                      sock: socket.socket, token: str) -> None:
        """Read the container's memory records at each sync point, then let the harness go on."""
        while assembler.pending_syncs:
            n = assembler.pending_syncs.pop(0)
            if n == 0:
                watch.cgroup = self._host_cgroup(cid)
                if watch.ticking and watch.cgroup is not None:
                    # the first tick goes before the first answer: every job runs on the host's clock
                    _send_tick(watch, sock, token, block=True)
            watch.mark(n - 1 if n > 0 else None)
            try:
                sock.sendall(f"{token}:{n}\n".encode())
            except OSError:
                pass  # the harness stops waiting on its own; the stream tells the rest

    def _host_cgroup(self, cid: str) -> HostCgroup | None:
        if self.cgroups is None or not self.cgroups.available:
            return None

        def pid() -> int | None:
            return (self.client.inspect_container(cid).get("State") or {}).get("Pid")

        return self.cgroups.locate(cid, pid)

    def _post_mortem(self, cid: str, since: float) -> tuple[int | None, bool]:
        """Exit code and OOM flag of a container whose stream ended early.

        Raises InfrastructureError when the container died for reasons outside the candidate's
        control, which nothing inside the container can fake: the engine is unreachable or lost
        the container, the engine restarted (its process changed), or someone outside sent the
        container a signal through the engine (a daemon shutdown, an operator's docker stop).
        """
        try:
            state = self.client.wait(cid, timeout=10)
            code = state.get("StatusCode")
            info = self.client.inspect_container(cid)
            # the engine's "oom" event relays the kernel's OOM notification for the container's
            # cgroup; under gVisor it can come a moment after the container died (and then the
            # inspect's OOMKilled stays false), so the query waits a second for late events
            events = list(self.client.events(
                since=int(since) - 1, until=f"{time.time() + POST_MORTEM_EVENTS_S:.3f}", decode=True,
                filters={"container": cid, "type": "container", "event": ["kill", "oom"]}))
        except API_ERRORS as exc:
            raise InfrastructureError(f"the engine lost the container: {short_error(exc)}") from exc
        now_id = engine_identity()
        if self.engine_id is not None and now_id != self.engine_id:
            self.engine_id = now_id
            raise InfrastructureError("the Docker engine restarted while the container ran")
        kills = [e for e in events if (e.get("Action") or e.get("status")) == "kill"]
        ooms = [e for e in events if (e.get("Action") or e.get("status")) == "oom"]
        if kills:
            sig = (kills[0].get("Actor") or {}).get("Attributes", {}).get("signal", "?")
            raise InfrastructureError(f"the container was killed through the engine (signal {sig}), not by its code")
        st = info.get("State") or {}
        if st.get("Error"):
            raise InfrastructureError(f"the engine reported an error: {st['Error'][:300]}")
        return code, bool(st.get("OOMKilled")) or bool(ooms)


__all__ = ["Sandbox"]
