"""Several runs side by side: a leaderboard (one row per run and model) and a family-by-model heat map.

Built from run summaries alone (the dicts of :func:`grader.results.summary.run_summary`), so it
needs nothing but the run directories. Each row carries the run's code pass@1 with its CI, its Q&A
accuracy with its CI and the reasoning-vs-code gap with its CI (``None`` where the run lacks the
mode), the mean score of its search problems with its CI (``None`` for a run without them),
the run-to-run spread and, for revised runs, the change over the revision rounds. Rows are
ordered by code pass@1, then runs without code mode by Q&A accuracy. The heat map has a row per
family (and per tier) and a column per run: code pass@1, or Q&A accuracy for a Q&A-only run; a
second map holds the Q&A accuracy of every run that has it. Warnings say when the runs used
different pack contents (the same pack name with different content hashes) or are incomplete;
notes say when they cover different problems or packs. The board prints as a terminal table
(:func:`render_leaderboard`) or as a page, the template ``templates/leaderboard.html`` filled with
:func:`board_view`'s plain data.

A board never mixes instance seeds: runs drawn from different seeds (the release's and a private
one, or two private ones) answered different questions, so :func:`build_leaderboard` refuses
them with a :class:`~grader.errors.ConfigError` naming each seed's runs; report each seed's runs
on a board of their own.
"""

from __future__ import annotations

from typing import Any

from ..errors import ConfigError
from ..packs.vectors import seed_label, seed_words
from .html_report import packs, spread
from .pages import render_page
from .render import ci_text, pct, points
from .stats import natural_key


def _label(s: dict[str, Any]) -> str:
    run = s.get("run") or {}
    return f"{run.get('model', '?')} ({run.get('id', '?')})"


def _problem_ids(s: dict[str, Any]) -> set[str]:
    ids = {str(p.get("problem")) for p in s.get("problems") or []}
    ids |= {str(p.get("problem")) for p in (s.get("qa") or {}).get("problems") or []}
    return ids


def _row(i: int, s: dict[str, Any]) -> dict[str, Any]:
    run = s.get("run") or {}
    modes = list(s.get("modes") or run.get("modes") or ["code"])
    code = qa = gap = None
    if "code" in modes:
        h = s.get("headline") or {}
        code = {"pass@1": h.get("pass@1"), "ci95": h.get("pass@1_ci95"), "problems": h.get("problems"),
                "runs": s.get("runs") or {}}
    if "qa" in modes and s.get("qa"):
        qh = s["qa"].get("headline") or {}
        qa = {"accuracy": qh.get("accuracy"), "ci95": qh.get("accuracy_ci95"), "problems": qh.get("problems"),
              "runs": s["qa"].get("runs") or {}}
    search = None
    if s.get("search"):
        sh = s["search"].get("headline") or {}
        search = {"score": sh.get("score"), "ci95": sh.get("score_ci95"), "problems": sh.get("problems"),
                  "at_best": sh.get("at_best"), "runs": s["search"].get("runs") or {}}
    qa_search = None
    qs = (s.get("qa") or {}).get("search") if "qa" in modes else None
    if qs:  # search problems' Q&A items: one mapping per reply, scored like code mode's
        qsh = qs.get("headline") or {}
        qa_search = {"score": qsh.get("score"), "ci95": qsh.get("score_ci95"), "problems": qsh.get("problems"),
                     "at_best": qsh.get("at_best"), "runs": qs.get("runs") or {}}
    if s.get("gap"):
        g = s["gap"]
        gap = {"gap": g.get("gap"), "ci95": g.get("gap_ci95"), "problems": g.get("problems"),
               "qa_wins": len(g.get("qa_wins") or []), "code_wins": len(g.get("code_wins") or []),
               "ties": len(g.get("ties") or [])}
    revision = {mode: {"rounds": len(rev.get("rounds") or []), "final_change": rev.get("final_change"),
                       "final_change_ci95": rev.get("final_change_ci95"), "overall": rev.get("overall")}
                for mode, rev in (s.get("revision") or {}).items() if rev}
    cost = (run.get("cost_usd") or {}).get("total") or {}
    return {
        "index": i, "run": run.get("id"), "model": run.get("model"), "source": run.get("source"),
        "path": run.get("path"), "created": run.get("created"), "modes": modes,
        "problems": run.get("problems"), "samples": run.get("samples_per_problem"),
        "rounds": run.get("rounds") or 1, "feedback": run.get("feedback"), "pack": run.get("pack") or {},
        "grader_version": run.get("grader_version"), "complete": run.get("complete", True),
        "ungraded": run.get("ungraded") or 0, "notice": run.get("notice"),
        "instance_seed": run.get("instance_seed"),
        "code": code, "qa": qa, "gap": gap, "search": search, "qa_search": qa_search, "revision": revision,
        "cost": {"usd": cost.get("usd") or 0.0,
                 "tokens": (cost.get("prompt_tokens") or 0) + (cost.get("completion_tokens") or 0),
                 "calls": cost.get("calls") or 0},
    }


