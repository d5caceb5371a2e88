"""The benchmark as inspect_ai tasks, run by inspect itself (its registry, its mock model, its log
format), scored by the grader: the verdicts and prompts of ``eval``, nothing hidden in a sample.
(Against a real model on a local server: test_inspect_local_model.py.)"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SAMPLE_KEYS = {"problem", "mode", "item", "family", "difficulty", "tier", "content_hash"}
QA_SAMPLE_KEYS = SAMPLE_KEYS | {"kind", "qa_items"}

# (task, a problem answered correctly, a problem answered wrongly): problems with short prompts
CASES = {
    "perf_core": ("perf-core/f1-conv-layer-accounting", "perf-core/f11-systolic-os-cycles"),
    "perf_model": ("perf-model/f4-gemm-dram-traffic", "perf-model/f15-kv-cache-attention-bytes"),
}


def fenced(code: str, lang: str = "python") -> str:
    return f"Here is my answer.\n\n```{lang}\n{code.rstrip()}\n```\n"


def mock_model(answers: dict[str, str | list[str]]):
    """inspect's mock model, answering each prompt from ``answers`` (a list: its answers in turn, one
    per epoch); a prompt it does not know gets an answer with no code and no JSON."""
    from inspect_ai.model import ModelOutput, ModelUsage, get_model

    asked: dict[str, int] = {}

    def generate(messages, tools, tool_choice, config):
        prompt = messages[-1].text
        text = answers.get(prompt, "I do not know.")
        if isinstance(text, list):
            asked[prompt] = asked.get(prompt, 0) + 1
            text = text[asked[prompt] - 1]
        out = ModelOutput.from_content(model="mockllm/model", content=text)
        # the mock model counts tokens with tiktoken when no usage is given, and tiktoken downloads
        # its encoding on first use: say the usage instead (nothing is downloaded here)
        out.usage = ModelUsage(input_tokens=len(prompt) // 4, output_tokens=len(text) // 4 + 1,
                               total_tokens=len(prompt) // 4 + len(text) // 4 + 1)
        return out

    return get_model("mockllm/model", custom_outputs=generate, memoize=False)


def run_task(task: str, model, log_dir: Path, epochs: int = 1, **task_args):
    """Run a registered task with inspect's own eval(); return the log as inspect's reader reads it back."""
    from inspect_ai import eval as inspect_eval
    from inspect_ai.log import read_eval_log

    logs = inspect_eval(task, model=model, task_args=task_args, log_dir=str(log_dir), display="none", epochs=epochs)
    assert len(logs) == 1
    assert logs[0].status == "success", logs[0].error
    log = read_eval_log(logs[0].location)  # the file inspect's viewer opens
    assert Path(logs[0].location).suffix == ".eval"
    return log


def scores_of(log) -> dict[str, object]:
    out = {}
    for s in log.samples:
        assert list(s.scores) == ["grader"], list(s.scores)
        out[str(s.id)] = s.scores["grader"]
    return out


def metric(log, name: str) -> float:
    (result,) = log.results.scores
    return result.metrics[name].value


def assert_nothing_hidden(sample, keys: set[str]) -> None:
    """A sample names its problem and item: no expected value, no target."""
    assert set(sample.metadata) == keys
    for k, v in sample.metadata.items():
        assert (type(v) is int) if k == "qa_items" else (isinstance(v, str) and len(v) <= 64), (k, v)
    assert sample.target in ("", [])


# ------------------------------------------------------------------------------------------
# code mode: graded in the sandbox
# ------------------------------------------------------------------------------------------

@pytest.mark.docker
@pytest.mark.parametrize("task", sorted(CASES))
def test_code_mode_scores_are_the_sandbox_verdicts(task, sandbox_image, tmp_path):
    from grader.packs import vectors
    from grader.packs.problems import Catalog
    from grader.packs.prompt import render_prompt

    catalog = Catalog()
    good, bad = (catalog.find(pid) for pid in CASES[task])
    prompts = {p.id: render_prompt(p, vectors.load(p).visible) for p in (good, bad)}
    answers = {prompts[good.id]: fenced(good.solution_source),
               prompts[bad.id]: fenced(bad.variants[0].source)}
    log = run_task(f"perfgrade/{task}", mock_model(answers), tmp_path / "logs", problems=[good.id, bad.id])

    assert log.eval.task == f"perfgrade/{task}"
    assert log.eval.metadata["mode"] == "code" and log.eval.metadata["image"]["id"] == sandbox_image.image_id
    assert {str(s.id) for s in log.samples} == {good.id, bad.id}
    for s in log.samples:
        assert s.input == prompts[str(s.id)]  # exactly the prompt eval sends
        assert_nothing_hidden(s, SAMPLE_KEYS)
        assert s.metadata["problem"] == f"{good.pack.name}/{s.id}" and s.metadata["mode"] == "code"
    scores = scores_of(log)
    ok, wrong = scores[good.id], scores[bad.id]
    assert ok.value == 1.0 and ok.metadata["verdict"] == "pass" and ok.explanation.startswith("pass: ")
    assert ok.answer.strip() == good.solution_source.strip()  # the code our extractor took
    assert ok.metadata["grade"]["vectors_passed"] == ok.metadata["grade"]["vectors_total"] > 0
    assert wrong.value == 0.0 and wrong.metadata["verdict"] in {"wrong_answer", "wrong_type"}
    assert wrong.explanation.startswith(wrong.metadata["verdict"] + ": ")
    failure = wrong.metadata["grade"]["failures"][0]
    diff = failure["diffs"][0]  # per-field diffs of a failing vector, as eval's audit shows them
    assert diff["path"] and diff["kind"] in {"value", "type", "missing", "extra"} and "expected" in diff
    assert metric(log, "accuracy") == 0.5 and metric(log, "stderr") == pytest.approx(0.5)


@pytest.mark.docker
def test_the_verdicts_are_the_ones_eval_gives_for_the_same_answers(sandbox_image, tmp_path):
    from grader.cli import main
    from grader.packs import vectors
    from grader.packs.problems import Catalog
    from grader.packs.prompt import render_prompt
    from grader.results.runs import RunDir

    catalog = Catalog()
    good, bad = (catalog.find(pid) for pid in CASES["perf_core"])
    texts = {good: [fenced(good.solution_source), "No code today."],
             bad: [fenced(v.source) for v in bad.variants[:2]]}
    # inspect: two epochs, the problem's two answers in turn
    answers = {render_prompt(p, vectors.load(p).visible): t for p, t in texts.items()}
    log = run_task("perfgrade/perf_core", mock_model(answers), tmp_path / "logs", epochs=2,
                   problems=[good.id, bad.id])
    got: dict[str, list[str]] = {}
    for s in log.samples:
        got.setdefault(str(s.id), []).append(s.scores["grader"].metadata["verdict"])
    # eval: the same answers from a completions file, as samples 0 and 1
    completions = tmp_path / "completions.jsonl"
    completions.write_text("".join(json.dumps({"problem": p.qualified_id, "sample": i, "text": text}) + "\n"
                                   for p, t in texts.items() for i, text in enumerate(t)))
    rc = main(["eval", "--completions", str(completions), "--runs-dir", str(tmp_path / "runs"), "--name", "same",
               "--quiet", "--workers", "2"])
    assert rc == 0
    final, duplicates = RunDir.open(tmp_path / "runs" / "same").final_grades()
    want: dict[str, list[str]] = {}
    for key, rec in final.items():
        want.setdefault(key[0].split("/")[1], []).append(rec["grade"]["verdict"])
    assert duplicates == 0
    assert {k: sorted(v) for k, v in got.items()} == {k: sorted(v) for k, v in want.items()}
    assert sorted(got[good.id]) == ["no_code", "pass"] and "pass" not in got[bad.id]


# ------------------------------------------------------------------------------------------
# Q&A mode: graded on the host
# ------------------------------------------------------------------------------------------

def _wrong(expected: dict) -> dict:
    """The expected answer with every integer off by one (a wrong answer of the right types)."""
    out = {}
    for k, v in expected.items():
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            out[k] = v
        else:
            out[k] = v + 1 if isinstance(v, int) else v * 1.5 + 1.0
    return out


@pytest.mark.parametrize("task", sorted(CASES))
def test_qa_mode_scores_the_answers_on_the_host(task, tmp_path):
    from grader.packs import vectors
    from grader.packs.problems import Catalog
    from grader.packs.qa import qa_items, render_qa_prompt

    catalog = Catalog()
    good, bad = (catalog.find(pid) for pid in CASES[task])
    answers, prompts, expected = {}, {}, {}
    for p in (good, bad):
        vs = vectors.load(p)
        item = qa_items(p, vs.hidden, 1)[0]
        assert item.id == "q0" and item.kind == "value"
        text = render_qa_prompt(p, item, vs.visible)
        prompts[f"{p.id}:q0"] = text
        expected[f"{p.id}:q0"] = item.expected
        answer = item.expected if p is good else _wrong(item.expected)
        answers[text] = "Let me work it out.\n\n" + fenced(json.dumps(answer), "json")
    log = run_task(f"perfgrade/{task}", mock_model(answers), tmp_path / "logs",
                   mode="qa", problems=f"{good.id},{bad.id}", qa_items=1)

    samples = {str(s.id): s for s in log.samples}
    assert log.eval.metadata["mode"] == "qa" and log.eval.task_args["mode"] == "qa"
    assert set(prompts) <= set(samples)  # and the choice items of those problems, if they have any
    for sid, s in samples.items():
        assert_nothing_hidden(s, QA_SAMPLE_KEYS)
        assert s.metadata["item"] == sid.split(":")[1]
        if sid in prompts:
            assert s.input == prompts[sid]  # exactly the Q&A prompt eval sends
    scores = scores_of(log)
    ok, wrong = scores[f"{good.id}:q0"], scores[f"{bad.id}:q0"]
    assert ok.value == 1.0 and ok.metadata["verdict"] == "correct" and ok.explanation.startswith("correct: ")
    assert json.loads(ok.answer) == expected[f"{good.id}:q0"]
    assert wrong.value == 0.0 and wrong.metadata["verdict"] == "wrong_answer"
    assert wrong.explanation.startswith("wrong_answer: wrong ")
    diffs = wrong.metadata["grade"]["failures"][0]["diffs"]
    assert diffs and all(d["kind"] == "value" for d in diffs)
    assert {d["path"] for d in diffs} <= set(expected[f"{bad.id}:q0"])
    others = [sc.value for sid, sc in scores.items() if sid not in prompts]  # unanswered choice items
    assert all(v == 0.0 for v in others)
    n = len(scores)
    assert metric(log, "accuracy") == pytest.approx(1 / n)


def test_partial_credit_counts_the_fields_answered_correctly(tmp_path):
    from grader.packs import vectors
    from grader.packs.problems import Catalog
    from grader.packs.qa import qa_items, render_qa_prompt

    p = Catalog().find(CASES["perf_core"][0])
    vs = vectors.load(p)
    item = qa_items(p, vs.hidden, 1)[0]
    half = dict(item.expected)
    wrong_keys = sorted(half)[: len(half) // 2]
    half.update({k: v for k, v in _wrong(item.expected).items() if k in wrong_keys})
    assert half != item.expected
    answers = {render_qa_prompt(p, item, vs.visible): fenced(json.dumps(half), "json")}
    log = run_task("perfgrade/perf_core", mock_model(answers), tmp_path / "logs",
                   mode="qa", problems=p.id, qa_items=1, partial=True)
    sc = scores_of(log)[f"{p.id}:q0"]
    changed = sum(half[k] != item.expected[k] for k in half)
    assert sc.metadata["verdict"] == "wrong_answer"
    assert sc.value == pytest.approx(1 - changed / len(half)) and 0 < sc.value < 1

    # the log graded again by inspect's command line in a fresh process, without partial credit:
    # the scorer is found by its registered name and reads the rest from the samples
    from inspect_ai.log import read_eval_log

    exe = Path(sys.executable).with_name("inspect")
    proc = subprocess.run([str(exe), "score", log.location, "--scorer", "perfgrade/grader", "--action", "overwrite",
                           "--overwrite", "--display", "none"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=300, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr[-3000:]
    again = scores_of(read_eval_log(log.location))[f"{p.id}:q0"]
    assert again.value == 0.0 and again.metadata["verdict"] == "wrong_answer"


def test_any_pack_runs_as_the_pack_task(tiny_registry, tmp_path):
    from grader.packs import vectors
    from grader.packs.problems import Catalog
    from grader.packs.qa import qa_items, render_qa_prompt
    from support import TINY_PACK

    p = Catalog([TINY_PACK]).find("tiny-pack/sound")
    vs = vectors.load(p)
    item = qa_items(p, vs.hidden, 1)[0]
    answers = {render_qa_prompt(p, item, vs.visible): fenced(json.dumps(item.expected), "json")}
    log = run_task("perfgrade/pack", mock_model(answers), tmp_path / "logs", pack="tiny-pack",
                   pack_path=str(TINY_PACK), mode="qa", problems="sound", qa_items=1)
    assert log.eval.task == "perfgrade/pack" and log.eval.metadata["pack"] == "tiny-pack"
    assert log.eval.scorers[0].options["pack_path"] == [str(TINY_PACK.resolve())]  # what a re-grade needs
    sc = scores_of(log)[f"sound:{item.id}"]
    assert sc.value == 1.0 and sc.metadata["verdict"] == "correct"


# ------------------------------------------------------------------------------------------
# registration, isolation, refusals
# ------------------------------------------------------------------------------------------

def test_tasks_are_found_by_name_through_the_entry_point_in_a_fresh_process(tmp_path):
    """inspect loads the module only when a perfgrade/ name is asked for, through the entry point."""
    script = textwrap.dedent("""
        import sys
        from importlib.metadata import entry_points
        from inspect_ai.util import registry_create

        (ep,) = [e for e in entry_points(group="inspect_ai") if e.name == "perfgrade"]
        assert ep.value == "grader.integrations.inspect_tasks", ep.value
        assert "grader.integrations.inspect_tasks" not in sys.modules
        task = registry_create("task", "perfgrade/perf_model", mode="qa", problems="f4-gemm-dram-traffic",
                               qa_items=1)
        assert "grader.integrations.inspect_tasks" in sys.modules
        print(task.name, len(task.dataset), task.dataset[0].id)
    """)
    proc = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    name, n, first = proc.stdout.split()
    assert name == "perfgrade/perf_model" and int(n) >= 1 and first == "f4-gemm-dram-traffic:q0"


def test_the_grader_itself_never_imports_inspect(tmp_path):
    script = ("import sys, grader.cli.app, grader.reward, grader.pipeline.evaluate, grader.grading.qa; "
              "print('inspect_ai' in sys.modules)")
    proc = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "False"


def test_bad_task_parameters_fail_with_one_clear_line():
    from grader.errors import ConfigError, ProblemNotFound
    from grader.integrations.inspect_tasks import pack_task

    with pytest.raises(ConfigError, match="mode 'essay': expected one of code, qa"):
        pack_task("perf-core", mode="essay")
    with pytest.raises(ConfigError, match="qa_items must be an integer >= 1"):
        pack_task("perf-core", mode="qa", qa_items=0)
    with pytest.raises(ConfigError, match="not in pack perf-core: perf-model/f4-gemm-dram-traffic"):
        pack_task("perf-core", mode="qa", problems="perf-model/f4-gemm-dram-traffic")
    with pytest.raises(ProblemNotFound, match="no pack named 'nope'"):
        pack_task("nope", mode="qa")


def test_a_sample_of_a_changed_problem_is_refused():
    """A log's samples are graded only against the problem version they were made from."""
    from grader.errors import ConfigError
    from grader.integrations.inspect_tasks import _catalog, _sample_problem

    catalog = _catalog(())
    p = catalog.find(CASES["perf_core"][0])
    assert _sample_problem(catalog, {"problem": p.qualified_id, "content_hash": p.content_hash}) is p
    with pytest.raises(ConfigError, match="changed since this sample was made"):
        _sample_problem(catalog, {"problem": p.qualified_id, "content_hash": "0" * 64})
    with pytest.raises(ConfigError, match="names no problem"):
        _sample_problem(catalog, {})


