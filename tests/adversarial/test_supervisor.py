"""The supervisor inside the container: no candidate can crash it, stall it or read it.

Each class of attack runs through the real sandbox under runc and gVisor's runsc, alone (one
sample per container) and in batch mode, where a correct batch mate follows the attacker: the
mate must pass in the same container (the supervisor survived, unstalled, and cleaned up), and
the attacker gets its own verdict, never an infrastructure error.

* reach: the worker (uid 65534, no capability) tries to open the supervisor's and init's
  descriptors (the container's stdin and stdout) through /proc, read their memory and
  environment, set their resource limits, signal or trace them;
* secrets: the worker searches its own memory for the request's channel key and sync token
  (a forked worker would hold a copy of the supervisor's memory);
* records: the worker writes hostile records on its result pipe (nested past any parser's
  recursion limit, over-long, unterminated, invalid UTF-8, huge integers);
* scratch: the worker leaves a tree deeper than Python's recursion limit and longer than
  PATH_MAX, symbolic link loops, fifos, weird names and unreadable modes in /scratch and
  /dev/shm; its mate must find both empty.
"""

from __future__ import annotations

import pytest

from sandbox.models import Case, Job, Limits

pytestmark = pytest.mark.docker

LIMITS = Limits(case_cpu_s=2.0, load_cpu_s=5.0, wall_factor=2.0, wall_slack_s=1.0, memory_mb=256)
CASES = [Case(id=f"h{i}", args=[i]) for i in range(2)]
MATE = "def f(x):\n    return {'y': 2 * x}\n"


@pytest.fixture
def runtime(each_runtime):
    return each_runtime


def job(jid: str, source: str) -> Job:
    return Job(id=jid, source=source, entry_point="f", cases=CASES)


def alone_and_with_a_mate(sandbox, source: str):
    """(the attacker alone, the attacker in a batch, its batch mate)."""
    alone = sandbox.run(job("attacker", source), LIMITS)
    attacker, mate = sandbox.run_many([job("attacker", source), job("mate", MATE)], LIMITS)
    assert mate.completed and [c.value for c in mate.cases] == [{"y": 0}, {"y": 2}], (mate.stop, mate.cases)
    # the supervisor carried on in the same container: nothing was retired or rerun
    assert mate.container == attacker.container
    return alone, attacker, mate


REACH = r'''
import ctypes, errno, os, resource, signal

def f(x):
    """Everything of the supervisor's and init's that the worker reached (should be nothing)."""
    reached = []
    libc = ctypes.CDLL(None, use_errno=True)

    def attempt(name, fn):
        try:
            got = fn()
        except OSError:
            return
        if got is None or got:  # a call that succeeded, or a read that returned something
            reached.append(name)

    def read(path):
        with open(path, "rb") as fh:
            return fh.read(4096)

    def opened(path, flags):
        os.close(os.open(path, flags | os.O_NONBLOCK))

    sup = os.getppid()
    for pid in (1, sup):
        for fd in range(0, 10):
            for flags, how in ((os.O_RDONLY, "r"), (os.O_WRONLY, "w")):
                attempt(f"open /proc/{pid}/fd/{fd} ({how})", lambda: opened(f"/proc/{pid}/fd/{fd}", flags))
        attempt(f"/proc/{pid}/mem", lambda: read(f"/proc/{pid}/mem"))
        attempt(f"prlimit {pid}", lambda: resource.prlimit(pid, resource.RLIMIT_NOFILE, (3, 3)))
        for sig in (signal.SIGSTOP, signal.SIGTERM, signal.SIGKILL):
            attempt(f"signal {sig.name} to {pid}", lambda: os.kill(pid, sig))
        if libc.ptrace(16, pid, 0, 0) == 0:  # PTRACE_ATTACH
            reached.append(f"ptrace {pid}")
    # the supervisor keeps no environment (gVisor lets any process read /proc/<pid>/environ)
    attempt(f"/proc/{sup}/environ", lambda: read(f"/proc/{sup}/environ"))
    return {"y": 2 * x, "reached": reached}
'''


def test_the_worker_cannot_reach_the_supervisor_or_init(sandbox):
    alone, attacker, _ = alone_and_with_a_mate(sandbox, REACH)
    for r in (alone, attacker):
        assert r.completed, r.stop
        assert [c.value["reached"] for c in r.cases] == [[], []], r.cases[0].value


SECRETS = r'''
import os, re

# the request carries "sync":"<32 hex>" and "key":"<32 hex>"; built at run time so that the
# pattern itself never matches (its source text holds no 32 hex digits)
PATTERN = re.compile(rb'"(?:sync|key)":\s*"([0-9a-f]{32})"')

def f(x):
    plant = ('"sy' + 'nc":"' + os.urandom(16).hex() + '"').encode()  # proves the search works
    found = set()
    with open("/proc/self/maps") as maps, open("/proc/self/mem", "rb", 0) as mem:
        for line in maps:
            span, perms = line.split()[:2]
            lo, hi = (int(a, 16) for a in span.split("-"))
            if "r" not in perms or hi - lo > (256 << 20):
                continue
            try:
                mem.seek(lo)
                data = mem.read(hi - lo)
            except (OSError, OverflowError, ValueError):
                continue
            found.update(m.group(1) for m in PATTERN.finditer(data))
    planted = plant.split(b'"')[3]
    return {"y": 2 * x, "search_works": planted in found, "secrets": len(found - {planted})}
'''


def test_the_worker_holds_no_copy_of_the_key_or_the_token(sandbox):
    alone, attacker, _ = alone_and_with_a_mate(sandbox, SECRETS)
    for r in (alone, attacker):
        assert r.completed, r.stop
        for c in r.cases:
            assert c.value["search_works"], c.value
            assert c.value["secrets"] == 0, c.value


