"""In-container harness: runs untrusted candidate code on input cases.

This file is the only program of ours that runs inside the sandbox container. It uses the
standard library only, never sees expected outputs and never decides a verdict: it reports what
the candidate returned (or what stopped it) and the host compares.

Two processes:

* the **supervisor** (this process, started by the container's init) reads one JSON request from
  stdin, forks a **worker** per job, watches its CPU time, wall time, output volume and exit, and
  writes one JSON record per event to stdout (the channel);
* the **worker** loads the candidate source, calls the entry point on every case in order and
  sends raw results to the supervisor over a private pipe. The candidate's own stdout and stderr
  go to a separate pipe that the supervisor caps; they never reach the channel.

In the sandbox the supervisor runs as root with three capabilities (SETUID, SETGID, KILL) and is
non-dumpable; every worker is a fresh interpreter (fork + exec) running as uid 65534 with no
capability, holding its own job and nothing else. So the worker cannot signal, ptrace, prlimit or
read the supervisor or the init process, open their descriptors (the container's stdin and
stdout, the channel) through /proc, or find the request, the channel key or the sync token in
its own memory. Anything the worker sends is a claim about its own answers, which the host checks
against values that never enter the container. Everything the supervisor reads from a worker is
bounded before it is parsed, and scratch space is wiped without recursion by a short-lived
process under the worker's uid once every worker process is dead.

Request (stdin, one JSON object, ended by a newline or EOF)::

    {"v": 1,
     "limits": {"load_cpu_s", "case_cpu_s", "load_wall_s", "case_wall_s", "output_bytes",
                "value_bytes", "max_depth", "max_nodes"},
     "sync": "token",  # optional: sync points with the host (see HostLink)
     "key": "secret",  # optional: MAC key of the boundary records (see Channel)
     "jobs": [{"job": "id", "source": "...", "entry_point": "name",
               "cases": [{"id": "c0", "args": [...]}, ...]}]}

After the request the host keeps stdin open and answers each sync record with ``token:n``.

Records (stdout, one JSON object per line)::

    {"t": "start", "job": id}
    {"t": "load", "job": id, "ok": true, "cpu_s", "wall_s"}
    {"t": "load", "job": id, "ok": false, "kind": "syntax|import|exception|missing_entry|not_callable",
     "error": {"type", "message", "traceback"}, ...}
    {"t": "case", "job": id, "id": case_id, "ok": true, "value": ..., "cpu_s", "wall_s"}
    {"t": "case", "job": id, "id": case_id, "ok": false, "error": {...}, "cpu_s", "wall_s"}
    {"t": "stop", "job": id, "phase": "load|case", "case": case_id|null,
     "reason": "cpu_time|wall_time|memory|output|exit|signal|protocol", "exit_code", "signal", "detail"}
    {"t": "job_end", "job": id, "output_bytes", "output_head", "output_tail", "max_rss_kb",
     "cpu_s", "wall_s"}
    {"t": "sync", "n": jobs_finished}   # before the first job and after each job (with a token)
    {"t": "retire", "detail": why}       # the container cannot be made clean: the rest run elsewhere
    {"t": "end"}
"""

from __future__ import annotations

import json
import os
import select
import signal
import sys
import time
from itertools import accumulate
from operator import sub

PROTOCOL_VERSION = 1
SCRATCH = os.environ.get("PG_SCRATCH", "/scratch")
MAX_REQUEST_BYTES = 256 * 1024 * 1024
MAX_WORKER_LINE = 8 * 1024 * 1024  # a worker record is also capped at value_bytes + RECORD_SLACK
RECORD_SLACK = 128 * 1024  # what a record holds besides the value: ids, an error's text and traceback
RECORD_DEPTH_SLACK = 4  # nesting a record adds around a value (the record, an error object)
OUTPUT_KEEP = 4096  # bytes of candidate output kept at each end
TEXT_CAP = 2000  # characters kept of an exception message
TRACEBACK_CAP = 6000
EXIT_GRACE_S = 1.0  # time a worker gets to exit after its last answer
# set by the image (the supervisor re-executes itself with no environment: see main); never
# kill(-1) outside the sandbox
IN_SANDBOX = os.environ.get("PG_SANDBOX") == "1" or sys.argv[1:2] == ["--supervisor"]
# a worker's whole environment in the sandbox (the supervisor keeps none of its own)
WORKER_ENV = {
    "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    "LANG": "C.UTF-8",
    "HOME": "/scratch",
    "TMPDIR": "/scratch",
    "PG_SANDBOX": "1",
    "PG_SCRATCH": "/scratch",
    "OPENBLAS_NUM_THREADS": "1",
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
}
# in the sandbox the supervisor starts as root with three capabilities (SETUID, SETGID, KILL) and
# every process that runs candidate code has this uid and gid and no capability at all
WORKER_UID = WORKER_GID = 65534
CLEAN_DEADLINE_S = 10.0  # scratch that takes longer to wipe retires the container
CLEAN_BUDGET = 200_000  # entries (files, directories, links) the wipe removes at most

DEFAULT_LIMITS = {
    "load_cpu_s": 10.0,
    "case_cpu_s": 2.0,
    "load_wall_s": 30.0,
    "case_wall_s": 6.0,
    "output_bytes": 1 << 20,
    "value_bytes": 1 << 20,
    "max_depth": 32,
    "max_nodes": 200_000,
}


# --------------------------------------------------------------------------------------------
# cgroup probes (CPU time of the whole container, OOM-kill counter)
# --------------------------------------------------------------------------------------------

def _first_existing(paths):
    for p in paths:
        if os.path.exists(p):
            return p
    return None


