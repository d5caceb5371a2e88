"""A run's results as one self-contained HTML page (the summary of ``report``, plus the failing samples).

The page shows what the terminal report shows, section by section: the code-mode headline, runs,
verdicts and the figures by tier, difficulty and family; the search problems' scores (the mean
score with its CI, the share at the best known, each problem's score distribution and the
run-to-run spread, by tier and family); the Q&A-mode headline and figures with
per-field accuracy; the reasoning-vs-code gap; the self-revision rounds per mode; the cost per
round; and the failing samples (code, Q&A answers, and revised samples' rounds one after another
with the feedback given between them). ``leaderboard.py`` draws several runs side by side with the
same page shell.

This module only prepares the data the page shows (plain dicts and lists: what to show, clipped
and ordered); the page itself is the template ``templates/report.html``, rendered with
autoescaping by :mod:`grader.results.pages`. The page holds everything inline: CSS, a little JS
(table sorting, sample filters) and charts drawn as SVG. It loads nothing, so it renders the same
offline, and a Content-Security-Policy forbids every fetch and every script but its own two
(pinned by hash). The summary travels to the page as a JSON data block, never as script.

Test hooks: the page sets ``data-ready="1"`` on ``<body>`` when its script has run and collects
script errors and policy violations into ``data-errors``; the fragment ``#sort=<column>`` (``-``
before the column for descending) sorts the per-problem table on load (the Q&A one in a Q&A-only
run), ``#filter=<verdict>`` filters the failing samples and ``#mode=<code|qa>`` keeps one mode's.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from ..packs.vectors import seed_words
from .pages import render_page
from .summary import failing_records

MAX_SAMPLES_SHOWN = 200  # per mode
MAX_CODE_CHARS = 8_000
MAX_CODE_LINES = 250
MAX_TRACE_CHARS = 3_000
MAX_OUTPUT_CHARS = 1_500
MAX_VALUE_CHARS = 200
MAX_INPUT_CHARS = 600
MAX_DIFF_ROWS = 40
MAX_REPLY_CHARS = 6_000  # a Q&A reply: head and tail beyond this
MAX_ANSWER_CHARS = 4_000
MAX_FEEDBACK_CHARS = 4_000

DIFFICULTY_ORDER = {"easy": 0, "medium": 1, "hard": 2}
MODE_ORDER = {"code": 0, "qa": 1}
PASSING = ("pass", "correct")
TRANSITIONS = ("fixed", "broken", "stayed passing", "stayed failing")


# ------------------------------------------------------------------------------------------
# the failing samples of a run
# ------------------------------------------------------------------------------------------

def _attempt(h: dict[str, Any]) -> dict[str, Any]:
    """One revision round of a sample, as the page shows it."""
    g = h.get("grade") or {}
    return {"round": h.get("round", 0), "verdict": h.get("verdict") or "", "reason": h.get("reason") or "",
            "code": h.get("code"), "answer": h.get("answer"), "text": h.get("text") or "",
            "failures": g.get("failures") or [], "output_tail": g.get("output_tail") or "",
            "feedback": h.get("feedback") or ""}


def failing_samples(run_path: Path) -> list[dict[str, Any]]:
    """Every sample of a run whose final verdict is not a pass, with what the page shows of it
    (code-mode samples first, then Q&A answers)."""
    out: list[dict[str, Any]] = []
    for r in failing_records(Path(run_path)):
        g = r["grade"]
        out.append({
            "problem": r["problem"],
            "title": r["title"],
            "sample": r["sample"],
            "verdict": r["verdict"],
            "reason": r["reason"],
            "code": r["code"],
            "failures": g.get("failures") or [],
            "output_tail": g.get("output_tail") or "",
            "stop_reason": g.get("stop_reason"),
            "cpu_s": g.get("cpu_s") or 0.0,
            "wall_s": g.get("wall_s") or 0.0,
            "max_rss_kb": g.get("max_rss_kb"),
            "signature": r["signature"],
            # beyond the minimum: the page shows these when present
            "stop_detail": g.get("stop_detail") or "",
            "vectors_passed": g.get("vectors_passed"),
            "vectors_total": g.get("vectors_total"),
            "extraction": (r["extraction"] or {}).get("reason", ""),
            "mode": r.get("mode") or "code",
            "item": r.get("item") or "",
            "round": r.get("round") or 0,
            "answer": r.get("answer"),
            "text": r.get("text") or "",
            "rounds": [_attempt(h) for h in r.get("rounds") or []],
        })
    out.sort(key=lambda sm: MODE_ORDER.get(sm["mode"], 9))  # stable: the journal's order within a mode
    return out


def shown_samples(samples: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The samples the page shows: the first MAX_SAMPLES_SHOWN of each mode."""
    seen: dict[str, int] = {}
    out = []
    for sm in samples:
        mode = str(sm.get("mode") or "code")
        seen[mode] = seen.get(mode, 0) + 1
        if seen[mode] <= MAX_SAMPLES_SHOWN:
            out.append(sm)
    return out


