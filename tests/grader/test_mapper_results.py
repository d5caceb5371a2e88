"""Search problems' scores wherever results are shown: the report (terminal and JSON) by family and
tier, the run page, the leaderboard and `compare` (two runs, and two rounds of one run), on real
runs: the pack's bundled solution, a variant and plain mappers graded through the real sandbox on
the pack's real hidden instances, beside a pass/fail problem."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import numpy as np
import pytest
from rich.console import Console

from grader.cli import main
from grader.packs.problems import Catalog
from grader.results.html_report import failing_samples, render_html
from grader.results.leaderboard import build_leaderboard, render_leaderboard_html
from grader.results.render import pct, score, score_ci
from grader.results.runs import RunDir
from grader.results.summary import load_run, run_summary

pytestmark = [pytest.mark.docker, pytest.mark.slow]

ENERGY = "perf-mapper/gemm-energy-mapper"
EDP = "perf-mapper/gemm-edp-mapper"
PLAIN = "perf-core/f1-conv-layer-accounting"

CONSTANT = '''
def {entry}(workload, architecture, holds):
    d = workload["dims"]
    return {{"levels": [{{"temporal": []}}, {{"temporal": []}}, {{"temporal": []}},
                        {{"temporal": [[k, d[k]] for k in ("M", "N", "K") if d[k] > 1]}}]}}
'''


def fenced(code: str) -> str:
    return f"My answer:\n\n```python\n{code}```\n"


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """{name: run directory}. ``a``: the two search problems in two rounds (energy: the solution,
    a wrong-on-purpose variant, every loop at DRAM; EDP: every loop at DRAM, no code, the variant;
    round 1 answers the failing samples with every loop at DRAM). ``b``: the same problems (energy:
    every loop at DRAM, the variant, DRAM; EDP: DRAM, DRAM, no code) and a pass/fail problem
    solved by its reference solution. ``c``: the pass/fail problem alone."""
    cat = Catalog()
    energy, edp, plain = cat.find(ENERGY), cat.find(EDP), cat.find(PLAIN)
    variant = {p.qualified_id: next(v for v in p.variants if v.name == "single_buffered").source
               for p in (energy, edp)}  # its GLB tiles overflow on some hidden instances
    const = {p.qualified_id: CONSTANT.format(entry=p.entry_point) for p in (energy, edp)}
    none = "no code here"
    a = {ENERGY: [energy.solution_source, variant[ENERGY], const[ENERGY]],
         EDP: [const[EDP], none, variant[EDP]]}
    b = {ENERGY: [const[ENERGY], variant[ENERGY], const[ENERGY]], EDP: [const[EDP], const[EDP], none],
         PLAIN: [plain.solution_source] * 3}
    base = tmp_path_factory.mktemp("mapper-results")

    def lines(answers: dict[str, list[str]], round_: int = 0) -> list[dict]:
        return [{"problem": pid, "sample": s, "round": round_, "text": t if t == none else fenced(t)}
                for pid, texts in answers.items() for s, t in enumerate(texts)]

    revised = {ENERGY: [None, const[ENERGY], const[ENERGY]], EDP: [const[EDP], const[EDP], const[EDP]]}
    files = {"a": lines(a) + [x for x in lines({k: [t or "" for t in v] for k, v in revised.items()}, 1) if x["text"]],
             "b": lines(b), "c": lines({PLAIN: [plain.solution_source] * 3})}
    for name, recs in files.items():
        f = base / f"{name}.jsonl"
        f.write_text("".join(json.dumps(r) + "\n" for r in recs))
        extra = ["--rounds", "2"] if name == "a" else []
        assert main(["eval", "--quiet", "--completions", str(f), "--samples", "3", "--k", "1",
                     "--runs-dir", str(base / "runs"), "--name", name, *extra]) == 0, name
    return {name: base / "runs" / name for name in files}


@pytest.fixture(scope="module")
def summaries(runs):
    return {name: run_summary(load_run(path)) for name, path in runs.items()}


def journal_scores(path: Path, round_: int = 0) -> dict[str, dict[int, float]]:
    """Each search problem's round-``round_`` scores by sample, read from the journal (0 without a score)."""
    out: dict[str, dict[int, float]] = {}
    for r in RunDir.open(path).journal.records():
        if r["type"] == "grade" and r.get("round", 0) == round_ and not r.get("regrade") \
                and r["problem"].startswith("perf-mapper/"):
            out.setdefault(r["problem"], {})[r["sample"]] = r["grade"].get("score") or 0.0
    return out


