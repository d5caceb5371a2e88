#!/usr/bin/env python3
"""What the validator's domain checks cost, per problem with a domain sampler.

    python benchmarks/bench_adequacy.py [--pack PACK] [--workers 2] [--json FILE]

For every problem that declares a ``[sampler]``: the CPU time (this process and its children,
the host runs of the variants and partial models included) and the wall time of the sampler,
domain sample, coverage and adequacy checks with an empty cache, then again from the cache, and
the sample's size. The figures say what rolling the format out to a pack will add to
``problems validate``. Figures only: nothing here fails on timing (the machines are shared).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _cpu() -> float:
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pack", default=None, help="only this pack (default: every loaded pack)")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    os.environ["PERFGRADE_CACHE"] = tempfile.mkdtemp(prefix="bench-adequacy-")  # start cold

    from grader.grading.validate import ProblemReport, domain_checks
    from grader.packs import vectors
    from grader.packs.problems import Catalog

    rows = []
    for problem in Catalog().problems(args.pack):
        if problem.data.sampler is None:
            continue
        hidden = vectors.load(problem).hidden
        row: dict = {"problem": problem.qualified_id, "sample": problem.data.sampler.count,
                     "models": len(problem.variants) + len(problem.partial_models)}
        for label in ("cold", "cached"):
            cpu0, wall0 = _cpu(), time.perf_counter()
            report = ProblemReport(problem)
            domain_checks(problem, report, hidden, args.workers)
            row[f"{label}_cpu_s"] = round(_cpu() - cpu0, 2)
            row[f"{label}_wall_s"] = round(time.perf_counter() - wall0, 2)
        row["ok"] = report.ok
        rows.append(row)
        print(f"{row['problem']:<45} sample {row['sample']:>5}  models {row['models']:>2}  "
              f"cold {row['cold_cpu_s']:>6.1f} s CPU ({row['cold_wall_s']:.1f} s wall)  "
              f"cached {row['cached_cpu_s']:>5.2f} s CPU  {'ok' if row['ok'] else 'FAIL'}")
    if rows:
        print(f"total: cold {sum(r['cold_cpu_s'] for r in rows):.1f} s CPU, "
              f"cached {sum(r['cached_cpu_s'] for r in rows):.2f} s CPU over {len(rows)} problem(s)")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
