"""Q&A mode: items, prompts, answer extraction and grading, and eval --mode qa over real HTTP."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pytest

from fakes.model_server import FakeModelServer
from grader.cli import main
from grader.grading.qa import extract_answer, grade_answer
from grader.packs import vectors
from grader.packs.problems import Catalog
from grader.packs.qa import LETTERS, qa_items, render_qa_prompt
from grader.results.runs import RunDir

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def catalog():
    return Catalog()


def _problem(catalog, pid):
    p = catalog.find(pid)
    return p, vectors.load(p)


# ------------------------------------------------------------------------------------------
# extraction and grading
# ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("text, value, why", [
    ("Reasoning...\n```json\n{\"a\": 1}\n```\n", {"a": 1}, "JSON block 1 of 1"),
    ("```json\n{\"a\": 1}\n```\nthen I changed my mind\n```json\n{\"a\": 2}\n```", {"a": 2}, "JSON block 2 of 2"),
    ("```\n{\"a\": 3}\n```", {"a": 3}, "JSON block 1 of 1"),
    ("lots of reasoning " * 200 + "\n```json\n{\"a\": 4}\n```", {"a": 4}, "block 1"),
    ("```json\n{\"a\": 5}\n```\n```json\n{\"a\": NaN}\n```", {"a": 5}, "JSON block 1 of 2"),
    ("<think>```json\n{\"a\": 9}\n```</think>\n```json\n{\"a\": 6}\n```", {"a": 6}, "JSON block 1 of 1"),
])
def test_the_last_valid_fenced_json_object_is_the_answer(text, value, why):
    ax = extract_answer(text)
    assert ax.value == value and why in ax.reason


@pytest.mark.parametrize("text, why", [
    ("", "empty"),
    ("The answer is 42.", "no fenced block"),
    ("```python\nprint(1)\n```", "no JSON block"),
    ("```json\n{\"a\": 1,}\n```", "not valid JSON"),
    ("```json\n{\"a\": 1, \"a\": 2}\n```", "duplicate key"),
    ("```json\n{\"a\": NaN}\n```", "non-finite"),
    ("```json\n{\"a\": 1e999}\n```", "infinity"),
    ("```json\n[1, 2]\n```", "not an object"),
    ("```json\n" + "[" * 100 + "]" * 100 + "\n```", "nested"),
])
def test_no_answer_says_why(text, why):
    ax = extract_answer(text)
    assert ax.value is None and why in ax.reason


def test_grading_compares_field_by_field_with_strict_types(catalog):
    p, vs = _problem(catalog, "perf-core/f4-gemm-dram-traffic")
    item = next(it for it in qa_items(p, vs.hidden) if it.kind == "value")
    exp = item.expected
    assert grade_answer(item, extract_answer(f"```json\n{json.dumps(exp)}\n```")).verdict.value == "correct"
    wrong = {**exp, "W_reads": exp["W_reads"] + 1}
    g = grade_answer(item, extract_answer(f"```json\n{json.dumps(wrong)}\n```"))
    assert g.verdict.value == "wrong_answer" and g.reason == "wrong W_reads"
    assert g.fields["W_reads"].failed == 1 and g.fields["I_reads"].failed == 0
    (d,) = g.failures[0].diffs
    assert (d.path, d.expected, d.got) == ("W_reads", exp["W_reads"], exp["W_reads"] + 1)
    as_float = {**exp, "I_reads": float(exp["I_reads"])}
    assert grade_answer(item, extract_answer(f"```json\n{json.dumps(as_float)}\n```")).verdict.value == "wrong_type"
    missing = {k: v for k, v in exp.items() if k != "O_reads"}
    assert grade_answer(item, extract_answer(f"```json\n{json.dumps(missing)}\n```")).verdict.value == "wrong_type"
    assert grade_answer(item, extract_answer("no idea")).verdict.value == "no_answer"


# ------------------------------------------------------------------------------------------
# items
# ------------------------------------------------------------------------------------------

def _items(problem) -> int:
    """Items drawn per problem here: a search problem's item is a reference search (seconds of CPU each on a
    cold cache), so two of them; the drawing and the exclusion of hidden inputs are the same code."""
    return 2 if problem.data.scoring else 5


def test_items_are_deterministic_and_never_a_hidden_input(catalog):
    for p in catalog.problems():
        if p.data.qa is None:
            continue
        vs = vectors.load(p)
        n = _items(p)
        a, b = qa_items(p, vs.hidden, n), qa_items(p, vs.hidden, n)
        assert [(i.id, i.args, i.expected, i.options) for i in a] == [(i.id, i.args, i.expected, i.options) for i in b]
        hidden = {json.dumps(v.args, sort_keys=True) for v in vs.hidden}
        assert not any(json.dumps(i.args, sort_keys=True) in hidden for i in a), p.qualified_id
        assert sum(i.kind == ("mapping" if p.data.scoring else "value") for i in a) == n


def test_every_problem_of_every_pack_has_qa_items(catalog):
    # a search problem's [qa] is optional (docs/mapper.md): without it, it is graded in code mode only
    missing = [p.qualified_id for p in catalog.problems() if p.data.qa is None and p.data.scoring is None]
    assert not missing, f"problems without a [qa] table: {missing}"


def test_no_qa_prompt_contains_a_hidden_vector(catalog):
    """No Q&A prompt holds a code-mode hidden vector's inputs or its expected output."""
    for p in catalog.problems():
        vs = vectors.load(p)
        shown = {json.dumps({f.name: v.expected[f.name] for f in p.data.outputs}, separators=(", ", ": "))
                 for v in vs.visible}  # an example's output may equal a hidden one's (another input)
        for it in qa_items(p, vs.hidden, _items(p)):
            prompt = render_qa_prompt(p, it, vs.visible)
            for v in vs.hidden:
                call = ", ".join(f"{q.name}={json.dumps(a, separators=(', ', ': '))}"
                                 for q, a in zip(p.data.signature.params, v.args))
                assert call not in prompt, f"{p.qualified_id} {it.id} shows hidden inputs {v.id}"
                out = json.dumps({f.name: v.expected[f.name] for f in p.data.outputs}, separators=(", ", ": "))
                assert out in shown or out not in prompt, f"{p.qualified_id} {it.id} shows the output of {v.id}"
            if it.kind == "value":  # and of course not its own answer
                assert json.dumps(it.expected, separators=(", ", ": ")) not in prompt


