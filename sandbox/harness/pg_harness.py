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

The supervisor makes itself non-dumpable so the worker cannot ptrace it or open its file
descriptors through /proc. Anything the worker sends is a claim about its own answers, which the
host checks against values that never enter the container.

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

PROTOCOL_VERSION = 1
SCRATCH = os.environ.get("PG_SCRATCH", "/scratch")
MAX_REQUEST_BYTES = 256 * 1024 * 1024
MAX_WORKER_LINE = 8 * 1024 * 1024
OUTPUT_KEEP = 4096  # bytes of candidate output kept at each end
TEXT_CAP = 2000  # characters kept of an exception message
TRACEBACK_CAP = 6000
EXIT_GRACE_S = 1.0  # time a worker gets to exit after its last answer
IN_SANDBOX = os.environ.get("PG_SANDBOX") == "1"  # set by the image; never kill(-1) outside it

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

    Any process of the container's user can open it (``/proc/1/fd/1``), so the records that move
    the stream from one job to the next (start, sync, retire, end) carry a MAC under a key that
    came with the request. In batch mode no worker holds the key: each is a fresh interpreter
    (exec), so a candidate can write records for its own job only, never start a batch mate's.
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
    """SIGKILL every process this user may signal, except ourselves and init (sandbox only)."""
    if not IN_SANDBOX:
        return
    try:
        os.kill(-1, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _reap_all():
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def _wipe_dir(path):
    """Remove everything below path (best effort, fixes permissions a candidate may have changed)."""
    if not os.path.isdir(path):
        return
    for root, dirs, files in os.walk(path, topdown=False):
        for name in files:
            try:
                os.unlink(os.path.join(root, name))
            except OSError:
                pass
        for name in dirs:
            full = os.path.join(root, name)
            try:
                os.chmod(full, 0o700)
            except OSError:
                pass
            try:
                if os.path.islink(full):
                    os.unlink(full)
                else:
                    os.rmdir(full)
            except OSError:
                pass
    # a second pass for directories that were unreadable during the walk
    for name in os.listdir(path):
        full = os.path.join(path, name)
        try:
            os.chmod(full, 0o700)
        except OSError:
            pass
        if os.path.isdir(full) and not os.path.islink(full):
            _wipe_dir(full)
            try:
                os.rmdir(full)
            except OSError:
                pass
        else:
            try:
                os.unlink(full)
            except OSError:
                pass


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


def _clean_between_jobs(ipc):
    """Leave nothing of the previous job (its processes are already dead). None, or why not."""
    _wipe_dir(SCRATCH)
    if not IN_SANDBOX:
        return None
    _wipe_dir("/dev/shm")
    _wipe_dir("/dev/mqueue")  # POSIX message queues outlive their processes too
    return ipc.sweep() if ipc is not None else None


SYNC_WAIT_S = 30.0
HOST_LINE_CAP = 256  # the host's lines are short: a longer one is dropped unread
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
    (its batch mates' ids and inputs) and the channel key. After exec the worker's memory holds
    its own job, read from a pipe, and nothing else.
    """
    os.dup2(job_r, 0)
    os.dup2(out_w, 1)
    os.dup2(out_w, 2)
    os.dup2(res_w, 3)
    try:
        import resource

        top = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    except (ImportError, ValueError, OSError):
        top = 4096
    os.closerange(4, max(256, min(top, 1 << 16)))
    os.execv(sys.executable, [sys.executable, "-I", "-B", HARNESS_PATH, "--worker"])


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

    def __init__(self, channel, cgroup, limits, wake_r, fresh=False, link=None):
        self.channel = channel
        self.cgroup = cgroup
        self.limits = limits
        self.wake_r = wake_r
        self.fresh = fresh  # exec a fresh interpreter per worker (batch mode)
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

        Raises ProtocolError for a record that is unreadable or out of place.
        """
        try:
            rec = json.loads(line)
        except ValueError as exc:
            raise ProtocolError(f"unreadable worker record: {exc}"[:300]) from None
        if type(rec) is not dict:
            raise ProtocolError("worker record is not an object")
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
        if self.fresh:
            job_r, job_w = os.pipe()
        pid = os.fork()
        if pid == 0:  # pragma: no cover - worker
            try:
                if self.fresh:
                    _exec_worker(job_r, res_w, out_w)
                os.close(res_r)
                os.close(out_r)
                os.close(self.wake_r)
                os.close(self.channel.fd)
                _worker(job, self.limits, res_w, out_w)
            finally:
                os._exit(70)
        os.close(res_w)
        os.close(out_w)
        if self.fresh:
            os.close(job_r)
            data = memoryview(json.dumps({"job": job, "limits": self.limits}, separators=(",", ":")).encode())
            previous = signal.signal(signal.SIGPIPE, signal.SIG_IGN)
            try:
                while data:
                    data = data[os.write(job_w, data):]
            except OSError:
                pass  # the worker died before reading its job: its exit says what happened
            finally:
                signal.signal(signal.SIGPIPE, previous)
                os.close(job_w)
        for fd in (res_r, out_r):
            os.set_blocking(fd, False)

        lim = self.limits
        tap = OutputTap()
        buf = bytearray()
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
                elif now - t0 >= wall_budget and (now - t0) - (self.waited(pid) - delay0) >= wall_budget:
                    waited = self.waited(pid) - delay0
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
            try:
                ready, _, _ = select.select(fds, [], [], timeout)
            except InterruptedError:
                ready = []
            if self.wake_r in ready:
                try:
                    os.read(self.wake_r, 4096)
                except (BlockingIOError, InterruptedError):
                    pass
            if 0 in ready:
                self.link.poll()
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
            if res_open and (res_r in ready or exited is not None):
                while len(buf) <= MAX_WORKER_LINE:
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
                        if len(buf) > MAX_WORKER_LINE:
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
            if exited is None:
                try:
                    wpid, status, ru = os.wait4(pid, os.WNOHANG)
                except ChildProcessError:
                    wpid, status, ru = pid, 0, None
                if wpid == pid:
                    exited, rusage = status, ru
                    continue  # read what is left in the pipes on the next turn, without blocking
            elif not res_open or res_r not in ready:
                # the worker is gone and the result pipe has nothing more right now; a grandchild
                # may hold it open, so never wait for EOF
                break

        # the worker is gone; kill anything it left behind in its session
        try:
            os.killpg(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        for fd in (res_r, out_r):
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
        # a fresh worker (batch mode): its request, on stdin, holds its own job only
        request = json.loads(_read_all(0))
        jobs = [request["job"]]
        _worker(jobs[0], request["limits"], 3, 1)
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
    link = HostLink(request.get("sync"), rest)
    key = request.get("key")
    if isinstance(key, str) and key:
        channel.key = key.encode()

    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_r, False)
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w, warn_on_full_buffer=False)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)

    ipc = IpcCleaner() if IN_SANDBOX and len(jobs) > 1 else None
    runner = JobRunner(channel, Cgroup(), limits, wake_r, fresh=len(jobs) > 1, link=link)
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
