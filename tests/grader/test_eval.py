"""eval end to end: the real openai client over HTTP to a local fake service, the real sandbox."""

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
from grader.results.runs import RunDir

pytestmark = pytest.mark.docker

ROOT = Path(__file__).resolve().parents[2]
F1 = ROOT / "problems" / "perf-core" / "f1-conv-layer-accounting"
SEED = 1000

CORRECT = "def double(x):\n    return {'y': 2 * x, 'half': x / 2}\n"
WRONG = "def double(x):\n    return {'y': 3 * x, 'half': x / 2}\n"
SLOW = "def double(x):\n    while True:\n        pass\n"


def fenced(code: str) -> str:
    return f"Here is my answer.\n\n```python\n{code}```\n"


# what each sample of each tiny problem answers, and the verdict it must get
SCRIPT = {
    "sound": [fenced(CORRECT), fenced(WRONG), "I am not sure.", fenced("def double(x)\n    return 1\n"), fenced(CORRECT)],
    "weak-variant": [fenced(CORRECT), fenced(CORRECT), fenced(SLOW), fenced(WRONG), fenced(WRONG)],
}
EXPECTED = {
    "sound": ["pass", "wrong_answer", "no_code", "load_error", "pass"],
    "weak-variant": ["pass", "pass", "timeout", "wrong_answer", "wrong_answer"],
}


def scripted(prompt: str, body: dict) -> str:
    pid = re.search(r"Double a number \(([a-z-]+)\)", prompt).group(1)
    return SCRIPT[pid][body["seed"] - SEED]


def test_eval_end_to_end_numbers(tiny_registry, tmp_path, capsys):
    with FakeModelServer(scripted) as srv:
        summary_path = tmp_path / "summary.json"
        rc = main(["eval", "--pack-path", str(ROOT / "tests/data/packs/tiny-pack"), "--pack", "tiny-pack",
                   "--problem", "sound", "--problem", "weak-variant", "--model", "fake", "--base-url", srv.base_url,
                   "--api-key-env", "NONE", "--samples", "5", "--seed", str(SEED), "--k", "1,2,5", "--regrade", "1",
                   "--workers", "2", "--runs-dir", str(tmp_path / "runs"), "--json", str(summary_path), "--quiet"])
        assert rc == 0
        assert len(srv.requests) == 10
    s = json.loads(summary_path.read_text())
    probs = {p["problem"]: p for p in s["problems"]}
    for pid, verdicts in EXPECTED.items():
        p = probs[f"tiny-pack/{pid}"]
        assert p["n"] == 5 and p["correct"] == verdicts.count("pass")
        assert p["verdicts"] == {v: verdicts.count(v) for v in set(verdicts)}
    assert s["headline"]["pass@1"] == pytest.approx((2 / 5 + 2 / 5) / 2)
    # pass@2 for c=2, n=5: 1 - C(3,2)/C(5,2) = 0.7 on both problems
    assert s["headline"]["pass@k"]["2"] == pytest.approx(0.7)
    assert s["runs"]["runs"] == pytest.approx([1.0, 0.5, 0.0, 0.0, 0.5])
    assert s["flakiness"]["regraded_samples"] == 10 and s["flakiness"]["changed"] == 0
    assert s["run"]["complete"] and s["samples"]["infra_excluded"] == 0
    out = capsys.readouterr().out
    assert "pass@1" in out and "40.0%" in out

    # a re-run of the same problems costs no model calls: the completion cache answers
    with FakeModelServer(lambda p, b: pytest.fail("the model was called again")) as srv2:
        rc = main(["eval", "--pack-path", str(ROOT / "tests/data/packs/tiny-pack"), "--pack", "tiny-pack",
                   "--problem", "sound", "--model", "fake", "--base-url", srv.base_url.replace(srv.base_url, srv.base_url),
                   "--api-key-env", "NONE", "--samples", "5", "--seed", str(SEED), "--runs-dir", str(tmp_path / "runs2"),
                   "--quiet"])
        assert rc == 0 and srv2.requests == []

    # report recomputes the same summary from the run directory alone
    run_dir = next((tmp_path / "runs").iterdir())
    rc = main(["report", str(run_dir), "--json", str(tmp_path / "again.json")])
    assert rc == 0
    again = json.loads((tmp_path / "again.json").read_text())
    assert again["headline"] == s["headline"] and again["problems"] == s["problems"]


