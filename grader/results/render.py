"""Terminal rendering of a run summary (the dict of :func:`grader.results.run_summary`)."""

from __future__ import annotations

from typing import Any

from ..console import console, table
from ..grading.scoring import VERDICT_LABELS, Verdict


def pct(x: float | None, digits: int = 1) -> str:
    return "-" if x is None else f"{100 * x:.{digits}f}%"


def ci_text(ci: list[float] | None) -> str:
    return "-" if not ci else f"[{pct(ci[0])}, {pct(ci[1])}]"


def verdict_label(v: str) -> str:
    try:
        return VERDICT_LABELS[Verdict(v)]
    except ValueError:
        return v


def render_summary(s: dict[str, Any], *, per_problem: bool = True) -> None:
    con = console()
    run = s["run"]
    h = s["headline"]
    r = s["runs"]
    if run.get("notice"):
        con.print(f"[bold yellow]NOTE:[/bold yellow] {run['notice']}")
    packs = ", ".join(f"{k} {v.get('version')} ({str(v.get('hash'))[:12]})" for k, v in run["pack"].items())
    con.print(f"[bold]run[/bold] {run['id']}  model [bold]{run['model']}[/bold] ({run['source']})  pack {packs}")
    con.print(f"{run['problems']} problems x {run['samples_per_problem']} samples; "
              f"{s['samples']['counted']} graded samples counted"
              + (f", {s['samples']['infra_excluded']} excluded (infrastructure errors)" if s['samples']['infra_excluded'] else "")
              + (f", {run['ungraded']} not graded yet (resume the run)" if run.get("ungraded") else "")
              + (f", {run['generation_failures']} completion request(s) failed" if run.get("generation_failures") else ""))

    t = table("metric", "value", "95% CI", "notes", title="headline", right=("value",))
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

    for key, title in (("by_difficulty", "by difficulty"), ("by_family", "by family")):
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