def _search_only(row: dict[str, Any]) -> bool:
    """Every code-mode problem of the run is a search problem (scored against the best known)."""
    code, search = row["code"], row["search"]
    return bool(code and search and search.get("problems") and search["problems"] == code.get("problems"))


def _rank_key(row: dict[str, Any], by_score: bool) -> tuple:
    """Code runs first, by pass@1 (by the mean search score when every run on the board is search
    problems only: pass@1 then breaks ties), then the search score and the Q&A accuracy; Q&A-only runs
    after them, by accuracy, ties broken by the Q&A search score."""
    def neg(v: float | None) -> tuple[bool, float]:
        return (v is None, -(v or 0.0))

    if row["code"] is not None:
        passed, scored = row["code"]["pass@1"], (row["search"] or {}).get("score")
        first, then = (scored, passed) if by_score else (passed, scored)
        return (0, *neg(first), *neg(then), *neg((row["qa"] or {}).get("accuracy")), row["index"])
    return (1, *neg((row["qa"] or {}).get("accuracy")), *neg((row["qa_search"] or {}).get("score")),
            False, 0.0, row["index"])


def _cell(group: dict[str, Any] | None) -> dict[str, Any] | None:
    if not group or group.get("pass@1") is None:
        return None
    return {"value": group["pass@1"], "problems": group.get("problems")}


def _heat(summaries: list[dict[str, Any]], which: str, key: str) -> dict[str, list]:
    """{group name: [cell per column]} for by_family or by_tier; which: primary or qa."""
    cols = []
    for s in summaries:
        modes = s.get("modes") or ["code"]
        if which == "qa":
            cols.append((s.get("qa") or {}).get(key) or {} if "qa" in modes else None)
        else:
            cols.append(s.get(key) or {} if "code" in modes else (s.get("qa") or {}).get(key) or {})
    names = sorted({n for c in cols if c for n in c}, key=natural_key)
    return {n: [None if c is None else _cell(c.get(n)) for c in cols] for n in names}


def _warnings(summaries: list[dict[str, Any]]) -> tuple[list[str], list[str]]:
    warnings: list[str] = []
    notes: list[str] = []
    hashes: dict[str, dict[str, list[str]]] = {}
    packs_of: list[set[str]] = []
    for s in summaries:
        packs = (s.get("run") or {}).get("pack") or {}
        packs_of.append(set(packs))
        for name, info in packs.items():
            hashes.setdefault(name, {}).setdefault(str((info or {}).get("hash")), []).append(_label(s))
    for name, by_hash in sorted(hashes.items()):
        if len(by_hash) > 1:
            warnings.append(f"the runs used different contents of pack {name}: "
                            + "; ".join(f"{h[:12]} in {', '.join(runs)}" for h, runs in sorted(by_hash.items()))
                            + ". Their figures are not directly comparable.")
    for s in summaries:
        run = s.get("run") or {}
        if run.get("ungraded"):
            warnings.append(f"{_label(s)} is incomplete: {run['ungraded']} sample(s) not graded yet")
    if packs_of and len({frozenset(p) for p in packs_of}) > 1:
        common = set.intersection(*packs_of)
        notes.append("not every run used the same packs: "
                     + "; ".join(f"{_label(s)}: {', '.join(sorted(p)) or 'none'}" for s, p in zip(summaries, packs_of))
                     + (f" (in common: {', '.join(sorted(common))})" if common else ""))
    ids = [_problem_ids(s) for s in summaries]
    if ids and len({frozenset(x) for x in ids}) > 1:
        common = set.intersection(*ids)
        union = set.union(*ids)
        notes.append(f"the runs cover different problems ({len(common)} in common of {len(union)} in all): "
                     "each run's figures are over its own problems")
    if len({(s.get("run") or {}).get("grader_version") for s in summaries}) > 1:
        notes.append("the runs were graded by different grader versions")
    return warnings, notes