# ------------------------------------------------------------------------------------------
# small helpers
# ------------------------------------------------------------------------------------------

def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"


def _clip_tail(text: str, limit: int) -> str:
    return text if len(text) <= limit else "\u2026" + text[-(limit - 1):]


def _clip_middle(text: str, limit: int) -> tuple[str, str, int]:
    """(head, tail, characters left out): the start and the end of a long text."""
    if len(text) <= limit:
        return text, "", 0
    half = limit // 2
    return text[:half], text[-half:], len(text) - 2 * half


def _natural(s: str) -> list:
    return [(0, int(t), "") if t.isdigit() else (1, 0, t.lower()) for t in re.split(r"(\d+)", s) if t]


def _group_order(key: str, names: list[str]) -> list[str]:
    if key == "by_difficulty":
        return sorted(names, key=lambda n: (DIFFICULTY_ORDER.get(n, 9), n))
    return sorted(names, key=_natural)


def _value(v: Any) -> str:
    """A compared value as JSON (so "18" and 18 look different), clipped."""
    try:
        text = json.dumps(v, ensure_ascii=False, allow_nan=True)
    except (TypeError, ValueError):
        text = repr(v)
    return _clip(text, MAX_VALUE_CHARS)


def spread(sp: dict[str, Any] | None) -> dict[str, Any]:
    """The run-to-run spread of a rate (every key present, None where unknown)."""
    sp = sp or {}
    return {"runs": list(sp.get("runs") or []), "mean": sp.get("mean"), "std": sp.get("std"), "min": sp.get("min"),
            "max": sp.get("max"), "ci95": sp.get("ci95")}


def packs(run: dict[str, Any]) -> list[dict[str, Any]]:
    """The packs a run drew on: name, version, content hash (and its first 12 digits), tier."""
    return [{"name": k, "version": (v or {}).get("version"), "hash": (v or {}).get("hash"),
             "short": str((v or {}).get("hash"))[:12], "tier": (v or {}).get("tier")}
            for k, v in (run.get("pack") or {}).items()]


def _full_ids(s: dict[str, Any]) -> bool:
    """Problem ids keep their pack prefix when the run drew on several packs (ids may repeat across packs)."""
    return len((s.get("run") or {}).get("pack") or {}) > 1


def _pid(pid: str, full: bool, titles: dict[str, str] | None = None) -> dict[str, Any]:
    """A problem id as a table shows it: the whole id (sorting, links), the shown text, its title."""
    return {"id": pid, "text": pid if full else pid.split("/", 1)[-1], "title": (titles or {}).get(pid)}


def _top_failure(verdicts: dict[str, int], link: int | None) -> dict[str, Any] | None:
    """The most frequent failing verdict of a problem, and the first failing sample to link to."""
    fails = {k: n for k, n in verdicts.items() if k not in PASSING}
    if not fails:
        return None
    top = max(fails, key=fails.get)  # type: ignore[arg-type]
    return {"verdict": top, "count": fails[top], "link": link}


# ------------------------------------------------------------------------------------------
# the summary's sections
# ------------------------------------------------------------------------------------------

