"""Terminal rendering of a run summary (the dict of :func:`grader.results.run_summary`)."""

from __future__ import annotations

from typing import Any

from ..console import console, table
from ..grading.scoring import VERDICT_LABELS, Verdict
from ..packs.vectors import seed_label


def pct(x: float | None, digits: int = 1) -> str:
    return "-" if x is None else f"{100 * x:.{digits}f}%"


def ci_text(ci: list[float] | None) -> str:
    return "-" if not ci else f"[{pct(ci[0])}, {pct(ci[1])}]"


def points(x: float | None) -> str:
    """A difference of two rates in percentage points, signed."""
    return "-" if x is None else f"{100 * x:+.1f}"


def points_ci(ci: list[float] | None) -> str:
    return "-" if not ci else f"[{points(ci[0])}, {points(ci[1])}]"


def verdict_label(v: str) -> str:
    try:
        return VERDICT_LABELS[Verdict(v)]
    except ValueError:
        return v


def render_summary(s: dict[str, Any], *, per_problem: bool = True, con: Any = None) -> None:
    con = con or console()
    run = s["run"]
    modes = s.get("modes") or ["code"]
    h = s["headline"]
    r = s["runs"]
    if run.get("notice"):
        con.print(f"[bold yellow]NOTE:[/bold yellow] {run['notice']}")
    packs = ", ".join(f"{k} {v.get('version')} ({str(v.get('hash'))[:12]})" for k, v in run["pack"].items())
    con.print(f"[bold]run[/bold] {run['id']}  model [bold]{run['model']}[/bold] ({run['source']})  pack {packs}"
              + f"  instance seed {seed_label(run.get('instance_seed'))}"
              + (f"  modes {', '.join(modes)}" if modes != ["code"] else "")
              + (f"  rounds {run['rounds']} (feedback: {run.get('feedback')})" if run.get("rounds", 1) > 1 else ""))
    cost = (run.get("cost_usd") or {}).get("total") or {}
    if cost.get("calls"):
        by_round = (run.get("cost_usd") or {}).get("by_round") or {}
        con.print(f"model calls {cost['calls']}: {cost['prompt_tokens']} prompt + {cost['completion_tokens']} "
                  f"completion tokens" + (f", ${cost['usd']:.4f}" if cost.get("usd") else "")
                  + ("; per round " + ", ".join(f"{r}: {v['calls']} calls" + (f" ${v['usd']:.4f}" if v.get("usd") else "")
                                                for r, v in by_round.items()) if len(by_round) > 1 else ""))
    if "code" not in modes:
        _render_qa(con, s, per_problem)
        if s["qa"].get("search"):
            _render_search(con, s["qa"]["search"], per_problem, "Q&A search")
        _render_revision(con, s)
        return
    con.print(f"{run['problems']} problems x {run['samples_per_problem']} samples; "
              f"{s['samples']['counted']} graded samples counted"
              + (f", {s['samples']['infra_excluded']} excluded (infrastructure errors)" if s['samples']['infra_excluded'] else "")
              + (f", {run['ungraded']} not graded yet (resume the run)" if run.get("ungraded") else "")
              + (f", {run['generation_failures']} completion request(s) failed" if run.get("generation_failures") else ""))

    t = table("metric", "value", "95% CI", "notes", title="headline (code mode)" if "qa" in modes else "headline",
              right=("value",))
    t.add_row("pass@1", pct(h["pass@1"]), ci_text(h["pass@1_ci95"]), "mean over problems; CI by bootstrap over problems")
    t.add_row("run-to-run mean", pct(r["mean"]), ci_text(r["ci95"]),
              f"{len(r['runs'])} runs; CI by bootstrap over runs")
    t.add_row("run-to-run std", pct(r["std"], 2), "-", f"min {pct(r['min'])}, max {pct(r['max'])}")
    for k, v in h["pass@k"].items():
        if k != "1":
            t.add_row(f"pass@{k}", pct(v), "-", f"pass^{k} = {pct(h['pass^k'].get(k))}")
    fl = s.get("flakiness") or {}
    if fl.get("regraded_samples"):
        t.add_row("grader flakiness", pct(fl["rate"], 2), "-",
                  f"{fl['changed']} of {fl['regraded_samples']} re-graded samples changed verdict")
    con.print(t)
    if r["runs"]:
        con.print("per-run pass rates: " + "  ".join(pct(x) for x in r["runs"]))

    v = table("verdict", "samples", "share", title="verdicts", right=("samples", "share"))
    total = sum(s["verdicts"].values()) or 1
    for name, n in s["verdicts"].items():
        v.add_row(verdict_label(name), str(n), pct(n / total))
    con.print(v)

    for key, title in (("by_tier", "by tier"), ("by_difficulty", "by difficulty"), ("by_family", "by family")):
        if key == "by_tier" and len(s.get(key) or {}) < 2:
            continue
        g = table(title.split()[-1], "problems", "pass@1", "run std", "run range", title=title,
                  right=("problems", "pass@1", "run std"))
        for name, row in s[key].items():
            sp = row["spread"]
            g.add_row(name, str(row["problems"]), pct(row["pass@1"]), pct(sp["std"], 2),
                      f"{pct(sp['min'])} - {pct(sp['max'])}" if sp["min"] is not None else "-")
        con.print(g)

    if per_problem:
        ks = [k for k in h["pass@k"] if k != "1"]
        p = table("problem", "family", "diff", "n", "pass@1", *[f"pass@{k}" for k in ks], "top failure",
                  title="per problem", right=("n", "pass@1", *[f"pass@{k}" for k in ks]))
        for row in s["problems"]:
            fails = {k: n for k, n in row["verdicts"].items() if k != "pass"}
            top = max(fails, key=fails.get) if fails else "-"
            p.add_row(row["problem"].split("/", 1)[-1], row["family"], row["difficulty"], str(row["n"]),
                      pct(row["pass@1"]), *[pct(row["pass@k"].get(k)) for k in ks],
                      f"{verdict_label(top)} ({fails[top]})" if fails else "-")
        con.print(p)

    if s.get("search"):
        _render_search(con, s["search"], per_problem)
    if "qa" in modes:
        _render_qa(con, s, per_problem)
        if s["qa"].get("search"):
            _render_search(con, s["qa"]["search"], per_problem, "Q&A search")
    if s.get("gap"):
        _render_gap(con, s["gap"], per_problem)
    _render_revision(con, s)