class Cgroup:
    """Reads container-wide CPU usage and the kernel's memory records (cgroup v1 or v2).

    The memory records are the ones the host reads too (sandbox/cgroups.py): whether usage
    reached the limit and whether the out-of-memory killer ran. Under gVisor there is no cgroup
    file inside the sandbox; the host's reading then decides alone.
    """

    MARGIN = 2 << 20  # as sandbox.cgroups.LIMIT_MARGIN

    def __init__(self):
        self.cpu_v1 = _first_existing([
            "/sys/fs/cgroup/cpuacct/cpuacct.usage",
            "/sys/fs/cgroup/cpu,cpuacct/cpuacct.usage",
            "/sys/fs/cgroup/cpuacct,cpu/cpuacct.usage",
        ])
        self.cpu_v2 = None if self.cpu_v1 else _first_existing(["/sys/fs/cgroup/cpu.stat"])
        self.mem_v1 = "/sys/fs/cgroup/memory" if os.path.exists("/sys/fs/cgroup/memory/memory.oom_control") else None
        self.mem_v2 = None if self.mem_v1 or not os.path.exists("/sys/fs/cgroup/memory.events") else "/sys/fs/cgroup"

    def cpu_seconds(self, pid):
        """Container CPU seconds if the cgroup is visible, else the worker's own."""
        try:
            if self.cpu_v1:
                with open(self.cpu_v1, "rb") as f:
                    return int(f.read()) / 1e9
            if self.cpu_v2:
                with open(self.cpu_v2, "rb") as f:
                    for line in f:
                        if line.startswith(b"usage_usec"):
                            return int(line.split()[1]) / 1e6
        except (OSError, ValueError):
            pass
        return _proc_cpu_seconds(pid)

    def memory(self):
        """(oom_kills, ooms, limit_hits, peak, limit) now, or None without a memory cgroup."""
        if self.mem_v1:
            d = self.mem_v1
            oom = _read_keys(d + "/memory.oom_control")
            fail = (_read_int(d + "/memory.failcnt") or 0) + (_read_int(d + "/memory.memsw.failcnt") or 0)
            limits = [v for v in (_read_int(d + "/memory.limit_in_bytes"),
                                  _read_int(d + "/memory.memsw.limit_in_bytes")) if v is not None and v < 1 << 60]
            return (oom.get("oom_kill", 0), oom.get("under_oom", 0), fail,
                    _read_int(d + "/memory.max_usage_in_bytes"), min(limits) if limits else None)
        if self.mem_v2:
            d = self.mem_v2
            ev = _read_keys(d + "/memory.events")
            return (ev.get("oom_kill", 0), ev.get("oom", 0), ev.get("max", 0),
                    _read_int(d + "/memory.peak"), _read_int(d + "/memory.max"))
        return None

    def usage(self):
        """(usage, limit) of the container's memory now, or None without a memory cgroup."""
        if self.mem_v1:
            d = self.mem_v1
            limits = [v for v in (_read_int(d + "/memory.limit_in_bytes"),
                                  _read_int(d + "/memory.memsw.limit_in_bytes")) if v is not None and v < 1 << 60]
            return _read_int(d + "/memory.usage_in_bytes"), min(limits) if limits else None
        if self.mem_v2:
            return _read_int(self.mem_v2 + "/memory.current"), _read_int(self.mem_v2 + "/memory.max")
        return None

    def memory_evidence(self, before, after):
        """Why the kernel's records say the memory limit was reached in between, or None."""
        if before is None or after is None:
            return None
        kills, ooms, hits, peak, limit = after
        if kills > before[0]:
            return "killed by the out-of-memory killer"
        if (self.mem_v2 and ooms > before[1]) or (self.mem_v1 and ooms):
            return "the container ran out of memory"
        if hits > before[2]:
            return "reached the memory limit"
        if limit and peak is not None and peak >= limit - self.MARGIN:
            if before[3] is None or before[3] < limit - self.MARGIN:
                return "reached the memory limit"
        return None


def _read_int(path):
    try:
        with open(path, "rb") as f:
            return int(f.read().strip())
    except (OSError, ValueError):
        return None


def _read_keys(path):
    out = {}
    try:
        with open(path, "rb") as f:
            for line in f:
                parts = line.split()
                if len(parts) == 2:
                    try:
                        out[parts[0].decode()] = int(parts[1])
                    except ValueError:
                        pass
    except OSError:
        pass
    return out


_CLK_TCK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _proc_cpu_seconds(pid):
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            data = f.read()
        fields = data[data.rindex(b")") + 2:].split()
        return (int(fields[11]) + int(fields[12])) / _CLK_TCK
    except (OSError, ValueError, IndexError):
        return 0.0


def _run_delay(pid):
    """Seconds the worker waited on a run queue for a CPU (0 where the kernel does not say).

    The wall budget is a backstop for code that sleeps or blocks; time a runnable worker spent
    waiting for a CPU on a busy machine is not held against it, so a CPU-bound candidate meets
    its CPU budget first however loaded the host is. Linux has /proc/<pid>/schedstat; gVisor
    does not (there the wall budget is plain wall-clock time).
    """
    try:
        with open(f"/proc/{pid}/schedstat", "rb") as f:
            return int(f.read().split()[1]) / 1e9
    except (OSError, ValueError, IndexError):
        return 0.0


def _set_dumpable(flag):
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(4, 1 if flag else 0, 0, 0, 0)  # PR_SET_DUMPABLE
    except Exception:
        pass


def _become_worker():
    """In a child of the supervisor: take the worker's uid and gid, and so lose every capability.

    Outside the sandbox (a local run) the process keeps its identity.
    """
    if not IN_SANDBOX:
        return
    os.setgroups([])
    os.setresgid(WORKER_GID, WORKER_GID, WORKER_GID)
    os.setresuid(WORKER_UID, WORKER_UID, WORKER_UID)  # from root: permitted and effective sets cleared
    if os.getresuid() != (WORKER_UID,) * 3 or os.getresgid() != (WORKER_GID,) * 3 or _capabilities() != 0:
        raise PermissionError("the worker kept an identity or a capability of the supervisor")


def _capabilities():
    """The process's effective | permitted capability sets (0 when it holds none)."""
    try:
        with open("/proc/self/status", "rb") as f:
            for line in f:
                if line.startswith((b"CapEff:", b"CapPrm:")) and int(line.split()[1], 16):
                    return 1
    except (OSError, ValueError, IndexError):
        return 1
    return 0


# The system calls Docker's default seccomp profile refuses a process without capabilities
# (docs.docker.com/engine/security/seccomp: "significant syscalls blocked by the default
# profile"), plus the newer calls of the same families that profile leaves out by not listing
# them. The worker installs this filter itself before it loads the candidate, so it holds under
# every runtime: under runc it stacks on Docker's own profile; under gVisor, where Docker's
# profile is not applied (runsc runs without --oci-seccomp), the Sentry enforces it.
SECCOMP_DENY = (
    "acct", "add_key", "bpf", "chroot", "clock_adjtime", "clock_settime", "create_module",
    "delete_module", "fanotify_init", "finit_module", "fsconfig", "fsmount", "fsopen", "fspick",
    "get_kernel_syms", "get_mempolicy", "init_module", "ioperm", "iopl", "kcmp", "kexec_file_load",
    "kexec_load", "keyctl", "lookup_dcookie", "mbind", "mount", "mount_setattr", "move_mount",
    "move_pages", "name_to_handle_at", "nfsservctl", "open_by_handle_at", "open_tree",
    "perf_event_open", "pidfd_getfd", "pivot_root", "process_madvise", "process_vm_readv",
    "process_vm_writev", "ptrace", "query_module", "quotactl", "quotactl_fd", "reboot",
    "request_key", "set_mempolicy", "setns", "settimeofday", "stime", "swapoff", "swapon", "syslog",
    "sysfs", "_sysctl", "umount", "umount2", "unshare", "uselib", "userfaultfd", "ustat", "vhangup",
    "vm86", "vm86old",
)
# clone with a namespace flag is refused too (CLONE_NEWNS, NEWCGROUP, NEWUTS, NEWIPC, NEWUSER,
# NEWPID, NEWNET: Docker's mask 0x7E020000); clone3, whose flags a filter cannot read, answers
# ENOSYS as under Docker, so the C library falls back to clone
CLONE_NAMESPACE_FLAGS = (0x00020000, 0x02000000, 0x04000000, 0x08000000, 0x10000000, 0x20000000, 0x40000000)
_SCMP_ACT_ALLOW = 0x7FFF0000
_SCMP_CMP_MASKED_EQ = 7


def _scmp_errno(err):
    return 0x00050000 | (err & 0xFFFF)