def instance_seed_of(summaries: list[dict[str, Any]]) -> int | None:
    """The one instance seed of several runs (None: the release's), or a ConfigError naming the
    runs of each seed when they differ."""
    by_seed: dict[int | None, list[str]] = {}
    for s in summaries:
        by_seed.setdefault((s.get("run") or {}).get("instance_seed"), []).append(_label(s))
    if len(by_seed) > 1:
        order = sorted(by_seed, key=lambda x: (x is not None, x or 0))
        raise ConfigError("the runs were graded on different instances ("
                          + "; ".join(f"{seed_words(k)}: {', '.join(by_seed[k])}" for k in order)
                          + "): a leaderboard never mixes instance seeds; put each seed's runs on a board of their own")
    return next(iter(by_seed), None)


def build_leaderboard(summaries: list[dict[str, Any]]) -> dict[str, Any]:
    """The leaderboard of several runs (JSON-ready), from their summaries. Raises ConfigError when
    the runs were drawn from different instance seeds."""
    seed = instance_seed_of(summaries)
    rows = [_row(i, s) for i, s in enumerate(summaries)]
    code_rows = [r for r in rows if r["code"] is not None]
    by_score = bool(code_rows) and all(_search_only(r) for r in code_rows)
    order = sorted(range(len(rows)), key=lambda i: _rank_key(rows[i], by_score))
    ranked = [rows[i] for i in order]
    for rank, row in enumerate(ranked, 1):
        row["rank"] = rank
    ordered = [summaries[i] for i in order]
    warnings, notes = _warnings(summaries)
    has_qa = any(r["qa"] is not None for r in ranked)
    return {
        "instance_seed": seed,
        "runs": ranked,
        "ranked_by": "search score" if by_score else "pass@1",
        "columns": [{"run": r["run"], "model": r["model"],
                     "metric": "pass@1" if r["code"] is not None else "accuracy"} for r in ranked],
        "heatmap": {
            "primary": {"by_family": _heat(ordered, "primary", "by_family"),
                        "by_tier": _heat(ordered, "primary", "by_tier")},
            "qa": {"by_family": _heat(ordered, "qa", "by_family"),
                   "by_tier": _heat(ordered, "qa", "by_tier")} if has_qa else None,
        },
        "warnings": warnings,
        "notes": notes,
    }


def _with_ci(v: float | None, ci: list[float] | None) -> str:
    return pct(v) + (f" [{100 * ci[0]:.1f},{100 * ci[1]:.1f}]" if ci else "")


def score_with_ci(v: float | None, ci: list[float] | None) -> str:
    """A mean score (0 to 1, three decimals) with its 95% CI."""
    return ("-" if v is None else f"{v:.3f}") + (f" [{ci[0]:.3f},{ci[1]:.3f}]" if ci else "")


def render_leaderboard(board: dict[str, Any], con: Any = None, err: Any = None) -> None:
    """The compact terminal leaderboard: one line per run, warnings first (on stderr)."""
    from rich.markup import escape

    from ..console import console, table

    con = con or console()
    err = err or console(stderr=True)
    for w in board.get("warnings") or []:
        err.print(f"[bold yellow]warning:[/bold yellow] {escape(w)}", highlight=False)
    for n in board.get("notes") or []:
        err.print(f"note: {n}", markup=False, highlight=False)
    has_search = any(r.get("search") for r in board.get("runs") or [])
    has_qa_search = any(r.get("qa_search") for r in board.get("runs") or [])
    cols = ("code pass@1 [95% CI]", "Q&A acc. [95% CI]", "gap [95% CI]", "run std")
    extra = (("search score [95% CI]",) if has_search else ()) + (("Q&A search score [95% CI]",) if has_qa_search else ())
    # a column only where a run has search problems (in that mode): other boards print as before
    cols = (*cols[:3], *extra, *cols[3:])
    t = table("#", "model", "run", *cols,
              title=f"leaderboard (instance seed {seed_label(board.get('instance_seed'))}"
                    + (", ranked by the mean search score" if board.get("ranked_by") == "search score" else "") + ")",
              right=("#", *cols))
    for r in board.get("runs") or []:
        code, qa, gap, search = r.get("code"), r.get("qa"), r.get("gap"), r.get("search")
        spread = (code or qa or {}).get("runs") or {}
        cells = [_with_ci(code["pass@1"], code["ci95"]) if code else "-",
                 _with_ci(qa["accuracy"], qa["ci95"]) if qa else "-",
                 (f"{points(gap['gap'])} " + (f"[{points(gap['ci95'][0])},{points(gap['ci95'][1])}]"
                                              if gap.get("ci95") else "")).strip() if gap else "-",
                 pct(spread.get("std"), 2)]
        qa_search = r.get("qa_search")
        if has_qa_search:
            cells.insert(3, score_with_ci(qa_search["score"], qa_search["ci95"]) if qa_search else "-")
        if has_search:
            cells.insert(3, score_with_ci(search["score"], search["ci95"]) if search else "-")
        t.add_row(str(r.get("rank")), escape(str(r.get("model"))), escape(str(r.get("run"))), *cells)
    con.print(t)