def test_choice_items_have_one_answer_and_balanced_positions(catalog):
    p, vs = _problem(catalog, "perf-core/f16-tiling-traffic-ranking")
    items = [it for it in qa_items(p, vs.hidden, 8) if it.kind == "choice"]
    assert len(items) == 16  # 8 per declared question
    for j in (0, 1):
        mine = [it for it in items if it.id.startswith(f"c{j}.")]
        letters = [it.expected["answer"] for it in mine]
        counts = Counter(letters)
        assert max(counts.values()) - min(counts.values()) <= 2, counts
        for it in mine:
            assert 2 <= len(it.options) <= 4 and it.expected["answer"] in LETTERS[: len(it.options)]
    # the correct option really is the cheapest valid candidate (from the reference's own answer)
    out = p.reference_fn(*items[0].args)
    valid = [i for i, ok in enumerate(out["valid"]) if ok]
    best = min(valid, key=lambda i: out["traffic"][i])
    shown = items[0].options[LETTERS.index(items[0].expected["answer"])]
    assert shown.startswith(f"candidates[{best}] = ")


def test_the_prompt_states_the_question_and_the_answer_format(catalog):
    p, vs = _problem(catalog, "perf-core/f13-dataflow-latency")
    items = qa_items(p, vs.hidden, 2)
    value = render_qa_prompt(p, items[0], vs.visible)
    assert "## The instance" in value and "What does it return for this input?" in value
    assert "```json" in value and "| `latency` |" in value
    choice = next(it for it in items if it.kind == "choice")
    text = render_qa_prompt(p, choice, vs.visible)
    assert "Which dataflow has the lowest latency?" in text and "- A: " in text and '{"answer": "<letter>"}' in text