def install_seccomp():
    """Install the worker's seccomp filter (see SECCOMP_DENY). Raises OSError if it cannot."""
    import ctypes
    import errno

    class ArgCmp(ctypes.Structure):
        _fields_ = [("arg", ctypes.c_uint), ("op", ctypes.c_int),
                    ("datum_a", ctypes.c_uint64), ("datum_b", ctypes.c_uint64)]

    try:
        lib = ctypes.CDLL("libseccomp.so.2", use_errno=True)
    except OSError as exc:
        raise OSError(f"libseccomp is not in the image: {exc}") from None
    lib.seccomp_init.restype = ctypes.c_void_p
    lib.seccomp_init.argtypes = [ctypes.c_uint32]
    lib.seccomp_syscall_resolve_name.argtypes = [ctypes.c_char_p]
    lib.seccomp_rule_add_array.argtypes = [ctypes.c_void_p, ctypes.c_uint32, ctypes.c_int, ctypes.c_uint,
                                           ctypes.POINTER(ArgCmp)]
    lib.seccomp_load.argtypes = [ctypes.c_void_p]
    lib.seccomp_release.argtypes = [ctypes.c_void_p]
    ctx = lib.seccomp_init(_SCMP_ACT_ALLOW)
    if not ctx:
        raise OSError("seccomp_init failed")
    try:
        def rule(action, name, conds=()):
            nr = lib.seccomp_syscall_resolve_name(name.encode())
            if nr < 0:
                return  # not a system call on this architecture
            arr = (ArgCmp * max(1, len(conds)))(*conds)
            rc = lib.seccomp_rule_add_array(ctx, action, nr, len(conds), arr)
            if rc < 0:
                raise OSError(-rc, f"seccomp rule for {name}: {os.strerror(-rc)}")

        for name in SECCOMP_DENY:
            rule(_scmp_errno(errno.EPERM), name)
        for flag in CLONE_NAMESPACE_FLAGS:
            rule(_scmp_errno(errno.EPERM), "clone", [ArgCmp(0, _SCMP_CMP_MASKED_EQ, flag, flag)])
        rule(_scmp_errno(errno.ENOSYS), "clone3")
        rc = lib.seccomp_load(ctx)
        if rc < 0:
            raise OSError(-rc, f"seccomp_load: {os.strerror(-rc)}")
    finally:
        lib.seccomp_release(ctx)


# --------------------------------------------------------------------------------------------
# worker side
# --------------------------------------------------------------------------------------------

class ProtocolError(Exception):
    """The worker broke the pipe protocol (only a tampering candidate does this)."""


class ResultError(Exception):
    """The returned value cannot be sent as plain JSON."""


def _to_plain(value, limits):
    """Convert a returned value to exact builtin JSON types, or raise ResultError.

    Only exact ``int``, ``float``, ``str``, ``bool``, ``None``, ``list``, ``tuple`` and ``dict``
    (with ``str`` keys) are accepted, plus numpy scalars and arrays when numpy is already loaded.
    Subclasses are refused: a subclass can override comparison, which is how graders are gamed.
    """
    np = sys.modules.get("numpy")
    max_depth = limits["max_depth"]
    budget = [limits["max_nodes"]]

    def conv(v, depth):
        budget[0] -= 1
        if budget[0] < 0:
            raise ResultError("result has too many elements")
        if depth > max_depth:
            raise ResultError("result is nested too deeply")
        t = type(v)
        if v is None or t is bool or t is str:
            return v
        if t is int:
            return v
        if t is float:
            if v != v or v in (float("inf"), float("-inf")):
                raise ResultError("result contains a non-finite float")
            return v
        if t is list or t is tuple:
            return [conv(x, depth + 1) for x in v]
        if t is dict:
            out = {}
            for k, x in dict.items(v):
                if type(k) is not str:
                    raise ResultError(f"dict key of type {type(k).__name__}, expected str")
                out[k] = conv(x, depth + 1)
            return out
        if np is not None and t.__module__ == "numpy":
            if t is np.ndarray:
                return conv(v.tolist(), depth)
            if isinstance(v, np.bool_):
                return bool(v)
            if isinstance(v, np.integer):
                return int(v)
            if isinstance(v, np.floating):
                return conv(float(v), depth)
            if t is np.str_:
                return str(v.item())
        raise ResultError(f"unsupported result type {t.__module__}.{t.__qualname__}")

    return conv(value, 0)


def _safe_text(fn, cap):
    try:
        text = fn()
        if type(text) is not str:
            text = str.__str__(text) if isinstance(text, str) else "<unprintable>"
    except BaseException:  # noqa: BLE001 - candidate code may raise anything here
        text = "<unprintable>"
    if len(text) > cap:
        text = text[: cap // 2] + "\n...[truncated]...\n" + text[-cap // 2:]
    return text


def _candidate_tb(tb):
    """Skip the harness's own frames so a traceback starts in the candidate's code."""
    first = tb
    while tb is not None and tb.tb_frame.f_code.co_filename != "<candidate>":
        tb = tb.tb_next
    return tb if tb is not None else first


def _error_record(exc):
    import traceback

    etype = type(exc)
    try:
        name = etype.__qualname__
        if type(name) is not str:
            name = "Exception"
    except BaseException:  # noqa: BLE001
        name = "Exception"
    return {
        "type": name,
        "message": _safe_text(lambda: str(exc), TEXT_CAP),
        "traceback": _safe_text(
            lambda: "".join(traceback.format_exception(etype, exc, _candidate_tb(exc.__traceback__))),
            TRACEBACK_CAP,
        ),
    }


def _worker(job, limits, res_w, out_w):
    """Runs in the forked worker process. Never returns."""
    try:
        os.setsid()
        signal.set_wakeup_fd(-1)
        for sig in (signal.SIGCHLD, signal.SIGPIPE, signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, signal.SIG_DFL)
        _set_dumpable(True)
        try:
            with open("/proc/self/oom_score_adj", "w") as f:
                f.write("1000")
        except OSError:
            pass
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        os.dup2(out_w, 1)
        os.dup2(out_w, 2)
        for fd in (devnull, out_w):
            if fd > 2:
                os.close(fd)
        import io

        sys.stdin = io.TextIOWrapper(io.FileIO(0, "r", closefd=False), encoding="utf-8")
        sys.stdout = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), encoding="utf-8",
                                      errors="backslashreplace", line_buffering=True)
        sys.stderr = io.TextIOWrapper(io.FileIO(2, "w", closefd=False), encoding="utf-8",
                                      errors="backslashreplace", line_buffering=True)
        if os.path.isdir(SCRATCH):
            os.chdir(SCRATCH)
        if IN_SANDBOX:
            install_seccomp()  # before a line of the candidate runs; no filter, no candidate
    except BaseException:
        os._exit(70)

    dumps = json.dumps
    write = os.write
    # imported now: reporting an error later must not need a free file descriptor or memory
    import linecache  # noqa: F401
    import traceback  # noqa: F401

    def send(rec):
        data = (dumps(rec, allow_nan=False, separators=(",", ":")) + "\n").encode()
        view = memoryview(data)
        while view:
            n = write(res_w, view)
            view = view[n:]

    def flush_std():
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except BaseException:
                pass

    # -- load -------------------------------------------------------------------------------
    source = job["source"]
    entry = job["entry_point"]
    try:
        code = compile(source, "<candidate>", "exec", dont_inherit=True)
    except BaseException as exc:  # SyntaxError, ValueError (null bytes), RecursionError, MemoryError
        kind = "syntax" if isinstance(exc, (SyntaxError, ValueError)) else "exception"
        flush_std()
        send({"t": "load", "ok": False, "kind": kind, "error": _error_record(exc)})
        os._exit(0)

    import linecache
    import types

    # let tracebacks quote the candidate's lines
    linecache.cache["<candidate>"] = (len(source), None, source.splitlines(True), "<candidate>")
    module = types.ModuleType("candidate")
    module.__file__ = "<candidate>"
    sys.modules["candidate"] = module
    try:
        exec(code, module.__dict__)
    except BaseException as exc:
        kind = "import" if isinstance(exc, ImportError) else "exception"
        flush_std()
        try:
            send({"t": "load", "ok": False, "kind": kind, "error": _error_record(exc)})
        finally:
            os._exit(0)
    fn = module.__dict__.get(entry)
    if fn is None:
        flush_std()
        names = sorted(k for k, v in module.__dict__.items() if callable(v) and not k.startswith("_"))
        send({"t": "load", "ok": False, "kind": "missing_entry",
              "error": {"type": "MissingEntryPoint",
                        "message": f"no function named {entry!r}; defined: {', '.join(names[:20]) or 'none'}",
                        "traceback": ""}})
        os._exit(0)
    if not callable(fn):
        flush_std()
        send({"t": "load", "ok": False, "kind": "not_callable",
              "error": {"type": "NotCallable",
                        "message": f"{entry!r} is a {type(fn).__name__}, not a function",
                        "traceback": ""}})
        os._exit(0)
    flush_std()
    send({"t": "load", "ok": True})

    # -- cases ------------------------------------------------------------------------------
    loads = json.loads
    for case in job["cases"]:
        cid = case["id"]
        args = loads(case["args_json"])
        try:
            value = fn(*args)
            plain = _to_plain(value, limits)
            rec = {"t": "case", "id": cid, "ok": True, "value": plain}
            try:
                encoded = dumps(rec, allow_nan=False, separators=(",", ":"))
            except (ValueError, OverflowError, RecursionError) as exc:  # e.g. an int with 10**5 digits
                raise ResultError(f"result cannot be encoded as JSON: {str(exc)[:200]}") from None
            if len(encoded) > limits["value_bytes"]:
                raise ResultError(f"result is larger than {limits['value_bytes']} bytes")
        except ResultError as exc:
            rec = {"t": "case", "id": cid, "ok": False,
                   "error": {"type": "UnsupportedResult", "message": str(exc), "traceback": ""}}
        except BaseException as exc:
            rec = {"t": "case", "id": cid, "ok": False, "error": _error_record(exc)}
        flush_std()
        send(rec)
    flush_std()
    os._exit(0)