# ------------------------------------------------------------------------------------------
# the page
# ------------------------------------------------------------------------------------------

def _heat_view(board: dict[str, Any], which: str) -> list[dict[str, Any]]:
    """The rows of a heat map (families, then tiers): each cell's value and whether it is a Q&A
    accuracy, or None and whether that is because the run had no Q&A mode."""
    runs = board.get("runs") or []
    metric = [c.get("metric") for c in board.get("columns") or []]
    out = []
    for key in ("by_family", "by_tier"):
        rows = []
        for name, cells in ((board["heatmap"][which] or {}).get(key) or {}).items():
            row = []
            for j, c in enumerate(cells):
                if c is None:
                    row.append({"value": None, "no_qa": which == "qa" and runs[j].get("qa") is None})
                else:
                    row.append({"value": c["value"], "problems": c.get("problems"),
                                "qa": which == "qa" or metric[j] == "accuracy"})
            rows.append({"name": name, "cells": row})
        if rows:
            out.append({"key": key, "rows": rows})
    return out


def board_view(board: dict[str, Any]) -> dict[str, Any]:
    """Everything the leaderboard page shows, as plain data (the context of ``templates/leaderboard.html``)."""
    runs = []
    for i, r in enumerate(board.get("runs") or []):
        code, qa, gap = r.get("code"), r.get("qa"), r.get("gap")
        cost = r.get("cost") or {}
        runs.append({
            "i": i, "rank": r.get("rank"), "run": r.get("run"), "model": r.get("model"), "source": r.get("source"),
            "demo": r.get("source") == "demo", "incomplete": bool(r.get("ungraded")),
            "problems": r.get("problems"), "samples": r.get("samples"), "modes": r.get("modes") or [],
            "rounds": r.get("rounds") or 1,
            "code": {"rate": code["pass@1"], "ci95": code["ci95"]} if code else None,
            "qa": {"rate": qa["accuracy"], "ci95": qa["ci95"]} if qa else None,
            "gap": {"gap": gap.get("gap"), "ci95": gap.get("ci95")} if gap is not None else None,
            "search": {"rate": r["search"]["score"], "ci95": r["search"]["ci95"],
                       "at_best": r["search"].get("at_best"), "problems": r["search"].get("problems"),
                       "std": (r["search"].get("runs") or {}).get("std")} if r.get("search") else None,
            "qa_search": {"rate": r["qa_search"]["score"], "ci95": r["qa_search"]["ci95"],
                          "at_best": r["qa_search"].get("at_best"), "problems": r["qa_search"].get("problems"),
                          "std": (r["qa_search"].get("runs") or {}).get("std")} if r.get("qa_search") else None,
            "spreads": [dict(spread(part.get("runs")), mode=mode) for mode, part in (("code", code), ("qa", qa))
                        if part is not None],
            "std": ((code or qa or {}).get("runs") or {}).get("std"),
            "revision": [{"mode": m, "change": v.get("final_change"), "verdict": v.get("overall") or "-"}
                         for m, v in (r.get("revision") or {}).items()],
            "usd": float(cost.get("usd") or 0), "tokens": int(cost.get("tokens") or 0),
            "packs": packs(r), "grader_version": r.get("grader_version"), "created": r.get("created"),
            "path": r.get("path"),
        })
    return {
        "runs": runs,
        "has_search": any(r["search"] is not None for r in runs),
        "has_qa_search": any(r["qa_search"] is not None for r in runs),
        "by_score": board.get("ranked_by") == "search score",
        "qa_only": [c.get("metric") == "accuracy" for c in board.get("columns") or []],
        "heat": _heat_view(board, "primary"),
        "heat_qa": _heat_view(board, "qa") if board["heatmap"].get("qa") else None,
        "warnings": board.get("warnings") or [],
        "notes": board.get("notes") or [],
        "notices": sorted({r.get("notice") for r in board.get("runs") or [] if r.get("notice")}),
        "data": board,
    }


def render_leaderboard_html(board: dict[str, Any]) -> str:
    """One self-contained HTML page: the leaderboard and the family-by-model heat maps."""
    return render_page("leaderboard.html", **board_view(board))