def test_an_infrastructure_error_is_left_out_of_the_metrics(tmp_path, monkeypatch):
    """The sandbox failing (retried and given up) is not the model's fault: the sample's score is
    recorded with the verdict, unscored, and the metrics are those of the other samples."""
    import math

    from grader.grading.execution import GradingEngine
    from grader.grading.scoring import infra_grade
    from grader.integrations import inspect_tasks
    from grader.packs import vectors
    from grader.packs.prompt import render_prompt
    from grader.reward import Rewarder

    class EngineDown(GradingEngine):
        """An engine whose every grading failed for good (what the retries end in)."""

        name, image_id, image_tag = "down", "sha256:none", "none"

        def grade(self, problem, items, hidden, limits, stop=None):
            return [(infra_grade("attempt 6: the engine did not answer", len(hidden)), []) for _ in items]

    with Rewarder(engine=EngineDown(), catalog=inspect_tasks._catalog(())) as down:
        monkeypatch.setitem(inspect_tasks._REWARDERS, inspect_tasks._roots(()), down)
        good, bad = CASES["perf_core"]
        p = inspect_tasks._catalog(()).find(good)
        # the first problem is answered with code (its grading fails), the other with none
        answers = {render_prompt(p, vectors.load(p).visible): fenced(p.solution_source)}
        log = run_task("perfgrade/perf_core", mock_model(answers), tmp_path / "logs",
                       problems=[good.split("/")[1], bad.split("/")[1]])
    scores = scores_of(log)
    infra, none = scores[good.split("/")[1]], scores[bad.split("/")[1]]
    assert math.isnan(infra.value) and infra.metadata["reason"] == "scoring_failed"
    assert infra.metadata["verdict"] == "infra_error" and infra.explanation.startswith("infra_error: ")
    assert none.value == 0.0 and none.metadata["verdict"] == "no_code"
    (result,) = log.results.scores
    assert (result.scored_samples, result.unscored_samples) == (1, 1)
    assert metric(log, "accuracy") == 0.0  # of the one scored sample
