"""Self-revision: scripted multi-round conversations over real HTTP, with known verdicts per round."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from support import variant_source

from fakes.model_server import FakeModelServer
from grader.cli import main
from grader.packs import vectors
from grader.packs.problems import Catalog
from grader.pipeline.revision import NO_FEEDBACK_CODE, NO_FEEDBACK_QA
from grader.results.runs import RunDir

ROOT = Path(__file__).resolve().parents[2]
TINY = ROOT / "tests" / "data" / "packs" / "tiny-pack"

CORRECT = "```python\ndef double(x):\n    return {'y': 2 * x, 'half': x / 2}\n```"
WRONG = "```python\ndef double(x):\n    return {'y': 3 * x, 'half': x / 2}\n```"
NOCODE = "I would need more time."

# sample -> what it answers in round 0, 1, 2 (a round it never reaches is never asked)
SCRIPT = {
    0: [CORRECT],                   # passes at once: never revised
    1: [WRONG, CORRECT],            # fixed in round 1
    2: [WRONG, WRONG, CORRECT],     # fixed in round 2
    3: [NOCODE, WRONG, WRONG],      # stays failing
}
VERDICTS = {0: ["pass"], 1: ["wrong_answer", "pass"], 2: ["wrong_answer", "wrong_answer", "pass"],
            3: ["no_code", "wrong_answer", "wrong_answer"]}


def _round(body: dict) -> int:
    return sum(1 for m in body["messages"] if m["role"] == "assistant")


def scripted(prompt: str, body: dict) -> str:
    return SCRIPT[body["seed"]][_round(body)]


def _journal(run: Path, kind: str) -> list[dict]:
    return [r for r in RunDir(run).journal.records() if r["type"] == kind]


@pytest.mark.docker
def test_code_rounds_with_example_feedback(tiny_registry, tmp_path):
    with FakeModelServer(scripted) as srv:
        rc = main(["eval", "--pack-path", str(TINY), "--pack", "tiny-pack", "--problem", "sound", "--model", "fake",
                   "--base-url", srv.base_url, "--api-key-env", "NONE", "--samples", "4", "--seed", "0",
                   "--rounds", "3", "--feedback", "examples", "--runs-dir", str(tmp_path), "--name", "rev",
                   "--json", str(tmp_path / "s.json"), "--quiet"])
        assert rc == 0
        requests = list(srv.requests)
    assert len(requests) == sum(len(v) for v in SCRIPT.values())  # 1 + 2 + 3 + 3
    run = tmp_path / "rev"
    got: dict[int, list[str]] = {}
    for g in sorted(_journal(run, "grade"), key=lambda g: (g["sample"], g["round"])):
        got.setdefault(g["sample"], []).append(g["grade"]["verdict"])
    assert got == VERDICTS

    # the conversation: prompt, answer, feedback, answer, ... (the whole of it, in order)
    last = max(requests, key=lambda b: (b["seed"] == 3, len(b["messages"])))
    roles = [m["role"] for m in last["messages"]]
    assert roles == ["user", "assistant", "user", "assistant", "user"]
    assert last["messages"][1]["content"] == NOCODE and last["messages"][3]["content"] == WRONG

    # feedback speaks of the prompt's examples only: exactly those, and nothing hidden
    catalog = Catalog([TINY])
    problem = catalog.find("tiny-pack/sound")
    vs = vectors.load(problem)
    feedback = _journal(run, "feedback")
    assert len(feedback) == 1 + 2 + 2  # after each graded round that did not pass and is not the last
    prompt = requests[0]["messages"][0]["content"]
    shown = re.findall(r"double\(x=(-?\d+)\)", prompt)
    assert shown == [str(v.args[0]) for v in vs.visible]
    for f in feedback:
        msg = f["message"]
        assert msg.startswith("Your code was run on the 2 example(s) of the prompt")
        for v in vs.hidden:
            assert f"x={v.args[0]}" not in msg
            assert json.dumps(v.expected["y"]) not in re.sub(r"expected -?\d+, got -?\d+", "", msg) or \
                v.expected["y"] in [e.expected["y"] for e in vs.visible]
        if f["round"] == 0 and f["sample"] == 3:
            assert "No Python code was found" in msg
        elif "wrong" in msg:
            for v in vs.visible:  # each failing example's expected vs got, with the visible values
                assert f"`y`: expected {v.expected['y']}, got {3 * v.args[0]}" in msg

    s = json.loads((tmp_path / "s.json").read_text())
    rounds = s["revision"]["code"]["rounds"]
    assert [r["rate"] for r in rounds] == pytest.approx([1 / 4, 2 / 4, 3 / 4])
    assert rounds[1]["transitions"] == {"fixed": 1, "broken": 0, "stayed passing": 1, "stayed failing": 2}
    assert rounds[2]["transitions"] == {"fixed": 1, "broken": 0, "stayed passing": 2, "stayed failing": 1}
    assert rounds[2]["change"] == pytest.approx(0.5)
    assert s["headline"]["pass@1"] == pytest.approx(0.25)  # the headline stays the one-shot round 0
    assert s["run"]["cost_usd"]["by_round"]["2"]["calls"] == 2


def qa_scripted(prompt_index: dict[str, tuple], wrong_first: set[int]):
    def answer(prompt: str, body: dict) -> str:
        item = prompt_index[body["messages"][0]["content"]]
        r = _round(body)
        exp = item.expected
        if body["seed"] in wrong_first and r == 0:
            exp = {"answer": next(c for c in item.fields[0].choices if c != exp["answer"])} if item.kind == "choice" \
                else {k: (v + 1 if type(v) is int else v) for k, v in exp.items()}
        if body["seed"] == 2 and r == 1:  # revise-all breaks a passing answer
            return "I am no longer sure."
        return f"```json\n{json.dumps(exp)}\n```"
    return answer


def test_qa_rounds_without_feedback_and_revise_all(tmp_path):
    from grader.packs.qa import qa_items, render_qa_prompt

    catalog = Catalog()
    p = catalog.find("perf-core/f4-gemm-dram-traffic")
    vs = vectors.load(p)
    items = qa_items(p, vs.hidden, 2)
    index = {render_qa_prompt(p, it, vs.visible): it for it in items}
    with FakeModelServer(qa_scripted(index, wrong_first={1})) as srv:
        rc = main(["eval", "--mode", "qa", "--qa-items", "2", "--problem", p.qualified_id, "--model", "fake",
                   "--base-url", srv.base_url, "--api-key-env", "NONE", "--samples", "3", "--seed", "0",
                   "--rounds", "2", "--feedback", "none", "--revise-all", "--runs-dir", str(tmp_path),
                   "--name", "qa", "--json", str(tmp_path / "s.json"), "--quiet"])
        assert rc == 0
        followups = [b for b in srv.requests if len(b["messages"]) > 1]
    n = len(items)
    assert len(followups) == 3 * n  # revise-all: every sample gets a second round
    assert all(b["messages"][-1]["content"] == NO_FEEDBACK_QA for b in followups)
    s = json.loads((tmp_path / "s.json").read_text())
    r0, r1 = s["revision"]["qa"]["rounds"]
    assert r0["rate"] == pytest.approx(2 / 3) and r1["rate"] == pytest.approx(2 / 3)
    assert r1["transitions"] == {"fixed": n, "broken": n, "stayed passing": n, "stayed failing": 0}
    assert NO_FEEDBACK_CODE != NO_FEEDBACK_QA


def _subprocess_eval(args):
    return subprocess.Popen([sys.executable, "-m", "grader", "eval", *args], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=dict(os.environ))


@pytest.mark.docker
def test_a_run_killed_in_round_one_resumes_without_regenerating_or_regrading(tmp_path):
    """SIGKILL while round 1 is under way; the resume asks only for what is missing."""
    f1 = ROOT / "problems" / "perf-core" / "f1-conv-layer-accounting"
    good = "```python\n" + (f1 / "solution.py").read_text() + "```"
    bad = "```python\n" + variant_source("perf-core/f1-conv-layer-accounting", "flops_equal_macs") + "```"

    def answer(prompt, body):
        return bad if _round(body) == 0 else good

    runs = tmp_path / "runs"
    with FakeModelServer(answer) as srv:
        srv.always = ("slow", 0.3)
        args = ["--problem", "f1-conv-layer-accounting", "--model", "fake", "--base-url", srv.base_url,
                "--api-key-env", "NONE", "--samples", "8", "--seed", "0", "--rounds", "2", "--feedback", "none",
                "--concurrency", "2", "--workers", "2", "--runs-dir", str(runs), "--name", "k", "--quiet"]
        proc = _subprocess_eval(args)
        run = runs / "k"
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            if (run / "journal.jsonl").exists():
                lines = (run / "journal.jsonl").read_text().splitlines()
                if any(l.startswith('{"type":"completion"') and '"round":1,' in l for l in lines):
                    break
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        before = len(srv.requests)
        done = {(c["sample"], c["round"]) for c in _journal(run, "completion")}
        assert any(r == 1 for _, r in done) and len(done) < 16, "the kill must land in round 1"
        srv.always = None
        proc = _subprocess_eval(["--resume", str(run), "--quiet", "--json", str(tmp_path / "s.json")])
        out, err = proc.communicate(timeout=240)
        assert proc.returncode == 0, err
        after = len(srv.requests)
    completions = _journal(run, "completion")
    keys = [(c["sample"], c["round"]) for c in completions]
    assert len(keys) == len(set(keys)) == 16
    # the resume asked the service only for completions that were not in the journal; what it had
    # already answered before the kill comes back from the cache at no cost
    cached = [c for c in completions if (c["sample"], c["round"]) not in done and c["meta"].get("cached")]
    assert after - before + len(cached) == 16 - len(done)
    grades = [(g["sample"], g["round"], g["regrade"]) for g in _journal(run, "grade")
              if g["grade"]["verdict"] != "infra_error"]
    assert len(grades) == len(set(grades)) == 16
    s = json.loads((tmp_path / "s.json").read_text())
    assert [r["rate"] for r in s["revision"]["code"]["rounds"]] == pytest.approx([0.0, 1.0])
