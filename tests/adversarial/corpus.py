"""Hostile and gaming candidates, each with the verdict(s) it must get. None may pass.

Every candidate targets the tiny test problem ``double(x) -> {"y": 2*x, "half": x/2}`` (an int and
a float), so a pass would need exactly those values. The categories follow the threats that have
beaten real graders: type games, exits, forged verdicts, resource exhaustion, escape and snooping,
and attacks on the host's channel parser.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from support import tight_limits

LIMITS = tight_limits()  # so that the resource attacks end quickly


TINY = "tiny-pack/sound"


@dataclass(frozen=True)
class Hostile:
    name: str
    category: str
    expect: frozenset[str]
    source: str
    problem: str = TINY  # qualified id of the problem whose entry point the candidate defines


def H(name: str, category: str, expect: str | set[str], source: str, problem: str = TINY) -> Hostile:
    verdicts = frozenset({expect} if isinstance(expect, str) else expect)
    assert "pass" not in verdicts
    return Hostile(name, category, verdicts, source.strip() + "\n", problem)


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
    # the channel is PID 1's stdout, root's: it does not open for the worker (uid 65534), so the
    # candidates that forge on it raise PermissionError (the host's refusal of what they would
    # write is tested on its own: tests/sandbox/test_channel.py)
    H("forged-stream-on-pid1-stdout", "forging", "runtime_error", '''
import os
def double(x):
    fd = os.open("/proc/1/fd/1", os.O_WRONLY)
    os.write(fd, b'{"t":"start","job":"sample"}\\n{"t":"end"}\\n')
    os.write(fd, b'{"t":"case","job":"sample","id":"h00","ok":true,"value":{"y":0,"half":0.0}}\\n')
    return {"y": -1, "half": 0.0}'''),
    H("duplicate-case-ids", "forging", "runtime_error", '''
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
    H("json-the-host-must-refuse", "channel", "runtime_error", '''
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
    # ten times deeper than Python's default limit, then every frame holds 16 MB, so the memory
    # limit comes long before the CPU budget under both runtimes, alone or with every core busy.
    # Filling 256 MB in small blocks races the CPU budget: under gVisor the Sentry's page faults
    # are the container's CPU time, and 16 KiB frames got `timeout` there (at 0.5 s of CPU, with
    # 150-215 MB in use) on a quiet machine too
    H("deep-recursion-raised-limit", "resources", "memory_limit", '''
import sys
sys.setrecursionlimit(10 ** 7)
def double(x):
    def r(n, frame):
        return r(n + 1, bytearray(16 << 20) if n >= 10_000 else None) + 1
    return r(0, None)'''),
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


# ============================================================================================
# Hostile values on real perf-core problems
# ============================================================================================
#
# Every candidate below answers a real problem of the perf-core pack with the RIGHT keys: it
# carries the problem's bundled solution (renamed ``_right``) and corrupts only the values, so
# that a scorer that let the hostile value through would give a pass. Two problems:
#
# * f5-three-level-accesses: ``{"RF"|"GB"|"DRAM": map[int]}``, seven access counts per level,
#   compared exactly; ``DRAM.I_fills`` and ``DRAM.W_fills`` are 0 in every vector (DRAM is never
#   filled), which lets a candidate put a value that is ``== 0`` in Python but not an int there.
# * f2-roofline-gemm: two exact ints (``flops``, ``dram_bytes``), five floats with
#   ``rtol=1e-9, atol=1e-12`` and an enum ``bound`` (``compute`` | ``memory``).
#
# The verdicts are the ones the docs promise. docs/authoring.md, "Comparison rules": an ``int``
# output must be a JSON integer ("``18.0`` and ``true`` are wrong types"); a ``float`` output
# accepts integers and is compared with its tolerance; an ``enum`` must be one of its choices.
# The prompt (grader prompt): "plain Python values (int, float, str, bool, list, dict; numpy
# scalars are accepted). Integers must be Python integers, not floats." The harness
# (sandbox/harness/pg_harness.py, ``_to_plain``) refuses every subclass and every non-JSON type
# (an ``UnsupportedResult`` error, scored ``wrong_type``), turns numpy bools, integers and floats
# into ``bool``/``int``/``float`` and arrays into lists (by ``tolist()``), bounds depth (32),
# element count (200,000) and encoded size; the host parser (sandbox/channel.py) refuses NaN,
# infinity, duplicate keys and integers over 4,300 digits; the scorer compares with exact types
# (``type(v) is int``: ``True`` is not ``1``, ``48.0`` is not ``48``).

PERF_CORE = Path(__file__).resolve().parents[2] / "problems" / "perf-core"
F5 = "perf-core/f5-three-level-accesses"
F2 = "perf-core/f2-roofline-gemm"
ENTRY = {F5: "three_level_accesses", F2: "roofline_gemm"}
PARAMS = {F5: "gemm, hierarchy", F2: "gemm, hw"}


def solution(problem: str) -> str:
    """The problem's bundled solution (a correct candidate)."""
    return (PERF_CORE / problem.split("/", 1)[1] / "solution.py").read_text()


