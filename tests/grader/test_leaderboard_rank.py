"""How the leaderboard orders its runs (pure: summaries built by hand, no grading)."""
from __future__ import annotations

import io

from rich.console import Console

from grader.results.leaderboard import board_view, build_leaderboard, render_leaderboard, render_leaderboard_html


def summary(name: str, pass1: float | None, score: float | None = None, *, problems: int = 2,
            search_problems: int = 2, qa: float | None = None) -> dict:
    modes = (["code"] if pass1 is not None else []) + (["qa"] if qa is not None else [])
    s: dict = {"run": {"id": name, "model": name, "modes": modes, "instance_seed": None}, "modes": modes}
    if pass1 is not None:
        s["headline"] = {"pass@1": pass1, "problems": problems}
    if score is not None:
        s["search"] = {"headline": {"score": score, "problems": search_problems}}
    if qa is not None:
        s["qa"] = {"headline": {"accuracy": qa, "problems": problems}}
    return s


def order(board: dict) -> list[str]:
    return [r["run"] for r in board["runs"]]


def test_search_only_boards_rank_by_the_mean_score_then_pass_at_1():
    board = build_leaderboard([summary("close", 0.0, 0.9), summary("lucky", 0.5, 0.4),
                               summary("best", 0.0, 0.95), summary("tie", 0.5, 0.6)])
    assert board["ranked_by"] == "search score"
    assert order(board) == ["best", "close", "tie", "lucky"]
    assert [r["rank"] for r in board["runs"]] == [1, 2, 3, 4]
    buf = io.StringIO()
    render_leaderboard(board, con=Console(file=buf, width=200), err=Console(file=io.StringIO()))
    assert "ranked by the mean search score" in buf.getvalue()
    assert board_view(board)["by_score"] is True
    assert "Ordered by the mean search score" in render_leaderboard_html(board)


def test_mixed_boards_rank_by_pass_at_1_and_break_ties_by_the_score():
    # three problems, two of them search problems: pass@1 decides, the score only breaks its ties
    board = build_leaderboard([summary("low", 0.0, 0.99, problems=3), summary("mid", 0.5, 0.2, problems=3),
                               summary("mid-better", 0.5, 0.7, problems=3), summary("plain", 0.4, None, problems=3)])
    assert board["ranked_by"] == "pass@1"
    assert order(board) == ["mid-better", "mid", "plain", "low"]
    buf = io.StringIO()
    render_leaderboard(board, con=Console(file=buf, width=200), err=Console(file=io.StringIO()))
    assert "ranked by" not in buf.getvalue()
    assert board_view(board)["by_score"] is False
    assert "Ordered by code pass@1 (ties by the search score)" in render_leaderboard_html(board)


def test_one_pass_fail_run_keeps_a_board_ranked_by_pass_at_1():
    board = build_leaderboard([summary("search", 0.0, 0.9), summary("plain", 0.3, None, problems=2)])
    assert board["ranked_by"] == "pass@1" and order(board) == ["plain", "search"]


def test_q_and_a_only_runs_come_after_code_runs_by_accuracy():
    board = build_leaderboard([summary("qa-low", None, qa=0.2), summary("code", 0.1, 0.5),
                               summary("qa-high", None, qa=0.8)])
    assert order(board) == ["code", "qa-high", "qa-low"]
