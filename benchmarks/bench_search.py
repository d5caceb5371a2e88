#!/usr/bin/env python3
"""What grading a search sample costs, beside a pass/fail sample, in one run.

    python benchmarks/bench_search.py [--model-problem ID]... [--json FILE]

For every search problem (tier ``search``, docs/mapper.md) and, beside them, a few ``perf-model``
problems: every bundled candidate (the solution, the baselines, the wrong-on-purpose variants) is
graded as `eval` grades a sample, in a fresh hardened container over all hidden vectors, host-side
judging included. Printed per candidate: the CPU time of the candidate in its container, the wall
time of the whole grade, and its score or verdict. Then the host's own share of a search grade:
how long the trusted evaluator takes to check and evaluate one mapping (each hidden instance's
best known mapping, every instance a number of times).

The figures show whether grading one search sample stays near the 30 s of CPU the pack's format
allows, and how it compares with a pass/fail sample. Figures only: nothing here fails on timing
(the machines are shared and noisy; compare within one run).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from grader.grading.execution import grade_source, open_sandbox  # noqa: E402
from grader.grading.scoring import judge_mapping  # noqa: E402
from grader.packs import vectors  # noqa: E402
from grader.packs.problems import Catalog, Problem  # noqa: E402

MODEL_PROBLEMS = ("perf-model/f4-gemm-dram-traffic", "perf-model/f16-best-tiling-search")


def candidates(problem: Problem) -> list[tuple[str, str]]:
    out = [("solution", problem.solution_source)] if problem.solution_source else []
    out += [(f"baseline:{b.name}", b.source) for b in problem.baselines]
    out += [(f"variant:{v.name}", v.source) for v in problem.variants]
    return out


def evaluator_ms(problem: Problem, hidden, repeat: int = 20) -> float:
    """Milliseconds the trusted evaluator takes per mapping (the best known ones)."""
    evaluator, max_bytes = problem.evaluator_fn, problem.data.scoring.max_bytes
    mappings = [(json.loads(v.expected["mapping"]) if isinstance(v.expected["mapping"], str)
                 else v.expected["mapping"], v) for v in hidden]
    t0 = time.perf_counter()
    for _ in range(repeat):
        for m, v in mappings:
            invalid, _ = judge_mapping(evaluator, m, v.args, max_bytes)
            assert not invalid, invalid
    return 1000 * (time.perf_counter() - t0) / (repeat * len(mappings))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model-problem", action="append", metavar="ID",
                    help=f"pass/fail problems to grade beside (default: {', '.join(MODEL_PROBLEMS)})")
    ap.add_argument("--problem", action="append", metavar="ID",
                    help="only these search problems (qualified ids; default: every one)")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)

    cat = Catalog()
    search = [p for p in cat.problems() if p.data.scoring is not None]
    if args.problem:
        unknown = sorted(set(args.problem) - {p.qualified_id for p in search})
        if unknown:
            ap.error(f"--problem: not a search problem: {', '.join(unknown)}")
        search = [p for p in search if p.qualified_id in args.problem]
    beside = [cat.find(pid) for pid in (args.model_problem or MODEL_PROBLEMS)]
    handle = open_sandbox(run_id=f"bench-search-{uuid.uuid4().hex[:8]}")
    rows = []
    try:
        for problem in search + beside:
            hidden = vectors.load(problem).hidden
            row = {"problem": problem.qualified_id, "tier": problem.pack.tier, "hidden": len(hidden),
                   "candidates": []}
            if problem.data.scoring is not None:
                row["evaluator_ms_per_mapping"] = round(evaluator_ms(problem, hidden), 3)
            for name, source in candidates(problem):
                t0 = time.perf_counter()
                g, _ = grade_source(handle, problem, source, hidden, job_id=f"bench-{name.replace(':', '-')}"[:60])
                wall = time.perf_counter() - t0
                row["candidates"].append({"candidate": name, "verdict": g.verdict.value, "score": g.score,
                                          "cpu_s": round(g.cpu_s, 2), "wall_s": round(wall, 2)})
            rows.append(row)
            cands = row["candidates"]
            worst = max(c["cpu_s"] for c in cands) if cands else 0.0
            extra = (f"  evaluator {row['evaluator_ms_per_mapping']:.2f} ms/mapping"
                     if "evaluator_ms_per_mapping" in row else "")
            print(f"{row['problem']:<46} {row['tier']:<7} {len(hidden):>3} hidden  "
                  f"candidate CPU max {worst:6.2f} s{extra}")
            for c in cands:
                result = f"score {c['score']:.3f}" if c["score"] is not None else c["verdict"]
                print(f"    {c['candidate']:<42} {c['cpu_s']:>7.2f} s CPU {c['wall_s']:>7.2f} s wall  {result}")
    finally:
        handle.sandbox.sweep()

    def mean_cpu(tier_rows):
        cs = [c["cpu_s"] for r in tier_rows for c in r["candidates"]]
        return sum(cs) / len(cs) if cs else float("nan")

    s_rows = [r for r in rows if "evaluator_ms_per_mapping" in r]
    m_rows = [r for r in rows if "evaluator_ms_per_mapping" not in r]
    if s_rows and m_rows:
        s, m = mean_cpu(s_rows), mean_cpu(m_rows)
        print(f"mean candidate CPU per sample: search {s:.2f} s, pass/fail {m:.2f} s (ratio {s / m:.1f})")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