def with_right(problem: str, code: str) -> str:
    """The bundled solution renamed ``_right``, then ``code`` (which defines the entry point)."""
    return f"{solution(problem)}\n\n_right = {ENTRY[problem]}\n\n{code.strip()}\n"


def mutate(problem: str, body: str, prelude: str = "") -> str:
    """A candidate that computes the right answer ``out`` and runs ``body`` on it before returning."""
    lines = "\n".join("    " + ln if ln else "" for ln in body.strip("\n").splitlines())
    fn = (f"{prelude.strip()}\n\n" if prelude.strip() else "") + (
        f"def {ENTRY[problem]}({PARAMS[problem]}):\n"
        f"    out = _right({PARAMS[problem]})\n"
        f"{lines}\n"
        f"    return out\n")
    return with_right(problem, fn)


def V(name: str, category: str, expect: str | set[str], problem: str, body: str, prelude: str = "") -> Hostile:
    return H(name, category, expect, mutate(problem, body, prelude), problem)


# The visible examples of each problem as a model sees them in its prompt (``problems show``).
# test_hostile_values checks that they still are the problem's visible vectors.
VISIBLE = {
    F5: [
        ([{"M": 16, "N": 32, "K": 3},
          {"RF": {"loops": [["N", 2], ["N", 2]], "bypass": []}, "GB": {"loops": [["K", 3], ["M", 8]], "bypass": []},
           "DRAM": {"loops": [["N", 8], ["M", 2]]}}],
         {"RF": {"I_reads": 1536, "I_fills": 384, "W_reads": 1536, "W_fills": 1536, "O_reads": 1024, "O_fills": 0,
                 "O_updates": 1536},
          "GB": {"I_reads": 384, "I_fills": 48, "W_reads": 1536, "W_fills": 192, "O_reads": 0, "O_fills": 0,
                 "O_updates": 512},
          "DRAM": {"I_reads": 48, "I_fills": 0, "W_reads": 192, "W_fills": 0, "O_reads": 0, "O_fills": 0,
                   "O_updates": 512}}),
        ([{"M": 6, "N": 2, "K": 4},
          {"RF": {"loops": [["M", 3], ["M", 2]], "bypass": []}, "GB": {"loops": [["M", 1], ["K", 4]], "bypass": ["W", "O"]},
           "DRAM": {"loops": [["K", 1], ["N", 2]]}}],
         {"RF": {"I_reads": 48, "I_fills": 48, "W_reads": 48, "W_fills": 8, "O_reads": 36, "O_fills": 0, "O_updates": 48},
          "GB": {"I_reads": 48, "I_fills": 24, "W_reads": 0, "W_fills": 0, "O_reads": 0, "O_fills": 0, "O_updates": 0},
          "DRAM": {"I_reads": 24, "I_fills": 0, "W_reads": 8, "W_fills": 0, "O_reads": 0, "O_fills": 0,
                   "O_updates": 12}}),
    ],
    F2: [
        ([{"M": 53, "N": 9, "K": 142, "input_bits": 4, "weight_bits": 16, "output_bits": 4},
          {"macs_per_cycle": 64, "clock_mhz": 500, "dram_gb_per_s": 13}],
         {"flops": 135468, "dram_bytes": 6558, "intensity": 20.65690759377859, "peak_gflops": 64.0,
          "ridge_point": 4.923076923076923, "attainable_gflops": 64.0, "latency_us": 2.1166875, "bound": "compute"}),
        ([{"M": 1591, "N": 33, "K": 1213, "input_bits": 16, "weight_bits": 4, "output_bits": 4},
          {"macs_per_cycle": 2048, "clock_mhz": 2000, "dram_gb_per_s": 39}],
         {"flops": 127372278, "dram_bytes": 3906033, "intensity": 32.60911466953812, "peak_gflops": 8192.0,
          "ridge_point": 210.05128205128204, "attainable_gflops": 1271.7554721119868, "latency_us": 100.1546923076923,
          "bound": "memory"}),
    ],
}

# Walks the stack up to the harness's worker loop (``_worker`` in pg_harness.py) and returns its
# locals: the job (its id and every case's id and arguments), the current case id ``cid`` and the
# private result pipe ``res_w``. Everything a forger needs, except the expected values.
SPY = '''
import json, os, sys

def _harness():
    f = sys._getframe(1)
    while f is not None:
        if f.f_code.co_name == "_worker":
            return f.f_locals
        f = f.f_back
    raise RuntimeError("no harness frame")
'''

