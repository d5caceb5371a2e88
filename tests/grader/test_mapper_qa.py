"""Q&A mode of search problems: each item is one instance, the reply proposes one mapping in a
fenced JSON block, the host judges it with the problem's trusted evaluator and scores it against
the item's best known (docs/mapper.md). Item drawing, the reply parser on hostile replies, the
scores, the reward, and an `eval` from a completions file with its report, page, compare and
leaderboard figures (no sandbox: Q&A runs no code)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from rich.console import Console

from grader.cli import main
from grader.grading.extract import MAX_COMPLETION_CHARS
from grader.grading.qa import MAX_ANSWER_BYTES, grade_qa
from grader.grading.scoring import Verdict
from grader.packs import vectors
from grader.packs.problems import Catalog
from grader.packs.qa import QAItem, qa_items, render_qa_prompt
from grader.results.html_report import failing_samples, render_html
from grader.results.leaderboard import build_leaderboard, render_leaderboard, render_leaderboard_html, score_with_ci
from grader.results.render import pct, score, score_ci
from grader.results.runs import RunDir
from grader.results.summary import load_run, run_summary
from grader.reward import Rewarder

from mapper_cases import CLUSTER_ARCH as ARCH
from mapper_cases import CLUSTER_BEST as BEST_MAP
from mapper_cases import CLUSTER_GOOD as GOOD
from mapper_cases import CLUSTER_WORK as WORK
from mapper_cases import HOLDS

ENERGY = "perf-mapper/gemm-energy-mapper"
# the worked example of the M1 specs: the least energy 2136.2 pJ (BEST_MAP), GOOD 2145.2 pJ
BEST, GOOD_PJ = 2136.2, 2145.2
SMALL_GLB = json.loads(json.dumps(ARCH))
SMALL_GLB["levels"][2]["capacity_bytes"] = 40  # GOOD does not fit here (2 x 22 bytes)


def fenced(value: object, tag: str = "json") -> str:
    return f"```{tag}\n{value if isinstance(value, str) else json.dumps(value)}\n```\n"


@pytest.fixture(scope="module")
def problem():
    return Catalog().find(ENERGY)


def small_item(arch=ARCH) -> QAItem:
    """A hand-made mapping item on the small instance whose optimum is known (2136.2 pJ, BEST_MAP)."""
    p = Catalog().find(ENERGY)
    return QAItem(id="q0", kind="mapping", args=[WORK, arch, HOLDS], fields=tuple(p.data.outputs),
                  expected={"best": BEST, "proven": True, "mapping": json.dumps(BEST_MAP)})


# ------------------------------------------------------------------------------------------
# items
# ------------------------------------------------------------------------------------------

def test_items_are_deterministic_instances_never_hidden_and_their_best_is_never_shown(problem):
    vs = vectors.load(problem)
    a = qa_items(problem, vs.hidden, 3)
    assert [i.id for i in a] == ["q0", "q1", "q2"] and all(i.kind == "mapping" for i in a)
    assert qa_items(problem, vs.hidden, 3) == a  # from the cache
    # the cached items are the instances the Q&A seed draws, with the reference search's answers
    drawn = vectors.generate(problem, "qa", exclude=vectors.hidden_inputs(vs.hidden), count=3)
    assert [(i.id, i.args, i.expected) for i in a] == [(v.id, v.args, v.expected) for v in drawn]
    shown = {json.dumps(v.args, sort_keys=True) for v in vs.hidden + vs.visible}
    assert not any(json.dumps(i.args, sort_keys=True) in shown for i in a)
    assert len({json.dumps(i.args, sort_keys=True) for i in a}) == 3
    evaluate = problem.evaluator_fn
    for it in a:
        assert set(it.expected) == {"best", "proven", "mapping"} and it.expected["proven"] is True
        judged = evaluate(json.loads(it.expected["mapping"]), *it.args, max_bytes=16384)
        assert judged["valid"] and judged["objective"] == pytest.approx(it.expected["best"], rel=1e-12)
        prompt = render_qa_prompt(problem, it, vs.visible)
        assert problem.spec.strip()[:200] in prompt and "map_gemm(workload=" in prompt
        assert json.dumps(it.args[0], separators=(", ", ": ")) in prompt
        assert "holds=" in prompt and json.dumps(it.args[2], separators=(", ", ": ")) in prompt
        assert "```json" in prompt and "ONE mapping" in prompt and "at most 16384" in prompt
        assert it.expected["mapping"] not in prompt and f"{it.expected['best']:.10g}" not in prompt
        for v in vs.hidden:  # nor a hidden instance's best known
            assert f"{v.expected['best']:.10g}" not in prompt and v.expected["mapping"] not in prompt


def test_a_search_problem_refuses_choice_questions(problem):
    from pydantic import ValidationError

    from grader.packs.problems import ProblemFile

    raw = problem.data.model_dump(exclude_none=True)
    raw["qa"] = {"seed": 4104, "choices": [{"kind": "min", "keys": ["best", "proven"], "question": "Which output is least?"}]}
    with pytest.raises(ValidationError, match="qa.choices do not apply"):
        ProblemFile.model_validate(raw)


# ------------------------------------------------------------------------------------------
# the reply parser and the scores
# ------------------------------------------------------------------------------------------

def test_the_best_known_mapping_scores_one_and_is_correct(problem):
    g = grade_qa(problem, small_item(), "I cost them all.\n\n" + fenced(BEST_MAP))
    assert g.verdict is Verdict.CORRECT and g.passed and g.score == 1.0
    assert g.instances[0].objective == BEST and g.instances[0].at_best and not g.new_best


def test_a_worse_mapping_scores_best_over_objective_and_fails(problem):
    g = grade_qa(problem, small_item(), fenced(GOOD))
    assert g.verdict is Verdict.WRONG_ANSWER and not g.passed
    assert g.score == pytest.approx(BEST / GOOD_PJ) and g.instances[0].objective == pytest.approx(GOOD_PJ, rel=1e-12)
    assert g.reason.startswith("score 0.996: energy 2145.2") and json.loads(g.instances[0].mapping) == GOOD


def test_an_invalid_mapping_scores_zero_with_its_reason(problem):
    g = grade_qa(problem, small_item(SMALL_GLB), fenced(GOOD))
    assert g.verdict is Verdict.WRONG_ANSWER and g.score == 0.0
    assert g.instances[0].invalid == "invalid_mapping: capacity at GLB" and "invalid_mapping: capacity at GLB" in g.reason


@pytest.mark.parametrize("text,reason", [
    ("", "empty"),
    ("The best mapping unrolls K across the PEs.", "no fenced block"),
    ("```python\nprint(1)\n```", "no JSON block"),
    ('```json\n{"levels": [{"temporal": [["N", NaN]]}]}\n```', "no JSON block holds a valid object"),
    ('```json\n{"levels": [], "levels": [{"temporal": []}]}\n```', "no JSON block holds a valid object"),
    ("```json\n[1, 2]\n```", "holds a list"),
    ("```json\n" + '{"levels": [], "pad": "' + "x" * MAX_ANSWER_BYTES + '"}\n```', "no JSON block holds"),
    (fenced(BEST_MAP) + "x" * MAX_COMPLETION_CHARS, "longer than"),
])
def test_a_reply_without_a_readable_mapping_is_no_answer_scored_zero(problem, text, reason):
    g = grade_qa(problem, small_item(), text)
    assert g.verdict is Verdict.NO_ANSWER and not g.passed and g.score == 0.0
    assert reason in g.reason and g.instances[0].error.startswith("no_answer: ")


@pytest.mark.parametrize("value,reason", [
    ({"levels": "all"}, "invalid_mapping: schema"),
    ({"mapping": BEST_MAP}, "invalid_mapping: schema"),
    ({"levels": BEST_MAP["levels"][:3]}, "invalid_mapping: schema"),  # a level missing
    ({"levels": [*BEST_MAP["levels"][:1], {**BEST_MAP["levels"][1], "bypass": ["W"]}, *BEST_MAP["levels"][2:]]},
     "invalid_mapping: schema"),  # the grader applies the holds: a bypass key is refused
    ({"levels": [{"temporal": [["N", 2.0]]}, *BEST_MAP["levels"][1:]]}, "invalid_mapping: schema"),  # a float factor
    ({"levels": [{"temporal": [["N", True]]}, *BEST_MAP["levels"][1:]]}, "invalid_mapping: schema"),  # a bool
    ({"levels": [{"temporal": [["N", 3]]}, *BEST_MAP["levels"][1:]]}, "invalid_mapping: coverage"),
    ({**BEST_MAP, "name": "x" * 20000}, "invalid_mapping: schema"),  # over max_bytes as compact JSON
])
def test_a_wrong_mapping_is_invalid_scored_zero(problem, value, reason):
    g = grade_qa(problem, small_item(), fenced(value))
    assert g.verdict is Verdict.WRONG_ANSWER and g.score == 0.0
    assert g.instances[0].invalid.startswith(reason), g.instances[0].invalid


def test_the_last_json_block_counts(problem):
    item = small_item()
    assert grade_qa(problem, item, fenced(GOOD) + "On reflection:\n" + fenced(BEST_MAP)).score == 1.0
    assert grade_qa(problem, item, fenced(BEST_MAP) + "On reflection:\n" + fenced(GOOD)).score == \
        pytest.approx(BEST / GOOD_PJ)
    # reasoning in <think> is ignored, and an untagged fence holds JSON too
    assert grade_qa(problem, item, "<think>" + fenced(GOOD) + "</think>" + fenced(BEST_MAP, "")).score == 1.0


def test_the_reward_gives_the_score_with_partial_and_the_pass_without(problem):
    vs = vectors.load(problem)
    it = qa_items(problem, vs.hidden, 1)[0]
    best = fenced(it.expected["mapping"])
    outer = {"levels": [{"temporal": []}, {"temporal": []}, {"temporal": []},
                        {"temporal": [[k, n] for k, n in it.args[0]["dims"].items() if n > 1]}]}
    objective = problem.evaluator_fn(outer, *it.args, max_bytes=16384)["objective"]
    texts = [best, fenced(outer), "no idea"]
    with Rewarder() as r:
        dense = r.score(f"{ENERGY}:q0", texts, mode="qa", partial=True)
        binary = r.score(f"{ENERGY}:q0", texts, mode="qa", partial=False)
    assert dense.rewards == [1.0, pytest.approx(it.expected["best"] / objective), 0.0]
    assert 0 < dense.rewards[1] < 0.9
    assert binary.rewards == [1.0, 0.0, 0.0]
    assert dense.verdicts == ["correct", "wrong_answer", "no_answer"]


# ------------------------------------------------------------------------------------------
# eval from a completions file, and the figures everywhere
# ------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Two Q&A runs on the energy problem's first three items, two samples each. ``a``: sample 0
    the best known mapping of each item, sample 1 every loop at DRAM; ``b``: sample 0 every loop at
    DRAM on q0 and no answer elsewhere, sample 1 the best known."""
    p = Catalog().find(ENERGY)
    items = qa_items(p, vectors.load(p).hidden, 3)

    def outer(it: QAItem) -> str:
        return fenced({"levels": [{"temporal": []}, {"temporal": []}, {"temporal": []},
                                  {"temporal": [[k, n] for k, n in it.args[0]["dims"].items() if n > 1]}]})

    best = {it.id: fenced(it.expected["mapping"]) for it in items}
    texts = {"a": {(it.id, 0): best[it.id] for it in items} | {(it.id, 1): outer(it) for it in items},
             "b": {(it.id, 0): outer(it) if it.id == "q0" else "I could not decide." for it in items}
             | {(it.id, 1): best[it.id] for it in items}}
    base = tmp_path_factory.mktemp("mapper-qa")
    out = {}
    for name, by_key in texts.items():
        f = base / f"{name}.jsonl"
        f.write_text("".join(json.dumps({"problem": ENERGY, "mode": "qa", "item": i, "sample": s, "text": t}) + "\n"
                             for (i, s), t in sorted(by_key.items())))
        assert main(["eval", "--quiet", "--completions", str(f), "--qa-items", "3", "--k", "1",
                     "--runs-dir", str(base / "runs"), "--name", name]) == 0
        out[name] = base / "runs" / name
    return out