def by_sample(scores: dict[int, float]) -> list[float]:
    return [scores[s] for s in sorted(scores)]


def test_report_gives_scores_per_problem_family_and_tier(runs, summaries, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")  # the tables' rows on one line each
    s = summaries["a"]["search"]
    got = {pid: by_sample(v) for pid, v in journal_scores(runs["a"]).items()}
    rows = {p["problem"]: p for p in s["problems"]}
    assert set(rows) == {ENERGY, EDP}
    for pid, scores in got.items():
        assert rows[pid]["scores"] == pytest.approx(scores) and rows[pid]["score"] == pytest.approx(np.mean(scores))
        assert rows[pid]["std"] == pytest.approx(np.std(scores, ddof=1))
    assert rows[ENERGY]["scores"][0] == 1.0 and rows[ENERGY]["at_best"] >= 1 / 3  # the solution: every instance
    assert 0 < rows[ENERGY]["scores"][1] < 0.95 and rows[EDP]["scores"][1] == 0.0  # the variant; no code
    fam = s["by_family"]["M1"]
    assert fam["problems"] == 2 and fam["score"] == pytest.approx(s["headline"]["score"])
    per_run = [np.mean([got[ENERGY][i], got[EDP][i]]) for i in range(3)]
    assert fam["spread"]["runs"] == pytest.approx(per_run) and s["runs"]["runs"] == pytest.approx(per_run)
    assert s["by_tier"]["search"]["score"] == pytest.approx(fam["score"])
    # the terminal report prints them
    capsys.readouterr()
    assert main(["report", str(runs["a"])]) == 0
    out = capsys.readouterr().out
    assert "search by family" in out
    line = next(ln for ln in out.splitlines() if re.match(r"\W*M1\W", ln) and score(fam["score"]) in ln)
    assert score_ci(fam["score_ci95"]) in line if fam["score_ci95"] else True
    assert score(fam["spread"]["std"]) in line
    # and --json carries them
    assert main(["report", str(runs["a"]), "--json", "-"]) == 0
    assert json.loads(capsys.readouterr().out)["search"] == json.loads(json.dumps(s))


def test_a_mixed_run_scores_its_search_problems_and_passes_the_rest(summaries, capsys):
    b = summaries["b"]
    assert {p["problem"] for p in b["search"]["problems"]} == {ENERGY, EDP}
    assert {p["problem"] for p in b["problems"]} == {ENERGY, EDP, PLAIN}
    assert next(p for p in b["problems"] if p["problem"] == PLAIN)["pass@1"] == 1.0
    assert set(b["search"]["by_tier"]) == {"search"} and set(b["search"]["by_family"]) == {"M1"}
    assert "search" not in summaries["c"]


def page_of(runs, summaries, name: str) -> str:
    return render_html(summaries[name], failing_samples(runs[name]))


def section(page: str, sec: str) -> str:
    start = page.index(f'<section id="{sec}"')
    return page[start: page.index("</section>", start)]


def test_run_page_scores_section_equals_the_summary(runs, summaries):
    page = page_of(runs, summaries, "a")
    s = summaries["a"]["search"]
    sec = section(page, "scores")
    assert 'href="#scores"' in page
    h = s["headline"]
    assert f'id="search-score">{score(h["score"])}<' in sec and score_ci(h["score_ci95"]) in sec
    assert f'id="search-at-best">{pct(h["at_best"])}<' in sec
    assert f'id="search-run-std">{score(s["runs"]["std"])}<' in sec
    fam = s["by_family"]["M1"]
    tr = sec[sec.index('<tr data-group="M1"'):]
    tr = tr[: tr.index("</tr>")]
    assert score(fam["score"]) in tr and pct(fam["at_best"]) in tr and score(fam["spread"]["std"]) in tr
    assert tr.count('<circle class="dot"') == len(fam["spread"]["runs"])  # each run a dot
    table = sec[sec.index('id="search-problems"'):]
    assert re.findall(r'<tr data-problem="([^"]+)"', table) == [p["problem"] for p in s["problems"]]
    for p in s["problems"]:
        tr = table[table.index(f'<tr data-problem="{p["problem"]}"'):]
        tr = tr[: tr.index("</tr>")]
        assert f'>{score(p["score"])}</td>' in tr and score_ci(p["score_ci95"]) in tr and pct(p["at_best"]) in tr
        strip = tr[tr.index('<svg class="strip"'):]
        strip = strip[: strip.index("</svg>")]
        assert strip.count('<circle class="dot"') == p["n"]  # every sample's score
        assert ", ".join(score(v) for v in p["scores"]) in strip
        hist = tr[tr.index('<svg class="hist"'):]
        hist = hist[: hist.index("</svg>")]
        assert hist.count("<rect") == len({min(9, int(v * 10)) for v in p["scores"]})  # one bar per filled bin
    # a run without search problems has no scores section
    plain = page_of(runs, summaries, "c")
    assert 'id="scores"' not in plain and 'href="#scores"' not in plain and "search" not in summaries["c"]


def test_leaderboard_has_a_score_column_for_runs_with_search_problems(summaries):
    b = build_leaderboard([summaries[n] for n in ("a", "b", "c")])
    by = {r["run"]: r for r in b["runs"]}
    for n in ("a", "b"):
        h = summaries[n]["search"]["headline"]
        assert by[n]["search"]["score"] == h["score"] and by[n]["search"]["ci95"] == h["score_ci95"]
        assert by[n]["search"]["at_best"] == h["at_best"]
    assert by["c"]["search"] is None and by["c"]["code"]["pass@1"] == 1.0
    from grader.results.leaderboard import render_leaderboard, score_with_ci

    def terminal(board) -> str:  # a wide console: the table's cells on one line each
        buf = io.StringIO()
        render_leaderboard(board, con=Console(file=buf, width=200), err=Console(file=io.StringIO()))
        return buf.getvalue()

    out = terminal(b)
    assert "search score" in out
    for n in ("a", "b"):
        assert score_with_ci(by[n]["search"]["score"], by[n]["search"]["ci95"]) in out
    page = render_leaderboard_html(b)
    assert "search score" in page
    for n in ("a", "b"):
        tr = page[page.index(f'<tr data-run="{n}"'):]
        tr = tr[: tr.index("</tr>")]
        assert f'>{score(by[n]["search"]["score"])}</span>' in tr
        assert score_ci(by[n]["search"]["ci95"]) in tr
    # a board without search problems has no such column
    plain = build_leaderboard([summaries["c"]])
    assert "search score" not in terminal(plain) and "code pass@1" in terminal(plain)
    assert "search score" not in render_leaderboard_html(plain)


def test_compare_pairs_the_scores_of_two_runs(runs, capsys):
    a = {pid: by_sample(v) for pid, v in journal_scores(runs["a"]).items()}
    b = {pid: by_sample(v) for pid, v in journal_scores(runs["b"]).items()}
    assert main(["compare", str(runs["a"]), str(runs["b"]), "--json"]) == 0
    c = json.loads(capsys.readouterr().out)
    q = c["search"]
    assert c["shared_problems"] == 2 and q["shared_problems"] == 2 and q["shared_samples"] == 6
    rows = {r["problem"]: r for r in q["problems"]}
    for pid in (ENERGY, EDP):
        assert rows[pid]["a"] == pytest.approx(np.mean(a[pid])) and rows[pid]["b"] == pytest.approx(np.mean(b[pid]))
    diffs = [rows[p]["diff"] for p in (ENERGY, EDP)]
    assert q["diff"] == pytest.approx(np.mean(diffs)) and rows[ENERGY]["diff"] < 0  # B lost the solution's 1.0
    lo, hi = q["diff_ci95"]
    assert min(diffs) <= lo <= q["diff"] <= hi <= max(diffs)
    assert main(["compare", str(runs["a"]), str(runs["b"])]) == 0
    out = capsys.readouterr().out
    assert f"B - A = {q['diff']:+.3f}" in out and "search score per problem" in out
    # runs without search problems compare as before
    assert main(["compare", str(runs["c"]), str(runs["b"]), "--json"]) == 0
    assert "search" not in json.loads(capsys.readouterr().out)


def test_compare_pairs_the_scores_of_two_rounds(runs, capsys):
    r0, r1 = journal_scores(runs["a"], 0), journal_scores(runs["a"], 1)
    assert set(r1[ENERGY]) == {1, 2} and set(r1[EDP]) == {0, 1, 2}  # the failing samples were revised
    assert main(["compare", str(runs["a"]), "--round-a", "0", "--round-b", "1", "--json"]) == 0
    q = json.loads(capsys.readouterr().out)["search"]
    rows = {r["problem"]: r for r in q["problems"]}
    for pid in (ENERGY, EDP):
        after = [r1[pid].get(i, r0[pid][i]) for i in range(3)]  # a sample not revised keeps its round-0 score
        assert rows[pid]["a"] == pytest.approx(np.mean(by_sample(r0[pid])))
        assert rows[pid]["b"] == pytest.approx(np.mean(after))
    assert q["diff"] == pytest.approx(np.mean([rows[p]["diff"] for p in (ENERGY, EDP)]))
    assert rows[ENERGY]["diff"] != 0 or rows[EDP]["diff"] != 0


def test_revision_rounds_give_the_search_score_and_its_change(runs, summaries, capsys):
    """Each revision round's state gives the search problems' mean score; its change from round 0
    is the one `compare --round-a 0 --round-b 1` pairs; the terminal and the page show both."""
    from grader.results.html_report import render_html

    rounds = summaries["a"]["revision"]["code"]["rounds"]
    r0, r1 = journal_scores(runs["a"], 0), journal_scores(runs["a"], 1)
    first = np.mean([np.mean(by_sample(r0[p])) for p in (ENERGY, EDP)])
    last = np.mean([np.mean([r1[p].get(i, r0[p][i]) for i in range(3)]) for p in (ENERGY, EDP)])
    assert rounds[0]["search"]["score"] == pytest.approx(first) == summaries["a"]["search"]["headline"]["score"]
    assert rounds[0]["search"]["change"] == 0.0 and rounds[0]["search"]["change_ci95"] is None
    assert rounds[1]["search"]["score"] == pytest.approx(last)
    assert rounds[1]["search"]["change"] == pytest.approx(last - first)
    assert main(["compare", str(runs["a"]), "--round-a", "0", "--round-b", "1", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["search"]["diff"] == pytest.approx(rounds[1]["search"]["change"])
    assert main(["report", str(runs["a"])]) == 0
    out = capsys.readouterr().out
    assert "self-revision, search problems (code mode)" in out
    assert re.search(rf"\b1\s+{score(last)}\b.*{rounds[1]['search']['change']:+.3f}", out)
    page = render_html(summaries["a"], [])
    table = page[page.index('<table class="data revision-search">'):]
    table = table[: table.index("</table>")]
    assert f'<tr data-round="1"><th scope="row">round 1</th><td class="num strong">{score(last)}</td>' in table


@pytest.mark.browser
def test_pages_with_scores_render_cleanly_in_chromium(runs, summaries, tmp_path):
    from test_html_report import assert_rendered_cleanly, dump_dom, write

    page = write(tmp_path, page_of(runs, summaries, "a"), "a.html")
    board = write(tmp_path, render_leaderboard_html(build_leaderboard([summaries[n] for n in ("a", "b", "c")])),
                  "board.html")
    for p in (page, board):
        dom = dump_dom(p)
        assert_rendered_cleanly(dom)
    dom = dump_dom(page)
    assert 'id="search-problems"' in dom and '<svg class="hist"' in dom


def test_the_terminal_prints_both_mode_gaps_in_their_own_units():
    """The pass-rate gap is in percentage points, the search gap in score units; one printer serves both."""
    from grader.results.render import _render_gap

    gap = {"gap": -0.25, "gap_ci95": [-0.5, 0.0], "problems": 3, "qa_accuracy": 0.5, "code_pass@1": 0.75,
           "qa_wins": ["a"], "code_wins": ["b", "c"], "ties": [],
           "rows": [{"problem": "perf-core/a", "qa": 1.0, "code": 0.5, "gap": 0.5}],
           "search": {"gap": 0.125, "gap_ci95": None, "problems": 1, "qa_score": 0.625, "code_score": 0.5,
                      "qa_wins": ["m"], "code_wins": [], "ties": [],
                      "rows": [{"problem": "perf-mapper/m", "qa": 0.625, "code": 0.5, "gap": 0.125}]}}
    buf = io.StringIO()
    _render_gap(Console(file=buf, width=220, color_system=None), gap, True)
    out = buf.getvalue()
    assert ("reasoning vs code: Q&A accuracy 50.0% - code pass@1 75.0% = -25.0 points (95% paired bootstrap CI "
            "over 3 problems [-50.0, +0.0]); Q&A better on 1, code better on 2, tied on 0") in out
    assert ("reasoning vs code, search problems: Q&A score 0.625 - code score 0.500 = +0.125; "
            "Q&A better on 1, code better on 0, tied on 0") in out
    assert re.search(r"\ba\s+100\.0%\s+50\.0%\s+\+50\.0\b", out)
    assert re.search(r"\bm\s+0\.625\s+0\.500\s+\+0\.125\b", out)