def score(x: float | None) -> str:
    """A score (best known / objective, 0 to 1) with three decimals."""
    return "-" if x is None else f"{x:.3f}"



def _render_search(con: Any, q: dict[str, Any], per_problem: bool, label: str = "search") -> None:
    """Search problems: the mean score (best known / objective) and the instances at the best known,
    overall, by tier (when there are several) and family, and per problem, with the run-to-run spread
    (``label`` "Q&A search" for the Q&A items' scores)."""
    h, r = q["headline"], q["runs"]
    t = table("metric", "value", "95% CI", "notes", title=f"{label} problems: score against the best known",
              right=("value",))
    t.add_row("mean score", score(h["score"]), score_ci(h["score_ci95"]),
              f"{h['problems']} problems; mean over problems; CI by bootstrap over problems")
    t.add_row("instances at the best known", pct(h["at_best"]), "-", "within each problem's tolerance")
    t.add_row("run-to-run std", score(r["std"]), "-", f"min {score(r['min'])}, max {score(r['max'])}")
    if h.get("new_best"):
        t.add_row("new best known", str(h["new_best"]), "-", "instances where a mapping beat the best known (capped at 1)")
    con.print(t)
    for key, title in (("by_tier", f"{label} by tier"), ("by_family", f"{label} by family")):
        if key == "by_tier" and len(q.get(key) or {}) < 2:
            continue
        g = table(title.split()[-1], "problems", "score", "95% CI", "at best", "run std", "run range", title=title,
                  right=("problems", "score", "at best", "run std"))
        for name, row in (q.get(key) or {}).items():
            sp = row["spread"]
            g.add_row(name, str(row["problems"]), score(row["score"]), score_ci(row["score_ci95"]),
                      pct(row["at_best"]), score(sp["std"]),
                      f"{score(sp['min'])} - {score(sp['max'])}" if sp["min"] is not None else "-")
        con.print(g)
    if per_problem:
        p = table("problem", "n", "score", "95% CI", "at best", "pass@1", "min", "max", "std",
                  title=f"{label} per problem",
                  right=("n", "score", "at best", "pass@1", "min", "max", "std"))
        for row in q["problems"]:
            p.add_row(row["problem"].split("/", 1)[-1], str(row["n"]), score(row["score"]),
                      score_ci(row["score_ci95"]), pct(row["at_best"]), pct(row["pass@1"]),
                      score(row["min"]), score(row["max"]), score(row.get("std")))
        con.print(p)


def score_ci(ci: list[float] | None) -> str:
    return f"[{score(ci[0])}, {score(ci[1])}]" if ci else "-"



def _render_qa(con: Any, s: dict[str, Any], per_problem: bool) -> None:
    q = s["qa"]
    h, r = q["headline"], q["runs"]
    t = table("metric", "value", "95% CI", "notes", title="headline (Q&A mode)", right=("value",))
    t.add_row("Q&A accuracy", pct(h["accuracy"]), ci_text(h["accuracy_ci95"]),
              "items fully correct; mean over problems; CI by bootstrap over problems")
    t.add_row("run-to-run mean", pct(r["mean"]), ci_text(r["ci95"]), f"{len(r['runs'])} runs; CI by bootstrap over runs")
    t.add_row("run-to-run std", pct(r["std"], 2), "-", f"min {pct(r['min'])}, max {pct(r['max'])}")
    for kind, row in q["by_kind"].items():
        t.add_row(f"{kind} items", pct(row["accuracy"]), "-", f"{row['items']} answers")
    con.print(t)
    v = table("verdict", "answers", "share", title="Q&A verdicts", right=("answers", "share"))
    total = sum(q["verdicts"].values()) or 1
    for name, n in q["verdicts"].items():
        v.add_row(verdict_label(name), str(n), pct(n / total))
    con.print(v)
    for key, title in (("by_tier", "Q&A by tier"), ("by_family", "Q&A by family")):
        if key == "by_tier" and len(q.get(key) or {}) < 2:
            continue
        g = table(title.split()[-1], "problems", "accuracy", "run std", title=title, right=("problems", "accuracy", "run std"))
        for name, row in q[key].items():
            g.add_row(name, str(row["problems"]), pct(row["pass@1"]), pct(row["spread"]["std"], 2))
        con.print(g)
    if per_problem:
        p = table("problem", "family", "n", "accuracy", "weakest field", title="Q&A per problem", right=("n", "accuracy"))
        for row in q["problems"]:
            fields = row.get("fields") or {}
            weak = min(fields, key=fields.get) if fields else None
            p.add_row(row["problem"].split("/", 1)[-1], row["family"], str(row["n"]), pct(row["accuracy"]),
                      f"{weak} ({pct(fields[weak])})" if weak else "-")
        con.print(p)


