#!/usr/bin/env python3
"""Grading on a two-node Ray cluster against the local engine, side by side in one run.

    python benchmarks/bench_ray.py [--slots 2] [--problems 6] [--rewards 1024] [--json FILE]

A head node and a second node (ray.cluster_utils, on this machine, each advertising ``--slots``
grading slots and using this machine's Docker engine) against a LocalEngine with as many slots:

  per-sample   every bundled solution and variant of the first --problems perf-core problems,
               one fresh container each, as many in flight as there are slots
  batch        the same candidates, 16 of one problem per container
  one by one   one job at a time, a light candidate: latency locally and on Ray
  rewards      grader.reward on --rewards completions of one problem (batch mode, the default),
               locally and on the cluster
  overhead     the Ray round trip of a grading-sized request with nothing run on the node
               (task submission, placement, the payload out and a like-sized result back):
               what Ray adds per job

Each mode runs in --repeat interleaved rounds (local, Ray, local, Ray, ...) and the best of each
is kept, so that load from other users of the machine falls on both alike.

Both "nodes" share this machine's cores and Docker engine, so the cluster cannot be faster
here: the ratios measure what Ray costs, not what more machines would give. Figures are
printed (and written as JSON); nothing here fails on timing: compare within one run.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT)]

from grader.grading.execution import LocalEngine, open_sandbox, problem_limits  # noqa: E402
from grader.packs import vectors  # noqa: E402
from grader.packs.problems import Catalog  # noqa: E402

NODE = {"num_cpus": 1, "object_store_memory": 200 << 20}
SLOT = "perfgrade_grading"


def timed(fn, items, concurrency):
    lat, out = [], []

    def one(item):
        t = time.monotonic()
        r = fn(item)
        return r, time.monotonic() - t

    t0 = time.monotonic()
    with ThreadPoolExecutor(concurrency) as pool:
        for r, dt in pool.map(one, items):
            out.append(r)
            lat.append(dt)
    return out, lat, time.monotonic() - t0


def per_sample(engine, cands, hidden):
    def one(c):
        p, name, src = c
        return engine.grade(p, [(name, src)], hidden[p.qualified_id], problem_limits(p))[0][0].verdict.value

    return timed(one, cands, engine.slots)


def batched(engine, cands, hidden, size=16):
    groups = defaultdict(list)
    for i, c in enumerate(cands):
        groups[c[0].qualified_id].append(i)
    chunks = [ids[k:k + size] for ids in groups.values() for k in range(0, len(ids), size)]
    verdicts = [None] * len(cands)

    def one(chunk):
        p = cands[chunk[0]][0]
        graded = engine.grade(p, [(f"j{i}", cands[i][2]) for i in chunk], hidden[p.qualified_id], problem_limits(p))
        for i, (g, _) in zip(chunk, graded):
            verdicts[i] = g.verdict.value

    _, lat, el = timed(one, chunks, engine.slots)
    return verdicts, lat, el


def _echo(request):
    """A grading request's trip without the sandbox: the same payload out, a like-sized one back."""
    return {"node_id": "-", "results": [{"job": j, "cases": request["cases"]} for j, _ in request["jobs"]]}