def _header(s: dict[str, Any]) -> dict[str, Any]:
    run = s.get("run") or {}
    samples = s.get("samples") or {}
    modes = s.get("modes") or run.get("modes") or ["code"]
    qs = (s.get("qa") or {}).get("samples") or {}
    image = run.get("image") or {}
    commit = str(run["git_commit"]) if run.get("git_commit") else None
    return {
        "model": run.get("model", "?"), "id": run.get("id", "?"), "source": run.get("source", "?"),
        "created": run.get("created"), "notice": run.get("notice"), "ungraded": run.get("ungraded") or 0,
        "generation_failures": run.get("generation_failures") or 0,
        "problems": run.get("problems"), "samples_per_problem": run.get("samples_per_problem"),
        "counted": {"code": {"counted": samples.get("counted", 0), "excluded": samples.get("infra_excluded") or 0}
                    if "code" in modes else None,
                    "qa": {"counted": qs.get("counted", 0), "excluded": qs.get("infra_excluded") or 0}
                    if "qa" in modes else None},
        "packs": packs(run),
        "modes": modes if modes != ["code"] else None,
        "revision": {"rounds": run["rounds"], "feedback": run.get("feedback"),
                     "revise_all": bool(run.get("revise_all"))} if (run.get("rounds") or 1) > 1 else None,
        "endpoint": run.get("base_url"),
        "generation": [(k, _clip(str(v), 80)) for k, v in (run.get("generation") or {}).items()
                       if k != "model" and v is not None],
        "image": {"tag": image.get("tag") or "", "id": str(image["id"])[:19] if image.get("id") else None}
        if image else None,
        "exec_mode": run.get("exec_mode"),
        "instance_seed": seed_words(run.get("instance_seed")),
        "grader_version": run.get("grader_version", "?"),
        "commit": {"full": commit, "short": commit[:12] + ("+dirty" if commit.endswith("+dirty") else "")}
        if commit else None,
        "path": run.get("path"),
    }


def _groups(groups: dict[str, Any], key: str) -> list[dict[str, Any]]:
    """The rows of a by-tier, by-difficulty or by-family table, in order."""
    return [{"name": name, "problems": groups[name].get("problems"), "rate": groups[name].get("pass@1"),
             "spread": spread(groups[name].get("spread"))} for name in _group_order(key, list(groups))]


def _figures(src: dict[str, Any]) -> dict[str, Any]:
    """A mode's runs, verdicts and groups (``src``: the summary for code mode, its ``qa`` part for Q&A)."""
    verdicts = src.get("verdicts") or {}
    total = sum(verdicts.values()) or 1
    return {"runs": spread(src.get("runs")),
            "verdicts": [{"verdict": name, "n": n, "share": n / total} for name, n in verdicts.items()],
            **{key: _groups(src.get(key) or {}, key) for key in ("by_tier", "by_difficulty", "by_family")}}


def _problem(row: dict[str, Any], mode: str, full: bool, links: dict[tuple[str, str], int],
             titles: dict[str, str]) -> dict[str, Any]:
    """What a problem table shows of a problem in either mode; ``links``: its first failing sample."""
    pid = str(row.get("problem", ""))
    difficulty = str(row.get("difficulty", ""))
    return {"pid": _pid(pid, full, titles), "family": row.get("family", ""), "tier": row.get("tier", ""),
            "difficulty": difficulty, "difficulty_rank": DIFFICULTY_ORDER.get(difficulty, 9), "n": row.get("n", ""),
            "top": _top_failure(row.get("verdicts") or {}, links.get((mode, pid)))}


def _code(s: dict[str, Any], links: dict[tuple[str, str], int], titles: dict[str, str]) -> dict[str, Any]:
    h = s.get("headline") or {}
    ks = [k for k in (h.get("pass@k") or {}) if k != "1"]
    fl = s.get("flakiness") or {}
    full = _full_ids(s)
    problems = [dict(_problem(row, "code", full, links, titles), infra=row.get("infra") or 0, rate=row.get("pass@1"),
                     pass_k=[(row.get("pass@k") or {}).get(k) for k in ks]) for row in s.get("problems") or []]
    return {
        "headline": {"pass1": h.get("pass@1"), "ci95": h.get("pass@1_ci95"), "problems": h.get("problems", 0),
                     "ks": [{"k": k, "pass_k": h["pass@k"][k], "pass_hat_k": (h.get("pass^k") or {}).get(k)}
                            for k in ks]},
        "flakiness": {"rate": fl.get("rate"), "changed": fl.get("changed"), "regraded": fl["regraded_samples"],
                      "examples": list(fl.get("examples") or [])} if fl.get("regraded_samples") else None,
        **_figures(s),
        "ks": ks,
        "problems": problems,
    }