def _render_gap(con: Any, gap: dict[str, Any], per_problem: bool) -> None:
    _render_one_gap(con, gap, per_problem, heading="reasoning vs code", qa="Q&A accuracy", code="code pass@1",
                    keys=("qa_accuracy", "code_pass@1"), value=pct, diff=lambda d: f"{100 * d:+.1f}",
                    unit=" points", columns=("Q&A", "code"), title="reasoning vs code per problem")
    if gap.get("search"):
        _render_one_gap(con, gap["search"], per_problem, heading="reasoning vs code, search problems",
                        qa="Q&A score", code="code score", keys=("qa_score", "code_score"), value=score,
                        diff=lambda d: f"{d:+.3f}", unit="", columns=("Q&A score", "code score"),
                        title="reasoning vs code per search problem")


def _render_one_gap(con: Any, gap: dict[str, Any], per_problem: bool, *, heading: str, qa: str, code: str,
                    keys: tuple[str, str], value: Any, diff: Any, unit: str, columns: tuple[str, str],
                    title: str) -> None:
    """One mode gap: pass rates (percentage points) or search scores (score units), same layout."""
    ci = gap["gap_ci95"]
    head = "-" if gap["gap"] is None else diff(gap["gap"]) + unit
    con.print(f"[bold]{heading}[/bold]: {qa} {value(gap[keys[0]])} - {code} {value(gap[keys[1]])} = {head}"
              + (f" (95% paired bootstrap CI over {gap['problems']} problems [{diff(ci[0])}, {diff(ci[1])}])"
                 if ci else "")
              + f"; Q&A better on {len(gap['qa_wins'])}, code better on {len(gap['code_wins'])}, "
              f"tied on {len(gap['ties'])}")
    if per_problem and gap["rows"]:
        t = table("problem", *columns, "gap", title=title, right=(*columns, "gap"))
        for row in sorted(gap["rows"], key=lambda r: -r["gap"]):
            t.add_row(row["problem"].split("/", 1)[-1], value(row["qa"]), value(row["code"]), diff(row["gap"]))
        con.print(t)


def _render_revision(con: Any, s: dict[str, Any]) -> None:
    for mode, rev in (s.get("revision") or {}).items():
        if not rev:
            continue
        metric = "pass@1" if mode == "code" else "accuracy"
        t = table("round", metric, "95% CI", "change", "change CI", "fixed", "broken", "stayed pass", "stayed fail",
                  "run std", title=f"self-revision ({mode} mode, feedback: {s['run'].get('feedback')})",
                  right=(metric, "change", "fixed", "broken", "stayed pass", "stayed fail", "run std"))
        for row in rev["rounds"]:
            tr = row["transitions"]
            cci = row["change_ci95"]
            t.add_row(str(row["round"]), pct(row["rate"]), ci_text(row["rate_ci95"]),
                      "-" if row["round"] == 0 else f"{100 * row['change']:+.1f}" if row["change"] is not None else "-",
                      f"[{100 * cci[0]:+.1f}, {100 * cci[1]:+.1f}]" if cci else "-",
                      *(str(tr.get(k, "-")) if tr else "-" for k in ("fixed", "broken", "stayed passing", "stayed failing")),
                      pct(row["runs"]["std"], 2))
        con.print(t)
        if any(row.get("search") for row in rev["rounds"]):
            t = table("round", "search score", "95% CI", "change", "change CI",
                      title=f"self-revision, search problems ({mode} mode): mean score over problems",
                      right=("search score", "change"))
            for row in rev["rounds"]:
                sc = row.get("search") or {}
                cci = sc.get("change_ci95")
                t.add_row(str(row["round"]), score(sc.get("score")), score_ci(sc.get("score_ci95")),
                          "-" if row["round"] == 0 or sc.get("change") is None else f"{sc['change']:+.3f}",
                          f"[{cci[0]:+.3f}, {cci[1]:+.3f}]" if cci else "-")
            con.print(t)
        if rev.get("overall"):
            con.print(f"revision {rev['overall']} ({mode} mode: {metric} after the last round vs round 0)")
