"""The tasks against a real small model on a local OpenAI-compatible server, through inspect's
``openai-api`` provider: real completions, honest verdicts (mostly failures: the model is the
floor), the usage the server reports, and logs inspect's reader opens.

Kept short: one problem with the shortest prompt, once from inspect's command line (code mode,
graded in the sandbox) and once from its Python API (Q&A); few tokens. The two prompts share the
spec, which the server keeps from the first request, so the second costs little more than its
own question. (On two idle cores SmolLM2-135M reads a 1,500-token prompt in about 15 s.)
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from grader.grading.scoring import Verdict

PROBLEM = "f1-conv-layer-accounting"  # the shortest prompt of perf-core, in both modes
MAX_TOKENS = 128
VERDICTS = {v.value for v in Verdict} - {Verdict.INFRA_ERROR.value}


def read_log(log_dir: Path):
    from inspect_ai.log import list_eval_logs, read_eval_log

    (info,) = list_eval_logs(str(log_dir))
    return read_eval_log(info)


def check(log, server, mode: str) -> None:
    tail = server.log.read_text(errors="replace")[-2000:] if hasattr(server, "log") else ""
    assert log.status == "success", f"{log.error}\nthe server's log ends:\n{tail}"
    assert log.eval.task == "perfgrade/perf_core" and log.eval.metadata["mode"] == mode
    usage = log.stats.model_usage[f"openai-api/local/{server.model}"]
    assert usage.input_tokens > 500 and usage.output_tokens > 0  # what the server counted
    assert log.samples
    for s in log.samples:
        assert s.error is None, s.error
        assert s.output.completion.strip()  # a real completion came back
        sc = s.scores["grader"]
        verdict = sc.metadata["verdict"]
        assert verdict in VERDICTS  # one of the grader's own, never an infrastructure error
        assert sc.explanation.startswith(f"{verdict}: ") and sc.value in (0.0, 1.0)
        assert (sc.value == 1.0) == (verdict in ("pass", "correct"))
    (result,) = log.results.scores
    assert set(result.metrics) >= {"accuracy", "stderr"}


@pytest.mark.docker
@pytest.mark.slow
@pytest.mark.timeout(1800)  # about 2 minutes on idle cores; a busy machine reads prompts ten times slower
def test_a_local_model_from_inspects_command_line_and_its_python_api(local_model_server, sandbox_image, tmp_path):
    server = local_model_server
    # code mode, from the command line: the task found by name through the entry point
    exe = Path(sys.executable).with_name("inspect")
    assert exe.is_file(), "inspect's command line is not installed (bin/setup --test)"
    cmd = [str(exe), "eval", "perfgrade/perf_core", "-T", f"problems={PROBLEM}",
           "--model", f"openai-api/local/{server.model}", "--model-base-url", server.base_url,
           "--max-tokens", str(MAX_TOKENS), "--temperature", "0", "--log-dir", str(tmp_path / "code"),
           "--display", "plain", "--max-retries", "2", "--timeout", "600"]
    proc = subprocess.run(cmd, env={**os.environ, "LOCAL_API_KEY": server.api_key}, capture_output=True, text=True,
                          timeout=1500, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, f"{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}"
    code = read_log(tmp_path / "code")
    check(code, server, "code")
    assert [str(s.id) for s in code.samples] == [PROBLEM]

    # Q&A mode, from the Python API
    from inspect_ai import eval as inspect_eval
    from inspect_ai.model import GenerateConfig, get_model

    model = get_model(f"openai-api/local/{server.model}", base_url=server.base_url, api_key=server.api_key,
                      config=GenerateConfig(max_retries=2, timeout=600), memoize=False)
    (log,) = inspect_eval("perfgrade/perf_core", model=model, log_dir=str(tmp_path / "qa"), display="none",
                          task_args={"mode": "qa", "problems": PROBLEM, "qa_items": 1},
                          max_tokens=MAX_TOKENS, temperature=0)
    qa = read_log(tmp_path / "qa")
    assert Path(qa.location.removeprefix("file://")) == Path(log.location)
    check(qa, server, "qa")
    assert [str(s.id) for s in qa.samples] == [f"{PROBLEM}:q0"]