# the right answer with one count off by one (a plain wrong answer)
OFF_BY_ONE = 'out["DRAM"]["O_updates"] += 1'

VALUE_CORPUS: list[Hostile] = [
    # -- bools for integer counts ---------------------------------------------------------------
    # bool is a subclass of int and True == 1, False == 0 in Python; the scorer checks
    # ``type(v) is int``, and the docs say "true is a wrong type" for an int output.
    V("f5-true-for-a-count", "types", "wrong_type", F5, 'out["RF"]["I_reads"] = True'),
    V("f5-false-for-a-zero-count", "types", "wrong_type", F5, 'out["DRAM"]["I_fills"] = False  # always 0: == holds'),
    V("f5-bools-wherever-they-compare-equal", "types", "wrong_type", F5, '''
for level in out.values():
    for k, v in level.items():
        if v in (0, 1):
            level[k] = bool(v)'''),
    V("f2-bool-for-the-enum", "types", "wrong_type", F2, 'out["bound"] = out["bound"] == "compute"'),
    V("f2-bools-for-int-fields", "types", "wrong_type", F2, 'out["flops"] = True\nout["dram_bytes"] = False'),

    # -- floats for integers ---------------------------------------------------------------------
    # an int output must be a JSON integer: 48.0 is a wrong type, even though 48.0 == 48
    V("f5-integral-floats-for-counts", "types", "wrong_type", F5, '''
for level in out.values():
    for k in level:
        level[k] = float(level[k])'''),
    V("f5-float-a-hair-off-an-integer", "types", "wrong_type", F5, 'out["GB"]["W_reads"] += 1e-7  # 48.0000001'),
    V("f5-float-zero-for-a-zero-count", "types", "wrong_type", F5, 'out["DRAM"]["W_fills"] = 0.0'),
    V("f5-negative-zero-for-a-zero-count", "types", "wrong_type", F5, 'out["DRAM"]["W_fills"] = -0.0'),
    V("f2-integral-float-for-flops", "types", "wrong_type", F2, 'out["flops"] = float(out["flops"])'),

    # -- integers beyond 64 bits --------------------------------------------------------------------
    # right type, wrong value: wrong_answer (a scorer that wrapped at 2**64 would pass the first two)
    V("f5-count-plus-2**64", "types", "wrong_answer", F5, 'out["RF"]["W_reads"] += 2 ** 64'),
    V("f5-count-minus-2**64", "types", "wrong_answer", F5, 'out["RF"]["W_reads"] -= 2 ** 64'),
    V("f5-count-plus-2**128-negative", "types", "wrong_answer", F5, 'out["GB"]["I_reads"] = -(2 ** 128) + out["GB"]["I_reads"]'),
    V("f5-4300-digit-count", "types", "wrong_answer", F5,  # the longest int the channel carries
      'out["DRAM"]["I_reads"] = 10 ** 4299\nout["DRAM"]["W_reads"] = -(10 ** 4299)'),
    # more digits than json can encode (Python's 4,300-digit limit): UnsupportedResult, wrong_type
    V("f5-5000-digit-negative-count", "types", "wrong_type", F5, 'out["DRAM"]["I_reads"] = -(10 ** 5000)'),
    V("f2-count-plus-2**64", "types", "wrong_answer", F2, 'out["flops"] += 2 ** 64'),
    # an int where a float is due is accepted (docs: "integers are accepted"), so this is a number
    # compared with the tolerance: far off, so wrong_answer. It must not crash the scorer although
    # float(10 ** 400) overflows.
    V("f2-int-too-big-for-a-float-field", "types", "wrong_answer", F2, 'out["intensity"] = 10 ** 400'),
    V("f2-negative-int-too-big-for-a-float-field", "types", "wrong_answer", F2, 'out["latency_us"] = -(10 ** 400)'),

    # -- numpy values ---------------------------------------------------------------------------------
    # the harness turns numpy floats into float: np.float64 for an int count is a float, wrong_type
    V("f5-np-float64-for-counts", "numpy", "wrong_type", F5, '''
for level in out.values():
    for k in level:
        level[k] = np.float64(level[k])''', prelude="import numpy as np"),
    # np.bool_ becomes bool: wrong_type for an int, even where the count is 0
    V("f5-np-bool-for-a-zero-count", "numpy", "wrong_type", F5, 'out["DRAM"]["I_fills"] = np.bool_(False)',
      prelude="import numpy as np"),
    # a 0-d float array is converted with tolist() to a float: wrong_type
    V("f5-0d-float-array-for-a-count", "numpy", "wrong_type", F5,
      'out["GB"]["O_updates"] = np.array(float(out["GB"]["O_updates"]))', prelude="import numpy as np"),
    # an array where a dict is due becomes a list: wrong_type
    V("f5-np-array-for-a-level-map", "numpy", "wrong_type", F5, 'out["RF"] = np.array(list(out["RF"].values()))',
      prelude="import numpy as np"),
    V("f5-structured-array-for-a-level-map", "numpy", "wrong_type", F5, '''
rf = out["RF"]
out["RF"] = np.array([tuple(rf.values())], dtype=[(k, "i8") for k in rf])[0]''', prelude="import numpy as np"),
    # integer overflow in numpy wraps silently: the value is wrong, the type (an int) is fine
    V("f5-np-uint64-wraparound", "numpy", "wrong_answer", F5,
      'out["RF"]["O_reads"] = np.uint64(out["RF"]["O_reads"]) - np.uint64(out["RF"]["O_reads"] + 1)',
      prelude="import numpy as np"),
    # an object array holds the candidate's objects: tolist() hands them back, and they are refused
    V("f5-object-array-of-always-equal", "numpy", "wrong_type", F5, '''
out["RF"]["I_reads"] = np.array(Anything(), dtype=object)''', prelude='''
import numpy as np

class Anything:
    def __eq__(self, other): return True
    def __ne__(self, other): return False
    __hash__ = object.__hash__'''),
    V("f5-np-matrix-for-a-level-map", "numpy", "wrong_type", F5, 'out["RF"] = np.matrix(list(out["RF"].values()))',
      prelude="import numpy as np"),
    V("f5-complex-for-a-count", "numpy", "wrong_type", F5, 'out["RF"]["I_reads"] = np.complex128(out["RF"]["I_reads"])',
      prelude="import numpy as np"),
    # a subclass of a numpy integer that claims to be numpy (``__module__``) gets past the subclass
    # check, but only int(v) leaves the container: its __eq__ never reaches the host. Wrong value:
    # wrong_answer.
    V("f5-numpy-disguised-int-subclass", "numpy", "wrong_answer", F5,
      'out["RF"]["I_reads"] = Sly(out["RF"]["I_reads"] + 1)', prelude='''
import numpy as np

class Sly(np.int64):
    __module__ = "numpy"
    def __eq__(self, other): return True
    def __ne__(self, other): return False
    __hash__ = np.int64.__hash__'''),
    # float32 loses precision far beyond rtol=1e-9: the value is wrong (numpy scalars are
    # accepted, their values are compared as usual)
    V("f2-np-float32-for-floats", "numpy", "wrong_answer", F2, '''
for k in ("intensity", "ridge_point", "attainable_gflops", "latency_us"):
    out[k] = np.float32(out[k])''', prelude="import numpy as np"),
    V("f2-np-float64-for-flops", "numpy", "wrong_type", F2, 'out["flops"] = np.float64(out["flops"])',
      prelude="import numpy as np"),
    # flops passes 2^63 on domain inputs the hidden vectors hold: an int64 answer cannot pass
    V("f2-np-int64-for-flops", "numpy", "runtime_error", F2, 'out["flops"] = np.int64(out["flops"])',
      prelude="import numpy as np"),
    V("f2-nan-from-numpy", "numpy", "wrong_type", F2, 'out["ridge_point"] = np.float64("nan")',
      prelude="import numpy as np"),

    # -- strings that look like numbers -------------------------------------------------------------
    V("f5-count-as-a-string", "types", "wrong_type", F5, 'out["RF"]["W_fills"] = str(out["RF"]["W_fills"])  # "48"'),
    V("f5-count-in-exponent-notation", "types", "wrong_type", F5,
      'out["RF"]["W_fills"] = "%.15e" % out["RF"]["W_fills"]  # "4.8e1"'),
    V("f5-count-with-a-leading-space", "types", "wrong_type", F5, 'out["RF"]["W_fills"] = " %d" % out["RF"]["W_fills"]'),
    V("f2-float-as-a-string", "types", "wrong_type", F2, 'out["peak_gflops"] = repr(out["peak_gflops"])'),
    # a string that is not one of the enum's choices is a wrong type, not a near miss
    V("f2-enum-with-a-trailing-space", "types", "wrong_type", F2, 'out["bound"] = out["bound"] + " "'),
    V("f2-enum-capitalised", "types", "wrong_type", F2, 'out["bound"] = out["bound"].capitalize()'),
    V("f2-enum-in-cyrillic-look-alike", "types", "wrong_type", F2,
      'out["bound"] = out["bound"].replace("o", "\\u043e")'),
    # a valid choice, but the wrong one: wrong_answer
    V("f2-enum-always-compute", "types", "wrong_answer", F2, 'out["bound"] = "compute"'),

    # -- nesting and size ----------------------------------------------------------------------------
    V("f5-count-nested-10000-deep", "types", "wrong_type", F5, '''
v = out["RF"]["I_reads"]
for _ in range(10_000):
    v = [v]
out["RF"]["I_reads"] = v'''),
    # within the harness's depth bound (32), so the host sees the list and the scorer refuses it
    V("f5-count-nested-30-deep", "types", "wrong_type", F5, '''
v = out["RF"]["I_reads"]
for _ in range(30):
    v = [v]
out["RF"]["I_reads"] = v'''),
    V("f5-level-map-nested-10000-deep", "types", "wrong_type", F5, '''
v = out["GB"]
for _ in range(10_000):
    v = {"I_reads": v}
out["GB"] = v'''),
    V("f5-count-in-a-one-element-list", "types", "wrong_type", F5, 'out["RF"]["I_reads"] = [out["RF"]["I_reads"]]'),
    # more elements than the harness's bound (200,000); built once, so that each case stays far
    # under the tight CPU and wall budgets of LIMITS even on a busy machine
    V("f5-huge-list-for-a-count", "types", "wrong_type", F5, 'out["RF"]["I_reads"] = _HUGE',
      prelude="_HUGE = [0] * 300_000"),
    V("f5-self-referencing-map", "types", "wrong_type", F5, 'out["RF"]["I_reads"] = out'),
    V("f5-level-map-with-extra-keys", "types", "wrong_type", F5, 'out["RF"]["I_writes"] = 0\nout["RF"]["passed"] = 1'),

    # -- subclasses and look-alike containers ----------------------------------------------------------
    # the harness refuses every subclass (a subclass can override comparison), whatever it holds
    V("f5-dict-subclass-with-the-right-values", "types", "wrong_type", F5, '''
for name in out:
    out[name] = D(out[name])''', prelude='''
class D(dict):
    def __eq__(self, other): return True
    def __ne__(self, other): return False
    __hash__ = None
    def keys(self): return dict.keys(self)'''),
    # holds wrong counts, reports right ones through every method the scorer or json might call
    V("f5-dict-subclass-lying-about-its-items", "types", "wrong_type", F5, '''
right = out["RF"]
out["RF"] = Liar({k: v + 1 for k, v in right.items()})
out["RF"].shown = right''', prelude='''
class Liar(dict):
    shown = {}
    def __eq__(self, other): return True
    def __iter__(self): return iter(self.shown)
    def keys(self): return self.shown.keys()
    def items(self): return self.shown.items()
    def values(self): return self.shown.values()
    def __getitem__(self, k): return self.shown[k]
    def __len__(self): return len(self.shown)'''),
    V("f5-top-level-dict-subclass", "types", "wrong_type", F5, 'out = D(out)', prelude='''
class D(dict):
    def __eq__(self, other): return True'''),
    V("f5-mapping-proxy-for-a-level-map", "types", "wrong_type", F5, 'out["RF"] = types.MappingProxyType(out["RF"])',
      prelude="import types"),
    V("f5-int-subclass-with-the-right-value", "types", "wrong_type", F5, '''
for level in out.values():
    for k in level:
        level[k] = I(level[k])''', prelude='''
class I(int):
    def __eq__(self, other): return True
    def __ne__(self, other): return False
    __hash__ = int.__hash__'''),
    V("f5-str-subclass-keys", "types", "wrong_type", F5, '''
out["RF"] = {S(k): v for k, v in out["RF"].items()}''', prelude='''
class S(str):
    def __eq__(self, other): return True
    __hash__ = str.__hash__'''),
    # prints as the right number, holds a wrong one, and claims equality with anything
    V("f2-float-subclass-with-a-lying-repr", "types", "wrong_type", F2, '''
out["intensity"] = F(out["intensity"] * 2, repr(out["intensity"]))''', prelude='''
class F(float):
    def __new__(cls, value, shown):
        self = float.__new__(cls, value)
        self.shown = shown
        return self
    def __repr__(self): return self.shown
    __str__ = __repr__
    def __eq__(self, other): return True
    def __ne__(self, other): return False
    __hash__ = float.__hash__'''),
    V("f2-fraction-for-a-float", "types", "wrong_type", F2, 'out["latency_us"] = Fraction(out["latency_us"])'),
    V("f2-decimal-for-a-float", "types", "wrong_type", F2, 'out["intensity"] = decimal.Decimal(out["intensity"])',
      prelude="import decimal"),

    # -- forged records ------------------------------------------------------------------------------
    # The host reads only the supervisor's channel. The candidate's stdout and stderr (fds 1 and 2)
    # are a separate capped pipe, so records printed there in the channel's own format
    # ({"t": "case", "job": ..., "id": ..., "ok": true, "value": ...}, see pg_harness.py), with the
    # real job and case ids read off the stack and the right values, are just output: the value
    # returned is graded, and it is wrong.
    H("f5-fake-channel-records-on-stdout", "forging", "wrong_answer", with_right(F5, SPY + '''
def three_level_accesses(gemm, hierarchy):
    out = _right(gemm, hierarchy)
    h = _harness()
    jid, cid = h["job"]["job"], h["cid"]
    fake = [{"t": "case", "job": jid, "id": cid, "ok": True, "value": out, "cpu_s": 0.0, "wall_s": 0.0},
            {"t": "case", "id": cid, "ok": True, "value": out}]
    for rec in fake:
        line = json.dumps(rec, separators=(",", ":"))
        print(line, flush=True)
        os.write(1, (line + "\\n").encode())
        os.write(2, (line + "\\n").encode())
    print(json.dumps({"t": "job_end", "job": jid}), json.dumps({"t": "end"}), sep="\\n", flush=True)
    wrong = {k: dict(v) for k, v in out.items()}
    wrong["DRAM"]["O_updates"] += 1
    return wrong'''), F5),
    # The result pipe from the worker to the supervisor is open in the candidate's process (its
    # fd is a local of the harness's frame). A forged record with the right value for the current
    # case is taken as the answer, and the harness's own record that follows is then out of order:
    # a protocol error, crashed.
    H("f5-forged-right-answer-on-the-result-pipe", "forging", "crashed", with_right(F5, SPY + '''
def three_level_accesses(gemm, hierarchy):
    out = _right(gemm, hierarchy)
    h = _harness()
    os.write(h["res_w"], (json.dumps({"t": "case", "id": h["cid"], "ok": True, "value": out}) + "\\n").encode())
    out["DRAM"]["O_updates"] += 1
    return out'''), F5),
    # A half record left on the result pipe before returning: the harness's record completes a
    # line that is not JSON (JSON cannot swallow a balanced object): crashed.
    H("f5-half-record-on-the-result-pipe", "forging", "crashed", with_right(F5, SPY + '''
def three_level_accesses(gemm, hierarchy):
    out = _right(gemm, hierarchy)
    h = _harness()
    head = json.dumps({"t": "case", "id": h["cid"], "ok": True, "value": out})[:-1] + ', "x": '
    os.write(h["res_w"], head.encode())
    out["DRAM"]["O_updates"] += 1
    return out'''), F5),
    # The right record of the current case written to every inherited fd but stdin, stdout and
    # stderr (the result pipe among them), before returning a wrong value: the forged record is
    # taken, the harness's own record for the same case is then out of order: crashed.
    H("f5-right-records-on-every-other-fd", "forging", "crashed", with_right(F5, SPY + '''
def three_level_accesses(gemm, hierarchy):
    out = _right(gemm, hierarchy)
    h = _harness()
    line = (json.dumps({"t": "case", "id": h["cid"], "ok": True, "value": out}) + "\\n").encode()
    for fd in range(3, 256):
        try:
            os.write(fd, line)
        except OSError:
            pass
    out["DRAM"]["O_updates"] += 1
    return out'''), F5),

    # -- processes that outlive the answer ----------------------------------------------------------
    # A daemon thread that keeps printing fake records: only output, and the worker is removed
    # after its last answer. The values are wrong.
    V("f5-thread-keeps-printing-after-the-answer", "lingering", "wrong_answer", F5, '''
if not _started:
    _started.append(threading.Thread(target=_chatter, daemon=True))
    _started[0].start()
''' + OFF_BY_ONE, prelude='''
import json, threading, time

_started = []

def _chatter():
    while True:
        print(json.dumps({"t": "case", "job": "sample", "id": "h00", "ok": True, "value": {}}), flush=True)
        time.sleep(0.005)'''),
    # A forked child in its own session (out of reach of the worker's process group) that keeps
    # the result pipe and stdout open, sleeps past the last answer and then writes forged records
    # with the right values, again and again. The harness stops reading the result pipe when the
    # worker is gone, and kills what is left: the returned (wrong) values are graded.
    H("f5-forked-daemon-rewrites-the-answers", "lingering", "wrong_answer", with_right(F5, SPY + '''
import time

_forked = []

def three_level_accesses(gemm, hierarchy):
    out = _right(gemm, hierarchy)
    h = _harness()
    if not _forked:
        _forked.append(1)
        cases = h["job"]["cases"]
        if os.fork() == 0:
            try:
                os.setsid()
                lines = "".join(json.dumps({"t": "case", "id": c["id"], "ok": True,
                                            "value": _right(*json.loads(c["args_json"]))}) + "\\n"
                                for c in cases).encode()
                time.sleep(1.5)
                while True:
                    for fd in (h["res_w"], 1, 2):
                        try:
                            os.write(fd, lines)
                        except OSError:
                            pass
                    time.sleep(0.05)
            finally:
                os._exit(0)
    out["DRAM"]["O_updates"] += 1
    return out'''), F5),
    V("f5-child-left-sleeping", "lingering", "wrong_answer", F5, '''
if not _kids:
    _kids.append(subprocess.Popen(["sleep", "600"], start_new_session=True))
''' + OFF_BY_ONE, prelude="import subprocess\n\n_kids = []"),

    # -- special-casing the visible examples ----------------------------------------------------------
    # the prompt's two examples answered from a table, anything else by a plausible wrong rule:
    # it passes the examples (test_hostile_values checks that) and fails the hidden vectors
    H("f5-visible-examples-only", "special-casing", "wrong_answer", f'''
import json

_EXAMPLES = {{json.dumps(args, sort_keys=True): out for args, out in {VISIBLE[F5]!r}}}

def three_level_accesses(gemm, hierarchy):
    key = json.dumps([gemm, hierarchy], sort_keys=True)
    if key in _EXAMPLES:
        return _EXAMPLES[key]
    macs = gemm["M"] * gemm["N"] * gemm["K"]
    names = ("I_reads", "I_fills", "W_reads", "W_fills", "O_reads", "O_fills", "O_updates")
    return {{level: {{k: (macs if k.endswith("reads") or k == "O_updates" else 0) for k in names}}
            for level in ("RF", "GB", "DRAM")}}
''', F5),
    H("f2-visible-examples-only", "special-casing", "wrong_answer", f'''
import json

_EXAMPLES = {{json.dumps(args, sort_keys=True): out for args, out in {VISIBLE[F2]!r}}}

def roofline_gemm(gemm, hw):
    key = json.dumps([gemm, hw], sort_keys=True)
    if key in _EXAMPLES:
        return dict(_EXAMPLES[key])
    flops = gemm["M"] * gemm["N"] * gemm["K"]  # one FLOP per MAC: the classic slip
    dram = gemm["M"] * gemm["K"] + gemm["K"] * gemm["N"] + gemm["M"] * gemm["N"]
    peak = hw["macs_per_cycle"] * hw["clock_mhz"] / 1e3
    ridge = peak / hw["dram_gb_per_s"]
    intensity = flops / dram
    attainable = min(peak, intensity * hw["dram_gb_per_s"])
    return {{"flops": flops, "dram_bytes": dram, "intensity": intensity, "peak_gflops": peak,
            "ridge_point": ridge, "attainable_gflops": attainable, "latency_us": flops / attainable / 1e3,
            "bound": "compute" if intensity >= ridge else "memory"}}
''', F2),
    # the examples from the table, the hidden vectors by the right rule, but one hidden vector
    # (looked up by its id on the stack) answered wrong: a single vector must fail the sample
    H("f5-right-except-one-hidden-vector", "special-casing", "wrong_answer", with_right(F5, SPY + '''
def three_level_accesses(gemm, hierarchy):
    out = _right(gemm, hierarchy)
    if _harness()["cid"] == "h41":
        out["GB"]["O_updates"] += 1
    return out'''), F5),
]


