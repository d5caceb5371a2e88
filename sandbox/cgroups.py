"""What the kernel recorded about a container's memory, read on the host.

A memory verdict must not depend on which timer fired first. When a candidate pushes its
container to the memory limit, the kernel may take seconds of reclaim (page cache thrashing,
more so on a busy machine) before its out-of-memory killer fires, and the harness's CPU or wall
budget can run out first. So the sandbox asks the kernel instead: the container's memory cgroup
records whether usage reached the limit and whether the OOM killer ran, and the host reads those
records for that container's cgroup (the candidate cannot write them, and it cannot reach the
host's view of them at all).

What is read:

* cgroup v2: ``memory.events`` (``max``: usage hit ``memory.max``; ``oom``; ``oom_kill``) and
  ``memory.peak`` where the kernel has it;
* cgroup v1: ``memory.oom_control`` (``oom_kill`` counter, ``under_oom``), ``memory.failcnt``
  and ``memory.memsw.failcnt`` (some kernels no longer maintain them on v1: 6.x leaves them at
  0), and the high-water mark ``memory.max_usage_in_bytes`` against ``memory.limit_in_bytes``
  (the host resets the mark between the samples of a batch when it may write it).

The same files exist for runc and gVisor containers: runsc puts its Sentry and gofer in the
container's host cgroup with the container's limits, so a candidate's memory is charged there
too (gVisor's own view inside the sandbox has no cgroup files at all).

Fallback: when the host cannot see the container's cgroup (a remote engine, a grader inside a
container, another cgroup layout), :func:`locate` returns None and the sandbox relies on the
harness's reading of the same counters from inside the container (runc) and on the engine's
``OOMKilled`` record of a container that died.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass

CGROUP_ROOT = "/sys/fs/cgroup"
# usage within this many bytes of the limit counts as "reached the limit" (the kernel charges in
# batches of 64 pages and refuses the charge that would cross the limit)
LIMIT_MARGIN = 2 << 20


def cgroup_version(root: str = CGROUP_ROOT) -> int | None:
    """2 when the memory controller is on the unified hierarchy, 1 on v1 (or hybrid), else None."""
    if os.path.isfile(os.path.join(root, "memory", "memory.usage_in_bytes")):
        return 1
    try:
        with open(os.path.join(root, "cgroup.controllers")) as f:
            if "memory" in f.read().split():
                return 2
    except OSError:
        pass
    return None


def _read_int(path: str) -> int | None:
    try:
        with open(path, "rb") as f:
            text = f.read().strip()
    except OSError:
        return None
    if text == b"max":
        return None
    try:
        return int(text)
    except ValueError:
        return None


def _read_keys(path: str) -> dict[str, int] | None:
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return None
    out: dict[str, int] = {}
    for line in data.splitlines():
        parts = line.split()
        if len(parts) == 2:
            try:
                out[parts[0].decode()] = int(parts[1])
            except ValueError:
                pass
    return out


@dataclass(frozen=True)
class MemorySnapshot:
    """The kernel's memory records of one cgroup at one moment."""

    oom_kills: int = 0  # processes the OOM killer killed (v1 oom_control oom_kill, v2 events oom_kill)
    ooms: int = 0  # v2 events oom; v1 under_oom (1 while the cgroup is out of memory)
    limit_hits: int = 0  # v2 events max; v1 failcnt + memsw.failcnt
    peak: int | None = None  # high-water mark of usage (v1 max_usage_in_bytes, v2 memory.peak)
    limit: int | None = None  # the smaller of the memory and memory+swap limits

    def to_json(self) -> dict:
        return {"oom_kills": self.oom_kills, "ooms": self.ooms, "limit_hits": self.limit_hits,
                "peak": self.peak, "limit": self.limit}


def memory_evidence(before: MemorySnapshot, after: MemorySnapshot, version: int) -> str | None:
    """Why the kernel's records say the memory limit was reached between two snapshots, or None.

    ``before`` is taken when the sample starts (after the high-water mark was reset, where it
    could be); a mark already at the limit then says nothing about this sample.
    """
    if after.oom_kills > before.oom_kills:
        return f"the kernel's out-of-memory killer ran in the container (oom_kill +{after.oom_kills - before.oom_kills})"
    if version == 2 and after.ooms > before.ooms:
        return f"the container's memory cgroup ran out of memory (oom +{after.ooms - before.ooms})"
    if version == 1 and after.ooms:
        return "the container's memory cgroup is out of memory (under_oom)"
    if after.limit_hits > before.limit_hits:
        return f"memory use reached the limit (the kernel counted {after.limit_hits - before.limit_hits} hits)"
    if after.limit and after.peak is not None and after.peak >= after.limit - LIMIT_MARGIN:
        if before.peak is None or before.peak < after.limit - LIMIT_MARGIN:
            return f"memory use reached the {after.limit >> 20} MiB limit (high-water mark {after.peak >> 20} MiB)"
    return None