# --------------------------------------------------------------------------------------------
# supervisor side
# --------------------------------------------------------------------------------------------

BOUNDARY_RECORDS = ("start", "sync", "retire", "end")


def record_mac(key, rec):
    """The MAC of a boundary record (the host checks it: sandbox/channel.py)."""
    import hashlib
    import hmac

    msg = f"{rec.get('t')}\0{rec.get('job', '')}\0{rec.get('n', '')}".encode()
    return hmac.new(key, msg, hashlib.sha256).hexdigest()[:32]


class Channel:
    """The channel to the host (the container's stdout).

    The worker runs under another uid and cannot open it (``/proc/1/fd/1`` belongs to root). As
    a second wall, the records that move the stream from one job to the next (start, sync,
    retire, end) carry a MAC under a key that came with the request, which no worker holds (each
    is a fresh interpreter): a candidate that reached the channel could write records for its
    own job only, never start a batch mate's.
    """

    def __init__(self, fd, key=None):
        self.fd = fd
        self.key = key

    def emit(self, rec):
        if self.key is not None and rec.get("t") in BOUNDARY_RECORDS:
            rec = dict(rec, mac=record_mac(self.key, rec))
        data = (json.dumps(rec, separators=(",", ":")) + "\n").encode()
        view = memoryview(data)
        while view:
            try:
                n = os.write(self.fd, view)
            except InterruptedError:
                continue
            except BrokenPipeError:
                os._exit(3)  # the host is gone
            view = view[n:]


class OutputTap:
    """Keeps the head and the tail of the candidate's stdout/stderr and counts the bytes."""

    def __init__(self):
        self.total = 0
        self.head = bytearray()
        self.tail = bytearray()

    def feed(self, data):
        self.total += len(data)
        room = OUTPUT_KEEP - len(self.head)
        if room > 0:
            self.head += data[:room]
            data = data[room:]
        if data:
            self.tail += data
            if len(self.tail) > OUTPUT_KEEP:
                del self.tail[: len(self.tail) - OUTPUT_KEEP]

    def text(self):
        head = self.head.decode("utf-8", "backslashreplace")
        tail = self.tail.decode("utf-8", "backslashreplace")
        return head, tail