@dataclass(frozen=True)
class Accepted:
    """A value that differs from the reference's in form only: it must pass."""

    name: str
    problem: str
    source: str
    why: str


ACCEPTED: list[Accepted] = [
    Accepted("f5-bundled-solution", F5, solution(F5), "the control"),
    Accepted("f2-bundled-solution", F2, solution(F2), "the control"),
    Accepted("f5-np-int64-counts", F5, mutate(F5, '''
for level in out.values():
    for k in level:
        level[k] = np.int64(level[k])''', "import numpy as np"), "the prompt: numpy scalars are accepted"),
    Accepted("f5-np-uint64-and-int8-counts", F5, mutate(F5, '''
for level in out.values():
    for k in level:
        level[k] = np.uint64(level[k]) if level[k] > 127 else np.int8(level[k])''', "import numpy as np"),
        "numpy integers of any width become exact ints"),
    Accepted("f5-0d-int-arrays-for-counts", F5, mutate(F5, '''
for level in out.values():
    for k in level:
        level[k] = np.array(level[k])''', "import numpy as np"),
        "the harness converts arrays with tolist(): a 0-d int array is its int"),
    Accepted("f5-keys-in-another-order", F5, mutate(F5, '''
out = {name: dict(reversed(list(out[name].items()))) for name in reversed(list(out))}'''),
        "dicts compare by key, not by order"),
    Accepted("f2-ints-for-integral-floats", F2, mutate(F2, '''
for k in ("peak_gflops", "attainable_gflops", "intensity", "ridge_point"):
    if out[k] == int(out[k]):
        out[k] = int(out[k])'''), "docs/authoring.md: a float output accepts integers"),
    # flops reaches 2^75 in the domain (hidden vectors hold such cases), so no numpy int holds it;
    # dram_bytes stays below 2^53 there, and an int64 or a uint64 holds it exactly.
    Accepted("f2-numpy-floats-and-ints", F2, mutate(F2, '''
out["dram_bytes"] = np.uint64(out["dram_bytes"]) if out["flops"] % 2 else np.int64(out["dram_bytes"])
out["intensity"] = np.float64(out["intensity"])
out["ridge_point"] = np.longdouble(out["ridge_point"])
out["bound"] = np.array(out["bound"])  # 0-d unicode array: tolist() gives the str''', "import numpy as np"),
        "numpy scalars are accepted; a 0-d array is converted by tolist()"),
    Accepted("f2-floats-within-the-tolerance", F2, mutate(F2, '''
for k in ("intensity", "peak_gflops", "ridge_point", "attainable_gflops", "latency_us"):
    out[k] = out[k] * (1 + 5e-10)'''), "rtol is 1e-9"),
    # The prompt says "numpy scalars are accepted", and np.str_ is a numpy scalar (indexing an
    # array of strings gives one: np.array(["compute", "memory"])[i]). It holds the right choice.
    Accepted("f2-np-str-for-the-enum", F2, mutate(F2, '''
out["bound"] = np.array(["compute", "memory"])[0 if out["bound"] == "compute" else 1]''', "import numpy as np"),
        "the prompt: numpy scalars are accepted"),
]


