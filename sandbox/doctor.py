"""Health checks of the sandbox: the engine, the image, and a live probe of the isolation.

The probe is itself a candidate: it runs through the same path as any model-written code and
reports what it can see and do from inside. Each failed check carries the fix.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable
from dataclasses import dataclass

from . import image
from .engine import connect
from .errors import SandboxError
from .models import Case, Job, Limits
from .runner import Sandbox
from .runtimes import candidate_nproc, is_gvisor, require_runtime

PROBE_SOURCE = r'''
import errno, os, resource, signal, socket

def _read(path):
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return None

def _writable(path):
    try:
        with open(path, "a"):
            pass
        return True
    except OSError:
        return False

def probe():
    facts = {"uid": os.getuid(), "euid": os.geteuid(), "gid": os.getgid()}
    status = _read("/proc/self/status") or ""
    for line in status.splitlines():
        key, _, value = line.partition(":")
        if key in ("CapEff", "CapPrm", "CapBnd", "CapAmb", "NoNewPrivs", "Seccomp"):
            facts[key] = value.strip()
    try:
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.settimeout(1.0)
        s.connect(("1.1.1.1", 53))
        facts["network"] = "connected"
    except OSError as exc:
        facts["network"] = errno.errorcode.get(exc.errno or 0, str(exc))
    dev = _read("/proc/net/dev") or ""
    facts["interfaces"] = sorted(l.split(":")[0].strip() for l in dev.splitlines()[2:] if ":" in l)
    facts["root_writable"] = _writable("/perfgrade-probe")
    facts["harness_writable"] = _writable("/opt/harness/pg_harness.py")
    facts["scratch_writable"] = _writable("/scratch/perfgrade-probe")
    facts["nofile"] = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    facts["fsize"] = resource.getrlimit(resource.RLIMIT_FSIZE)[1]
    facts["core"] = resource.getrlimit(resource.RLIMIT_CORE)[1]
    mem = _read("/sys/fs/cgroup/memory/memory.limit_in_bytes") or _read("/sys/fs/cgroup/memory.max")
    swap = _read("/sys/fs/cgroup/memory/memory.memsw.limit_in_bytes")
    pids = _read("/sys/fs/cgroup/pids/pids.max") or _read("/sys/fs/cgroup/pids.max")
    facts["memory_limit"] = int(mem) if mem and mem.isdigit() else mem
    facts["memsw_limit"] = int(swap) if swap and swap.isdigit() else swap
    facts["pids_limit"] = int(pids) if pids and pids.isdigit() else pids
    facts["pid1"] = (_read("/proc/1/comm") or "")
    facts["nproc"] = resource.getrlimit(resource.RLIMIT_NPROC)[1]
    meminfo = _read("/proc/meminfo") or ""
    for line in meminfo.splitlines():
        if line.startswith("MemTotal:"):
            facts["memtotal"] = int(line.split()[1]) * 1024
    try:
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        facts["nnp_prctl"] = libc.prctl(39, 0, 0, 0, 0)  # PR_GET_NO_NEW_PRIVS
        # system calls the seccomp filter refuses, each of which an unprivileged process may
        # otherwise make under gVisor (and the first two under runc on a recent kernel)
        blocked = {}
        for name, call in (("syslog", lambda: libc.klogctl(10, None, 0)),
                           ("unshare(CLONE_NEWUSER)", lambda: libc.unshare(0x10000000)),
                           ("keyctl", lambda: libc.syscall(250, 0, 0, 0, 0, 0)),
                           ("bpf", lambda: libc.syscall(321, 0, 0, 0))):
            ctypes.set_errno(0)
            rc = call()
            blocked[name] = "allowed" if rc >= 0 else errno.errorcode.get(ctypes.get_errno(), "?")
        facts["seccomp_probe"] = blocked
    except Exception as exc:
        facts["nnp_prctl"] = None
        facts["seccomp_probe"] = {"probe": f"failed: {exc}"}
    facts["kernel"] = os.uname().release
    facts["kernel_version"] = _read("/proc/version") or ""
    facts["supervisor_reached"] = _reach_supervisor()
    return facts

def _reach_supervisor():
    """What of the supervisor's (the parent's) and init's the worker could open, read or signal."""
    reached = []
    for pid in (1, os.getppid()):
        for what, fn in (("stdin", lambda: os.close(os.open(f"/proc/{pid}/fd/0", os.O_WRONLY | os.O_NONBLOCK))),
                         ("stdout", lambda: os.close(os.open(f"/proc/{pid}/fd/1", os.O_WRONLY | os.O_NONBLOCK))),
                         ("memory", lambda: open(f"/proc/{pid}/mem", "rb").read(1)),
                         ("limits", lambda: resource.prlimit(pid, resource.RLIMIT_NOFILE, (3, 3))),
                         ("signals", lambda: os.kill(pid, signal.SIGSTOP))):
            try:
                fn()
                reached.append(f"{what} of pid {pid}")
            except OSError:
                pass
    return reached