class HostCgroup:
    """One container's memory cgroup (and its CPU accounting), as the host sees it."""

    def __init__(self, path: str, version: int, cpu_path: str | None = None) -> None:
        self.path = path
        self.version = version
        # v1: the cpuacct hierarchy's directory of the container; v2: the same directory
        self.cpu_path = cpu_path if version == 1 else (cpu_path or path)

    def _f(self, name: str) -> str:
        return os.path.join(self.path, name)

    def snapshot(self) -> MemorySnapshot | None:
        """The current records, or None when the cgroup is gone (the container ended)."""
        if self.version == 2:
            events = _read_keys(self._f("memory.events"))
            if events is None:
                return None
            return MemorySnapshot(
                oom_kills=events.get("oom_kill", 0), ooms=events.get("oom", 0), limit_hits=events.get("max", 0),
                peak=_read_int(self._f("memory.peak")),
                limit=_min(_read_int(self._f("memory.max")), None),
            )
        oom = _read_keys(self._f("memory.oom_control"))
        if oom is None:
            return None
        fail = (_read_int(self._f("memory.failcnt")) or 0) + (_read_int(self._f("memory.memsw.failcnt")) or 0)
        return MemorySnapshot(
            oom_kills=oom.get("oom_kill", 0), ooms=oom.get("under_oom", 0), limit_hits=fail,
            peak=_read_int(self._f("memory.max_usage_in_bytes")),
            limit=_min(_read_int(self._f("memory.limit_in_bytes")), _read_int(self._f("memory.memsw.limit_in_bytes"))),
        )

    def usage(self) -> tuple[int, int] | None:
        """(memory use now, limit) in bytes, or None when the cgroup is gone or has no limit."""
        if self.version == 2:
            used, limit = _read_int(self._f("memory.current")), _min(_read_int(self._f("memory.max")), None)
        else:
            used = _read_int(self._f("memory.usage_in_bytes"))
            limit = _min(_read_int(self._f("memory.limit_in_bytes")), _read_int(self._f("memory.memsw.limit_in_bytes")))
        if used is None or limit is None:
            return None
        return used, limit

    def cpu_ns(self) -> int | None:
        """CPU time of every process of the container, in nanoseconds, or None."""
        if self.cpu_path is None:
            return None
        if self.version == 1:
            return _read_int(os.path.join(self.cpu_path, "cpuacct.usage"))
        keys = _read_keys(os.path.join(self.cpu_path, "cpu.stat"))
        if not keys or "usage_usec" not in keys:
            return None
        return keys["usage_usec"] * 1000

    def threads(self, cap: int = 4096) -> list[int]:
        """Host thread ids of the container's processes (at most ``cap``)."""
        if self.cpu_path is None:
            return []
        name = "tasks" if self.version == 1 else "cgroup.threads"
        try:
            with open(os.path.join(self.cpu_path, name), "rb") as f:
                data = f.read(cap * 12)
        except OSError:
            return []
        return [int(t) for t in data.split()[:cap] if t.isdigit()]

    def reset_peak(self) -> bool:
        """Reset the high-water mark to the current usage (needs write access: root). True if done.

        On v2 (6.12 and later) a write resets only the writer's own view of ``memory.peak``, so
        the mark read next stays the global one; :func:`memory_evidence` then ignores a mark that
        was already at the limit, and ``memory.events`` (counters) still tells each sample apart.
        """
        name = "memory.max_usage_in_bytes" if self.version == 1 else "memory.peak"
        try:
            fd = os.open(self._f(name), os.O_WRONLY | os.O_TRUNC)
        except OSError:
            return False
        try:
            os.write(fd, b"0")
            return True
        except OSError:
            return False
        finally:
            os.close(fd)