def _subprocess_eval(args, env=None, **kw):
    return subprocess.Popen([sys.executable, "-m", "grader", "eval", *args], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, **(env or {})}, **kw)


def f1_answer(prompt: str, body: dict) -> str:
    sample = body["seed"]
    code = (F1 / "solution.py").read_text() if sample % 3 else variant_source("perf-core/f1-conv-layer-accounting", "flops_equal_macs")
    return fenced(code)


def test_sigkill_mid_run_then_resume_grades_every_sample_exactly_once(tmp_path):
    runs = tmp_path / "runs"
    with FakeModelServer(f1_answer) as srv:
        srv.always = ("slow", 0.25)
        proc = _subprocess_eval(["--problem", "f1-conv-layer-accounting", "--model", "fake", "--base-url", srv.base_url,
                                 "--api-key-env", "NONE", "--samples", "12", "--seed", "0", "--concurrency", "2",
                                 "--workers", "2", "--runs-dir", str(runs), "--name", "killed", "--quiet"])
        run = runs / "killed"
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if (run / "journal.jsonl").exists():
                grades = [l for l in (run / "journal.jsonl").read_text().splitlines() if '"type":"grade"' in l]
                if len(grades) >= 3:
                    break
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        st = RunDir(run).state()
        assert 3 <= len(st.final_grades) < 12, f"the kill must land mid-run: {proc.stderr.read()[-2000:]}"
        srv.always = None
        proc = _subprocess_eval(["--resume", str(run), "--quiet", "--json", str(tmp_path / "s.json")])
        out, err = proc.communicate(timeout=180)
        assert proc.returncode == 0, err
    st = RunDir(run).state()
    assert st.duplicates == 0
    assert st.final_grades == {("perf-core/f1-conv-layer-accounting", "code", "", s, 0, 0) for s in range(12)}
    grade_lines = [json.loads(l) for l in (run / "journal.jsonl").read_text().splitlines() if '"type":"grade"' in l]
    keys = [(g["problem"], g["sample"], g["round"], g["regrade"]) for g in grade_lines]
    assert len(keys) == len(set(keys)) == 12
    s = json.loads((tmp_path / "s.json").read_text())
    (p,) = s["problems"]
    assert p["n"] == 12 and p["correct"] == 8  # samples 0, 3, 6, 9 answer with a variant


def test_401_stops_the_run_with_one_clear_line(tmp_path):
    with FakeModelServer() as srv:
        srv.always = ("401",)
        proc = _subprocess_eval(["--problem", "f1-conv-layer-accounting", "--model", "fake", "--base-url", srv.base_url,
                                 "--samples", "3", "--runs-dir", str(tmp_path), "--quiet"],
                                env={"OPENAI_API_KEY": "wrong"})
        out, err = proc.communicate(timeout=120)
    assert proc.returncode == 3  # the model service failed
    lines = [l for l in err.splitlines() if l.startswith("error:")]
    assert lines == [l for l in lines if "refused the API key (401)" in l] and len(lines) == 1
    assert "Traceback" not in err


def test_demo_model_runs_offline_and_says_so(tmp_path, capsys):
    rc = main(["eval", "--problem", "f1-conv-layer-accounting", "--samples", "4", "--runs-dir", str(tmp_path),
               "--json", str(tmp_path / "s.json"), "--quiet"])
    assert rc == 0
    s = json.loads((tmp_path / "s.json").read_text())
    assert s["run"]["source"] == "demo" and "not a real model" in s["run"]["notice"]
    assert s["samples"]["counted"] == 4
    assert "not a real model" in capsys.readouterr().out


# ------------------------------------------------------------------------------------------
# exit status and output discipline
# ------------------------------------------------------------------------------------------

