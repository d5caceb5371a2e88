"""The packs as a verifiers environment: found by verifiers' own loader, run by its own ``vf-eval``.

The taskset tests need verifiers only. The evaluation test runs ``vf-eval`` (verifiers' CLI) on
code tasks and on the Q&A stream against the real local model server, and checks each trace's
reward against the grader's own verdict for the trace's reply.
"""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from grader.errors import ConfigError
from grader.packs import vectors
from grader.packs.problems import Catalog
from grader.packs.prompt import render_prompt
from grader.packs.qa import qa_items, render_qa_prompt

ROOT = Path(__file__).resolve().parents[2]
SHORT = ["f1-conv-layer-accounting", "f11-systolic-os-cycles"]  # the two shortest prompts
KEY_VAR = "PERFGRADE_TEST_LOCAL_MODEL_KEY"
MAX_TOKENS = 128


def _vf():
    try:
        import verifiers.v1 as vf
    except ImportError as exc:
        pytest.fail(f'verifiers cannot be imported ({exc}): pip install -e ".[verifiers]" (bin/setup --test does it)',
                    pytrace=False)
    return vf


def _taskset(**config):
    _vf()
    from grader.integrations.verifiers_env import PerfgradeConfig, PerfgradeTaskset

    return PerfgradeTaskset(PerfgradeConfig(id="perfgrade-verifiers", **config))


def test_verifiers_finds_the_environment_by_its_taskset_id():
    _vf()
    from verifiers.v1.utils.loaders import environment_class, harness_class, taskset_class, taskset_config_type

    from grader.integrations import verifiers_env as env

    assert taskset_class("perfgrade-verifiers") is env.PerfgradeTaskset
    assert taskset_config_type("perfgrade-verifiers") is env.PerfgradeConfig
    assert harness_class("perfgrade-verifiers") is env.PerfgradeHarness  # the taskset's default harness
    assert environment_class("perfgrade-verifiers") is env.PerfgradeEnv


def test_code_mode_is_one_task_per_problem_with_the_prompt_eval_sends():
    ts = _taskset(pack="perf-core", problems=SHORT)
    tasks = list(ts)
    assert ts.bounded
    cat = Catalog()
    assert [t.key for t in tasks] == [f"perf-core/{p}" for p in SHORT]
    for t, pid in zip(tasks, SHORT):
        p = cat.find(f"perf-core/{pid}")
        assert t.data.prompt == render_prompt(p, vectors.load(p).visible)
        assert t.data.mode == "code" and not t.data.item


def test_the_qa_stream_is_unbounded_round_robin_and_never_repeats():
    ts = _taskset(pack="perf-core", problems=SHORT, mode="qa", qa_chunk=2)
    assert not ts.bounded
    tasks = list(itertools.islice(iter(ts), 14))  # rounds 0..6, past two doublings of the draw
    assert [t.key for t in tasks] == [f"perf-core/{p}:q{k}" for k in range(7) for p in SHORT]
    assert [t.data.qa_count for t in tasks[::2]] == [2, 2, 4, 4, 8, 8, 8]
    assert len({t.key for t in tasks}) == len(tasks)
    assert [t.data.idx for t in tasks] == list(range(14))
    # the items are the problem's own, as the public API draws them: same instance, same prompt
    cat = Catalog()
    for pid in SHORT:
        p = cat.find(f"perf-core/{pid}")
        vs = vectors.load(p)
        public = {it.id: it for it in qa_items(p, vs.hidden, 7)}
        for t in tasks:
            if t.data.problem == p.qualified_id:
                assert t.data.prompt == render_qa_prompt(p, public[t.data.item], vs.visible)
    # a view bounds it, as verifiers' -n and --select.include.idx do
    assert [t.key for t in ts.take(3)] == [t.key for t in tasks[:3]]
    assert ts.include(idx=["0:4"]).bounded


def test_choice_questions_join_the_stream_at_their_index():
    cat = Catalog()
    p = next(p for p in cat.problems("perf-core") if p.data.qa is not None and p.data.qa.choices)
    ts = _taskset(pack="perf-core", problems=[p.id], mode="qa", qa_chunk=2)
    first = [t.data.item for t in itertools.islice(iter(ts), 1 + len(p.data.qa.choices))]
    assert first == ["q0"] + [f"c{j}.0" for j in range(len(p.data.qa.choices))]