@pytest.mark.parametrize("record", [
    b"[" * 200_000 + b"]" * 200_000,  # deeper than any parser's recursion limit
    b'{"t":"case","id":"h0","ok":true,"value":' + b"[" * 5000 + b"]" * 5000 + b"}",
    b"x" * (3 << 20),  # longer than any record, with no newline in sight
    b'{"t":"case","id":"h0","ok":true,"value":' + b"9" * 20000 + b"}",  # a huge integer
    b'{"t":"case","id":"h0","ok":true,"value":"\xff\xfe"}',  # invalid UTF-8
    b'"' + b'a\\"' * 100_000,  # an unterminated string full of escapes
], ids=["deep", "deep-value", "over-long", "huge-int", "invalid-utf8", "unterminated"])
def test_hostile_records_on_the_result_pipe_stop_only_their_writer(sandbox, record):
    source = f"import os\ndef f(x):\n    os.write(3, {record!r} + b'\\n')\n    return {{'y': 2 * x}}\n"
    alone, attacker, _ = alone_and_with_a_mate(sandbox, source)
    for r in (alone, attacker):
        assert r.stop is not None and r.stop.reason == "protocol", r.stop


SCRATCH = r'''
import os

def mess(top):
    fd = os.open(top, os.O_RDONLY)
    for _ in range(1500):  # deeper than Python's recursion limit, longer than PATH_MAX
        os.mkdir("dddd", dir_fd=fd)
        nfd = os.open("dddd", os.O_RDONLY, dir_fd=fd)
        os.close(fd)
        fd = nfd
    os.mkfifo("fifo", dir_fd=fd)
    os.close(fd)
    os.symlink("loop2", os.path.join(top, "loop1"))
    os.symlink("loop1", os.path.join(top, "loop2"))
    os.symlink("/", os.path.join(top, "root"))
    os.symlink(".", os.path.join(top, "self"))
    os.mkfifo(os.path.join(top, "fifo"))
    for name in (b"\n", b"\xff\xfe", b"-rf", b" ", b"...", b"x" * 255):
        with open(os.path.join(os.fsencode(top), name), "wb") as fh:
            fh.write(b"1")
    for mode in (0o000, 0o100, 0o200, 0o500):
        d = os.path.join(top, f"mode{mode:o}")
        os.makedirs(os.path.join(d, "inner"))
        os.mkfifo(os.path.join(d, "inner", "fifo"))
        with open(os.path.join(d, "inner", "file"), "w") as fh:
            fh.write("x")
        os.chmod(d, mode)

def f(x):
    if x == 0:
        mess("/scratch")
        mess("/dev/shm")
    return {"y": 2 * x}
'''
LOOK = "import os\ndef f(x):\n    return {'y': 2 * x, 'scratch': os.listdir('/scratch'), 'shm': os.listdir('/dev/shm')}\n"


def test_a_hostile_scratch_is_wiped_and_the_supervisor_carries_on(sandbox):
    alone = sandbox.run(job("attacker", SCRATCH), LIMITS)
    assert alone.completed and [c.value for c in alone.cases] == [{"y": 0}, {"y": 2}], (alone.stop, alone.cases)
    attacker, looker = sandbox.run_many([job("attacker", SCRATCH), job("looker", LOOK)], LIMITS)
    assert attacker.completed, attacker.stop
    assert looker.completed and looker.container == attacker.container, looker.stop
    assert [c.value for c in looker.cases] == [{"y": 0, "scratch": [], "shm": []}, {"y": 2, "scratch": [], "shm": []}]


STALL = r'''
import os, signal

def f(x):
    """Everything that could keep the supervisor waiting: its stdin, signals, an endless record."""
    for pid in (1, os.getppid()):
        for fd in (0, 1, 2):
            try:
                w = os.open(f"/proc/{pid}/fd/{fd}", os.O_WRONLY | os.O_NONBLOCK)
                os.write(w, b"x" * 60000)  # a partial line in front of the host's next answer
            except OSError:
                pass
        try:
            os.kill(pid, signal.SIGSTOP)
        except OSError:
            pass
    os.write(3, b'{"t":"case","id":"h0"')  # a record that never ends: the process exits first
    return {"y": 2 * x}
'''


def test_nothing_the_worker_does_stalls_the_supervisor(sandbox):
    alone, attacker, mate = alone_and_with_a_mate(sandbox, STALL)
    # the half record is never finished: the attacker stopped for it, on its own
    assert alone.stop is not None and alone.stop.reason == "protocol", alone.stop
    assert attacker.stop is not None and attacker.stop.reason == "protocol", attacker.stop
    # a sync wait that found junk or a stopped supervisor would take 30 s and skip the
    # host's reading of the mate's memory records
    assert mate.container.host_wall_s < 20, mate.container


LEFT_BEHIND = r"""
import os, time

def f(x):
    if x == 1 and os.fork() == 0:  # after the last answer, a child keeps the result pipe busy
        time.sleep(0.2)
        while True:
            try:
                os.write(3, b'{"t":"case","id":"h1","ok":true,"value":{"y":99}}\\n[[[[' * 1000)
            except OSError:
                os._exit(0)
    return {"y": 2 * x}
"""


def test_what_a_left_behind_process_writes_after_the_last_answer_is_not_read(sandbox):
    alone, attacker, _ = alone_and_with_a_mate(sandbox, LEFT_BEHIND)
    for r in (alone, attacker):
        assert r.completed and [c.value for c in r.cases] == [{"y": 0}, {"y": 2}], (r.stop, r.cases)