@pytest.fixture(scope="module")
def summaries(runs):
    return {name: run_summary(load_run(path)) for name, path in runs.items()}


def journal(path: Path) -> dict[tuple[str, int], dict]:
    return {(r["item"], r["sample"]): r["grade"] for r in RunDir.open(path).journal.records()
            if r["type"] == "grade" and r["mode"] == "qa"}


def test_eval_grades_each_reply_as_a_score(runs):
    a, b = journal(runs["a"]), journal(runs["b"])
    assert len(a) == len(b) == 6
    assert all(a[(i, 0)]["verdict"] == "correct" and a[(i, 0)]["score"] == 1.0 for i in ("q0", "q1", "q2"))
    assert all(a[(i, 1)]["verdict"] == "wrong_answer" and 0 < a[(i, 1)]["score"] < 1 for i in ("q0", "q1", "q2"))
    assert b[("q0", 0)]["score"] == a[("q0", 1)]["score"]
    assert b[("q1", 0)]["verdict"] == "no_answer" and b[("q1", 0)]["score"] == 0.0
    m = RunDir.open(runs["a"]).manifest
    assert m.modes == ["qa"] and m.problems[0].qa_items == ["q0", "q1", "q2"] and m.pack["perf-mapper"]["tier"] == "search"


def test_report_gives_the_q_and_a_scores(runs, summaries, capsys):
    a = journal(runs["a"])
    q = summaries["a"]["qa"]["search"]
    scores = [a[(i, s)]["score"] for s in (0, 1) for i in ("q0", "q1", "q2")]
    row = q["problems"][0]
    assert row["problem"] == ENERGY and row["n"] == 6
    assert row["score"] == pytest.approx(sum(scores) / 6) == q["headline"]["score"]
    assert row["at_best"] == pytest.approx(0.5) and row["pass@1"] == pytest.approx(0.5)
    assert sorted(row["scores"]) == pytest.approx(sorted(scores))
    assert q["runs"]["runs"] == pytest.approx([1.0, sum(scores[3:]) / 3])  # run i = sample i of every item
    assert summaries["a"]["qa"]["by_kind"] == {"mapping": {"items": 6, "accuracy": 0.5}}
    assert "search" not in summaries["a"]  # no code mode: code's score section stays away
    assert main(["report", str(runs["a"])]) == 0
    out = capsys.readouterr().out
    assert "Q&A search problems: score against the best known" in out and score(q["headline"]["score"]) in out
    assert main(["report", str(runs["a"]), "--json", "-"]) == 0
    assert json.loads(capsys.readouterr().out)["qa"]["search"]["headline"] == q["headline"]