def _qa(s: dict[str, Any], links: dict[tuple[str, str], int], titles: dict[str, str]) -> dict[str, Any]:
    q = s.get("qa") or {}
    h = q.get("headline") or {}
    full = _full_ids(s)
    problems = [dict(_problem(row, "qa", full, links, titles), rate=row.get("accuracy"),
                     fields=[{"name": k, "rate": v} for k, v in sorted((row.get("fields") or {}).items(),
                                                                        key=lambda kv: (kv[1], kv[0]))])
                for row in q.get("problems") or []]
    return {
        "headline": {"accuracy": h.get("accuracy"), "ci95": h.get("accuracy_ci95"), "problems": h.get("problems", 0)},
        "by_kind": [{"kind": k, "accuracy": v.get("accuracy"), "answers": v.get("items")}
                    for k, v in (q.get("by_kind") or {}).items()],
        **_figures(q),
        "problems": problems,
    }


def _gap(s: dict[str, Any]) -> dict[str, Any]:
    g = s.get("gap") or {}
    full = _full_ids(s)
    ci = g.get("gap_ci95")
    gap = g.get("gap")
    if gap is None:
        conclusion = "none"
    elif ci and ci[0] > 0:
        conclusion = "qa"
    elif ci and ci[1] < 0:
        conclusion = "code"
    elif ci:
        conclusion = "neither"
    else:
        conclusion = "no-ci"
    family = {str(p.get("problem")): p.get("family", "") for p in s.get("problems") or []}
    rows = [{"pid": _pid(str(r["problem"]), full), "family": family.get(str(r["problem"]), ""),
             "qa": r["qa"], "code": r["code"], "gap": r["gap"]}
            for r in sorted(g.get("rows") or [], key=lambda r: (-r["gap"], r["problem"]))]
    return {
        "gap": gap, "ci95": ci, "problems": g.get("problems", 0), "conclusion": conclusion,
        "qa_accuracy": g.get("qa_accuracy"), "code_pass1": g.get("code_pass@1"),
        "qa_wins": [_pid(p, full) for p in g.get("qa_wins") or []],
        "code_wins": [_pid(p, full) for p in g.get("code_wins") or []],
        "ties": [_pid(p, full) for p in g.get("ties") or []],
        "rows": rows,
        "search": _score_gap(g.get("search"), full, family),
    }


def _score_gap(sg: dict[str, Any] | None, full: dict, family: dict[str, str]) -> dict[str, Any] | None:
    """Search problems' mode gap: Q&A mean score minus code mean score, per problem and overall."""
    if not sg:
        return None
    rows = [{"pid": _pid(str(r["problem"]), full), "family": family.get(str(r["problem"]), ""),
             "qa": r["qa"], "code": r["code"], "gap": r["gap"]}
            for r in sorted(sg.get("rows") or [], key=lambda r: (-r["gap"], r["problem"]))]
    return {"gap": sg.get("gap"), "ci95": sg.get("gap_ci95"), "problems": sg.get("problems", 0),
            "qa_score": sg.get("qa_score"), "code_score": sg.get("code_score"), "rows": rows}


def _score_groups(groups: dict[str, Any], key: str) -> list[dict[str, Any]]:
    """The rows of the search problems' by-tier or by-family table, in order."""
    return [{"name": name, "problems": groups[name].get("problems"), "score": groups[name].get("score"),
             "ci95": groups[name].get("score_ci95"), "at_best": groups[name].get("at_best"),
             "spread": spread(groups[name].get("spread"))} for name in _group_order(key, list(groups))]