def test_an_unreachable_endpoint_exits_3_with_one_line_naming_it(tmp_path):
    proc = _subprocess_eval(["--problem", "f1-conv-layer-accounting", "--model", "x",
                             "--base-url", "http://127.0.0.1:9/v1", "--api-key-env", "NONE", "--samples", "3",
                             "--max-attempts", "2", "--runs-dir", str(tmp_path), "--quiet"])
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 3, err
    errors = [l for l in err.splitlines() if l.startswith("error:")]
    assert len(errors) == 1 and "http://127.0.0.1:9/v1" in errors[0] and "cannot reach" in errors[0]
    assert "Traceback" not in err and out == ""


def test_some_failed_requests_are_counted_on_screen_and_the_run_resumes(tmp_path):
    code = (F1 / "solution.py").read_text()

    def answer(prompt, body):
        if body["seed"] == 1 and not answer.fixed:
            raise RuntimeError("this sample's requests fail")  # the server drops the connection
        return fenced(code)

    answer.fixed = False
    with FakeModelServer(answer) as srv:
        args = ["--problem", "f1-conv-layer-accounting", "--model", "fake", "--base-url", srv.base_url,
                "--api-key-env", "NONE", "--samples", "3", "--max-attempts", "2", "--runs-dir", str(tmp_path),
                "--name", "partial", "--quiet"]
        proc = _subprocess_eval(args)
        out, err = proc.communicate(timeout=180)
        assert proc.returncode == 4, err
        assert f"1 completion request(s) to {srv.base_url} failed" in err
        assert f"--resume {tmp_path / 'partial'}" in err
        answer.fixed = True
        proc = _subprocess_eval(["--resume", str(tmp_path / "partial"), "--quiet"])
        out, err = proc.communicate(timeout=180)
        assert proc.returncode == 0, err
    st = RunDir(tmp_path / "partial").state()
    assert {k[3] for k in st.final_grades} == {0, 1, 2}


@pytest.mark.parametrize("option", ["--samples", "--workers", "--concurrency", "--batch", "--rounds", "--qa-items"])
def test_non_positive_counts_are_clear_errors(option, tmp_path, capsys):
    rc = main(["eval", "--problem", "f1-conv-layer-accounting", option, "0", "--runs-dir", str(tmp_path), "--quiet"])
    err = capsys.readouterr().err
    assert rc == 2 and f"{option} must be >= 1 (got 0)" in err
    assert not list(tmp_path.iterdir()), "nothing is run"


def test_json_without_a_file_writes_only_json_to_stdout(tmp_path):
    proc = _subprocess_eval(["--problem", "f1-conv-layer-accounting", "--samples", "2", "--runs-dir", str(tmp_path),
                             "--json"])
    out, err = proc.communicate(timeout=180)
    assert proc.returncode == 0, err
    summary = json.loads(out)  # the whole of stdout is one JSON document
    assert summary["samples"]["counted"] == 2
    assert "headline" in err and "NOTE" in err  # the human tables went to stderr


def test_every_exit_status_is_listed_in_the_help_and_the_readme():
    from grader.cli.app import build_parser

    text = build_parser()._subparsers._group_actions[0].choices["eval"].format_help()
    readme = (ROOT / "README.md").read_text()
    for code in ("0", "1", "2", "3", "4", "130"):
        assert re.search(rf"^\s+{code}\s+\S", text, re.M), f"exit status {code} missing from eval --help"
        assert re.search(rf"^\| `?{code}`? \|", readme, re.M), f"exit status {code} missing from the README"


def test_eval_under_gvisor_records_the_runtime_and_resume_refuses_to_mix(tmp_path, capsys):
    rc = main(["eval", "--problem", "f1-conv-layer-accounting", "--samples", "2", "--runtime", "runsc",
               "--runs-dir", str(tmp_path), "--name", "g", "--json", str(tmp_path / "s.json"), "--quiet"])
    assert rc == 0
    m = RunDir.open(tmp_path / "g").manifest
    assert m.engine["runtime"] == "runsc"
    grades = [r for r in RunDir(tmp_path / "g").journal.records() if r["type"] == "grade"]
    assert len(grades) == 2 and all(g["grade"]["verdict"] != "infra_error" for g in grades)
    capsys.readouterr()
    rc = main(["eval", "--resume", str(tmp_path / "g"), "--runtime", "runc", "--quiet"])
    assert rc == 2 and "would mix runtimes" in capsys.readouterr().err