def test_audit_shows_a_q_and_a_mapping_beside_the_best_known(runs, capsys):
    p = Catalog().find(ENERGY)
    q0 = qa_items(p, vectors.load(p).hidden, 1)[0]
    assert main(["audit", str(runs["a"])]) == 0
    out = capsys.readouterr().out
    assert "q0 #1" in out and "returned mapping on q0" in out and "below the best known" in out
    assert "best known mapping on q0:" in out and json.dumps(json.loads(q0.expected["mapping"]),
                                                             separators=(",", ":")) in out.replace("\n", "")


def test_the_run_page_has_a_q_and_a_scores_section(runs, summaries):
    s = summaries["a"]
    page = render_html(s, failing_samples(runs["a"]))
    assert 'href="#qa-scores"' in page and 'id="scores"' not in page
    sec = page[page.index('<section id="qa-scores"'):]
    sec = sec[: sec.index("</section>")]
    h = s["qa"]["search"]["headline"]
    assert f'id="qa-search-score">{score(h["score"])}<' in sec and score_ci(h["score_ci95"]) in sec
    assert f'id="qa-search-at-best">{pct(h["at_best"])}<' in sec
    assert 'id="qa-search-problems"' in sec and "one mapping" in sec


def test_compare_pairs_the_q_and_a_scores(runs, capsys):
    a, b = journal(runs["a"]), journal(runs["b"])
    assert main(["compare", str(runs["a"]), str(runs["b"]), "--json"]) == 0
    c = json.loads(capsys.readouterr().out)
    assert c["mode"] == "qa"
    q = c["search"]
    assert q["shared_problems"] == 1 and q["shared_samples"] == 6
    mean = lambda j: sum(g["score"] for g in j.values()) / len(j)  # noqa: E731
    assert q["a"] == pytest.approx(mean(a)) and q["b"] == pytest.approx(mean(b))
    assert q["diff"] == pytest.approx(mean(b) - mean(a)) and q["diff"] < 0
    assert main(["compare", str(runs["a"]), str(runs["b"])]) == 0
    out = capsys.readouterr().out
    assert "Q&A search score per problem" in out and f"B - A = {q['diff']:+.3f}" in out