def _search(s: dict[str, Any], titles: dict[str, str], q: dict[str, Any] | None = None) -> dict[str, Any]:
    """The search problems' scores (code mode's ``s["search"]``, or ``q``: Q&A mode's): the headline,
    the run-to-run spread, by tier and family, and per problem the mean with its CI, the share at
    the best known and every sample's score."""
    q = (s.get("search") or {}) if q is None else q
    h = q.get("headline") or {}
    full = _full_ids(s)
    problems = [{"pid": _pid(str(row.get("problem", "")), full, titles), "family": row.get("family", ""),
                 "tier": row.get("tier", ""), "n": row.get("n"), "score": row.get("score"),
                 "ci95": row.get("score_ci95"), "at_best": row.get("at_best"), "pass1": row.get("pass@1"),
                 "new_best": row.get("new_best") or 0, "min": row.get("min"), "max": row.get("max"),
                 "std": row.get("std"), "scores": list(row.get("scores") or [])} for row in q.get("problems") or []]
    by_tier = _score_groups(q.get("by_tier") or {}, "by_tier")
    return {
        "headline": {"score": h.get("score"), "ci95": h.get("score_ci95"), "problems": h.get("problems", 0),
                     "at_best": h.get("at_best"), "new_best": h.get("new_best") or 0},
        "runs": spread(q.get("runs")),
        "by_tier": by_tier if len(by_tier) > 1 else [],
        "by_family": _score_groups(q.get("by_family") or {}, "by_family"),
        "problems": problems,
    }


def _revision_mode(mode: str, rev: dict[str, Any]) -> dict[str, Any]:
    rounds = rev.get("rounds") or []
    tables = []
    for key, col in (("by_tier", "tier"), ("by_family", "family")):
        names = _group_order(key, sorted({n for r in rounds for n in (r.get(key) or {})}))
        if not names:
            continue
        rows = []
        for n in names:
            rates = [(r.get(key) or {}).get(n) for r in rounds]
            change = rates[-1] - rates[0] if rates and rates[0] is not None and rates[-1] is not None else None
            rows.append({"name": n, "rates": rates, "change": change})
        tables.append({"col": col, "rows": rows})
    transitions = rounds[1:]
    return {
        "mode": mode, "overall": rev.get("overall") or "no verdict",
        "first": rounds[0].get("rate") if rounds else None, "last": rounds[-1].get("rate") if rounds else None,
        "last_round": rounds[-1].get("round") if rounds else None,
        "final_change": rev.get("final_change"), "final_change_ci95": rev.get("final_change_ci95"),
        "fixed": sum((r.get("transitions") or {}).get("fixed", 0) for r in transitions),
        "broken": sum((r.get("transitions") or {}).get("broken", 0) for r in transitions),
        "rounds": [{"round": r.get("round"), "rate": r.get("rate"), "rate_ci95": r.get("rate_ci95"),
                    "change": r.get("change"), "change_ci95": r.get("change_ci95"),
                    "transitions": {k: (r.get("transitions") or {}).get(k, 0) for k in TRANSITIONS},
                    "runs": spread(r.get("runs")),
                    "verdict": r.get("verdict") or ""} for r in rounds],
        "search": [{"round": r.get("round"), **(r.get("search") or {})} for r in rounds]
        if any(r.get("search") for r in rounds) else None,
        "groups": tables,
    }


def _revision(s: dict[str, Any]) -> dict[str, Any] | None:
    revs = {m: r for m, r in (s.get("revision") or {}).items() if r}
    if not revs:
        return None
    run = s.get("run") or {}
    return {"revise_all": bool(run.get("revise_all")), "feedback": str(run.get("feedback") or "none"),
            "modes": [_revision_mode(m, revs[m]) for m in sorted(revs, key=lambda m: MODE_ORDER.get(m, 9))]}


def _cost(s: dict[str, Any]) -> dict[str, Any] | None:
    cost = (s.get("run") or {}).get("cost_usd") or {}
    by_round = cost.get("by_round") or {}
    if not by_round:
        return None
    total = cost.get("total") or {}

    def row(r: dict[str, Any]) -> dict[str, Any]:
        return {"calls": r.get("calls", 0), "prompt_tokens": int(r.get("prompt_tokens", 0)),
                "completion_tokens": int(r.get("completion_tokens", 0)), "usd": float(r.get("usd") or 0.0)}

    return {"rounds": [dict(row(v), round=k) for k, v in sorted(by_round.items(), key=lambda kv: int(kv[0]))],
            "total": row(total),
            "tokens": bool(total.get("prompt_tokens") or total.get("completion_tokens")),
            "priced": bool(total.get("usd"))}


# ------------------------------------------------------------------------------------------
# a failing sample
# ------------------------------------------------------------------------------------------

