"""Grading on a real two-node Ray cluster (tests/ray/conftest.py): the same verdicts as local mode,
jobs on both nodes, a node lost mid-run, the driver killed and resumed, a node that cannot run the
sandbox, eval on Ray and the reward API on Ray. Real Ray, real Docker: nothing is mocked."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from support import TINY_PACK, leftovers, variant_source

# xdist_group: one worker for these tests where --dist loadgroup works (see conftest.py)
pytestmark = [pytest.mark.ray, pytest.mark.docker, pytest.mark.xdist_group("ray")]

ROOT = Path(__file__).resolve().parents[2]
PERF_CORE = ROOT / "problems" / "perf-core"
F1 = PERF_CORE / "f1-conv-layer-accounting"
GOLD_PROBLEMS = ["f1-conv-layer-accounting", "f2-roofline-gemm"]

CORRECT = "def double(x):\n    return {'y': 2 * x, 'half': x / 2}\n"
WRONG = "def double(x):\n    return {'y': 3 * x, 'half': x / 2}\n"
CRASH = "def double(x):\n    raise ValueError('no idea')\n"
SLOW = "def double(x):\n    while True:\n        pass\n"
HALF = "def double(x):\n    return {'y': 2 * x if x >= 0 else 0, 'half': x / 2}\n"
EXTRA = {"correct": CORRECT, "wrong": WRONG, "crash": CRASH, "slow": SLOW, "half": HALF}
# compared between engines: everything a verdict is made of (timings and wall-clock details differ)
TIMING = {"cpu_s", "wall_s", "max_rss_kb", "stop_detail", "reason"}


def fenced(code: str) -> str:
    return f"Here is my answer.\n\n```python\n{code}```\n"


def _key(g) -> dict:
    return g.model_dump(mode="json", exclude=TIMING)


def _candidates(catalog):
    from grader.packs.problems import Catalog

    out = []
    problems = list(catalog.problems("tiny-pack")) + [Catalog([PERF_CORE]).find(f"perf-core/{p}") for p in GOLD_PROBLEMS]
    for p in problems:
        out.append((p, "solution", p.solution_source))
        out += [(p, v.name, v.source) for v in p.variants]
    sound = catalog.find("tiny-pack/sound")
    out += [(sound, name, EXTRA[name]) for name in ("crash", "slow", "half")]
    return out


def _per_sample(engine, cands, hidden):
    from grader.grading.execution import problem_limits

    def one(c):
        p, name, src = c
        (g, notes), = engine.grade(p, [(name, src)], hidden[p.qualified_id], problem_limits(p))
        return g

    with ThreadPoolExecutor(max(1, engine.slots)) as pool:
        return list(pool.map(one, cands))


def _batched(engine, cands, hidden, size=8):
    from grader.grading.execution import problem_limits

    groups = defaultdict(list)
    for i, c in enumerate(cands):
        groups[c[0].qualified_id].append(i)
    chunks = [(ids[k:k + size]) for ids in groups.values() for k in range(0, len(ids), size)]
    out = [None] * len(cands)

    def one(chunk):
        p = cands[chunk[0]][0]
        graded = engine.grade(p, [(f"{cands[i][1]}-{i}", cands[i][2]) for i in chunk], hidden[p.qualified_id],
                              problem_limits(p))
        for i, (g, _) in zip(chunk, graded):
            out[i] = g

    with ThreadPoolExecutor(max(1, engine.slots)) as pool:
        list(pool.map(one, chunks))
    return out


def test_without_ray_the_grader_works_and_says_how_to_install_it():
    code = textwrap.dedent("""
        import sys
        sys.modules["ray"] = None  # as if ray were not installed: `import ray` raises ImportError
        import grader.grading.ray_engine, grader.reward, grader.cli  # nothing imports ray up front
        from grader.errors import ConfigError
        from grader.grading.ray_engine import RayEngine
        try:
            RayEngine()
        except ConfigError as exc:
            print(exc)
    """)
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == 'the Ray engine needs ray: pip install -e ".[ray]"'


def test_verdicts_on_ray_are_the_local_ones_and_jobs_land_on_both_nodes(ray_cluster, tiny_catalog, handle, docker_api):
    from grader.grading.execution import LocalEngine
    from grader.grading.ray_engine import RayEngine
    from grader.packs import vectors

    cands = _candidates(tiny_catalog)
    hidden = {c[0].qualified_id: vectors.load(c[0]).hidden for c in cands}
    local = _per_sample(LocalEngine(handle, slots=2), cands, hidden)

    engine = RayEngine(run_id="test-ray-verdicts")
    try:
        assert engine.slots == 2 and engine.notes == []
        assert {n["node_id"] for n in engine.nodes() if n["state"] == "ready"} == {ray_cluster.head_id,
                                                                                   ray_cluster.second_id}
        on_ray = _per_sample(engine, cands, hidden)
        per_node = dict(engine.jobs_by_node)
        batched = _batched(engine, cands, hidden)
        assert leftovers(docker_api, engine.run_id) == []
    finally:
        engine.sweep()
        engine.close()

    names = [f"{c[0].qualified_id}:{c[1]}" for c in cands]
    for name, a, b, c in zip(names, local, on_ray, batched):
        assert _key(b) == _key(a), f"{name}: per-sample on Ray differs from local"
        assert _key(c) == _key(a), f"{name}: batch mode on Ray differs from local"
    verdicts = {name: g.verdict.value for name, g in zip(names, local)}
    assert verdicts["tiny-pack/sound:solution"] == "pass" and verdicts["tiny-pack/sound:slow"] == "timeout"
    assert verdicts["tiny-pack/sound:crash"] == "runtime_error"
    assert all(verdicts[f"perf-core/{p}:solution"] == "pass" for p in GOLD_PROBLEMS)
    assert all(v != "pass" for n, v in verdicts.items() if n.startswith("perf-core/") and not n.endswith(":solution"))
    # both nodes graded: each has one slot, and two jobs were in flight at a time
    assert set(per_node) == {ray_cluster.head_id, ray_cluster.second_id}
    assert sum(per_node.values()) == len(cands) and min(per_node.values()) >= len(cands) // 4


def test_eval_on_ray_per_sample_and_batch_mode(ray_cluster, tiny_registry, tmp_path):
    from grader.cli import main

    script = {"sound": [CORRECT, WRONG, None, "def double(x)\n    return 1\n", CORRECT],
              "weak-variant": [CORRECT, CORRECT, SLOW, WRONG, WRONG]}
    expected = {"sound": ["pass", "wrong_answer", "no_code", "load_error", "pass"],
                "weak-variant": ["pass", "pass", "timeout", "wrong_answer", "wrong_answer"]}
    lines = [{"problem": f"tiny-pack/{pid}", "sample": s, "text": fenced(code) if code else "I am not sure."}
             for pid, codes in script.items() for s, code in enumerate(codes)]
    completions = tmp_path / "completions.jsonl"
    completions.write_text("".join(json.dumps(x) + "\n" for x in lines))
    for batch in ("1", "4"):
        out = tmp_path / f"summary-{batch}.json"
        rc = main(["eval", "--engine", "ray", "--ray-address", ray_cluster.address, "--pack-path", str(TINY_PACK),
                   "--pack", "tiny-pack", "--completions", str(completions), "--batch", batch,
                   "--runs-dir", str(tmp_path / f"runs-{batch}"), "--json", str(out), "--quiet"])
        assert rc == 0
        s = json.loads(out.read_text())
        probs = {p["problem"]: p for p in s["problems"]}
        for pid, verdicts in expected.items():
            assert probs[f"tiny-pack/{pid}"]["verdicts"] == {v: verdicts.count(v) for v in set(verdicts)}, batch
        assert s["samples"]["infra_excluded"] == 0
        run_dir = next((tmp_path / f"runs-{batch}").iterdir())
        manifest = json.loads((run_dir / "manifest.json").read_text())
        assert manifest["engine"]["name"] == "ray" and manifest["engine"]["slots"] == 2
        assert {n["node_id"] for n in manifest["engine"]["nodes"]} == {ray_cluster.head_id, ray_cluster.second_id}
        assert manifest["exec_mode"] == ("per-sample" if batch == "1" else "batch:4")


# -- faults ----------------------------------------------------------------------------------------

SLOW_IMPORT = "import time\ntime.sleep(0.6)\n"


def _f1_completions(path: Path, n: int) -> int:
    """n samples of F1: the solution, every fourth one a variant; each takes 0.6 s to import."""
    solution = (F1 / "solution.py").read_text()
    variant = variant_source("perf-core/f1-conv-layer-accounting", "flops_equal_macs")
    lines = [{"problem": "perf-core/f1-conv-layer-accounting", "sample": s,
              "text": fenced(SLOW_IMPORT + (variant if s % 4 == 0 else solution))} for s in range(n)]
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return sum(1 for s in range(n) if s % 4)


def _eval(args, **kw):
    return subprocess.Popen([sys.executable, "-m", "grader", "eval", *args], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"}, **kw)


def _grades(run: Path) -> list[dict]:
    path = run / "journal.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if '"type":"grade"' in line]


def _wait_for_grades(run: Path, n: int, proc, timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while len(_grades(run)) < n:
        assert proc.poll() is None, proc.communicate()[1][-3000:]
        assert time.monotonic() < deadline, "the run made no progress"
        time.sleep(0.05)


def _exactly_once(run: Path, n: int) -> list[dict]:
    from grader.results.runs import RunDir

    st = RunDir(run).state()
    assert st.duplicates == 0
    grades = _grades(run)
    keys = [(g["problem"], g["sample"], g.get("round", 0), g.get("regrade", 0)) for g in grades]
    assert len(keys) == len(set(keys)) == n
    assert sorted(g["sample"] for g in grades) == list(range(n))
    return grades


def test_a_node_lost_mid_run_has_its_jobs_rerun_elsewhere(ray_cluster, tmp_path, docker_api):
    n = 12
    completions = tmp_path / "f1.jsonl"
    passing = _f1_completions(completions, n)
    third = ray_cluster.add_node(slots=2)  # 4 slots in all: the third node always holds two jobs
    try:
        proc = _eval(["--engine", "ray", "--ray-address", ray_cluster.address, "--completions", str(completions),
                      "--runs-dir", str(tmp_path / "runs"), "--name", "lost-node", "--quiet",
                      "--json", str(tmp_path / "s.json")])
        run = tmp_path / "runs" / "lost-node"
        _wait_for_grades(run, 3, proc)
        manifest = json.loads((run / "manifest.json").read_text())
        assert third.node_id in {x["node_id"] for x in manifest["engine"]["nodes"] if x["state"] == "ready"}
        ray_cluster.kill_node(third)
        out, err = proc.communicate(timeout=180)
        assert proc.returncode == 0, err[-3000:]
    finally:
        ray_cluster.forget(third)
    grades = _exactly_once(run, n)
    assert [g["grade"]["verdict"] for g in grades].count("pass") == passing
    assert all(g["grade"]["verdict"] in ("pass", "wrong_answer") for g in grades), "a lost node is never a verdict"
    rerun = [g for g in grades if any("lost" in note for note in g["infra_notes"])]
    assert rerun, "the kill must land on jobs in flight on the lost node"
    assert all(third.node_id[:8] in " ".join(g["infra_notes"]) for g in rerun)
    s = json.loads((tmp_path / "s.json").read_text())
    assert s["samples"]["infra_excluded"] == 0 and s["problems"][0]["correct"] == passing
    assert "lost" in err and third.node_id[:8] in err  # the loss is reported by name
    assert leftovers(docker_api, "lost-node") == []


def test_driver_killed_mid_run_then_resumed_on_ray_grades_every_sample_once(ray_cluster, tmp_path, docker_api):
    n = 10
    completions = tmp_path / "f1.jsonl"
    passing = _f1_completions(completions, n)
    common = ["--engine", "ray", "--ray-address", ray_cluster.address, "--quiet"]
    proc = _eval([*common, "--completions", str(completions), "--runs-dir", str(tmp_path / "runs"),
                  "--name", "killed-driver"])
    run = tmp_path / "runs" / "killed-driver"
    _wait_for_grades(run, 3, proc)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    done = len(_grades(run))
    assert 3 <= done < n, "the kill must land mid-run"
    proc = _eval([*common, "--resume", str(run), "--json", str(tmp_path / "s.json")])
    out, err = proc.communicate(timeout=180)
    assert proc.returncode == 0, err[-3000:]
    grades = _exactly_once(run, n)
    assert [g["grade"]["verdict"] for g in grades].count("pass") == passing
    events = [json.loads(line) for line in (run / "journal.jsonl").read_text().splitlines() if '"event":"engine"' in line]
    assert len(events) == 1 and events[0]["name"] == "ray"  # the resumed session's engine
    assert leftovers(docker_api, "killed-driver") == []


def test_a_node_that_cannot_run_the_sandbox_is_reported_by_name_and_never_used(ray_cluster, tiny_catalog):
    from grader.grading.ray_engine import RayEngine
    from grader.packs import vectors

    bad = ray_cluster.add_node(slots=1, env_vars={"DOCKER_HOST": "unix:///nonexistent/docker.sock"})
    try:
        engine = RayEngine(run_id="test-ray-bad-node")
        try:
            assert engine.slots == 2
            (note,) = engine.notes
            assert bad.node_id[:8] in note and "cannot run the sandbox" in note and "Docker engine" in note
            states = {x["node_id"]: x["state"] for x in engine.nodes()}
            assert states[bad.node_id] == "unusable" and engine.describe()["nodes"]
            p = tiny_catalog.find("tiny-pack/sound")
            hidden = vectors.load(p).hidden
            graded = _per_sample(engine, [(p, f"c{i}", CORRECT) for i in range(4)], {p.qualified_id: hidden})
            assert [g.verdict.value for g in graded] == ["pass"] * 4
            assert bad.node_id not in engine.jobs_by_node
        finally:
            engine.close()
    finally:
        ray_cluster.forget(bad)


def test_without_the_slot_resource_slots_come_from_each_nodes_cpus(ray_cluster, tiny_catalog):
    from grader.grading.ray_engine import RayEngine
    from grader.packs import vectors

    engine = RayEngine(run_id="test-ray-cpu-slots", resource="perfgrade_nobody_advertises_this")
    try:
        ready = [x for x in engine.nodes() if x["state"] == "ready"]
        assert len(ready) == 2 and all(x["slots"] == 2 for x in ready)  # 1 CPU each: twice the CPUs
        assert engine.slots == 4
        p = tiny_catalog.find("tiny-pack/sound")
        graded = _per_sample(engine, [(p, f"c{i}", CORRECT) for i in range(4)], {p.qualified_id: vectors.load(p).hidden})
        assert [g.verdict.value for g in graded] == ["pass"] * 4
    finally:
        engine.close()


# -- the reward API on Ray -----------------------------------------------------------------------

def test_rewards_on_ray_match_the_known_verdicts(ray_cluster, tiny_registry, tiny_catalog, monkeypatch):
    from grader.packs import vectors
    from grader.reward import Rewarder, make_trl_reward_func, verl_compute_score, verl_compute_score_batch
    from grader.reward.adapters import close_default_rewarder, default_rewarder

    completions = [fenced(CORRECT), fenced(WRONG), fenced(CRASH), fenced(SLOW), "No code, sorry.",
                   [{"role": "assistant", "content": fenced(CORRECT)}], fenced(HALF)]
    hidden = vectors.load(tiny_catalog.find("tiny-pack/sound")).hidden
    half_share = sum(1 for v in hidden if v.args[0] >= 0) / len(hidden)
    with Rewarder(engine="ray", catalog=tiny_catalog) as r:
        assert r.engine.name == "ray" and r.batch == 16
        out = r.score("tiny-pack/sound", completions)
        assert out.verdicts == ["pass", "wrong_answer", "runtime_error", "timeout", "no_code", "pass", "wrong_answer"]
        assert out.rewards == [1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0]
        part = r.score("tiny-pack/sound", [fenced(CORRECT), fenced(WRONG), fenced(HALF)], partial=True)
        assert part.rewards == [1.0, 0.0, pytest.approx(half_share)]
        assert 0 < half_share < 1

        # TRL's GRPOTrainer calls reward_func(prompts=, completions=, completion_ids=, **dataset columns)
        reward_func = make_trl_reward_func(r)
        got = reward_func(prompts=[[{"role": "user", "content": "..."}]] * 3,
                          completions=[[{"role": "assistant", "content": fenced(c)}] for c in (CORRECT, WRONG, CORRECT)],
                          completion_ids=[[1, 2, 3]] * 3, trainer_state=None,
                          problem=["tiny-pack/sound", "tiny-pack/sound", "tiny-pack/weak-variant"],
                          pack=["tiny-pack"] * 3, split=["train"] * 3)
        assert got == [1.0, 0.0, 1.0]

    # verl's reward managers call compute_score with keywords; the shared Rewarder comes from the environment
    monkeypatch.setenv("PERFGRADE_REWARD_ENGINE", "ray")
    monkeypatch.setenv("PERFGRADE_PACKS", str(TINY_PACK))
    try:
        assert verl_compute_score(data_source="perfgrade/tiny-pack", solution_str=fenced(CORRECT),
                                  ground_truth="tiny-pack/sound", extra_info={"split": "train"}) == 1.0
        assert verl_compute_score_batch(data_sources=["perfgrade/tiny-pack"] * 2,
                                        solution_strs=[fenced(WRONG), fenced(CORRECT)],
                                        ground_truths=["tiny-pack/sound", "tiny-pack/weak-variant"],
                                        extra_infos=[{}, {}]) == [0.0, 1.0]
        assert default_rewarder().engine.name == "ray"
    finally:
        close_default_rewarder()
