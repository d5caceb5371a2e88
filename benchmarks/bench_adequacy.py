#!/usr/bin/env python3
"""What the validator's domain checks cost, per problem with a domain sampler.

    python benchmarks/bench_adequacy.py [--pack PACK] [--problem ID] [--workers 2] [--json FILE]

For every problem that declares a ``[sampler]``: the CPU time (this process and its children,
the host runs of the variants and partial models included) and the wall time of

* drawing the domain sample (the reference answers every input), from an empty cache;
* the coverage and adequacy checks in decisive mode (``problems validate --quick`` and the test
  suite: the same verdicts from as few host runs as settle them), the sample cached;
* the same, exhaustive (``problems validate``), the sample cached and no adequacy result;
* all of it again from the cache;

and the ratio of exhaustive to decisive adequacy. The figures say what the format adds to
``problems validate`` and to the suite. Figures only: nothing here fails on timing (the
machines are shared).
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
    ap.add_argument("--problem", action="append", metavar="ID", help="only these problems (repeatable)")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    cache = Path(tempfile.mkdtemp(prefix="bench-adequacy-"))
    os.environ["PERFGRADE_CACHE"] = str(cache)  # start cold

    from grader.grading.validate import ProblemReport, domain_checks
    from grader.packs import vectors
    from grader.packs.problems import Catalog
    from grader.packs.sampling import draw_sample

    rows = []
    for problem in Catalog().select(args.pack, args.problem):
        if problem.data.sampler is None:
            continue
        hidden = vectors.load(problem).hidden
        row: dict = {"problem": problem.qualified_id, "sample": problem.data.sampler.count,
                     "models": len(problem.variants) + len(problem.partial_models)}
        verdicts = {}
        # decisive first: its results never serve an exhaustive run, so "full" starts cold too
        for label in ("sample", "quick", "full", "cached"):
            cpu0, wall0 = _cpu(), time.perf_counter()
            if label == "sample":
                draw_sample(problem)
            else:
                report = ProblemReport(problem)
                domain_checks(problem, report, hidden, args.workers, exhaustive=label != "quick")
                verdicts[label] = [(m.name, m.ok) for m in report.adequacy]
            row[f"{label}_cpu_s"] = round(_cpu() - cpu0, 2)
            row[f"{label}_wall_s"] = round(time.perf_counter() - wall0, 2)
        row["ok"] = report.ok
        row["same_verdicts"] = verdicts["full"] == verdicts["quick"]
        rows.append(row)
        ratio = row["full_cpu_s"] / max(row["quick_cpu_s"], 0.01)
        print(f"{row['problem']:<45} sample {row['sample']:>5}  models {row['models']:>2}  "
              f"draw {row['sample_cpu_s']:>6.1f} s  adequacy {row['full_cpu_s']:>6.1f} s, "
              f"decisive {row['quick_cpu_s']:>5.1f} s ({ratio:.1f}x, "
              f"{'same verdicts' if row['same_verdicts'] else 'VERDICTS DIFFER'})  "
              f"cached {row['cached_cpu_s']:>5.2f} s  (CPU)  {'ok' if row['ok'] else 'FAIL'}")
    if rows:
        full, quick = sum(r["full_cpu_s"] for r in rows), sum(r["quick_cpu_s"] for r in rows)
        print(f"total CPU over {len(rows)} problem(s): draw {sum(r['sample_cpu_s'] for r in rows):.1f} s, "
              f"adequacy {full:.1f} s, decisive {quick:.1f} s ({full / max(quick, 0.01):.1f}x), "
              f"cached {sum(r['cached_cpu_s'] for r in rows):.2f} s")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