def _code_lines(code: str | None) -> dict[str, Any] | None:
    """The code of an answer as the page shows it: its first lines, and how much was left out."""
    if not code:
        return None
    lines = code.replace("\r\n", "\n").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    shown: list[str] = []
    size = 0
    for line in lines:
        if len(shown) >= MAX_CODE_LINES or size + len(line) > MAX_CODE_CHARS:
            break
        shown.append(line)
        size += len(line) + 1
    if not shown and lines:  # one enormous line
        shown = [_clip(lines[0], MAX_CODE_CHARS)]
    cut = len(shown) < len(lines) or (len(lines) == 1 and len(lines[0]) > MAX_CODE_CHARS)
    return {"lines": shown, "total": len(lines), "chars": len(code), "truncated": cut}


def _failures(failures: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The failing vectors (or items) of an answer, field by field: at most MAX_DIFF_ROWS field
    differences in all, and the first three distinct tracebacks."""
    if not failures:
        return None
    groups: list[dict[str, Any]] = []
    traces: list[dict[str, str]] = []
    shown = hidden = 0
    for f in failures:
        diffs = f.get("diffs") or []
        vec = f.get("vector", "")
        inputs = _clip(str(f.get("inputs") or ""), MAX_INPUT_CHARS)
        if f.get("traceback"):
            tb = str(f["traceback"])
            if all(tb != t["full"] for t in traces):
                traces.append({"vector": str(vec), "full": tb, "text": _clip_tail(tb, MAX_TRACE_CHARS)})
        if not diffs:
            groups.append({"vector": vec, "inputs": inputs, "diffs": None,
                           "error": f.get("error_type") or f.get("kind") or "error",
                           "message": _clip(str(f.get("error_message") or ""), 600)})
            continue
        room = MAX_DIFF_ROWS - shown
        if room <= 0:
            hidden += len(diffs)
            continue
        take = diffs[:room]
        hidden += len(diffs) - len(take)
        shown += len(take)
        rows = []
        for d in take:
            kind = d.get("kind", "value")
            note = d.get("note") or ("missing" if kind == "missing" else "extra" if kind == "extra" else "")
            rows.append({"kind": kind, "path": d.get("path") or "(result)",
                         "expected": "" if kind == "extra" else _value(d.get("expected")),
                         "got": "" if kind == "missing" else _value(d.get("got")),
                         "ratio": d.get("ratio"), "rel_err": d.get("rel_err"),
                         "note": note})
        groups.append({"vector": vec, "inputs": inputs, "diffs": rows})
    return {"groups": groups, "has_diffs": any(f.get("diffs") for f in failures), "hidden": hidden,
            "traces": traces[:3]}


def _reply(text: str) -> dict[str, Any] | None:
    """The model's whole reply (its reasoning): head and tail when it is long."""
    if not text.strip():
        return None
    head, tail, cut = _clip_middle(text.rstrip(), MAX_REPLY_CHARS)
    return {"head": head, "tail": tail, "cut": cut, "chars": len(text)}


def _answer(answer: Any) -> str | None:
    """A Q&A answer as JSON, one field a line when it is an object."""
    if answer is None:
        return None
    try:
        if isinstance(answer, dict) and answer:  # one field a line, each value compact
            text = "{\n" + ",\n".join(f"  {json.dumps(str(k), ensure_ascii=False)}: "
                                       f"{json.dumps(v, ensure_ascii=False, allow_nan=True)}"
                                       for k, v in answer.items()) + "\n}"
        else:
            text = json.dumps(answer, ensure_ascii=False, allow_nan=True)
    except (TypeError, ValueError):
        text = repr(answer)
    return _clip(text, MAX_ANSWER_CHARS)


def _body(a: dict[str, Any], extraction: str) -> dict[str, Any]:
    """What one answer of a sample shows: the code, or the Q&A reasoning and JSON answer; then the
    failing vectors (items) field by field and the output tail."""
    tail = str(a.get("output_tail") or "")
    return {"code": _code_lines(a.get("code")), "extraction": extraction,
            "reply": _reply(str(a.get("text") or "")), "answer": _answer(a.get("answer")),
            "why_no_answer": extraction or str(a.get("reason") or ""),
            "failures": _failures(a.get("failures") or []),
            "output_tail": _clip_tail(tail.rstrip(), MAX_OUTPUT_CHARS) if tail.strip() else None}


def _sample(i: int, sm: dict[str, Any]) -> dict[str, Any]:
    reason = str(sm.get("reason") or "")
    rounds = sm.get("rounds") or []
    extraction = str(sm.get("extraction") or "")
    last = len(rounds) - 1
    rss = sm.get("max_rss_kb")
    return {
        "i": i, "verdict": str(sm.get("verdict", "")), "problem": str(sm.get("problem", "")),
        "mode": str(sm.get("mode") or "code"), "item": str(sm.get("item") or ""), "sample": sm.get("sample"),
        "title": sm.get("title") or None, "reason": _clip(reason, 2000), "reason_short": _clip(reason, 160),
        "round": sm.get("round"),
        "signature": sm.get("signature") or None,
        "body": _body(sm, extraction) if len(rounds) <= 1 else None,
        "rounds": [dict(_body(a, extraction if j == last else ""), round=a.get("round"),
                        verdict=str(a.get("verdict") or ""), reason=_clip(str(a.get("reason") or ""), 300),
                        final=j == last, feedback=_clip(str(a.get("feedback") or "").rstrip(), MAX_FEEDBACK_CHARS))
                   for j, a in enumerate(rounds)] if len(rounds) > 1 else None,
        "resources": {"cpu_s": float(sm.get("cpu_s") or 0), "wall_s": float(sm.get("wall_s") or 0),
                      "memory_mib": rss / 1024 if rss else None, "stop_reason": sm.get("stop_reason"),
                      "stop_detail": _clip(str(sm.get("stop_detail") or ""), 500),
                      "vectors_passed": sm.get("vectors_passed") or 0, "vectors_total": sm.get("vectors_total")},
    }


def _count(values: list[str], order: Any) -> dict[str, int]:
    """How often each value occurs, in the given order of (value, count) pairs."""
    counts: dict[str, int] = {}
    for v in values:
        counts[v] = counts.get(v, 0) + 1
    return dict(sorted(counts.items(), key=order))


def _failing(samples: list[dict[str, Any]]) -> dict[str, Any]:
    shown = shown_samples(samples)
    modes = _count([str(sm.get("mode") or "code") for sm in samples], lambda kv: MODE_ORDER.get(kv[0], 9))
    return {
        "total": len(samples), "shown": len(shown), "per_mode_cap": MAX_SAMPLES_SHOWN,
        "verdicts": _count([str(sm.get("verdict", "")) for sm in samples], lambda kv: -kv[1]),
        "modes": modes,
        "revised": any(len(sm.get("rounds") or []) > 1 for sm in samples),
        "samples": [_sample(i, sm) for i, sm in enumerate(shown)],
    }


# ------------------------------------------------------------------------------------------
# the page
# ------------------------------------------------------------------------------------------

def report_view(summary: dict[str, Any], samples: list[dict[str, Any]]) -> dict[str, Any]:
    """Everything the run page shows, as plain data (the context of ``templates/report.html``)."""
    run = summary.get("run") or {}
    modes = summary.get("modes") or run.get("modes") or ["code"]
    links: dict[tuple[str, str], int] = {}  # (mode, problem): its first failing sample on the page
    titles: dict[str, str] = {}
    for i, sm in enumerate(shown_samples(samples)):
        links.setdefault((str(sm.get("mode") or "code"), str(sm.get("problem", ""))), i)
    for sm in samples:
        if sm.get("title"):
            titles.setdefault(str(sm.get("problem", "")), str(sm["title"]))
    return {
        "header": _header(summary),
        "both": "code" in modes and "qa" in modes,
        "revised": (run.get("rounds") or 1) > 1,
        "code": _code(summary, links, titles) if "code" in modes else None,
        "search": _search(summary, titles) if "code" in modes and summary.get("search") else None,
        "qa": _qa(summary, links, titles) if "qa" in modes else None,
        "qa_search": _search(summary, titles, (summary.get("qa") or {}).get("search"))
        if "qa" in modes and (summary.get("qa") or {}).get("search") else None,
        "gap": _gap(summary) if summary.get("gap") else None,
        "revision": _revision(summary),
        "cost": _cost(summary),
        "failing": _failing(samples),
        "data": summary,
    }


def render_html(summary: dict[str, Any], samples: list[dict[str, Any]]) -> str:
    """One self-contained HTML document showing a run summary and its failing samples."""
    return render_page("report.html", **report_view(summary, samples))