# -- forging the host channel for batch mates -------------------------------------------------
# PID 1 of the container (docker-init) holds the container's stdout, which is the channel the host
# reads. These candidates are CORRECT for themselves; on their first call they read the request
# off the stack (a worker that was a fork of the supervisor had every job's id and cases there),
# then write on the host channel the rest of their own job, a complete stream for every later job
# of the request (start, load, every case with values of their choosing, job_end), and the end
# record. They get neither: a worker is a fresh interpreter holding its own job only, and
# /proc/1/fd/1 is root's, closed to the worker's uid. Batch mode promises that nobody's verdict
# depends on who shared the container.
FORGE_THE_BATCH = '''
_done = []

def _frames():
    f = sys._getframe(1)
    while f is not None:
        yield f
        f = f.f_back

def _forge(mates_value):
    loc = {f.f_code.co_name: f.f_locals for f in _frames()}
    me, jobs = loc["_worker"]["job"], loc["main"]["jobs"]
    later = jobs[[j["job"] for j in jobs].index(me["job"]) + 1:]
    recs = []
    for c in me["cases"]:
        recs.append({"t": "case", "job": me["job"], "id": c["id"], "ok": True,
                     "value": _right(*json.loads(c["args_json"])), "cpu_s": 0.001, "wall_s": 0.001})
    recs.append({"t": "job_end", "job": me["job"], "output_bytes": 0, "output_head": "", "output_tail": "",
                 "max_rss_kb": 20000, "cpu_s": 0.1, "wall_s": 0.1})
    for j in later:
        recs += [{"t": "start", "job": j["job"]},
                 {"t": "load", "job": j["job"], "ok": True, "cpu_s": 0.01, "wall_s": 0.01}]
        for c in j["cases"]:
            recs.append({"t": "case", "job": j["job"], "id": c["id"], "ok": True,
                         "value": mates_value(c["args"]), "cpu_s": 0.001, "wall_s": 0.001})
        recs.append({"t": "job_end", "job": j["job"], "output_bytes": 0, "output_head": "",
                     "output_tail": "", "max_rss_kb": 20000, "cpu_s": 0.1, "wall_s": 0.1})
    recs.append({"t": "end"})
    fd = os.open("/proc/1/fd/1", os.O_WRONLY)
    data = "".join(json.dumps(r, separators=(",", ":")) + "\\n" for r in recs).encode()
    while data:
        data = data[os.write(fd, data):]
'''


def _batch_forger(mates: str) -> str:
    return with_right(F5, SPY + FORGE_THE_BATCH + f'''
def _mates_value(args):
    out = _right(*args)
    {mates}
    return out

def three_level_accesses(gemm, hierarchy):
    if not _done:
        _done.append(1)
        _forge(_mates_value)
    return _right(gemm, hierarchy)
''')


BATCH_FORGERS = {
    # gives every later job the right answers: a wrong batch mate passes
    "passes-its-batch-mates": _batch_forger("pass"),
    # gives every later job a wrong count: a correct batch mate fails
    "fails-its-batch-mates": _batch_forger('out["DRAM"]["O_updates"] += 1'),
}
# a wrong candidate of f5 (one count off by one) and the correct one, as batch mates
WRONG_F5 = mutate(F5, OFF_BY_ONE)
