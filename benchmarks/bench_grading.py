#!/usr/bin/env python3
"""Grading throughput, side by side in one run, on the same candidates at the same concurrency.

    python benchmarks/bench_grading.py [--concurrency 4] [--batch 16] [--quick] [--json FILE]

Modes, each grading every candidate (the pack's bundled solutions and wrong-on-purpose variants)
over all of its problem's hidden vectors, scoring included:

  (a) container floor   create/start/wait/remove of a container running `true` in the sandbox image
  (b) bare floor        the same harness as a plain local subprocess per candidate, no container
  (c) per-sample        the grader as shipped: one fresh hardened container per candidate
  (d) batch             one fresh hardened container per batch of candidates of one problem

Then: how cost grows with the number of hidden vectors and with concurrency; the overlap of
generation and grading in `eval` against a local model service with 0.5 s per completion; and the
grader's peak resident memory through a long run. Figures are printed (and written as JSON);
nothing here fails on timing: these machines are shared and noisy, so compare within one run.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from grader.packs import vectors  # noqa: E402
from grader.grading.execution import make_job  # noqa: E402
from grader.packs.problems import Catalog, Problem  # noqa: E402
from grader.grading.scoring import grade  # noqa: E402
from sandbox.channel import ChannelAssembler  # noqa: E402
from sandbox.engine import connect  # noqa: E402
from sandbox.image import resolve  # noqa: E402
from sandbox.models import Limits  # noqa: E402
from sandbox.runner import Sandbox  # noqa: E402

HARNESS = ROOT / "sandbox" / "harness" / "pg_harness.py"


def pctl(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))] if xs else float("nan")


def figures(name: str, n: int, elapsed: float, latencies: list[float]) -> dict:
    return {"mode": name, "samples": n, "seconds": round(elapsed, 3), "samples_per_s": round(n / elapsed, 2),
            "p50_ms": round(1000 * pctl(latencies, 0.5), 1), "p95_ms": round(1000 * pctl(latencies, 0.95), 1)}


def show(row: dict) -> None:
    print(f"  {row['mode']:<22} {row['samples']:>6} samples  {row['samples_per_s']:>8.2f}/s  "
          f"p50 {row['p50_ms']:>8.1f} ms  p95 {row['p95_ms']:>8.1f} ms", flush=True)


def candidates(catalog: Catalog, quick: bool) -> list[tuple[Problem, str, str]]:
    out = []
    problems = catalog.problems("perf-core")
    if quick:
        problems = problems[:6]
    for p in problems:
        out.append((p, "solution", p.solution_source))
        for v in p.variants:
            out.append((p, v.name, v.source))
    return out


def timed_map(fn, items, concurrency):
    lat: list[float] = []
    results = []

    def one(item):
        t = time.monotonic()
        r = fn(item)
        return r, time.monotonic() - t

    t0 = time.monotonic()
    with ThreadPoolExecutor(concurrency) as pool:
        for r, dt in pool.map(one, items):
            results.append(r)
            lat.append(dt)
    return results, lat, time.monotonic() - t0


# -- (a) container floor ---------------------------------------------------------------------

def container_floor(client, image: str, n: int, concurrency: int) -> dict:
    def one(_):
        cid = client.create_container(image, entrypoint=["true"],
                                      host_config=client.create_host_config(network_mode="none"))["Id"]
        client.start(cid)
        client.wait(cid)
        client.remove_container(cid, force=True)

    _, lat, el = timed_map(one, range(n), concurrency)
    return figures("(a) container floor", n, el, lat)


# -- (b) bare floor --------------------------------------------------------------------------

def bare_run(problem: Problem, source: str, hidden, limits: Limits, scratch: str):
    job = make_job("sample", problem, source, hidden)
    payload = Sandbox._request([job], limits)
    env = {k: v for k, v in os.environ.items() if k != "PG_SANDBOX"}
    env.update(PG_SCRATCH=scratch, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    out = subprocess.run([sys.executable, "-I", "-B", str(HARNESS)], input=payload, capture_output=True,
                         env=env, timeout=600)
    asm = ChannelAssembler([job])
    for line in out.stdout.splitlines():
        asm.feed_line(line)
    return grade(asm.results()[0], hidden, problem.data.outputs)


# -- scenario runner -------------------------------------------------------------------------

def run_modes(cands, hidden_of, sb: Sandbox, client, image: str, concurrency: int, batch: int) -> tuple[list, dict]:
    rows = []
    n = len(cands)
    rows.append(container_floor(client, image, n, concurrency))
    show(rows[-1])

    with tempfile.TemporaryDirectory() as scratch:
        bare, lat, el = timed_map(
            lambda c: bare_run(c[0], c[2], hidden_of[c[0].qualified_id], c[0].sandbox_limits(Limits()), scratch),
            cands, concurrency)
    rows.append(figures("(b) bare floor", n, el, lat))
    show(rows[-1])

    def per_sample(c):
        p, _, src = c
        hidden = hidden_of[p.qualified_id]
        return grade(sb.run(make_job("sample", p, src, hidden), p.sandbox_limits(Limits())), hidden, p.data.outputs)

    single, lat, el = timed_map(per_sample, cands, concurrency)
    rows.append(figures("(c) per-sample", n, el, lat))
    show(rows[-1])

    groups: dict[str, list[int]] = defaultdict(list)
    for i, c in enumerate(cands):
        groups[c[0].qualified_id].append(i)
    chunks = [idx[k:k + batch] for idx in groups.values() for k in range(0, len(idx), batch)]

    def run_chunk(idx):
        p = cands[idx[0]][0]
        hidden = hidden_of[p.qualified_id]
        jobs = [make_job(f"j{i}", p, cands[i][2], hidden) for i in idx]
        res = sb.run_many(jobs, p.sandbox_limits(Limits()))
        return [(i, grade(r, hidden, p.data.outputs)) for i, r in zip(idx, res)]

    t0 = time.monotonic()
    batched: dict[int, object] = {}
    blat: list[float] = []
    with ThreadPoolExecutor(concurrency) as pool:
        for out, dt in pool.map(lambda ch: (lambda t: (run_chunk(ch), time.monotonic() - t))(time.monotonic()), chunks):
            for i, g in out:
                batched[i] = g
                blat.append(dt)
    rows.append(figures(f"(d) batch of {batch}", n, time.monotonic() - t0, blat))
    show(rows[-1])

    verdicts = {
        "bare": [g.verdict.value for g in bare],
        "per_sample": [g.verdict.value for g in single],
        "batch": [batched[i].verdict.value for i in range(n)],
    }
    mismatches = [
        {"problem": c[0].qualified_id, "candidate": c[1], **{k: v[i] for k, v in verdicts.items()}}
        for i, c in enumerate(cands)
        if len({verdicts["bare"][i], verdicts["per_sample"][i], verdicts["batch"][i]}) > 1
    ]
    return rows, {"mismatches": mismatches, "compared": n}


def scaling(sb: Sandbox, catalog: Catalog, client, image: str, quick: bool) -> dict:
    from grader.packs.vectors import generate

    p = catalog.find("perf-core/f1-conv-layer-accounting")
    src = p.solution_source
    out: dict = {"vectors": [], "concurrency": []}
    print("  cost per sample vs hidden vectors (per-sample mode, batch of 8):", flush=True)
    for nv in (1, 10, 100) if quick else (1, 10, 100, 1000):
        data = p.data.model_copy(update={"generator": p.data.generator.model_copy(
            update={"hidden_count": nv, "small_input_space": "benchmark"})})
        q = Problem(pack=p.pack, dir=p.dir, data=data, spec=p.spec)
        hidden = generate(q, "hidden")
        reps = 6
        t = time.monotonic()
        for _ in range(reps):
            grade(sb.run(make_job("s", q, src, hidden), Limits()), hidden, q.data.outputs)
        per = (time.monotonic() - t) / reps
        t = time.monotonic()
        res = sb.run_many([make_job(f"j{i}", q, src, hidden) for i in range(8)], Limits())
        for r in res:
            grade(r, hidden, q.data.outputs)
        bper = (time.monotonic() - t) / 8
        out["vectors"].append({"vectors": nv, "per_sample_ms": round(1000 * per, 1), "batch_ms": round(1000 * bper, 1)})
        print(f"    {nv:>5} vectors: per-sample {1000 * per:8.1f} ms/sample   batch {1000 * bper:8.1f} ms/sample",
              flush=True)
    print("  per-sample throughput vs concurrency (container floor beside it):", flush=True)
    hidden = vectors.load(p).hidden
    job = make_job("s", p, src, hidden)
    for conc in (1, 2, 4) if quick else (1, 2, 4, 8):
        n = 8 * conc if quick else 12 * conc
        _, lat, el = timed_map(lambda _: sb.run(job, Limits()), range(n), conc)
        fl = container_floor(client, image, n, conc)
        out["concurrency"].append({"concurrency": conc, "samples_per_s": round(n / el, 2),
                                   "p95_ms": round(1000 * pctl(lat, 0.95), 1),
                                   "floor_per_s": fl["samples_per_s"]})
        print(f"    concurrency {conc}: {n / el:6.2f}/s (floor {fl['samples_per_s']:6.2f}/s), "
              f"p95 {1000 * pctl(lat, 0.95):7.1f} ms", flush=True)
    return out


def overlap(quick: bool, concurrency: int, workers: int) -> dict:
    from fakes.model_server import FakeModelServer

    catalog = Catalog()
    problems = catalog.problems("perf-core")[: (8 if quick else 20)]
    samples = 4 if quick else 10
    sol = {p.qualified_id: p.solution_source for p in problems}
    titles = {p.title: p.qualified_id for p in problems}

    def answer(prompt: str, body: dict) -> str:
        title = prompt.splitlines()[0][2:]
        return f"```python\n{sol[titles[title]]}\n```\n"

    common = ["--api-key-env", "NONE", "--samples", str(samples), "--concurrency", str(concurrency),
              "--workers", str(workers), "--quiet", "--no-cache"]
    sel = [a for p in problems for a in ("--problem", p.qualified_id)]
    with tempfile.TemporaryDirectory() as tmp, FakeModelServer(answer) as srv:
        srv.always = ("slow", 0.5)
        env = dict(os.environ, PERFGRADE_CACHE=str(Path(tmp) / "cache"))
        # generation alone: the same requests at the same concurrency, nothing graded
        from grader.pipeline.llm import GenParams, ModelClient
        from grader.packs.prompt import render_prompt

        client = ModelClient(base_url=srv.base_url, api_key=None, params=GenParams(model="bench"), use_cache=False)
        prompts = [(render_prompt(p, vectors.load(p).visible), s) for p in problems for s in range(samples)]
        t = time.monotonic()
        with ThreadPoolExecutor(concurrency) as pool:
            texts = list(pool.map(lambda ps: client.complete(*ps).text, prompts))
        gen_alone = time.monotonic() - t
        # grading alone: the same completions from a file
        comp = Path(tmp) / "c.jsonl"
        comp.write_text("".join(json.dumps({"problem": p.qualified_id, "sample": s, "text": txt}) + "\n"
                                for (p, s), txt in zip([(p, s) for p in problems for s in range(samples)], texts)))
        t = time.monotonic()
        subprocess.run([sys.executable, "-m", "grader", "eval", "--completions", str(comp), *common,
                        "--runs-dir", str(Path(tmp) / "r1")], check=True, cwd=ROOT, env=env,
                       stdout=subprocess.DEVNULL)
        grade_alone = time.monotonic() - t
        t = time.monotonic()
        subprocess.run([sys.executable, "-m", "grader", "eval", "--model", "bench", "--base-url", srv.base_url,
                        *sel, *common, "--runs-dir", str(Path(tmp) / "r2")], check=True, cwd=ROOT, env=env,
                       stdout=subprocess.DEVNULL)
        both = time.monotonic() - t
    ratio = both / max(gen_alone, grade_alone)
    print(f"  {len(problems)} problems x {samples} samples, 0.5 s per completion, {concurrency} requests, "
          f"{workers} graders:", flush=True)
    print(f"    generation alone {gen_alone:6.1f} s   grading alone {grade_alone:6.1f} s   eval {both:6.1f} s   "
          f"ratio to the slower {ratio:.2f}", flush=True)
    return {"problems": len(problems), "samples": samples, "generation_s": round(gen_alone, 2),
            "grading_s": round(grade_alone, 2), "eval_s": round(both, 2), "ratio": round(ratio, 3)}


def memory(n: int, batch: int, workers: int) -> dict:
    """Peak RSS of the grader process through an n-sample run (completions from a file)."""
    catalog = Catalog()
    problems = catalog.problems("perf-core")
    per = -(-n // len(problems))
    with tempfile.TemporaryDirectory() as tmp:
        comp = Path(tmp) / "c.jsonl"
        with comp.open("w") as f:
            for p in problems:
                text = f"```python\n{p.solution_source}\n```\n"
                for s in range(per):
                    f.write(json.dumps({"problem": p.qualified_id, "sample": s, "text": text}) + "\n")
        t = time.monotonic()
        proc = subprocess.run([sys.executable, "-m", "grader", "eval", "--completions", str(comp), "--quiet",
                               "--batch", str(batch), "--workers", str(workers), "--runs-dir", str(Path(tmp) / "r")],
                              cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        el = time.monotonic() - t
        if proc.returncode != 0:
            raise SystemExit(proc.stderr[-2000:])
    peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    print(f"  {per * len(problems)} samples (batch {batch}, {workers} graders) in {el:.0f} s: "
          f"peak resident memory of the grader {peak_mb:.0f} MB", flush=True)
    return {"samples": per * len(problems), "seconds": round(el, 1), "peak_rss_mb": round(peak_mb, 1)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--concurrency", type=int, default=4)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--quick", action="store_true", help="a smaller run (a few minutes)")
    ap.add_argument("--memory-samples", type=int, default=None, help="samples in the memory run (default 10000)")
    ap.add_argument("--skip", action="append", default=[], choices=["modes", "scaling", "overlap", "memory"])
    ap.add_argument("--json", metavar="FILE")
    args = ap.parse_args()

    client = connect()
    st = resolve(client)
    sb = Sandbox(st.tag, run_id=f"benchmark-{os.getpid()}", client=client)
    catalog = Catalog()
    report: dict = {"host": {"platform": platform.platform(), "cpus": os.cpu_count(), "python": platform.python_version(),
                             "docker": client.version().get("Version")},
                    "concurrency": args.concurrency, "batch": args.batch, "quick": args.quick}
    try:
        if "modes" not in args.skip:
            cands = candidates(catalog, args.quick)
            hidden_of = {p.qualified_id: vectors.load(p).hidden for p, _, _ in cands}
            nvec = sum(len(hidden_of[p.qualified_id]) for p, _, _ in cands)
            print(f"modes: {len(cands)} candidates ({nvec} vector evaluations), concurrency {args.concurrency}",
                  flush=True)
            rows, check = run_modes(cands, hidden_of, sb, client, st.tag, args.concurrency, args.batch)
            by = {r["mode"][:3]: r["samples_per_s"] for r in rows}
            ratios = {"per_sample_vs_container_floor": round(by["(c)"] / by["(a)"], 3),
                      "batch_vs_bare_floor": round(by["(d)"] / by["(b)"], 3),
                      "batch_vs_per_sample": round(by["(d)"] / by["(c)"], 3)}
            print("  ratios: " + ", ".join(f"{k} {v:.2f}" for k, v in ratios.items()), flush=True)
            print(f"  verdicts: {check['compared'] - len(check['mismatches'])}/{check['compared']} identical "
                  "across bare, per-sample and batch", flush=True)
            for m in check["mismatches"]:
                print(f"    MISMATCH {m}", flush=True)
            report["modes"] = rows
            report["ratios"] = ratios
            report["verdict_check"] = check
        if "scaling" not in args.skip:
            print("scaling:", flush=True)
            report["scaling"] = scaling(sb, catalog, client, st.tag, args.quick)
        if "overlap" not in args.skip:
            print("overlap of generation and grading:", flush=True)
            report["overlap"] = overlap(args.quick, args.concurrency, min(4, args.concurrency))
        if "memory" not in args.skip:
            print("memory:", flush=True)
            n = args.memory_samples or (1000 if args.quick else 10000)
            report["memory"] = memory(n, args.batch, min(4, args.concurrency))
    finally:
        sb.sweep()
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2) + "\n")
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
