"""How close each sandboxed test run comes to its CPU budgets: the tests that could flake under load.

    .venv/bin/python benchmarks/budget_margins.py tests/sandbox tests/adversarial tests/faults
    .venv/bin/python benchmarks/budget_margins.py --hog tests/sandbox          # a busy loop on one core beside
    .venv/bin/python benchmarks/budget_margins.py --top 20 --json margins.json tests/sandbox -k runsc

Runs pytest on the given paths (two xdist workers, as ``bin/test`` does) with this file loaded
as a plugin: every ``Sandbox.run_many`` call records, per job, the CPU its module's load and its
slowest case used against their budgets, and the stop (reason, phase, detail) when there was
one. It then prints the runs that completed with the least room (CPU used / budget, highest
first) and the stops per test. A test whose candidate completes at 0.7 of its budget on an idle
machine is a timeout waiting for a busy one: under gVisor the budget is the container's CPU on
the host, the Sentry's work included, so forks, page faults and file-system walks count. A
test that is not about the budget should give the candidate room (the conformance tests' fork
bomb and image walk do). Needs the engine and the image, as the tests do; the exit status is
pytest's.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LOG_ENV = "PERFGRADE_MARGIN_LOG"


# -- the plugin half: loaded into pytest (and each xdist worker) with -p budget_margins ------------
def pytest_configure(config):  # noqa: ARG001 - pytest's hook signature
    log = os.environ.get(LOG_ENV)
    if not log:
        return
    import sandbox.runner as runner

    original = runner.Sandbox.run_many
    if getattr(original, "_margins", False):
        return

    def run_many(self, jobs, limits=None):
        results = original(self, jobs, limits)
        lim = limits or runner.Limits()
        test = os.environ.get("PYTEST_CURRENT_TEST", "?").split(" ")[0]
        with open(log, "a", encoding="utf-8") as fh:
            for r in results:
                fh.write(json.dumps({
                    "test": test, "runtime": self.runtime or "runc", "job": r.job,
                    "load_cpu_s": r.load.cpu_s if r.load else None, "load_budget_s": lim.load_cpu_s,
                    "case_cpu_s": max((c.cpu_s for c in r.cases), default=0.0), "case_budget_s": lim.case_cpu_s,
                    "stop": r.stop.reason if r.stop else None, "phase": r.stop.phase if r.stop else None,
                    "detail": r.stop.detail if r.stop else None,
                }) + "\n")
        return results

    run_many._margins = True
    runner.Sandbox.run_many = run_many


# -- the script half ---------------------------------------------------------------------------------
def room(row: dict) -> tuple[float, str]:
    """The larger share of a budget the run used, and which budget it was."""
    load = (row["load_cpu_s"] or 0.0) / row["load_budget_s"]
    case = row["case_cpu_s"] / row["case_budget_s"]
    return (load, "load") if load >= case else (case, "case")


def report(rows: list[dict], top: int) -> str:
    done = sorted((r for r in rows if r["stop"] is None), key=lambda r: -room(r)[0])
    lines = [f"{len(rows)} sandbox runs, {len(rows) - len(done)} stopped", "",
             "completed runs with the least room (CPU used / budget):",
             f"{'share':>6}  {'budget':6}  {'runtime':7}  {'used':>8}  {'of':>6}  test"]
    for r in done[:top]:
        share, which = room(r)
        used = r["load_cpu_s"] if which == "load" else r["case_cpu_s"]
        of = r["load_budget_s"] if which == "load" else r["case_budget_s"]
        lines.append(f"{share:6.2f}  {which:6}  {r['runtime']:7}  {used:7.3f}s  {of:5g}s  {r['test']}")
    stops = Counter((r["test"], r["runtime"], r["stop"], r["phase"]) for r in rows if r["stop"])
    lines += ["", "stops per test (count, runtime, reason, phase):"]
    lines += [f"{n:3d}  {rt:5}  {reason:9}  {phase:5}  {test}" for (test, rt, reason, phase), n in sorted(stops.items())]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    from stress_verdicts import Load  # the busy loops stress_verdicts.py keeps beside its gradings

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("paths", nargs="+", help="test files or folders (and any other pytest option, such as -k EXPR)")
    ap.add_argument("--top", type=int, default=25, help="how many completed runs to list")
    ap.add_argument("--hog", action="store_true", help="keep one core busy with a loop of our own meanwhile")
    ap.add_argument("--workers", default="2", help="pytest-xdist workers (default 2, as bin/test)")
    ap.add_argument("--json", metavar="FILE", help="also write every run's record to FILE")
    args, extra = ap.parse_known_args(argv)

    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "runs.jsonl"
        env = dict(os.environ, **{LOG_ENV: str(log)},
                   PYTHONPATH=os.pathsep.join(p for p in (str(Path(__file__).parent), str(ROOT),
                                                          os.environ.get("PYTHONPATH")) if p))
        with Load(args.hog, loops=1):
            rc = subprocess.run([sys.executable, "-m", "pytest", "-p", "budget_margins", "-q", "-n", args.workers,
                                 *args.paths, *extra], cwd=ROOT, env=env).returncode
        rows = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    print(report(rows, args.top))
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return rc


if __name__ == "__main__":
    sys.exit(main())