@pytest.mark.parametrize("pid", ["perf-core/f13-dataflow-latency", "perf-model/f4-gemm-dram-traffic"])
def test_qa_prompts_carry_the_inputs_satisfy_section_exactly_as_code_prompts(catalog, pid):
    from grader.packs.prompt import domain_lines, render_prompt

    p, vs = _problem(catalog, pid)
    section = "\n".join(domain_lines(p))
    assert p.data.domain and "## Inputs satisfy" in section
    assert section in render_prompt(p, vs.visible)
    for item in qa_items(p, vs.hidden, 1):  # a value item and each kind of choice item
        text = render_qa_prompt(p, item, vs.visible)
        assert section in text and text.index("## Inputs satisfy") < text.index("## The instance")

# ------------------------------------------------------------------------------------------
# eval --mode qa over real HTTP (no sandbox: no code runs)
# ------------------------------------------------------------------------------------------

PIDS = ["perf-core/f4-gemm-dram-traffic", "perf-core/f16-tiling-traffic-ranking"]
STYLES = ["right", "wrong", "malformed", "none", "buried", "two_blocks", "float_for_int"]


def _bump(value, how):
    """The value with its first integer (depth first, keys in order) replaced by how(integer)."""
    done = [False]

    def walk(v):
        if done[0]:
            return v
        if type(v) is int:
            done[0] = True
            return how(v)
        if isinstance(v, list):
            return [walk(x) for x in v]
        if isinstance(v, dict):
            return {k: walk(x) for k, x in v.items()}
        return v

    out = walk(value)
    assert done[0], "no integer to change"
    return out


def _scripted_qa(catalog, n_items: int):
    """An answer function for the fake service, and the verdict each (problem, item, sample) must get."""
    by_prompt = {}
    for pid in PIDS:
        p, vs = _problem(catalog, pid)
        for it in qa_items(p, vs.hidden, n_items):
            by_prompt[render_qa_prompt(p, it, vs.visible)] = (pid, it)
    expected: dict[tuple[str, str, int], str] = {}

    def style_of(pid: str, item: str, sample: int) -> str:
        return STYLES[(sum(map(ord, pid + item)) + sample) % len(STYLES)]

    def answer(prompt: str, body: dict) -> str:
        pid, it = by_prompt[prompt]
        sample = body["seed"]
        style = style_of(pid, it.id, sample)
        exp = it.expected
        if style in ("wrong", "float_for_int") and it.kind == "choice":
            style = "wrong"
        if style == "right":
            return f"Let me think.\n```json\n{json.dumps(exp)}\n```"
        if style == "wrong":
            if it.kind == "choice":
                other = next(c for c in it.fields[0].choices if c != exp["answer"])
                return f"```json\n{json.dumps({'answer': other})}\n```"
            return f"```json\n{json.dumps(_bump(exp, lambda x: x + 1))}\n```"
        if style == "malformed":
            return "```json\n{" + json.dumps(exp)[1:-1] + ",}\n```"
        if style == "none":
            return "I believe the counts are as the spec says."
        if style == "buried":
            return "Step 1... " * 300 + f"\nSo:\n```json\n{json.dumps(exp)}\n```\nThat is my answer."
        if style == "two_blocks":
            first = {k: 0 for k in exp} if it.kind == "value" else {"answer": "Z"}
            return f"Draft:\n```json\n{json.dumps(first)}\n```\nFinal:\n```json\n{json.dumps(exp)}\n```"
        return f"```json\n{json.dumps(_bump(exp, float))}\n```"

    for pid in PIDS:
        p, vs = _problem(catalog, pid)
        for it in qa_items(p, vs.hidden, n_items):
            for s in range(3):
                style = style_of(pid, it.id, s)
                if style == "float_for_int" and it.kind == "choice":
                    style = "wrong"
                expected[(pid, it.id, s)] = {"right": "correct", "buried": "correct", "two_blocks": "correct",
                                             "wrong": "wrong_answer", "malformed": "no_answer", "none": "no_answer",
                                             "float_for_int": "wrong_type"}[style]
    return answer, expected