def test_the_leaderboard_has_a_q_and_a_score_column(summaries):
    board = build_leaderboard([summaries["a"], summaries["b"]])
    by = {r["run"]: r for r in board["runs"]}
    for n in ("a", "b"):
        h = summaries[n]["qa"]["search"]["headline"]
        assert by[n]["qa_search"]["score"] == h["score"] and by[n]["qa_search"]["ci95"] == h["score_ci95"]
        assert by[n]["search"] is None
    buf = io.StringIO()
    render_leaderboard(board, con=Console(file=buf, width=220), err=Console(file=io.StringIO()))
    out = buf.getvalue()
    assert "Q&A search score" in out
    assert all(score_with_ci(by[n]["qa_search"]["score"], by[n]["qa_search"]["ci95"]) in out for n in ("a", "b"))
    page = render_leaderboard_html(board)
    tr = page[page.index('<tr data-run="a"'):]
    tr = tr[: tr.index("</tr>")]
    assert f'>{score(by["a"]["qa_search"]["score"])}</span>' in tr


CONSTANT = '''
def map_gemm(workload, architecture, holds):
    d = workload["dims"]
    return {"levels": [{"temporal": []}, {"temporal": []}, {"temporal": []},
                       {"temporal": [[k, d[k]] for k in ("M", "N", "K") if d[k] > 1]}]}
'''