def _kill_everything_else():
    """SIGKILL every process but ourselves and init, until none is left (sandbox only).

    Returns False when some process outlived every attempt (the container then cannot be trusted
    to be clean). The supervisor holds CAP_KILL, so the worker's uid is no shelter.
    """
    if not IN_SANDBOX:
        return True
    me = os.getpid()
    for _ in range(100):
        try:
            os.kill(-1, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        _reap_all()
        if not [p for p in _live_pids() if p not in (1, me)]:
            return True
        time.sleep(0.01)
    return False


def _live_pids():
    """Processes of the container that are not zombies (bounded by the pids limit)."""
    out = []
    try:
        names = os.listdir("/proc")
    except OSError:
        return out
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                data = f.read(4096)
            state = data[data.rindex(b")") + 2:data.rindex(b")") + 3]
        except (OSError, ValueError):
            continue  # gone already
        if state not in (b"Z", b"X", b"x"):
            out.append(int(name))
    return out


def _reap_all():
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


def _wipe_tree(top, budget=CLEAN_BUDGET, deadline=None):
    """Remove everything below ``top``; None when it is empty afterwards, else why not.

    No recursion, a constant number of open descriptors however deep the tree, never a path
    longer than one name: it walks down and up with ``openat`` (``..`` on the way up) and
    removes with ``unlinkat``. It follows no symbolic link, opens nothing but directories
    (``O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK``: a fifo or a device is never opened), makes every
    directory it enters writable first (modes a candidate set are its own to change: this runs
    under the worker's uid) and takes names as bytes, whatever they hold. A tree with more than
    ``budget`` entries, or that takes past ``deadline``, is given up on (the caller retires the
    container). Runs only once no process of the candidate is alive, so nothing moves meanwhile.
    """
    try:
        fd = os.open(top, _DIR_FLAGS)
    except FileNotFoundError:
        return None
    except OSError as exc:
        return f"cannot open {top}: {exc.strerror}"
    names = []  # the directories we are in, below top
    ops = 0
    try:
        while True:
            if deadline is not None and time.monotonic() > deadline:
                return f"wiping {top} took too long"
            sub = None
            try:
                with os.scandir(fd) as entries:
                    for entry in entries:
                        ops += 1
                        if ops > budget:
                            return f"more than {budget} entries under {top}"
                        try:
                            is_dir = entry.is_dir(follow_symlinks=False)
                        except OSError:
                            is_dir = False
                        if is_dir:
                            sub = os.fsencode(entry.name)
                            break
                        try:
                            os.unlink(os.fsencode(entry.name), dir_fd=fd)
                        except FileNotFoundError:
                            pass
            except OSError as exc:
                return f"cannot list a directory under {top}: {exc.strerror}"
            if sub is not None:
                try:
                    os.chmod(sub, 0o700, dir_fd=fd)  # a directory (checked above; nothing moves now)
                    child = os.open(sub, _DIR_FLAGS, dir_fd=fd)
                except OSError as exc:
                    return f"cannot enter a directory under {top}: {exc.strerror}"
                os.close(fd)
                fd = child
                names.append(sub)
                continue
            if not names:
                return None  # top is empty
            name = names.pop()
            try:
                parent = os.open(b"..", _DIR_FLAGS, dir_fd=fd)
            except OSError as exc:
                return f"cannot go back up under {top}: {exc.strerror}"
            os.close(fd)
            fd = parent
            try:
                os.rmdir(name, dir_fd=fd)
            except OSError as exc:
                return f"cannot remove a directory under {top}: {exc.strerror}"
    finally:
        os.close(fd)


HELPER_REPLY_CAP = 4096


def _as_worker(fn, deadline_s):
    """Run ``fn`` in a short-lived child under the worker's uid; its JSON reply, or None.

    Only once every process of the candidate is dead (the caller checks): the child is a fork
    of the supervisor, and under the worker's uid it could otherwise be reached. The reply is
    read with a byte cap and a deadline; a child that overruns is killed.
    """
    r, w = os.pipe()
    try:
        pid = os.fork()
    except OSError:
        os.close(r)
        os.close(w)
        return None
    if pid == 0:  # pragma: no cover - helper
        try:
            os.close(r)
            _become_worker()
            data = json.dumps(fn(), separators=(",", ":")).encode()
            if len(data) <= HELPER_REPLY_CAP:
                os.write(w, data)
        finally:
            os._exit(0)
    os.close(w)
    os.set_blocking(r, False)
    deadline = time.monotonic() + deadline_s
    data = b""
    try:
        while len(data) <= HELPER_REPLY_CAP:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                data = b""
                break
            try:
                ready, _, _ = select.select([r], [], [], remaining)
            except InterruptedError:
                continue
            if not ready:
                continue
            try:
                chunk = os.read(r, HELPER_REPLY_CAP + 1)
            except (BlockingIOError, InterruptedError):
                continue
            if not chunk:
                break
            data += chunk
    finally:
        os.close(r)
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            os.waitpid(pid, 0)
        except ChildProcessError:
            pass
    if not data or len(data) > HELPER_REPLY_CAP:
        return None
    try:
        return json.loads(data)
    except (ValueError, RecursionError):
        return None


IPC_RMID = 0
IPC_CREAT = 0o1000
IPC_RANGE_CAP = 4096  # ids to try one by one where objects cannot be listed (gVisor)


class IpcCleaner:
    """Removes the System V IPC objects (shared memory, semaphores, message queues) a job left.

    They outlive the processes that made them, so without this a later sample of a batch could
    find them. Linux lists them in /proc/sysvipc; gVisor has no such file but hands out ids one
    after another, so the ids made since the last mark are removed one by one (the supervisor
    marks the counter by making and removing one object of each kind). When neither works, or a
    candidate burned through more ids than can be tried quickly, ``sweep`` says so and the
    harness retires the container: the remaining samples run in a fresh one.
    """

    KINDS = ("shm", "sem", "msg")

    def __init__(self):
        try:
            import ctypes

            self.libc = ctypes.CDLL(None, use_errno=True)
        except Exception:  # noqa: BLE001
            self.libc = None
        self.marks = {}
        self.sequential = {}
        if self.libc is not None:
            for kind in self.KINDS:
                if self.listed(kind) is not None:
                    continue
                a, b = self._probe(kind), self._probe(kind)
                self.sequential[kind] = a is not None and b == a + 1
                self.marks[kind] = b

    def _get(self, kind):
        if kind == "shm":
            return self.libc.shmget(0, 1, IPC_CREAT | 0o600)
        if kind == "sem":
            return self.libc.semget(0, 1, IPC_CREAT | 0o600)
        return self.libc.msgget(0, IPC_CREAT | 0o600)

    def _rm(self, kind, ident):
        if kind == "shm":
            return self.libc.shmctl(ident, IPC_RMID, None)
        if kind == "sem":
            return self.libc.semctl(ident, 0, IPC_RMID)
        return self.libc.msgctl(ident, IPC_RMID, None)

    def _probe(self, kind):
        """The id the kernel hands out next (the probe object is removed at once), or None."""
        ident = self._get(kind)
        if ident < 0:
            return None
        self._rm(kind, ident)
        return ident

    @staticmethod
    def listed(kind):
        """Ids of every object of a kind in this IPC namespace, or None where it cannot be listed."""
        try:
            with open(f"/proc/sysvipc/{kind}") as f:
                lines = f.read().splitlines()[1:]
        except OSError:
            return None
        ids = []
        for line in lines:
            parts = line.split()
            if len(parts) > 1:
                try:
                    ids.append(int(parts[1]))
                except ValueError:
                    pass
        return ids

    def sweep(self):
        """Remove every object; None when the namespace is provably empty, else why not."""
        if self.libc is None:
            return "ctypes is unavailable: System V IPC objects cannot be removed"
        for kind in self.KINDS:
            ids = self.listed(kind)
            if ids is not None:
                for ident in ids:
                    self._rm(kind, ident)
                if self.listed(kind):
                    return f"System V {kind} objects survived removal"
                self.marks[kind] = None
                continue
            start, end = self.marks.get(kind), self._probe(kind)
            if not self.sequential.get(kind) or start is None or end is None:
                return f"System V {kind} objects can be neither listed nor found by id"
            if end - start - 1 > IPC_RANGE_CAP:
                return f"{end - start - 1} System V {kind} ids were used: too many to check one by one"
            for ident in range(start + 1, end):
                self._rm(kind, ident)
            self.marks[kind] = end
        return None


def _clean_as_worker(ipc, deadline):
    """Runs under the worker's uid: wipe scratch, /dev/shm, /dev/mqueue, System V IPC."""
    problem = _wipe_tree(SCRATCH, deadline=deadline)
    if problem is None and IN_SANDBOX:
        problem = _wipe_tree("/dev/shm", deadline=deadline) or _wipe_tree("/dev/mqueue", deadline=deadline)
    if problem is None and ipc is not None:
        problem = ipc.sweep()
    return {"problem": problem, "marks": ipc.marks if ipc is not None else None}


def _clean_between_jobs(ipc):
    """Leave nothing of the previous job. None, or why the container cannot be made clean."""
    if not _kill_everything_else():
        return "a process of the candidate outlived every SIGKILL"
    deadline = time.monotonic() + CLEAN_DEADLINE_S
    reply = _as_worker(lambda: _clean_as_worker(ipc, deadline), CLEAN_DEADLINE_S + 1.0)
    if type(reply) is not dict:
        return "cleaning the container did not finish"
    if ipc is not None:
        marks = reply.get("marks")
        if type(marks) is not dict or not all(type(v) is int or v is None for v in marks.values()):
            return "cleaning the container did not report its System V IPC marks"
        ipc.marks = {k: marks.get(k) for k in IpcCleaner.KINDS}
    problem = reply.get("problem")
    return None if problem is None else str(problem)[:300]


SYNC_WAIT_S = 30.0
HOST_LINE_CAP = 256  # the host's lines are short: a longer one is dropped unread
HOST_WAIT_SHARE = 2 / 3  # at most this share of a phase's wall time is the host's run-queue wait
HOST_BUFFER_CAP = 1 << 16


class HostLink:
    """What the host sends on stdin after the request: sync answers and clock ticks.

    At each sync point the supervisor writes ``{"t": "sync", "n": n}`` (n = jobs finished so
    far) and waits until the host answers ``<token>:<n>``; the host reads the container's cgroup
    in between, while it still exists. Under gVisor the host also sends a tick every few
    milliseconds, ``<token>:t:<cpu_ns>:<mem_usage>:<mem_limit>:<wait_ns>``: the container's CPU
    time, memory use and the time its threads waited for a CPU, as the host kernel counts them
    (the Sentry's own clock counts time the host took its threads away, so it depends on the
    host's load, and gVisor has no schedstat; see ``JobRunner``). Without a token (a local run) there are neither.

    Only the host writes to stdin (the worker runs under another uid and cannot open the
    supervisor's or init's descriptors), and every line is checked anyway: it must carry the
    token, which came with the request, and fit in ``HOST_LINE_CAP`` bytes; anything else is
    dropped. Reading never blocks.
    """

    def __init__(self, token, leftover):
        self.token = token.encode() if isinstance(token, str) and token else None
        self.buf = bytearray()
        self.answered = set()
        self.clock = None  # (cpu_ns, mem_usage, mem_limit) of the latest tick
        self.ticks = 0
        self.open = self.token is not None
        if self.open:
            self._feed(leftover)

    @property
    def host_clock(self):
        return self.clock is not None

    def _line(self, line):
        if len(line) > HOST_LINE_CAP or not line.startswith(self.token + b":"):
            return
        parts = line[len(self.token) + 1:].split(b":")
        if len(parts) == 1 and parts[0].isdigit() and len(parts[0]) < 10:
            self.answered.add(int(parts[0]))
        elif len(parts) == 5 and parts[0] == b"t" and all(p.isdigit() and len(p) < 20 for p in parts[1:]):
            self.clock = (int(parts[1]), int(parts[2]), int(parts[3]), int(parts[4]))
            self.ticks += 1

    def _feed(self, data):
        self.buf += data
        while True:
            nl = self.buf.find(b"\n")
            if nl < 0:
                break
            line = bytes(self.buf[:nl])
            del self.buf[: nl + 1]
            self._line(line)
        if len(self.buf) > HOST_LINE_CAP:  # no newline in sight: not a host line
            del self.buf[:]

    def poll(self):
        """Read whatever the host sent (never blocks). False once stdin is closed."""
        if not self.open:
            return False
        for _ in range(64):  # bounded: a flood cannot keep the supervisor here
            try:
                ready, _, _ = select.select([0], [], [], 0)
            except InterruptedError:
                continue
            if not ready:
                return True
            try:
                data = os.read(0, HOST_BUFFER_CAP)
            except (BlockingIOError, InterruptedError):
                return True
            except OSError:
                data = b""
            if not data:
                self.open = False
                return False
            self._feed(data)
        return True

    def cpu_seconds(self):
        return self.clock[0] / 1e9

    def memory(self):
        """(usage, limit) at the latest tick."""
        return self.clock[1], self.clock[2]

    def run_delay(self):
        """Seconds the container's threads waited for a CPU on the host, at the latest tick."""
        return self.clock[3] / 1e9

    def sync(self, channel, n):
        if self.token is None:
            return
        channel.emit({"t": "sync", "n": n})
        deadline = time.monotonic() + SYNC_WAIT_S
        while n not in self.answered:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not self.open:
                self.token = None  # the host is gone; the backstop ends the container
                self.open = False
                return
            try:
                select.select([0], [], [], min(remaining, 1.0))
            except InterruptedError:
                pass
            self.poll()


HARNESS_PATH = os.path.abspath(__file__)


def _exec_worker(job_r, res_w, out_w):
    """In the forked child: become a fresh interpreter running only this job (never returns).

    A plain fork would hand the candidate a copy of the supervisor's memory: the whole request
    (its batch mates' ids and inputs), the channel key and the sync token. After exec the
    worker's memory holds its own job, read from a pipe, and nothing else; before the exec it
    takes the worker's uid (in the sandbox), so it holds no capability either.
    """
    os.dup2(job_r, 0)
    os.dup2(out_w, 1)
    os.dup2(out_w, 2)
    os.dup2(res_w, 3)
    _become_worker()
    try:
        import resource

        top = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    except (ImportError, ValueError, OSError):
        top = 4096
    os.closerange(4, max(256, min(top, 1 << 16)))
    argv = [sys.executable, "-I", "-B", HARNESS_PATH, "--worker"]
    os.execve(sys.executable, argv, WORKER_ENV if IN_SANDBOX else dict(os.environ))


class JobRunner:
    """Runs one job at a time in a worker and reports it on the channel.

    **Clocks.** A phase's CPU time is the container's CPU time as the kernel counts it in the
    container's cgroup: read inside the container under runc, relayed by the host's ticks under
    gVisor (there the Sentry's own clock counts the time the host took its threads away, so a
    budget on it would run out sooner on a busy host). Without either, the worker's own.

    **Memory comes first.** When a time budget runs out while the container's memory use is at
    its limit (the kernel is reclaiming for it, or about to kill it), the job stopped for memory:
    the use is read at that moment, before the worker is killed. So is it when the kernel's
    records (an OOM kill, the limit reached) changed during the job, whatever stopped it.
    """

    def __init__(self, channel, cgroup, limits, wake_r, link=None):
        self.channel = channel
        self.cgroup = cgroup
        self.limits = limits
        self.wake_r = wake_r
        self.link = link

    def cpu_now(self, pid):
        if self.link is not None and self.link.host_clock:
            return self.link.cpu_seconds()
        return self.cgroup.cpu_seconds(pid)

    def waited(self, pid):
        """Seconds spent waiting for a CPU so far (the worker's, or the container's on the host)."""
        if self.link is not None and self.link.host_clock:
            return self.link.run_delay()
        return _run_delay(pid)

    def not_counted(self, pid, delay0, elapsed):
        """The part of ``elapsed`` (seconds since delay0 was read) the wall budget does not count.

        The worker's own run-queue wait is exact. The host's figure (gVisor) is a sum over the
        sandbox's threads, which overstates the wait when many of them queue at once (a sleeping
        candidate's Sentry keeps waking its threads): it is held to two thirds of the elapsed
        time, so the wall budget stretches at most threefold.
        """
        waited = self.waited(pid) - delay0
        if self.link is not None and self.link.host_clock:
            waited = min(waited, elapsed * HOST_WAIT_SHARE)
        return waited

    def memory_at_limit(self):
        """Why the container's memory use is at its limit right now, or None."""
        if self.link is not None and self.link.host_clock:
            self.link.poll()
            usage, limit = self.link.memory()
            source = "as the host read it"
        else:
            got = self.cgroup.usage()
            if got is None:
                return None
            usage, limit = got
            source = "in the container's cgroup"
        if usage is None or not limit or usage < limit - Cgroup.MARGIN:
            return None
        return f"its memory use was at the {limit >> 20} MiB limit ({source})"

    def _accept(self, line, phase, cases, index, jid, cpu_s, wall_s):
        """Forward one worker record to the channel and return its ``ok`` flag.

        Raises ProtocolError for a record that is unreadable, too large, too deep or out of place.
        """
        rec = parse_bounded(line, self.limits["value_bytes"] + RECORD_SLACK,
                            self.limits["max_depth"] + RECORD_DEPTH_SLACK)
        timing = {"cpu_s": round(cpu_s, 6), "wall_s": round(wall_s, 6)}
        ok = rec.get("ok") is True
        if phase == "load" and rec.get("t") == "load":
            out = {"t": "load", "job": jid, "ok": ok}
            if not ok:
                out["kind"] = rec.get("kind")
                out["error"] = rec.get("error")
        elif phase == "case" and rec.get("t") == "case" and rec.get("id") == cases[index]["id"]:
            out = {"t": "case", "job": jid, "id": rec["id"], "ok": ok}
            if ok:
                out["value"] = rec.get("value")
            else:
                out["error"] = rec.get("error")
        else:
            raise ProtocolError("worker sent an unexpected record")
        out.update(timing)
        self.channel.emit(out)
        return ok

    def run(self, job):
        jid = job["job"]
        emit = self.channel.emit
        emit({"t": "start", "job": jid})
        cases = job["cases"]
        for case in cases:
            case["args_json"] = json.dumps(case.get("args", []))
        res_r, res_w = os.pipe()
        out_r, out_w = os.pipe()
        mem_before = self.cgroup.memory()
        job_t0 = time.monotonic()
        cpu_job0 = self.cpu_now(0)
        job_r, job_w = os.pipe()
        pid = os.fork()
        if pid == 0:  # pragma: no cover - worker
            try:
                _exec_worker(job_r, res_w, out_w)
            finally:
                os._exit(70)
        os.close(res_w)
        os.close(out_w)
        os.close(job_r)
        # the worker's job goes down its pipe from the loop below, never blocking the supervisor
        job_out = memoryview(json.dumps({"job": job, "limits": self.limits}, separators=(",", ":")).encode())
        for fd in (res_r, out_r, job_w):
            os.set_blocking(fd, False)

        lim = self.limits
        tap = OutputTap()
        buf = bytearray()
        line_cap = min(MAX_WORKER_LINE, lim["value_bytes"] + RECORD_SLACK)
        phase = "load"
        index = 0  # next case index
        t0 = time.monotonic()
        cpu0 = self.cpu_now(pid)
        delay0 = self.waited(pid)
        cpu_budget = lim["load_cpu_s"]
        wall_budget = lim["load_wall_s"]
        stop = None  # (reason, detail)
        exited = None  # wait status
        rusage = None
        res_open = out_open = True
        killed_by_us = False
        mem_at_stop = None  # the memory use was at the limit when a time budget ran out
        drain_until = 0.0  # once the worker has exited, how long its pipes are still read

        def kill_worker():
            for target in (-pid, pid):
                try:
                    os.kill(target, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass

        def now_cpu():
            return self.cpu_now(pid)

        while True:
            now = time.monotonic()
            cpu_used = now_cpu() - cpu0
            if exited is None and stop is None:
                if phase == "done":
                    # every answer is in; a worker that does not exit promptly is simply removed
                    if now - t0 >= EXIT_GRACE_S:
                        kill_worker()
                elif cpu_used >= cpu_budget:
                    stop = ("cpu_time", f"used {cpu_used:.2f}s of CPU, limit {cpu_budget:g}s")
                elif now - t0 >= wall_budget and (now - t0) - self.not_counted(pid, delay0, now - t0) >= wall_budget:
                    waited = self.not_counted(pid, delay0, now - t0)
                    stop = ("wall_time", f"ran {now - t0:.2f}s of wall time"
                            + (f" ({waited:.2f}s of it waiting for a CPU, not counted)" if waited >= 0.01 else "")
                            + f", limit {wall_budget:g}s")
                if stop is not None:
                    mem_at_stop = self.memory_at_limit()
                    killed_by_us = True
                    kill_worker()
            if exited is not None:
                timeout = 0.0  # drain what is left without blocking
            elif stop is not None:
                timeout = 0.05
            elif phase == "done":
                timeout = max(0.002, EXIT_GRACE_S - (now - t0))
            else:
                timeout = max(0.002, min(cpu_budget - cpu_used, wall_budget - (now - t0)))
            fds = [self.wake_r]
            if self.link is not None and self.link.open:
                fds.append(0)
            if res_open:
                fds.append(res_r)
            if out_open:
                fds.append(out_r)
            wfds = [job_w] if job_w is not None else []
            try:
                ready, writable, _ = select.select(fds, wfds, [], timeout)
            except InterruptedError:
                ready = writable = []
            if job_w is not None and (writable or exited is not None or stop is not None):
                try:
                    while job_out and writable:
                        job_out = job_out[os.write(job_w, job_out):]
                except (BlockingIOError, InterruptedError):
                    pass
                except OSError:
                    job_out = None  # the worker died before reading its job: its exit says why
                if not job_out or exited is not None or stop is not None:
                    os.close(job_w)
                    job_w = None
            if self.wake_r in ready:
                try:
                    os.read(self.wake_r, 4096)
                except (BlockingIOError, InterruptedError):
                    pass
            if 0 in ready:
                self.link.poll()
            # the result pipe is read before the output pipe, and whenever there is output: a
            # record the worker sent before it started writing (the load's, a case's answer) is
            # already in the pipe, so a flood is charged to the phase that made it, not to the one
            # before
            if res_open and (res_r in ready or out_r in ready or exited is not None):
                while len(buf) <= line_cap:
                    try:
                        data = os.read(res_r, 1 << 20)
                    except (BlockingIOError, InterruptedError):
                        break
                    if not data:
                        res_open = False
                        break
                    buf += data
                while stop is None:
                    nl = buf.find(b"\n")
                    if nl < 0:
                        if len(buf) > line_cap:
                            stop = ("protocol", "worker sent an over-long record")
                            killed_by_us = True
                            kill_worker()
                        break
                    line = bytes(buf[:nl])
                    del buf[: nl + 1]
                    now = time.monotonic()
                    cpu_now = now_cpu()
                    try:
                        ok = self._accept(line, phase, cases, index, jid, cpu_now - cpu0, now - t0)
                    except ProtocolError as exc:
                        stop = ("protocol", str(exc))
                        killed_by_us = True
                        kill_worker()
                        break
                    if phase == "load":
                        phase = "case" if cases and ok else "done"
                    else:
                        index += 1
                        if index >= len(cases):
                            phase = "done"
                    t0, cpu0, delay0 = now, cpu_now, self.waited(pid)  # the next phase starts now
                    cpu_budget = lim["case_cpu_s"]
                    wall_budget = lim["case_wall_s"]
                    if phase == "done":
                        # every answer is in: whatever else comes down the pipe (a process the
                        # worker left behind may hold it) is not read, let alone parsed
                        res_open = False
                        del buf[:]
                        break
            if out_open and (out_r in ready or exited is not None):
                while True:
                    try:
                        data = os.read(out_r, 65536)
                    except (BlockingIOError, InterruptedError):
                        break
                    if not data:
                        out_open = False
                        break
                    tap.feed(data)
                    if tap.total > lim["output_bytes"]:
                        if stop is None and phase != "done":
                            stop = ("output", f"candidate wrote more than {lim['output_bytes']} bytes")
                            killed_by_us = True
                        kill_worker()
                        break
            if exited is None:
                try:
                    wpid, status, ru = os.wait4(pid, os.WNOHANG)
                except ChildProcessError:
                    wpid, status, ru = pid, 0, None
                if wpid == pid:
                    exited, rusage = status, ru
                    drain_until = time.monotonic() + EXIT_GRACE_S
                    continue  # read what is left in the pipes on the next turn, without blocking
            elif not res_open or res_r not in ready or stop is not None or time.monotonic() > drain_until:
                # the worker is gone and the result pipe has nothing more right now, or nothing
                # more that counts (a stop is final; a grandchild may hold the pipe open and keep
                # writing): never wait for EOF, never drain for long
                break

        # the worker is gone; kill anything it left behind in its session
        try:
            os.killpg(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        for fd in (res_r, out_r, job_w):
            if fd is None:
                continue
            try:
                os.close(fd)
            except OSError:
                pass

        # what the kernel recorded decides a memory verdict, never which timer fired first: time
        # that ran out while the kernel fought for memory at the limit is a memory verdict too
        mem_why = self.cgroup.memory_evidence(mem_before, self.cgroup.memory())
        if phase != "done" and stop is None:
            if os.WIFSIGNALED(exited):
                signo = os.WTERMSIG(exited)
                if mem_why is not None:
                    stop = ("memory", mem_why)
                elif signo == signal.SIGKILL and now_cpu() - cpu0 >= cpu_budget * 0.95:
                    stop = ("cpu_time", "killed at the CPU limit")
                elif signo == signal.SIGXCPU:
                    stop = ("cpu_time", "killed at the CPU limit (SIGXCPU)")
                else:
                    stop = ("signal", f"killed by signal {signo} ({_signame(signo)})")
            else:
                code = os.WEXITSTATUS(exited) if exited is not None else None
                stop = ("exit", f"process exited with code {code} before finishing")
        elif stop is not None and stop[0] in ("cpu_time", "wall_time") and mem_why is not None:
            stop = ("memory", f"{mem_why}; then {stop[1]}")
        elif stop is not None and stop[0] in ("cpu_time", "wall_time") and mem_at_stop is not None:
            stop = ("memory", f"{mem_at_stop} when it {stop[1]}")

        if stop is not None:
            emit({
                "t": "stop", "job": jid, "phase": phase,
                "case": cases[index]["id"] if phase == "case" and index < len(cases) else None,
                "reason": stop[0], "detail": stop[1],
                "exit_code": os.WEXITSTATUS(exited) if exited is not None and os.WIFEXITED(exited) else None,
                "signal": os.WTERMSIG(exited) if exited is not None and os.WIFSIGNALED(exited) else None,
                "killed_by_harness": killed_by_us,
            })
        head, tail = tap.text()
        emit({
            "t": "job_end", "job": jid,
            "output_bytes": tap.total, "output_head": head, "output_tail": tail,
            "max_rss_kb": int(rusage.ru_maxrss) if rusage is not None else None,
            "cpu_s": round(self.cpu_now(pid) - cpu_job0
                           if self.cgroup.cpu_v1 or self.cgroup.cpu_v2 or (self.link is not None and self.link.host_clock)
                           else (rusage.ru_utime + rusage.ru_stime if rusage is not None else 0.0), 6),
            "wall_s": round(time.monotonic() - job_t0, 6),
        })


_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")
_BRACKET_WEIGHT = bytes.maketrans(b"[{]}", b"\x02\x02\x00\x00")


def json_depth(data):
    """How deep the JSON text ``data`` nests, found without parsing (exact for valid JSON).

    Linear C-speed passes only, so a hostile record costs the supervisor little and never makes
    a parser recurse: escaped backslashes, then escaped quotes are dropped (left to right, as a
    JSON parser reads them), so every quote left delimits a string; the text between strings is
    kept, every byte but brackets dropped, and the deepest prefix of opening minus closing
    brackets is the depth.
    """
    outside = b"".join(data.replace(b"\\\\", b"").replace(b'\\"', b"").split(b'"')[0::2])
    weights = outside.translate(None, _NOT_BRACKETS).translate(_BRACKET_WEIGHT)
    # prefix sum of (weight - 1): +1 per opening bracket, -1 per closing one
    return max(map(sub, accumulate(weights), range(1, len(weights) + 1)), default=0)


def parse_bounded(line, max_bytes, max_depth):
    """A worker record as a dict, bounded in size and depth before it is parsed; else ProtocolError."""
    if len(line) > max_bytes:
        raise ProtocolError(f"worker record of {len(line)} bytes, more than {max_bytes}")
    if json_depth(line) > max_depth:
        raise ProtocolError(f"worker record nested deeper than {max_depth}")
    try:
        rec = json.loads(line)
    except (ValueError, RecursionError, MemoryError) as exc:
        raise ProtocolError(f"unreadable worker record: {str(exc)[:200]}") from None
    if type(rec) is not dict:
        raise ProtocolError("worker record is not an object")
    return rec


def _signame(signo):
    try:
        return signal.Signals(signo).name
    except ValueError:
        return "?"


def _read_all(fd):
    chunks = []
    while True:
        data = os.read(fd, 1 << 20)
        if not data:
            return b"".join(chunks)
        chunks.append(data)


def _read_request(channel):
    """The request: one JSON document up to the first newline (or EOF). Returns (doc, rest)."""
    chunks = []
    size = 0
    while True:
        data = os.read(0, 1 << 20)
        if not data:
            return b"".join(chunks), b""
        nl = data.find(b"\n")
        if nl >= 0:
            chunks.append(data[:nl])
            return b"".join(chunks), data[nl + 1:]
        size += len(data)
        if size > MAX_REQUEST_BYTES:
            return None, b""
        chunks.append(data)


def main():
    if sys.argv[1:] == ["--worker"]:
        # a fresh worker: its request, on stdin, holds its own job only
        if IN_SANDBOX and (os.getuid() == 0 or os.geteuid() == 0 or _capabilities()):
            os._exit(70)  # never run candidate code with the supervisor's identity
        request = json.loads(_read_all(0))
        jobs = [request["job"]]
        _worker(jobs[0], request["limits"], 3, 1)
    if IN_SANDBOX and sys.argv[1:] != ["--supervisor"]:
        # Start again with no environment: gVisor lets any process read another's
        # /proc/<pid>/environ. Nothing secret is there, but nothing at all is simpler to promise.
        os.execve(sys.executable, [sys.executable, "-I", "-B", HARNESS_PATH, "--supervisor"], {})
    _set_dumpable(False)
    chan_fd = os.dup(1)
    # nothing the supervisor prints by accident may land in the channel
    os.dup2(2, 1)
    channel = Channel(chan_fd)
    raw, rest = _read_request(channel)
    if raw is None:
        channel.emit({"t": "fatal", "detail": "request too large"})
        return 2
    try:
        request = json.loads(raw)
        if request.get("v") != PROTOCOL_VERSION:
            raise ValueError(f"unsupported protocol version {request.get('v')!r}")
        limits = dict(DEFAULT_LIMITS)
        limits.update(request.get("limits") or {})
        jobs = request["jobs"]
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        channel.emit({"t": "fatal", "detail": f"bad request: {exc}"})
        return 2
    if IN_SANDBOX and os.geteuid() != 0:
        channel.emit({"t": "fatal", "detail": "the supervisor must start as root (with SETUID, SETGID and KILL) "
                                              "to run each worker under its own uid"})
        return 2
    link = HostLink(request.get("sync"), rest)
    key = request.get("key")
    if isinstance(key, str) and key:
        channel.key = key.encode()

    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_r, False)
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w, warn_on_full_buffer=False)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    signal.signal(signal.SIGPIPE, signal.SIG_IGN)  # a worker's closed pipe is an error code, not our death

    ipc = IpcCleaner() if IN_SANDBOX and len(jobs) > 1 else None
    runner = JobRunner(channel, Cgroup(), limits, wake_r, link=link)
    link.sync(channel, 0)  # the host takes its baseline of the kernel's records
    for n, job in enumerate(jobs):
        runner.run(job)
        _kill_everything_else()
        _reap_all()
        last = n == len(jobs) - 1
        problem = None if last else _clean_between_jobs(ipc)
        link.sync(channel, n + 1)  # the host reads what the kernel recorded during this job
        if problem is not None:
            # the container cannot be made clean for the next job: the host runs the rest elsewhere
            channel.emit({"t": "retire", "detail": problem})
            return 0
    channel.emit({"t": "end"})
    _kill_everything_else()
    return 0


if __name__ == "__main__":
    sys.exit(main())
