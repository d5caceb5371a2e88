"""One verdict per candidate, whatever the load: the resource candidates graded again and again.

    .venv/bin/python benchmarks/stress_verdicts.py                  # runc and runsc, 20 each: ~25 min on 2 cores
    .venv/bin/python benchmarks/stress_verdicts.py --runtime runc --repeat 5
    .venv/bin/python benchmarks/stress_verdicts.py --json out.json

Four candidates, each graded ``--repeat`` times through the real sandbox and the real scorer
(the tiny test problem, the hostile corpus's tight limits: 1 s of CPU per vector, 256 MB):

* ``memory-bomb``: 32 MB blocks until the memory runs out (must be ``memory_limit``);
* ``slow-allocator``: 1 MB at a time with a little work between (must be ``memory_limit``);
* ``cpu-burner``: a busy loop that allocates nothing (must be ``timeout``);
* ``output-flood``: writes to stdout without end (must be ``output_limit``, charged to the case
  that wrote it: a flood charged to the module's load is printed as ``output_limit at load``);

alone, and with every core of the host kept busy by busy loops of our own (one per CPU, started
and stopped by this script), in per-sample mode (one container per sample) and in batch mode
(the four candidates and a correct one per container, in a rotating order), under runc and
runsc. It prints the verdicts each candidate got in each setting and whether every one was the
same; the exit status is 1 when any candidate got two verdicts. Needs the engine, the image and,
for runsc, bin/setup --runsc.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import uuid
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from sandbox.engine import connect  # noqa: E402
from sandbox.image import resolve  # noqa: E402
from sandbox.models import Case, ExecResult, Job, Limits  # noqa: E402
from sandbox.runner import Sandbox  # noqa: E402
from sandbox.runtimes import require_runtime  # noqa: E402

LIMITS = Limits(case_cpu_s=1.0, load_cpu_s=1.0, wall_factor=2.0, wall_slack_s=0.5, memory_mb=256)  # tests/support.py tight_limits()
CANDIDATES = {
    "memory-bomb": ("memory_limit",
                    "def double(x):\n    hog = []\n    while True:\n        hog.append(bytearray(32 << 20))\n"),
    "slow-allocator": ("memory_limit",
                       "def double(x):\n    hog = []\n    while True:\n        hog.append(bytearray(1 << 20))\n"
                       "        for _ in range(10000):\n            pass\n"),
    "cpu-burner": ("timeout", "def double(x):\n    n = 0\n    while True:\n        n += 1\n"),
    "output-flood": ("output_limit",
                     "import sys\ndef double(x):\n    while True:\n        sys.stdout.write('x' * 65536)\n"),
}
CORRECT = 'def double(x):\n    return {"y": 2 * x, "half": x / 2}\n'
CASES = [Case(id=f"c{i}", args=[i]) for i in range(3)]


def verdict(r: ExecResult) -> str:
    """The scorer's verdict of a resource candidate (grader/grading/scoring.py, stop reasons)."""
    if r.stop is None:
        return "pass" if r.completed else "crashed"
    if r.stop.reason == "output" and r.stop.phase != "case":
        return f"output_limit at {r.stop.phase}"
    return {"cpu_time": "timeout", "wall_time": "timeout", "memory": "memory_limit",
            "output": "output_limit"}.get(r.stop.reason, "crashed")


class Load:
    """Busy loops on the host (one per CPU unless ``loops`` says), started and stopped by us (by pid)."""

    def __init__(self, on: bool, loops: int | None = None) -> None:
        self.on = on
        self.loops = loops or os.cpu_count() or 2
        self.procs: list[subprocess.Popen] = []

    def __enter__(self) -> "Load":
        if self.on:
            for _ in range(self.loops):
                self.procs.append(subprocess.Popen([sys.executable, "-c", "while True: pass"]))
            time.sleep(0.5)
        return self

    def __exit__(self, *exc: object) -> None:
        for p in self.procs:
            p.kill()
        for p in self.procs:
            p.wait()


def run_setting(sb: Sandbox, mode: str, repeat: int) -> dict[str, Counter]:
    got: dict[str, Counter] = {name: Counter() for name in CANDIDATES}
    names = list(CANDIDATES)
    for i in range(repeat):
        if mode == "single":
            for name in names:
                r = sb.run(Job(id=name, source=CANDIDATES[name][1], entry_point="double", cases=CASES), LIMITS)
                got[name][verdict(r)] += 1
        else:
            order = names[i % len(names):] + names[:i % len(names)]  # every candidate after every other one
            jobs = [Job(id=n, source=CANDIDATES[n][1], entry_point="double", cases=CASES) for n in order]
            jobs.insert(1, Job(id="correct", source=CORRECT, entry_point="double", cases=CASES))
            for r in sb.run_many(jobs, LIMITS):
                if r.job in got:
                    got[r.job][verdict(r)] += 1
                elif verdict(r) != "pass":
                    got.setdefault("correct (batch mate)", Counter())[verdict(r)] += 1
    return got


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runtime", action="append", choices=("runc", "runsc"))
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--mode", action="append", choices=("single", "batch"))
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    client = connect()
    image = resolve(client)
    rows = []
    same = True
    for runtime in args.runtime or ["runc", "runsc"]:
        require_runtime(client, runtime)
        sb = Sandbox(image.tag or "", client=client, runtime=runtime, run_id=f"stress-{uuid.uuid4().hex[:8]}")
        try:
            for mode in args.mode or ["single", "batch"]:
                for loaded in (False, True):
                    t0 = time.monotonic()
                    with Load(loaded):
                        got = run_setting(sb, mode, args.repeat)
                    took = time.monotonic() - t0
                    for name, counts in got.items():
                        want = CANDIDATES[name][0] if name in CANDIDATES else "pass"
                        ok = set(counts) == {want}
                        same &= ok
                        rows.append({"runtime": runtime, "mode": mode, "load": "all cores busy" if loaded else "alone",
                                     "candidate": name, "verdicts": dict(counts), "expected": want, "ok": ok,
                                     "seconds": round(took, 1)})
                        print(f"{runtime:6} {mode:6} {'busy' if loaded else 'alone':5} {name:22} "
                              f"{', '.join(f'{v} x{n}' for v, n in sorted(counts.items())):32} "
                              f"{'ok' if ok else 'DIFFERENT (want ' + want + ')'}", flush=True)
        finally:
            sb.sweep()
    print("every verdict identical" if same else "SOME CANDIDATE GOT TWO VERDICTS")
    if args.json:
        args.json.write_text(json.dumps({"limits": LIMITS.model_dump(), "rows": rows, "same": same}, indent=2))
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