@pytest.mark.docker
def test_both_modes_give_a_search_problem_a_score_gap(tmp_path, capsys):
    """Code mode (every loop at DRAM, graded in the sandbox) and Q&A mode (the best known mapping of
    each item): the mode gap of a search problem is its Q&A score minus its code score."""
    p = Catalog().find(ENERGY)
    items = qa_items(p, vectors.load(p).hidden, 2)
    recs = [{"problem": ENERGY, "sample": s, "text": f"```python\n{CONSTANT}```\n"} for s in (0, 1)]
    recs += [{"problem": ENERGY, "mode": "qa", "item": it.id, "sample": s, "text": fenced(it.expected["mapping"])}
             for it in items for s in (0, 1)]
    f = tmp_path / "both.jsonl"
    f.write_text("".join(json.dumps(r) + "\n" for r in recs))
    assert main(["eval", "--quiet", "--completions", str(f), "--qa-items", "2", "--k", "1",
                 "--runs-dir", str(tmp_path / "runs"), "--name", "both"]) == 0
    run = tmp_path / "runs" / "both"
    s = run_summary(load_run(run))
    code = s["search"]["problems"][0]["score"]
    assert 0 < code < 1 and s["qa"]["search"]["problems"][0]["score"] == 1.0
    g = s["gap"]["search"]
    assert g["problems"] == 1 and g["gap"] == pytest.approx(1.0 - code)
    assert g["rows"] == [{"problem": ENERGY, "qa": 1.0, "code": code, "gap": pytest.approx(1.0 - code)}]
    assert s["gap"]["problems"] == 0  # a search problem leaves the pass-rate gap
    page = render_html(s, failing_samples(run))
    assert 'id="scores"' in page and 'id="qa-scores"' in page
    assert f'id="gap-search-value">{1.0 - code:+.3f}<' in page
    assert main(["report", str(run)]) == 0
    out = capsys.readouterr().out
    assert f"Q&A score 1.000 - code score {code:.3f} = {1.0 - code:+.3f}" in out