class RunQueueWait:
    """Time the container's host threads spent runnable but waiting for a CPU (nanoseconds).

    The sum over the container's threads of the kernel's ``run_delay`` (``/proc/<tid>/schedstat``),
    kept monotonic as threads come and go. Under gVisor there is no schedstat inside the
    sandbox; this is the host's view of the same thing, for the wall budget (time spent waiting
    for a CPU on a busy host is not held against a candidate).
    """

    def __init__(self) -> None:
        self.total = 0
        self._last: dict[int, int] = {}

    def sample(self, cgroup: HostCgroup) -> int:
        seen: dict[int, int] = {}
        for tid in cgroup.threads():
            try:
                with open(f"/proc/{tid}/schedstat", "rb") as f:
                    delay = int(f.read().split()[1])
            except (OSError, ValueError, IndexError):
                continue
            prev = self._last.get(tid, 0)
            if delay > prev:
                self.total += delay - prev
            seen[tid] = delay
        self._last = seen
        return self.total


def _min(a: int | None, b: int | None) -> int | None:
    vals = [v for v in (a, b) if v is not None and v < (1 << 60)]
    return min(vals) if vals else None


class CgroupLocator:
    """Finds containers' memory cgroups on this host, learning the engine's layout once.

    Known layouts are tried first (cgroupfs driver: ``docker/<id>``; systemd driver:
    ``system.slice/docker-<id>.scope``); otherwise the container's main process is asked for its
    cgroup (``/proc/<pid>/cgroup``) and the parent directory is remembered for later containers.
    """

    def __init__(self, root: str = CGROUP_ROOT) -> None:
        self.root = root
        self.version = cgroup_version(root)
        self.base = os.path.join(root, "memory") if self.version == 1 else root
        self._learned: list[tuple[str, str]] = []  # (parent dir, name template)

    @property
    def available(self) -> bool:
        return self.version is not None

    def _candidates(self, cid: str) -> list[str]:
        layouts = self._learned + [("docker", "{id}"), ("system.slice", "docker-{id}.scope")]
        return [os.path.join(self.base, parent, tmpl.format(id=cid)) for parent, tmpl in layouts]

    def locate(self, cid: str, pid: Callable[[], int | None] | None = None) -> HostCgroup | None:
        """The container's memory cgroup, or None when this host cannot see it."""
        if self.version is None or not cid:
            return None
        for path in self._candidates(cid):
            if os.path.isfile(os.path.join(path, "memory.oom_control" if self.version == 1 else "memory.events")):
                return HostCgroup(path, self.version, self._cpu_dir(os.path.relpath(path, self.base)))
        if pid is None:
            return None
        try:
            p = pid()
        except Exception:  # noqa: BLE001 - a failed lookup only means no host evidence
            return None
        rel = _proc_cgroup(p, self.version) if p else None
        if rel is None:
            return None
        path = os.path.join(self.base, rel.lstrip("/"))
        marker = "memory.oom_control" if self.version == 1 else "memory.events"
        if not os.path.isfile(os.path.join(path, marker)):
            return None
        parent, name = os.path.split(rel.lstrip("/"))
        if cid in name:
            tmpl = name.replace(cid, "{id}")
            if (parent, tmpl) not in self._learned:
                self._learned.insert(0, (parent, tmpl))
        return HostCgroup(path, self.version, self._cpu_dir(rel.lstrip("/")))

    def _cpu_dir(self, rel: str) -> str | None:
        """The container's CPU accounting directory (v1: the cpuacct hierarchy, same layout)."""
        if self.version == 2:
            return os.path.join(self.base, rel)
        for hierarchy in ("cpuacct", "cpu,cpuacct", "cpuacct,cpu"):
            path = os.path.join(self.root, hierarchy, rel)
            if os.path.isfile(os.path.join(path, "cpuacct.usage")):
                return path
        return None


def _proc_cgroup(pid: int, version: int) -> str | None:
    try:
        with open(f"/proc/{pid}/cgroup") as f:
            lines = f.read().splitlines()
    except OSError:
        return None
    for line in lines:
        num, _, rest = line.partition(":")
        controllers, _, path = rest.partition(":")
        if version == 1 and "memory" in controllers.split(","):
            return path
        if version == 2 and num == "0" and controllers == "":
            return path
    return None


__all__ = ["CgroupLocator", "HostCgroup", "MemorySnapshot", "RunQueueWait", "cgroup_version", "memory_evidence"]
