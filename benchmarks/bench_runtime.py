"""runc against gVisor's runsc, side by side in one run, on the same candidates.

    .venv/bin/python benchmarks/bench_runtime.py            # about 3 minutes on 2 cores
    .venv/bin/python benchmarks/bench_runtime.py --quick    # under a minute
    .venv/bin/python benchmarks/bench_runtime.py --json out.json

Measures, for each runtime, through the real sandbox (one fresh hardened container per sample):

* start-to-verdict latency of a trivial candidate, one container at a time (p50, p95);
* the same for a pack-like CPU-bound candidate (a tile-by-tile loop-nest traffic count, the
  kind of work a hard perf-core solution does), with its CPU time as the Sentry or the kernel
  reports it;
* throughput (samples/s) at the default worker count (twice the CPUs, at most 8, capped so the
  containers' memory limits fit in half the host), on a mix of both candidates;

and prints the ratios runsc / runc. It never fails on timing (shared machines are noisy: compare
within a run). Needs the engine, the image and runsc registered (bin/setup --runsc).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from sandbox.engine import connect  # noqa: E402
from sandbox.image import resolve  # noqa: E402
from sandbox.models import Case, Job, Limits  # noqa: E402
from sandbox.runner import Sandbox  # noqa: E402
from sandbox.runtimes import require_runtime  # noqa: E402

RUNTIMES = ("runc", "runsc")
LIMITS = Limits(case_cpu_s=10.0, load_cpu_s=10.0)

TRIVIAL = "def f(x):\n    return {'y': 2 * x}\n"

# DRAM traffic of a tiled matrix multiply, counted tile by tile (like a trace simulator)
PACKLIKE = '''
def f(m, n, k, tm, tn, tk):
    a_reads = b_reads = c_writes = 0
    held_a = held_b = None
    for i0 in range(0, m, tm):
        for j0 in range(0, n, tn):
            for k0 in range(0, k, tk):
                ta = (i0, k0)
                if ta != held_a:
                    a_reads += min(tm, m - i0) * min(tk, k - k0)
                    held_a = ta
                tb = (k0, j0)
                if tb != held_b:
                    b_reads += min(tk, k - k0) * min(tn, n - j0)
                    held_b = tb
                for i in range(i0, min(i0 + tm, m)):
                    for j in range(j0, min(j0 + tn, n)):
                        pass
            c_writes += min(tm, m - i0) * min(tn, n - j0)
    return {"a": a_reads, "b": b_reads, "c": c_writes}
'''
PACK_ARGS = [512, 512, 512, 16, 16, 16]


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, max(0, round(q * (len(xs) - 1))))]


def default_workers(memory_mb: int) -> int:
    """As the grader's eval default: 2 x CPUs, at most 8, limits within half the host's memory."""
    want = min(8, 2 * (os.cpu_count() or 1))
    try:
        with open("/proc/meminfo") as f:
            total = next(int(l.split()[1]) // 1024 for l in f if l.startswith("MemTotal:"))
        want = min(want, max(1, int(total * 0.5) // memory_mb))
    except (OSError, StopIteration):
        pass
    return want


def job(name: str, i: int) -> Job:
    if name == "trivial":
        return Job(id=f"t{i}", source=TRIVIAL, entry_point="f", cases=[Case(id="c0", args=[i])])
    return Job(id=f"p{i}", source=PACKLIKE, entry_point="f", cases=[Case(id="c0", args=PACK_ARGS)])


def one(sb: Sandbox, j: Job) -> tuple[float, float, bool]:
    t0 = time.monotonic()
    r = sb.run(j, LIMITS)
    return time.monotonic() - t0, r.cpu_s, r.completed


def latency(sb: Sandbox, name: str, n: int) -> dict:
    sb.run(job(name, -1), LIMITS)  # warm the image and the runtime
    runs = [one(sb, job(name, i)) for i in range(n)]
    lat = [r[0] for r in runs]
    return {"n": n, "p50_ms": round(1000 * statistics.median(lat), 1), "p95_ms": round(1000 * pct(lat, 0.95), 1),
            "cpu_s_median": round(statistics.median(r[1] for r in runs), 3), "ok": all(r[2] for r in runs)}


def throughput(sb: Sandbox, n: int, workers: int) -> dict:
    jobs = [job("packlike" if i % 4 == 0 else "trivial", i) for i in range(n)]
    t0 = time.monotonic()
    with ThreadPoolExecutor(workers) as pool:
        runs = list(pool.map(lambda j: one(sb, j), jobs))
    wall = time.monotonic() - t0
    return {"n": n, "workers": workers, "samples_per_s": round(n / wall, 2), "wall_s": round(wall, 1),
            "p95_ms": round(1000 * pct([r[0] for r in runs], 0.95), 1), "ok": all(r[2] for r in runs)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer samples (under a minute)")
    ap.add_argument("--json", type=Path, help="also write the figures here")
    args = ap.parse_args()
    n_lat, n_pack, n_thr = (6, 3, 16) if args.quick else (20, 8, 64)

    client = connect()
    st = resolve(client)
    for rt in RUNTIMES:
        require_runtime(client, rt)
    workers = default_workers(LIMITS.memory_mb)
    out: dict = {"image": st.tag, "cpus": os.cpu_count(), "workers": workers, "runtimes": {}}
    for rt in RUNTIMES:
        sb = Sandbox(st.tag, client=client, run_id=f"bench-rt-{uuid.uuid4().hex[:8]}", runtime=rt)
        try:
            res = {"trivial": latency(sb, "trivial", n_lat), "packlike": latency(sb, "packlike", n_pack),
                   "throughput": throughput(sb, n_thr, workers)}
        finally:
            sb.sweep()
        out["runtimes"][rt] = res
        print(f"{rt:6} trivial p50 {res['trivial']['p50_ms']:7.1f} ms  p95 {res['trivial']['p95_ms']:7.1f} ms | "
              f"pack-like p50 {res['packlike']['p50_ms']:7.1f} ms (cpu {res['packlike']['cpu_s_median']:.2f} s) | "
              f"{res['throughput']['samples_per_s']:5.2f} samples/s at {workers} workers", flush=True)
    a, b = out["runtimes"]["runc"], out["runtimes"]["runsc"]
    ratios = {
        "trivial_p50": round(b["trivial"]["p50_ms"] / a["trivial"]["p50_ms"], 2),
        "packlike_p50": round(b["packlike"]["p50_ms"] / a["packlike"]["p50_ms"], 2),
        "packlike_cpu": round(b["packlike"]["cpu_s_median"] / max(a["packlike"]["cpu_s_median"], 1e-6), 2),
        "throughput": round(b["throughput"]["samples_per_s"] / a["throughput"]["samples_per_s"], 2),
    }
    out["ratios_runsc_over_runc"] = ratios
    print("runsc / runc: " + ", ".join(f"{k} {v:.2f}" for k, v in ratios.items()))
    if not all(r[k]["ok"] for r in out["runtimes"].values() for k in ("trivial", "packlike", "throughput")):
        print("note: some samples did not complete (see the JSON)")
    if args.json:
        args.json.write_text(json.dumps(out, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