def test_eval_qa_mode_grades_every_canned_answer_exactly(catalog, tmp_path):
    answer, expected = _scripted_qa(catalog, 3)
    with FakeModelServer(answer) as srv:
        rc = main(["eval", "--mode", "qa", "--qa-items", "3", *sum((["--problem", p] for p in PIDS), []),
                   "--model", "fake", "--base-url", srv.base_url, "--api-key-env", "NONE", "--samples", "3",
                   "--seed", "0", "--runs-dir", str(tmp_path), "--name", "qa", "--json", str(tmp_path / "s.json"),
                   "--quiet"])
        assert rc == 0
        assert len(srv.requests) == len(expected)
    got = {}
    for rec in RunDir(tmp_path / "qa").journal.records():
        if rec["type"] == "grade":
            assert rec["mode"] == "qa" and rec["image"] is None
            got[(rec["problem"], rec["item"], rec["sample"])] = rec["grade"]["verdict"]
    assert got == expected
    s = json.loads((tmp_path / "s.json").read_text())
    q = s["qa"]
    for row in q["problems"]:
        mine = [v for (pid, _, _), v in expected.items() if pid == row["problem"]]
        assert row["n"] == len(mine) and row["accuracy"] == pytest.approx(mine.count("correct") / len(mine))
    assert q["verdicts"] == dict(Counter(expected.values())) | {}
    runs = [sum(v == "correct" for (_, _, s_), v in expected.items() if s_ == s) /
            sum(1 for (_, _, s_) in expected if s_ == s) for s in range(3)]
    assert q["runs"]["runs"] == pytest.approx(runs)
    acc = [row["accuracy"] for row in q["problems"]]
    assert q["headline"]["accuracy"] == pytest.approx(sum(acc) / len(acc))
    assert q["headline"]["accuracy_ci95"] is not None
    assert "value" in q["by_kind"] and "choice" in q["by_kind"]
    assert "gap" not in s  # one mode only


def test_qa_report_and_audit_show_the_answer_and_the_fields(catalog, tmp_path, capsys):
    answer, expected = _scripted_qa(catalog, 2)
    with FakeModelServer(answer) as srv:
        assert main(["eval", "--mode", "qa", "--qa-items", "2", "--problem", PIDS[0], "--model", "fake",
                     "--base-url", srv.base_url, "--api-key-env", "NONE", "--samples", "3", "--seed", "0",
                     "--runs-dir", str(tmp_path), "--name", "qa", "--quiet"]) == 0
    capsys.readouterr()
    assert main(["report", str(tmp_path / "qa")]) == 0
    out = capsys.readouterr().out
    assert "Q&A accuracy" in out and "Q&A per problem" in out
    assert main(["audit", str(tmp_path / "qa"), "--verdict", "wrong_answer", "--limit", "1"]) == 0
    out = capsys.readouterr().out
    if any(v == "wrong_answer" for v in expected.values()):
        assert "answer (JSON)" in out and "expected" in out and "reasoning" in out
    assert main(["audit", str(tmp_path / "qa"), "--group"]) == 0
    assert "failure signatures" in capsys.readouterr().out


def test_problems_without_qa_are_refused_in_qa_mode(pack_copy, tmp_path, capsys):
    toml = pack_copy / "sound" / "problem.toml"
    toml.write_text(toml.read_text().split("\n[qa]")[0] + "\n")  # the same problem, without Q&A items
    rc = main(["eval", "--mode", "qa", "--pack-path", str(pack_copy), "--pack", "tiny-pack",
               "--problem", "sound", "--samples", "1", "--runs-dir", str(tmp_path / "runs"), "--quiet"])
    assert rc == 2 and "no [qa] table" in capsys.readouterr().err


def test_qa_only_items_in_prompt_format(catalog):
    p, vs = _problem(catalog, "perf-core/f1-conv-layer-accounting")
    it = qa_items(p, vs.hidden, 1)[0]
    prompt = render_qa_prompt(p, it, vs.visible)
    assert re.search(r"## Examples.*## The instance.*## Answer format", prompt, re.S)
