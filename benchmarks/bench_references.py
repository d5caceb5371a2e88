#!/usr/bin/env python3
"""How fast each perf-model reference answers its real-size vectors, against the per-call budget.

    python benchmarks/bench_references.py [--pack perf-model] [--repeat 3] [--json FILE]

A model-tier problem demands a model, not a simulation: its real-size hidden vectors are out of
reach of the bundled brute-force simulator (``problems validate`` proves that), while the
reference answers them in milliseconds. This prints, per problem, the CPU time of the reference
on its real-size vectors (best of ``--repeat`` per vector; the slowest vector and the median) and
how many times over the problem's per-call CPU budget would hold the slowest. Figures only:
nothing here fails on timing (the machines are shared and noisy).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from grader.grading.execution import problem_limits  # noqa: E402
from grader.packs import vectors  # noqa: E402
from grader.packs.problems import Catalog  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pack", default="perf-model")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    rows = []
    for problem in Catalog().problems(args.pack):
        if problem.data.generator.real is None:
            continue
        ref = problem.reference_fn
        big = [v for v in vectors.load(problem).hidden if str(v.id).startswith("r")]  # real-size ids: r0, r1, ...
        times = []
        for v in big:
            best = float("inf")
            for _ in range(max(1, args.repeat)):
                t0 = time.process_time()
                ref(**v.kwargs(problem))
                best = min(best, time.process_time() - t0)
            times.append(best)
        budget = problem_limits(problem).case_cpu_s
        slowest = max(times)
        rows.append({"problem": problem.id, "vectors": len(times), "median_ms": statistics.median(times) * 1e3,
                     "max_ms": slowest * 1e3, "budget_s": budget,
                     "headroom": budget / slowest if slowest > 0 else float("inf")})
    width = max(len(r["problem"]) for r in rows)
    print(f"{'problem':<{width}}  real  median ms  slowest ms  budget / slowest")
    for r in rows:
        print(f"{r['problem']:<{width}}  {r['vectors']:>4}  {r['median_ms']:>9.2f}  {r['max_ms']:>10.2f}"
              f"  {r['headroom']:>15.0f}x")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
