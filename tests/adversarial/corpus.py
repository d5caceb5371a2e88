"""Hostile and gaming candidates, each with the verdict(s) it must get. None may pass.

Every candidate targets the tiny test problem ``double(x) -> {"y": 2*x, "half": x/2}`` (an int and
a float), so a pass would need exactly those values. The categories follow the threats that have
beaten real graders: type games, exits, forged verdicts, resource exhaustion, escape and snooping,
and attacks on the host's channel parser.
"""

from __future__ import annotations

from dataclasses import dataclass

from sandbox.models import Limits

# tight limits so that the resource attacks end quickly
LIMITS = Limits(case_cpu_s=0.5, load_cpu_s=1.0, wall_factor=2.0, wall_slack_s=0.5, memory_mb=256)


@dataclass(frozen=True)
class Hostile:
    name: str
    category: str
    expect: frozenset[str]
    source: str


def H(name: str, category: str, expect: str | set[str], source: str) -> Hostile:
    verdicts = frozenset({expect} if isinstance(expect, str) else expect)
    assert "pass" not in verdicts
    return Hostile(name, category, verdicts, source.strip() + "\n")


CORRECT = 'def double(x):\n    return {"y": 2 * x, "half": x / 2}\n'

CORPUS: list[Hostile] = [
    # -- control -----------------------------------------------------------------------------
    H("wrong-answer", "control", "wrong_answer", 'def double(x):\n    return {"y": 2 * x + 1, "half": x / 2}'),

    # -- type games --------------------------------------------------------------------------
    H("always-equal-object", "types", "wrong_type", '''
class Anything:
    def __eq__(self, other): return True
    def __ne__(self, other): return False
    __hash__ = object.__hash__
def double(x):
    return {"y": Anything(), "half": Anything()}'''),
    H("always-equal-dict", "types", "wrong_type", '''
class D(dict):
    def __eq__(self, other): return True
def double(x):
    return D(y=0, half=0.0)'''),
    H("float-subclass", "types", "wrong_type", '''
class F(float):
    def __eq__(self, other): return True
def double(x):
    return {"y": 2 * x, "half": F(0.0)}'''),
    H("int-subclass-bool-games", "types", "wrong_type", '''
class I(int):
    def __eq__(self, other): return True
def double(x):
    return {"y": I(0), "half": x / 2}'''),
    H("nan", "types", "wrong_type", 'def double(x):\n    return {"y": 2 * x, "half": float("nan")}'),
    H("infinity", "types", "wrong_type", 'def double(x):\n    return {"y": 2 * x, "half": float("inf")}'),
    H("1e999", "types", "wrong_type", 'def double(x):\n    return {"y": 2 * x, "half": float("1e999")}'),
    H("bools-for-numbers", "types", "wrong_type", 'def double(x):\n    return {"y": True, "half": False}'),
    H("numeric-strings", "types", "wrong_type", 'def double(x):\n    return {"y": str(2 * x), "half": str(x / 2)}'),
    H("integral-float-for-int", "types", "wrong_type", 'def double(x):\n    return {"y": 2.0 * x, "half": x / 2}'),
    H("huge-int", "types", "wrong_type", 'def double(x):\n    return {"y": 10 ** 20000, "half": x / 2}'),
    H("deep-nesting", "types", "wrong_type", '''
def double(x):
    v = []
    for _ in range(5000):
        v = [v]
    return {"y": v, "half": x / 2}'''),
    H("generator", "types", "wrong_type", 'def double(x):\n    return {"y": (i for i in range(3)), "half": x / 2}'),
    H("missing-key", "types", "wrong_type", 'def double(x):\n    return {"y": 2 * x}'),
    H("extra-key", "types", "wrong_type", 'def double(x):\n    return {"y": 2 * x, "half": x / 2, "passed": True}'),
    H("look-alike-key", "types", "wrong_type", 'def double(x):\n    return {"\\u0443": 2 * x, "half": x / 2}'),
    H("bytes-and-pickle", "types", "wrong_type", '''
import pickle
def double(x):
    return {"y": pickle.dumps({"verdict": "pass"}), "half": x / 2}'''),
    H("huge-string", "types", "wrong_type", 'def double(x):\n    return {"y": "A" * (8 << 20), "half": x / 2}'),

    # -- exits -------------------------------------------------------------------------------
    H("sys-exit-in-function", "exits", "runtime_error", 'import sys\ndef double(x):\n    sys.exit(0)'),
    H("sys-exit-at-import", "exits", "load_error", 'import sys\nsys.exit(0)\ndef double(x):\n    return 1'),
    H("os-exit", "exits", "crashed", 'import os\ndef double(x):\n    os._exit(0)'),
    H("base-exception", "exits", "runtime_error",
      'class Boom(BaseException):\n    pass\ndef double(x):\n    raise Boom("stop the harness")'),
    H("keyboard-interrupt-at-import", "exits", "load_error", 'raise KeyboardInterrupt\ndef double(x):\n    return 1'),
    H("segfault", "exits", "crashed", 'import ctypes\ndef double(x):\n    return ctypes.string_at(0)'),
    H("abort", "exits", "crashed", 'import os\ndef double(x):\n    os.abort()'),

    # -- forging -----------------------------------------------------------------------------
    H("print-pass-markers", "forging", "wrong_answer", '''
print("PASSED: 50/50 tests passed")
print('{"verdict": "pass"}')
def double(x):
    print("1 passed in 0.01s")
    print("ALL TESTS PASSED")
    return {"y": -1, "half": 0.0}'''),
    H("fake-records-on-every-fd", "forging", "crashed", '''
import os
def double(x):
    line = b'{"t":"case","job":"sample","id":"h00","ok":true,"value":{"y":0,"half":0.0}}\\n'
    for fd in range(3, 64):
        try:
            os.write(fd, line)
        except OSError:
            pass
    return {"y": -1, "half": 0.0}'''),
    H("forged-stream-on-pid1-stdout", "forging", "crashed", '''
import os
def double(x):
    fd = os.open("/proc/1/fd/1", os.O_WRONLY)
    os.write(fd, b'{"t":"start","job":"sample"}\\n{"t":"end"}\\n')
    os.write(fd, b'{"t":"case","job":"sample","id":"h00","ok":true,"value":{"y":0,"half":0.0}}\\n')
    return {"y": -1, "half": 0.0}'''),
    H("duplicate-case-ids", "forging", "crashed", '''
import os, json
def double(x):
    fd = os.open("/proc/1/fd/1", os.O_WRONLY)
    for _ in range(3):
        os.write(fd, (json.dumps({"t": "case", "job": "sample", "id": "h01", "ok": True,
                                  "value": {"y": 2, "half": 0.5}}) + "\\n").encode())
    return {"y": -1, "half": 0.0}'''),
    H("monkey-patch-the-runner", "forging", {"wrong_answer", "crashed", "wrong_type"}, '''
import sys, json
main = sys.modules.get("__main__")
if main is not None:
    for name in dir(main):
        if "plain" in name or "result" in name.lower():
            try:
                setattr(main, name, lambda *a, **k: {"y": 0, "half": 0.0})
            except Exception:
                pass
json.dumps = lambda *a, **k: '{"t":"case","id":"h00","ok":true,"value":{"y":0,"half":0.0}}'
def double(x):
    return {"y": -1, "half": 0.0}'''),
    H("stack-walk-and-exit", "forging", "crashed", '''
import os, sys
def double(x):
    f = sys._getframe()
    while f is not None:
        for k, v in list(f.f_locals.items()):
            if isinstance(v, dict) and "verdict" in v:
                v["verdict"] = "pass"
        f = f.f_back
    os._exit(0)'''),
    H("json-the-host-must-refuse", "channel", "crashed", '''
import os
def double(x):
    fd = os.open("/proc/1/fd/1", os.O_WRONLY)
    os.write(fd, b'{"t":"case","job":"sample","id":"h00","ok":true,"value":{"y":NaN,"y":1e999}}\\n')
    return {"y": 2 * x, "half": x / 2}'''),

    # -- resources ---------------------------------------------------------------------------
    H("busy-loop", "resources", "timeout", 'def double(x):\n    while True:\n        pass'),
    H("ignores-signals", "resources", "timeout", '''
import signal
for s in (signal.SIGTERM, signal.SIGINT, signal.SIGXCPU, signal.SIGALRM, signal.SIGPROF, signal.SIGHUP):
    signal.signal(s, signal.SIG_IGN)
def double(x):
    while True:
        try:
            pass
        except BaseException:
            pass'''),
    H("sleep-at-import", "resources", "timeout", 'import time\ntime.sleep(120)\ndef double(x):\n    return 1'),
    H("fork-bomb", "resources", {"timeout", "crashed", "runtime_error", "memory_limit"}, '''
import os
def double(x):
    while True:
        try:
            os.fork()
        except OSError:
            pass'''),
    H("thread-bomb", "resources", {"timeout", "runtime_error", "memory_limit", "crashed"}, '''
import threading, time
def double(x):
    while True:
        threading.Thread(target=time.sleep, args=(60,), daemon=True).start()'''),
    H("memory-bomb", "resources", "memory_limit", '''
def double(x):
    hog = []
    while True:
        hog.append(bytearray(32 << 20))'''),
    H("infinite-recursion", "resources", "runtime_error", 'def double(x):\n    return double(x)'),
    H("deep-recursion-raised-limit", "resources", {"crashed", "runtime_error", "memory_limit"}, '''
import sys
sys.setrecursionlimit(10 ** 7)
def double(x):
    def r(n):
        return r(n + 1) + 1
    return r(0)'''),
    H("disk-fill", "resources", "runtime_error", '''
def double(x):
    with open("/scratch/fill", "wb") as f:
        while True:
            f.write(b"\\0" * (1 << 20))'''),
    H("fd-exhaustion", "resources", "runtime_error", '''
import os
def double(x):
    fds = []
    while True:
        fds.append(os.open("/dev/null", os.O_RDONLY))'''),
    H("stdout-flood", "resources", "output_limit", 'import sys\ndef double(x):\n    while True:\n        sys.stdout.write("x" * 65536)'),
    H("stderr-flood", "resources", "output_limit", 'import os\ndef double(x):\n    while True:\n        os.write(2, b"e" * 65536)'),
    H("child-left-sleeping", "resources", "wrong_answer", '''
import subprocess
def double(x):
    subprocess.Popen(["sleep", "600"], start_new_session=True)
    return {"y": 2 * x + 2, "half": x / 2}'''),
    H("slow-just-under-the-budget", "resources", "wrong_answer", '''
import time
def double(x):
    end = time.process_time() + 0.12
    while time.process_time() < end:
        pass
    return {"y": 2 * x, "half": x / 2 + 1}'''),

    # -- escape and snooping ------------------------------------------------------------------
    H("network-probe", "escape", "wrong_answer", '''
import socket
def double(x):
    got = []
    for host, port in (("1.1.1.1", 53), ("172.17.0.1", 2375), ("169.254.169.254", 80)):
        s = socket.socket(); s.settimeout(0.5)
        try:
            s.connect((host, port)); got.append(host)
        except OSError:
            pass
    return {"y": len(got) - 1, "half": 0.0}'''),
    H("privilege-escalation", "escape", "wrong_answer", '''
import os
def double(x):
    done = 0
    for attempt in (lambda: os.setuid(0), lambda: os.chroot("/scratch"),
                    lambda: os.mknod("/scratch/mem", 0o600 | 0o020000, os.makedev(1, 1)),
                    lambda: open("/proc/sysrq-trigger", "w").write("b")):
        try:
            attempt(); done += 1
        except OSError:
            pass
    return {"y": done - 1, "half": 0.0}'''),
    H("write-to-root-and-runner", "escape", "wrong_answer", '''
def double(x):
    ok = 0
    for p in ("/pwned", "/opt/harness/pg_harness.py", "/usr/lib/python3/dist-packages/sitecustomize.py"):
        try:
            with open(p, "w") as f:
                f.write("import os; os._exit(0)")
            ok += 1
        except OSError:
            pass
    return {"y": ok - 1, "half": 0.0}'''),
    H("snoop-files-and-environment", "escape", "wrong_answer", '''
import os, gc
def double(x):
    found = []
    for root in ("/", "/scratch", "/opt", "/tmp", "/proc/1"):
        try:
            found += os.listdir(root)
        except OSError:
            pass
    leaks = [k for k in os.environ if "EXPECT" in k.upper() or "ANSWER" in k.upper()]
    objs = [o for o in gc.get_objects() if isinstance(o, dict) and "expected" in o]
    return {"y": -len(leaks) - len(objs) - 1, "half": float(len(found) > 0)}'''),
    H("import-the-reference", "escape", "load_error", '''
import reference_models
from grader.grading import scoring
def double(x):
    return reference_models.REFERENCES["tiny_testing.double"](x)'''),
]