def round_trip(ray, engine, cand, hidden, n: int) -> float:
    """Median ms of a grading-sized request sent to each node in turn, one at a time, as the engine
    sends it (hard node affinity, one slot), with nothing run on the node."""
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    p, name, src = cand
    request = {"jobs": [[name, src]], "cases": [[v.id, v.args] for v in hidden[p.qualified_id]]}
    echo = ray.remote(_echo)
    nodes = [x["node_id"] for x in engine.nodes() if x["state"] == "ready"]
    lat = []
    for i in range(n + len(nodes)):
        opts = {"num_cpus": 0, "resources": {SLOT: 1}, "max_retries": 0,
                "scheduling_strategy": NodeAffinitySchedulingStrategy(nodes[i % len(nodes)], soft=False)}
        t = time.monotonic()
        ray.get(echo.options(**opts).remote(request))
        if i >= len(nodes):  # the first call per node starts a worker
            lat.append(time.monotonic() - t)
    return round(1000 * sorted(lat)[len(lat) // 2], 1)


def row(name, n, elapsed, lat=None):
    r = {"mode": name, "n": n, "seconds": round(elapsed, 2), "per_s": round(n / elapsed, 2)}
    if lat:
        r["mean_ms"] = round(1000 * sum(lat) / len(lat), 1)
        r["p50_ms"] = round(1000 * sorted(lat)[len(lat) // 2], 1)
    print(f"  {name:<30} {n:>5}  {r['per_s']:>8.2f}/s  ({elapsed:.1f} s)", flush=True)
    return r


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--slots", type=int, default=2, help="grading slots per Ray node (local gets twice this)")
    ap.add_argument("--problems", type=int, default=6, help="perf-core problems whose candidates are graded")
    ap.add_argument("--rewards", type=int, default=1024, help="completions in the reward batch")
    ap.add_argument("--overhead-jobs", type=int, default=24)
    ap.add_argument("--repeat", type=int, default=2, help="interleaved rounds of the grading modes (best kept)")
    ap.add_argument("--json", metavar="FILE")
    args = ap.parse_args()

    import ray
    from ray.cluster_utils import Cluster

    from grader.grading.ray_engine import RayEngine
    from grader.reward import Rewarder

    catalog = Catalog([ROOT / "problems" / "perf-core"])
    problems = catalog.problems("perf-core")[: args.problems]
    cands = [(p, "solution", p.solution_source) for p in problems]
    cands += [(p, v.name, v.source) for p in problems for v in p.variants]
    hidden = {p.qualified_id: vectors.load(p).hidden for p in problems}
    slots = 2 * args.slots
    print(f"{len(cands)} candidates of {len(problems)} problems; {slots} slots locally and on the cluster", flush=True)

    t0 = time.monotonic()
    cluster = Cluster(initialize_head=True, head_node_args={**NODE, "include_dashboard": False,
                                                            "resources": {SLOT: args.slots}})
    cluster.add_node(**NODE, resources={SLOT: args.slots})
    ray.init(address=cluster.address, log_to_driver=False, logging_level="WARNING")
    rows, facts = [], {}
    try:
        facts["cluster_start_s"] = round(time.monotonic() - t0, 1)
        t0 = time.monotonic()
        cluster_engine = RayEngine(run_id="bench-ray")
        facts["engine_start_s"] = round(time.monotonic() - t0, 1)
        local = LocalEngine(open_sandbox("bench-ray-local"), slots=slots)
        print(f"cluster up in {facts['cluster_start_s']} s; engine (probes of both nodes) in {facts['engine_start_s']} s")

        light = [(problems[0], f"o{i}", problems[0].solution_source) for i in range(args.overhead_jobs)]
        one_local = LocalEngine(local.handle, slots=1)
        per_sample(cluster_engine, light[:2 * slots], hidden)  # warm-up: a worker process per slot on each node

        def one_at_a_time(engine):
            saved, engine.slots = engine.slots, 1
            try:
                return per_sample(engine, light, hidden)
            finally:
                engine.slots = saved

        # interleaved repeats (local, Ray, local, Ray, ...): the best of each, so that load from
        # other users of the machine falls on both alike
        runs = defaultdict(list)
        verdicts = {}
        for rep in range(args.repeat):
            print(f"round {rep + 1} of {args.repeat}:", flush=True)
            for label, engine in (("local", local), ("Ray (2 nodes)", cluster_engine)):
                v, lat, el = per_sample(engine, cands, hidden)
                runs[f"per-sample, {label}"].append(row(f"per-sample, {label}", len(cands), el, lat))
                verdicts[("per-sample", label)] = v
                v, _, el = batched(engine, cands, hidden)
                runs[f"batch 16, {label}"].append(row(f"batch 16, {label}", len(cands), el))
                verdicts[("batch", label)] = v
                _, lat, el = one_at_a_time(engine if engine is cluster_engine else one_local)
                runs[f"one at a time, {label}"].append(row(f"one at a time, {label}", len(light), el, lat))
        for name, rs in runs.items():
            best = max(rs, key=lambda r: r["per_s"])
            rows.append({**best, "runs": [r["per_s"] for r in rs]})
        same = sum(len(set(vs)) == 1 for vs in zip(*verdicts.values()))
        facts["verdicts_identical"] = f"{same}/{len(cands)}"
        facts["jobs_by_node"] = sorted(cluster_engine.jobs_by_node.values())
        by_p50 = {r["mode"]: r["p50_ms"] for r in rows if r["mode"].startswith("one at a time")}
        facts["latency_difference_p50_ms"] = round(by_p50["one at a time, Ray (2 nodes)"] - by_p50["one at a time, local"], 1)
        facts["ray_overhead_ms_per_job"] = round_trip(ray, cluster_engine, light[0], hidden, args.overhead_jobs * 2)
        print(f"Ray round trip of a grading request, no container (p50 of {args.overhead_jobs * 2}): "
              f"{facts['ray_overhead_ms_per_job']} ms", flush=True)

        print(f"rewards ({args.rewards} completions of {problems[0].qualified_id}, batch mode):")
        sol, var = problems[0].solution_source, problems[0].variants[0].source
        completions = [f"```python\n{var if i % 4 == 0 else sol}```" for i in range(args.rewards)]
        outs, reward_runs = {}, defaultdict(list)
        with Rewarder(engine=local, catalog=catalog) as r_local, Rewarder(engine=cluster_engine, catalog=catalog) as r_ray:
            for rep in range(args.repeat):
                for label, r in (("local", r_local), ("Ray (2 nodes)", r_ray)):
                    t = time.monotonic()
                    outs[label] = r.score(problems[0].qualified_id, completions)
                    reward_runs[f"rewards, {label}"].append(row(f"rewards, {label}", len(completions),
                                                                time.monotonic() - t))
        for name, rs in reward_runs.items():
            rows.append({**max(rs, key=lambda r: r["per_s"]), "runs": [r["per_s"] for r in rs]})
        out_l, out_r = outs["local"], outs["Ray (2 nodes)"]
        facts["rewards_identical"] = out_l.rewards == out_r.rewards
        facts["reward_mean"] = sum(out_l.rewards) / len(out_l.rewards)
        local.sweep()
        cluster_engine.sweep()
    finally:
        ray.shutdown()
        cluster.shutdown()

    by = {r["mode"]: r for r in rows}
    ratios = {
        "per_sample_ray_over_local": round(by["per-sample, Ray (2 nodes)"]["per_s"] / by["per-sample, local"]["per_s"], 2),
        "batch_ray_over_local": round(by["batch 16, Ray (2 nodes)"]["per_s"] / by["batch 16, local"]["per_s"], 2),
        "rewards_ray_over_local": round(by["rewards, Ray (2 nodes)"]["per_s"] / by["rewards, local"]["per_s"], 2),
    }
    print("ratios (Ray / local, same slots, same machine):", json.dumps(ratios))
    print("facts:", json.dumps(facts))
    if args.json:
        Path(args.json).write_text(json.dumps({"rows": rows, "ratios": ratios, "facts": facts,
                                               "host": {"python": platform.python_version(),
                                                        "ray": ray.__version__}}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