'''

BUSY_SOURCE = "def probe():\n    while True:\n        pass\n"
MEMORY_SOURCE = "def probe():\n    hog = []\n    while True:\n        hog.append(bytearray(8 << 20))\n"


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    detail: str
    fix: str = ""


def run_checks(limits: Limits | None = None, progress: Callable[[Check], None] | None = None,
               runtime: str | None = None) -> list[Check]:
    """Run every check; stop early only when a later check cannot run at all.

    ``runtime`` is the OCI runtime to prove ("runc", "runsc"; None: the engine's default).
    """
    limits = limits or Limits(case_cpu_s=1.0, load_cpu_s=5.0, memory_mb=128)
    checks: list[Check] = []

    def add(check: Check) -> None:
        checks.append(check)
        if progress:
            progress(check)

    try:
        client = connect(timeout=20)
        version = client.version()
        add(Check("engine", True, f"Docker {version.get('Version', '?')} (API {version.get('ApiVersion', '?')})"))
    except SandboxError as exc:
        add(Check("engine", False, str(exc), exc.hint))
        return checks
    try:
        in_effect = require_runtime(client, runtime)
        add(Check("runtime", True, f"{in_effect}" + (" (the engine's default)" if runtime is None else "")
                  + (" - gVisor" if is_gvisor(in_effect) else "")))
    except SandboxError as exc:
        add(Check("runtime", False, str(exc), exc.hint))
        return checks
    try:
        st = image.status(client)
    except SandboxError as exc:
        add(Check("image", False, str(exc), exc.hint))
        return checks
    if not st.current:
        add(Check("image", False, st.reason, "run `python -m grader sandbox build`"))
        return checks
    add(Check("image", True, f"{st.tag} from {st.base_ref}"))

    sandbox = Sandbox(st.tag or image.LATEST, client=client, run_id=f"doctor-{uuid.uuid4().hex[:8]}",
                      runtime=runtime)
    try:
        jobs = [
            Job(id="probe", source=PROBE_SOURCE, entry_point="probe", cases=[Case(id="c0", args=[])]),
            Job(id="busy", source=BUSY_SOURCE, entry_point="probe", cases=[Case(id="c0", args=[])]),
            Job(id="memory", source=MEMORY_SOURCE, entry_point="probe", cases=[Case(id="c0", args=[])]),
        ]
        results = sandbox.run_many(jobs, limits)
    except SandboxError as exc:
        add(Check("probe", False, f"the probe could not run: {exc}", exc.hint))
        return checks
    finally:
        leftover = sandbox.sweep()
    probe, busy, memory = results
    if not probe.completed or not probe.cases or not probe.cases[0].ok:
        why = probe.stop.detail if probe.stop else (probe.load.error.message if probe.load and probe.load.error else "?")
        add(Check("probe", False, f"the probe failed inside the container: {why}",
                  "rebuild the image (`python -m grader sandbox build --force`)"))
        return checks
    facts = probe.cases[0].value
    for check in evaluate_probe(facts, limits, runtime=in_effect):
        add(check)
    add(Check("cpu limit", busy.stop is not None and busy.stop.reason == "cpu_time",
              f"a busy loop ended with {busy.stop.reason if busy.stop else 'no stop'}",
              "the harness could not read CPU time; check that /sys/fs/cgroup is visible in containers"))
    add(Check("memory limit", memory.stop is not None and memory.stop.reason == "memory",
              f"a memory bomb ended with {memory.stop.reason if memory.stop else 'no stop'}",
              "the engine must support memory cgroups (`docker info` shows a warning if not)"))
    host_cg = memory.container.host_cgroup
    add(Check("memory records", True,
              "the host reads each container's memory cgroup (memory verdicts from the kernel's records)"
              if host_cg else "the host cannot see the containers' cgroups (a remote engine?): memory verdicts "
              "come from the harness's reading inside the container" + (" and the engine's OOM events"
                                                                         if is_gvisor(in_effect) else "")))
    add(Check("cleanup", leftover == 0, f"{leftover} container(s) left behind" if leftover else "no container left behind",
              "containers are removed after each run; check the engine log"))
    return checks


def evaluate_probe(facts: dict, limits: Limits, runtime: str | None = None) -> list[Check]:
    """Turn the probe's facts into checks (a pure function, tested without Docker).

    Under gVisor (``runtime`` "runsc") the probe sees the Sentry's view: no cgroup files (the
    memory limit shows as MemTotal), the process limit is RLIMIT_NPROC, and /proc/self/status
    has no NoNewPrivs line (prctl answers).
    """
    gvisor = is_gvisor(runtime)
    out = []
    if gvisor:
        host = os.uname()
        own = facts.get("kernel") != host.release and host.version not in (facts.get("kernel_version") or "")
        out.append(Check("gVisor", own, f"kernel {facts.get('kernel')} inside, {host.release} on the host",
                         "the container ran on the host's kernel, not under gVisor: check the runtime's registration"))
    uid_ok = facts.get("uid") not in (0, None) and facts.get("euid") not in (0, None)
    out.append(Check("non-root", uid_ok, f"uid {facts.get('uid')}, euid {facts.get('euid')}",
                     "the image must end with `USER 65534:65534`; the sandbox passes user=65534 too"))
    caps = facts.get("CapEff", "?")
    out.append(Check("capabilities", caps == "0000000000000000" and facts.get("CapPrm") == "0000000000000000",
                     f"effective capabilities {caps}", "containers must be created with cap_drop=ALL"))
    nnp = facts.get("NoNewPrivs") or (str(facts["nnp_prctl"]) if facts.get("nnp_prctl") is not None else None)
    out.append(Check("no-new-privileges", nnp == "1",
                     f"NoNewPrivs={nnp}", "pass security_opt=['no-new-privileges']"))
    net_ok = facts.get("network") != "connected" and facts.get("interfaces") in (["lo"], [])
    out.append(Check("network", net_ok,
                     f"connect: {facts.get('network')}; interfaces: {', '.join(facts.get('interfaces') or []) or 'none'}",
                     "containers must be created with network_mode='none'"))
    ro_ok = not facts.get("root_writable") and not facts.get("harness_writable")
    out.append(Check("read-only root", ro_ok,
                     f"root writable: {facts.get('root_writable')}, harness writable: {facts.get('harness_writable')}",
                     "containers must be created with read_only=True"))
    out.append(Check("scratch", bool(facts.get("scratch_writable")), "scratch tmpfs writable" if facts.get("scratch_writable") else "scratch tmpfs not writable",
                     "the image must create /scratch with mode 1777"))
    want = limits.memory_mb << 20
    if gvisor:
        mem = facts.get("memtotal")
        out.append(Check("memory cgroup", mem == want, f"MemTotal {mem} (want {want}: the container's limit)",
                         "the engine must support memory limits (cgroup memory controller)"))
        out.append(Check("pids limit", facts.get("nproc") == candidate_nproc(limits.pids),
                         f"RLIMIT_NPROC {facts.get('nproc')} (want {candidate_nproc(limits.pids)})",
                         "the sandbox passes nproc under gVisor, where the Sentry enforces it per sandbox"))
    else:
        mem = facts.get("memory_limit")
        out.append(Check("memory cgroup", mem == want and facts.get("memsw_limit") in (want, None),
                         f"memory limit {mem}, memory+swap {facts.get('memsw_limit')} (want {want})",
                         "the engine must support memory limits (cgroup memory controller)"))
        out.append(Check("pids limit", facts.get("pids_limit") == limits.pids,
                         f"pids.max {facts.get('pids_limit')} (want {limits.pids})",
                         "the engine must support pids limits"))
    ul_ok = (facts.get("nofile") == limits.nofile and facts.get("fsize") == limits.fsize_mb << 20
             and facts.get("core") == 0)
    out.append(Check("ulimits", ul_ok,
                     f"nofile {facts.get('nofile')}, fsize {facts.get('fsize')}, core {facts.get('core')}",
                     "pass nofile/fsize/core ulimits when creating containers"))
    out.append(Check("init process", facts.get("pid1") in ("docker-init", "tini", "dumb-init"),
                     f"PID 1 is {facts.get('pid1')!r}", "create containers with init=True"))
    probe = facts.get("seccomp_probe") or {}
    refused = bool(probe) and all(v == "EPERM" for v in probe.values())
    out.append(Check("seccomp", facts.get("Seccomp") == "2" and refused,
                     f"filter mode {facts.get('Seccomp')}; " + ", ".join(f"{k}: {v}" for k, v in probe.items()),
                     "the worker installs its seccomp filter from libseccomp: rebuild the image "
                     "(`python -m grader sandbox build --force`)"))
    reach = facts.get("supervisor_reached")
    out.append(Check("supervisor out of reach", reach == [],
                     "the worker reached: " + ", ".join(reach) if reach else
                     ("the worker can neither open, read, signal nor limit the supervisor or init"
                      if reach == [] else "not probed"),
                     "the container must start as root with SETUID, SETGID and KILL only (the sandbox does)"))
    return out