def test_nothing_hidden_rides_on_a_task():
    ts = _taskset(pack="perf-core", problems=SHORT[:1], mode="qa")
    task = next(iter(ts))
    fields = set(task.data.model_dump(exclude_none=True))
    assert not fields & {"expected", "answer", "hidden"}, fields
    p = Catalog().find(task.data.problem)
    hidden = json.dumps([v.expected for v in vectors.load(p).hidden])
    assert json.dumps(task.data.model_dump(mode="json")) not in hidden


def test_bad_selections_are_clear_errors():
    with pytest.raises(ConfigError, match="no problem perf-core/nope"):
        list(_taskset(pack="perf-core", problems=["nope"]))
    cat = Catalog()
    without = [p.id for p in cat.problems("perf-core") if p.data.qa is None]
    if without:
        with pytest.raises(ConfigError, match="Q&A"):
            next(iter(_taskset(pack="perf-core", problems=without[:1], mode="qa")))


def test_the_core_runs_without_verifiers():
    """Importing every grader module but the bridge loads no verifiers module."""
    code = ("import pkgutil, importlib, sys, grader\n"
            "for m in pkgutil.walk_packages(grader.__path__, 'grader.'):\n"
            "    if m.name not in ('grader.__main__', 'grader.integrations.verifiers_env'):\n"
            "        importlib.import_module(m.name)\n"
            "print(sorted(n for n in sys.modules if n.split('.')[0] == 'verifiers'))\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "[]"


# ------------------------------------------------------------------------------------------
# vf-eval against the local model
# ------------------------------------------------------------------------------------------

def _vf_eval(server, out_dir: Path, name: str, *args: str) -> list[dict]:
    vf_eval = Path(sys.executable).with_name("vf-eval")
    cmd = [str(vf_eval), "perfgrade-verifiers", "--model", server.model, "--client.base-url", server.base_url,
           "--client.api-key-var", KEY_VAR, "--sampling.max-tokens", str(MAX_TOKENS), "--sampling.temperature", "0.8",
           "--no-push", "--no-rich", "-c", "1", "--output-dir", str(out_dir), "--run.name", name, *args]
    run = subprocess.run(cmd, cwd=out_dir, capture_output=True, text=True, timeout=1200,
                         env={**os.environ, KEY_VAR: server.api_key})
    assert run.returncode == 0, run.stderr[-4000:]
    lines = (out_dir / name / "traces.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines if line.strip()]  # one episode per rollout


@pytest.mark.docker
@pytest.mark.slow
@pytest.mark.timeout(2400)  # a minute or two on two idle cores; generous for a machine under heavy load
def test_vf_eval_rewards_are_the_graders_verdicts(local_model_server, tmp_path):
    from grader.reward import Rewarder

    code = _vf_eval(local_model_server, tmp_path, "code", "--env.taskset.problems", SHORT[0])
    qa = _vf_eval(local_model_server, tmp_path, "qa", "--env.taskset.mode", "qa", "--env.taskset.problems", *SHORT,
                  "-n", "3")
    assert [e["task"]["key"] for e in code] == [f"perf-core/{SHORT[0]}"]
    assert sorted(e["task"]["key"] for e in qa) == sorted(
        ["perf-core/f1-conv-layer-accounting:q0", "perf-core/f11-systolic-os-cycles:q0",
         "perf-core/f1-conv-layer-accounting:q1"])
    replies = {}
    for e in code + qa:
        assert e["ok"] and not e["errors"], e["errors"]
        (t,) = e["traces"]
        assert t["ok"] and not t["errors"], t["errors"]
        (call,) = t["calls"]  # one model call, with the usage and finish reason the server reported
        usage = call["usage"]
        assert usage["prompt_tokens"] > 500 and 0 < usage["completion_tokens"] <= MAX_TOKENS, usage
        assert call["finish_reason"] in ("stop", "length")
        assert call["finish_reason"] == "stop" or usage["completion_tokens"] == MAX_TOKENS
        (reply,) = [n["message"]["content"] or "" for n in t["nodes"] if n["message"]["role"] == "assistant"]
        info = t["info"]["perfgrade"]
        assert info["verdict"] != "infra_error", info
        replies[e["task"]["key"]] = (reply, info["verdict"], t["rewards"]["perfgrade"]["score"])
    # the grader, asked directly, gives each reply the same verdict and reward
    with Rewarder(batch=1) as r:
        for key, (reply, verdict, score) in replies.items():
            mode = "qa" if ":" in key else "code"
            got = r.score(key, [reply], mode=mode)
            assert (got.verdicts[0], got.rewards[0]) == (verdict, score), key
