"""``python -m grader report | audit | compare``: everything from run directories alone."""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path
from typing import Any

from .common import dump_json
from ..console import console, table
from ..results.render import pct, verdict_label


def register(sub: argparse._SubParsersAction, formatter: type) -> None:
    p = sub.add_parser("report", help="recompute every statistic of a run directory (no model, no Docker)",
                       formatter_class=formatter,
                       description="Recompute the summary of a run from its manifest and journal alone. With "
                       "several runs (one model each), a leaderboard: code pass@1, Q&A accuracy and their gap, each "
                       "with its CI, the run-to-run spread, and a family-by-model heat map. A leaderboard never mixes "
                       "instance seeds: runs drawn from different seeds are refused (report each seed's runs apart).",
                       epilog="examples:\n  python -m grader report runs/<run>\n"
                       "  python -m grader report runs/<run> --html report.html\n"
                       "  python -m grader report runs/<run> --json summary.json\n"
                       "  python -m grader report runs/<a> runs/<b> runs/<c> --html leaderboard.html")
    p.add_argument("run", nargs="+", metavar="RUN", help="run directory (several: a leaderboard)")
    p.add_argument("--html", metavar="FILE", help="write a self-contained HTML report (several runs: the leaderboard)")
    p.add_argument("--json", metavar="FILE", nargs="?", const="-",
                   help="write the summary (several runs: the leaderboard) as JSON (stdout: -)")
    p.add_argument("--no-problems", action="store_true", help="omit the per-problem table")
    p.set_defaults(handler=cmd_report)

    p = sub.add_parser("audit", help="why each failing sample failed, field by field", formatter_class=formatter,
                       description="Show each failing sample: the problem, the extracted code with line numbers, the "
                       "verdict and its reason, the failing vectors field by field (inputs, expected, got, ratio, "
                       "relative error), the traceback or output tail and the resources used. With --group, cluster "
                       "failures across samples (and runs) by signature.",
                       epilog="examples:\n  python -m grader audit runs/<run>\n"
                       "  python -m grader audit runs/<run> --problem f4-gemm-dram-traffic --verdict wrong_answer\n"
                       "  python -m grader audit runs/<a> runs/<b> --group")
    p.add_argument("runs", nargs="+", metavar="RUN", help="run directory (several with --group)")
    p.add_argument("--problem", action="append", metavar="ID", help="only these problems (id or pack/id)")
    p.add_argument("--sample", action="append", type=int, metavar="N", help="only these sample indices")
    p.add_argument("--verdict", action="append", metavar="V", help="only these verdicts (e.g. wrong_answer, timeout)")
    p.add_argument("--limit", type=int, default=20, help="at most this many samples (or clusters) (default 20)")
    p.add_argument("--group", action="store_true", help="cluster failures by signature")
    p.add_argument("--no-code", action="store_true", help="do not print the code")
    p.add_argument("--json", action="store_true", help="print records as JSON")
    p.set_defaults(handler=cmd_audit)

    p = sub.add_parser("compare", help="paired comparison of two runs, or of two rounds of one run",
                       formatter_class=formatter,
                       description="Compare two runs (or two revision rounds of one run) over the problems and "
                       "samples both contain: the difference in pass@1 (B - A; Q&A accuracy with --mode qa) with a "
                       "paired bootstrap confidence interval over problems, and per-problem wins and losses. Warns "
                       "when the runs used different pack contents; refuses runs drawn from different instance "
                       "seeds (their samples answered different instances).",
                       epilog="examples:\n  python -m grader compare runs/<a> runs/<b>\n"
                       "  python -m grader compare runs/<a> --round-a 0 --round-b 2     # what revision changed\n"
                       "  python -m grader compare runs/<a> runs/<b> --mode qa")
    p.add_argument("run_a")
    p.add_argument("run_b", nargs="?", help="the second run (default: run_a itself, to compare two of its rounds)")
    p.add_argument("--round-a", type=int, default=0, metavar="R",
                   help="compare run A as it stood after round R (default 0: the one-shot answers)")
    p.add_argument("--round-b", type=int, default=None, metavar="R",
                   help="compare run B after round R (default 0, or the last round when B is A itself)")
    p.add_argument("--mode", choices=["code", "qa"], help="which mode to compare (default: code when both have it)")
    p.add_argument("--json", action="store_true", help="print the comparison as JSON")
    p.set_defaults(handler=cmd_compare)


# ------------------------------------------------------------------------------------------
# report
# ------------------------------------------------------------------------------------------

def cmd_report(args: argparse.Namespace) -> int:
    from ..results.render import render_summary
    from ..results.summary import load_run, run_summary

    runs = args.run if isinstance(args.run, list) else [args.run]
    if len(runs) > 1:
        return _report_leaderboard(args, [run_summary(load_run(Path(r))) for r in runs])
    run = runs[0]
    loaded = load_run(Path(run))
    summary = run_summary(loaded)
    if args.json == "-":
        dump_json(summary)
    else:
        render_summary(summary, per_problem=not args.no_problems)
        if args.json:
            Path(args.json).write_text(json.dumps(summary, indent=2) + "\n")
    if args.html:
        from ..results.html_report import failing_samples, render_html

        Path(args.html).write_text(render_html(summary, failing_samples(Path(run))), encoding="utf-8")
        console(stderr=True).print(f"wrote {args.html}")
    return 0


def _report_leaderboard(args: argparse.Namespace, summaries: list[dict[str, Any]]) -> int:
    from ..results.leaderboard import build_leaderboard, render_leaderboard

    board = build_leaderboard(summaries)
    if args.json == "-":
        dump_json(board)
    else:
        render_leaderboard(board)
        if args.json:
            Path(args.json).write_text(json.dumps(board, indent=2) + "\n")
    if args.html:
        from ..results.leaderboard import render_leaderboard_html

        Path(args.html).write_text(render_leaderboard_html(board), encoding="utf-8")
        console(stderr=True).print(f"wrote {args.html}")
    return 0


# ------------------------------------------------------------------------------------------
# audit
# ------------------------------------------------------------------------------------------

def audit_records(run_path: Path, args: argparse.Namespace) -> list[dict[str, Any]]:
    """Failing samples of one run, filtered as the command line asks."""
    from ..results.summary import failing_records

    return failing_records(run_path, args.problem, args.sample, args.verdict)


def _print_sample(r: dict[str, Any], show_code: bool) -> None:
    con = console()
    what = f"{r['problem']}" + (f" {r['item']}" if r.get("item") else "") + f" #{r['sample']}"
    mode = r.get("mode", "code")
    con.rule(f"{what}  [bold red]{verdict_label(r['verdict'])}[/bold red]"
             + (" (Q&A)" if mode == "qa" else "") + (f" after round {r['round']}" if r.get("round") else ""))
    con.print(f"[bold]{r['title']}[/bold]  (run {r['run']}, model {r['model']})")
    history = r.get("rounds") or []
    if len(history) > 1:
        for h in history:
            _print_round(con, r, h, show_code, mode)
        return
    con.print(f"reason: {r['reason']}")
    if r["signature"]:
        con.print(f"signature: {r['signature']}")
    _print_body(con, r, r["grade"], r.get("code"), r.get("answer"), r.get("text"), r.get("extraction"), show_code, mode)


def _print_round(con, r: dict[str, Any], h: dict[str, Any], show_code: bool, mode: str) -> None:
    con.print(f"[bold]round {h['round']}[/bold]: {verdict_label(h['verdict'] or '-')}  {h['reason']}")
    if h.get("grade"):
        _print_body(con, r, h["grade"], h.get("code"), h.get("answer"), h.get("text"), None, show_code, mode)
    if h.get("feedback"):
        con.print("feedback given after this round:")
        con.print(h["feedback"].rstrip(), markup=False, highlight=False)


def _print_body(con, r: dict[str, Any], g: dict[str, Any], code: str | None, answer: Any, text: str | None,
                extraction: dict | None, show_code: bool, mode: str) -> None:
    from rich.syntax import Syntax

    if mode == "qa":
        if show_code and text:
            reasoning = text if len(text) <= 3000 else text[:1500] + "\n[...]\n" + text[-1500:]
            con.print("reasoning (the model's reply):")
            con.print(reasoning.rstrip(), markup=False, highlight=False)
        if answer is not None:
            con.print("answer (JSON): " + json.dumps(answer)[:2000], markup=False, highlight=False)
        else:
            con.print(f"(no answer extracted: {(extraction or {}).get('reason', g.get('reason', ''))})")
    elif show_code:
        if code:
            con.print(Syntax(code, "python", line_numbers=True, word_wrap=True,
                             theme="ansi_light" if con.is_terminal else "default"))
        else:
            con.print(f"(no code extracted: {(extraction or {}).get('reason', 'no code')})")
    for f in g.get("failures") or []:
        head = f"{'item' if mode == 'qa' else 'vector'} {f['vector']}"
        if f.get("inputs"):
            head += f"  inputs {f['inputs'][:300]}"
        con.print(head)
        if f.get("diffs"):
            t = table("field", "expected", "got", "ratio", "rel. error", "note", right=("ratio", "rel. error"))
            for d in f["diffs"]:
                t.add_row(d["path"] or "(result)", _short(d.get("expected")), _short(d.get("got")),
                          "-" if d.get("ratio") is None else f"{d['ratio']:.6g}",
                          "-" if d.get("rel_err") is None else f"{d['rel_err']:.3g}",
                          d.get("note") or ("missing" if d["kind"] == "missing" else "extra" if d["kind"] == "extra" else ""))
            con.print(t)
        if f.get("error_type"):
            con.print(f"  {f['error_type']}: {f.get('error_message', '')}")
            if f.get("traceback"):
                con.print(f.get("traceback").rstrip(), markup=False, highlight=False)
    if g.get("instances"):
        _print_instances(con, r, g["instances"])
    if mode == "qa":
        return
    if g.get("output_tail"):
        con.print("output (tail):")
        con.print(g["output_tail"][-1500:].rstrip(), markup=False, highlight=False)
    rss = f"{g['max_rss_kb'] / 1024:.1f} MiB" if g.get("max_rss_kb") else "-"
    con.print(f"resources: cpu {g.get('cpu_s', 0):.3f}s, wall {g.get('wall_s', 0):.3f}s, peak memory {rss}"
              + (f", stopped by {g['stop_reason']}: {g.get('stop_detail', '')}" if g.get("stop_reason") else "")
              + f"; vectors passed {g.get('vectors_passed', 0)}/{g.get('vectors_total', 0)}")


def _print_instances(con, r: dict[str, Any], instances: list[dict[str, Any]]) -> None:
    """A search problem's sample: every instance's objective against the best known, then the
    worst instance's returned mapping beside the best known one."""
    t = table("instance", "objective", "best known", "score", "at best", "note", right=("objective", "best known", "score"))
    for i in instances:
        note = i.get("invalid") or i.get("error") or ("new best known" if i.get("new_best") else "")
        t.add_row(i["vector"], "-" if i.get("objective") is None else f"{i['objective']:.6g}",
                  f"{i['best']:.6g}" + ("" if i.get("proven") else " (not proven)"), f"{i['score']:.3f}",
                  "yes" if i.get("at_best") else "no", note[:80])
    con.print(t)
    shown = [i for i in instances if i.get("mapping")]
    if not shown:
        return
    worst = min(shown, key=lambda i: i["score"])
    con.print(f"returned mapping on {worst['vector']} (score {worst['score']:.3f}):")
    con.print(worst["mapping"], markup=False, highlight=False)
    best = _best_known_mapping(r, worst["vector"])
    con.print(f"best known mapping on {worst['vector']}:" if best else
              "best known mapping: not shown (the problem changed since the run, or its vectors cannot be made here)")
    if best:
        con.print(best, markup=False, highlight=False)


def _best_known_mapping(r: dict[str, Any], vector: str) -> str:
    """The best known mapping of a hidden instance, from the problem's vectors as the run graded
    them (same content hash and instance seed); "" when they cannot be had."""
    from ..errors import GraderError
    from ..packs import vectors
    from ..packs.problems import Catalog

    try:
        p = Catalog().find(r["problem"])
        if p.content_hash != r.get("content_hash"):
            return ""
        vs = vectors.load(p, instance_seed=r.get("instance_seed"))
    except (GraderError, OSError):
        return ""
    if r.get("mode") == "qa":  # a Q&A item: its instance is drawn again (the search's result is cached)
        from ..packs.qa import qa_items

        if not vector[1:].isdigit() or p.data.qa is None:
            return ""
        items = qa_items(p, vs.hidden, int(vector[1:]) + 1, instance_seed=r.get("instance_seed"))
        return next((str(it.expected.get("mapping", "")) for it in items if it.id == vector), "")
    v = next((v for v in vs.hidden if v.id == vector), None)
    return str(v.expected.get("mapping", "")) if v is not None else ""


def _short(v: Any, n: int = 60) -> str:
    text = json.dumps(v) if not isinstance(v, str) else v
    return text if len(text) <= n else text[: n - 3] + "..."


def group_failures(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Clusters of failing samples sharing a signature, largest first."""
    clusters: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in records:
        clusters[r["signature"] or r["verdict"]].append(r)
    out = []
    for sig, members in clusters.items():
        rep = members[0]
        out.append({
            "signature": sig, "count": len(members),
            "problems": sorted({m["problem"] for m in members}),
            "models": sorted({m["model"] for m in members}),
            "tiers": {t: sum(m.get("tier") == t for m in members) for t in sorted({m.get("tier", "") for m in members})},
            "modes": sorted({m.get("mode", "code") for m in members}),
            "representative": {"run": rep["run"], "problem": rep["problem"], "sample": rep["sample"],
                               "reason": rep["reason"]},
        })
    out.sort(key=lambda c: (-c["count"], c["signature"]))
    return out


def cmd_audit(args: argparse.Namespace) -> int:
    records: list[dict[str, Any]] = []
    for run in args.runs:
        records.extend(audit_records(Path(run), args))
    con = console()
    if args.group:
        clusters = group_failures(records)
        if args.json:
            dump_json(clusters[: args.limit])
            return 0
        t = table("count", "signature", "problems", "tiers", "models", "representative", title="failure signatures",
                  right=("count",))
        for c in clusters[: args.limit]:
            rep = c["representative"]
            t.add_row(str(c["count"]), c["signature"], ", ".join(p.split("/", 1)[-1] for p in c["problems"][:6])
                      + (f" (+{len(c['problems']) - 6})" if len(c["problems"]) > 6 else ""),
                      ", ".join(f"{t} {n}" for t, n in c["tiers"].items() if t),
                      ", ".join(c["models"]), f"{rep['problem'].split('/', 1)[-1]}#{rep['sample']}")
        con.print(t)
        con.print(f"{len(records)} failing samples in {len(clusters)} clusters")
        return 0
    if args.json:
        dump_json(records[: args.limit])
        return 0
    if not records:
        con.print("no failing sample matches")
        return 0
    for r in records[: args.limit]:
        _print_sample(r, not args.no_code)
    if len(records) > args.limit:
        con.print(f"... {len(records) - args.limit} more (raise --limit)")
    return 0


# ------------------------------------------------------------------------------------------
# compare
# ------------------------------------------------------------------------------------------

def _outcomes(loaded, mode: str, round_: int) -> list:
    """The outcomes of one mode of a run as it stood after a round."""
    from ..errors import ConfigError

    if round_ < 0 or round_ >= loaded.manifest.rounds:
        raise ConfigError(f"run {loaded.manifest.run_id} has rounds 0 to {loaded.manifest.rounds - 1}, not {round_}")
    if round_ == 0 or loaded.manifest.rounds == 1:
        return loaded.outcomes if mode == "code" else loaded.qa_outcomes
    return loaded.after.get(mode, {}).get(round_, [])


def _state(outs: list) -> dict[tuple[str, str, int], bool]:
    """(problem, item, sample) -> passed, over the counted outcomes."""
    return {(o.problem, o.item, o.sample): o.passed for o in outs if o.counted}


def _paired(pa: dict[tuple[str, str, int], float], pb: dict[tuple[str, str, int], float]) -> dict[str, Any]:
    """Per problem the mean of A and of B over their shared samples and B - A; overall the mean
    over problems of each and of the difference, with a 95% paired bootstrap CI over problems."""
    import numpy as np

    from ..results.stats import paired_bootstrap_ci

    shared = sorted(set(pa) & set(pb))
    by_problem: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for key in shared:
        by_problem[key[0]].append((float(pa[key]), float(pb[key])))
    rows = []
    for pid in sorted(by_problem):
        pairs = by_problem[pid]
        ra = sum(x for x, _ in pairs) / len(pairs)
        rb = sum(y for _, y in pairs) / len(pairs)
        rows.append({"problem": pid, "n": len(pairs), "a": ra, "b": rb, "diff": rb - ra,
                     "result": "b better" if rb > ra else "a better" if ra > rb else "tie"})
    diffs = np.array([r["diff"] for r in rows], dtype=float)
    paired = paired_bootstrap_ci(diffs)
    return {
        "shared_problems": len(rows), "shared_samples": len(shared),
        "a": float(np.mean([r["a"] for r in rows])) if rows else None,
        "b": float(np.mean([r["b"] for r in rows])) if rows else None,
        "diff": float(diffs.mean()) if diffs.size else None, "diff_ci95": list(paired) if paired else None,
        "wins_b": sum(r["result"] == "b better" for r in rows),
        "wins_a": sum(r["result"] == "a better" for r in rows),
        "ties": sum(r["result"] == "tie" for r in rows),
        "problems": rows,
    }


def compare_runs(a_path: Path, b_path: Path | None = None, round_a: int = 0, round_b: int | None = None,
                 mode: str | None = None) -> dict[str, Any]:
    import numpy as np

    from ..errors import ConfigError
    from ..results.stats import score_state
    from ..results.summary import load_run

    a = load_run(a_path)
    b = a if b_path is None or Path(b_path).resolve() == Path(a_path).resolve() else load_run(b_path)
    same = b is a
    if round_b is None:
        round_b = a.manifest.rounds - 1 if same else 0
    if same and round_a == round_b:
        raise ConfigError("comparing a run with itself needs two different rounds (--round-a, --round-b)")
    if a.manifest.instance_seed != b.manifest.instance_seed:
        from ..packs.vectors import seed_words

        raise ConfigError(
            f"the runs were graded on different instances ({a.manifest.run_id}: {seed_words(a.manifest.instance_seed)}; "
            f"{b.manifest.run_id}: {seed_words(b.manifest.instance_seed)}): their samples do not pair; "
            "read each with report")
    shared_modes = [m for m in ("code", "qa") if m in a.manifest.modes and m in b.manifest.modes]
    if mode is None:
        if not shared_modes:
            raise ConfigError("the runs share no mode (one is code, the other Q&A)")
        mode = shared_modes[0]
    elif mode not in shared_modes:
        raise ConfigError(f"both runs need mode {mode} (they have {a.manifest.modes} and {b.manifest.modes})")
    warnings = []
    if a.manifest.pack != b.manifest.pack:
        warnings.append(f"the runs used different pack contents: {a.manifest.pack} vs {b.manifest.pack}")
    ha = {p.id: p.content_hash for p in a.manifest.problems}
    hb = {p.id: p.content_hash for p in b.manifest.problems}
    changed = sorted(pid for pid in set(ha) & set(hb) if ha[pid] != hb[pid])
    if changed:
        warnings.append(f"{len(changed)} shared problem(s) differ in content: {', '.join(changed[:5])}")
    oa, ob = _outcomes(a, mode, round_a), _outcomes(b, mode, round_b)
    p = _paired(_state(oa), _state(ob))
    out = {
        "a": {"run": a.manifest.run_id, "model": a.manifest.model, "round": round_a},
        "b": {"run": b.manifest.run_id, "model": b.manifest.model, "round": round_b},
        "instance_seed": a.manifest.instance_seed,
        "mode": mode, "metric": "pass@1" if mode == "code" else "Q&A accuracy",
        "shared_problems": p["shared_problems"], "shared_samples": p["shared_samples"],
        "pass1_a": p["a"], "pass1_b": p["b"], "diff": p["diff"], "diff_ci95": p["diff_ci95"],
        "wins_b": p["wins_b"], "wins_a": p["wins_a"], "ties": p["ties"],
        "problems": p["problems"], "warnings": warnings,
    }
    sa, sb = score_state(oa), score_state(ob)  # search problems: code samples or Q&A items, scored
    if set(sa) & set(sb):
        out["search"] = _paired(sa, sb)
    return out


def cmd_compare(args: argparse.Namespace) -> int:
    c = compare_runs(Path(args.run_a), Path(args.run_b) if args.run_b else None, args.round_a, args.round_b,
                     args.mode)
    if args.json:
        dump_json(c)
        return 0
    con = console()
    err = console(stderr=True)
    for w in c["warnings"]:
        err.print(f"[bold yellow]warning:[/bold yellow] {w}")

    def rnd(side: str) -> str:
        return f", after round {c[side]['round']}" if c["a"]["run"] == c["b"]["run"] or c[side]["round"] else ""

    con.print(f"A: {c['a']['run']} ({c['a']['model']}{rnd('a')})\nB: {c['b']['run']} ({c['b']['model']}{rnd('b')})")
    con.print(f"{c['shared_problems']} shared problems, {c['shared_samples']} shared samples")
    ci = c["diff_ci95"]
    diff = "-" if c["diff"] is None else f"{100 * c['diff']:+.1f} points"
    con.print(f"{c['metric']} ({c['mode']} mode)  A {pct(c['pass1_a'])}  B {pct(c['pass1_b'])}  B - A = {diff}"
              + (f"  (95% paired bootstrap CI [{100 * ci[0]:+.1f}, {100 * ci[1]:+.1f}])" if ci else ""))
    con.print(f"per problem: B better on {c['wins_b']}, A better on {c['wins_a']}, tied on {c['ties']}")
    t = table("problem", "n", "A", "B", "B - A", right=("n", "A", "B", "B - A"))
    for r in sorted(c["problems"], key=lambda r: r["diff"]):
        t.add_row(r["problem"].split("/", 1)[-1], str(r["n"]), pct(r["a"]), pct(r["b"]), f"{100 * r['diff']:+.1f}")
    con.print(t)
    if c.get("search"):
        _print_score_compare(con, c["search"], "search" if c["mode"] == "code" else "Q&A search")
    return 0


def _print_score_compare(con: Any, q: dict[str, Any], label: str = "search") -> None:
    """Search problems: the mean score of A and of B, B - A with its paired bootstrap CI, per problem."""
    def sc(x: float | None) -> str:
        return "-" if x is None else f"{x:.3f}"

    def signed(x: float) -> str:
        return f"{x:+.3f}"

    ci = q["diff_ci95"]
    con.print(f"{label} score ({q['shared_problems']} search problems, {q['shared_samples']} shared samples)  "
              f"A {sc(q['a'])}  B {sc(q['b'])}  B - A = {signed(q['diff']) if q['diff'] is not None else '-'}"
              + (f"  (95% paired bootstrap CI [{signed(ci[0])}, {signed(ci[1])}])" if ci else ""))
    con.print(f"{label} per problem: B better on {q['wins_b']}, A better on {q['wins_a']}, tied on {q['ties']}")
    t = table("problem", "n", "A score", "B score", "B - A", title=f"{label} score per problem",
              right=("n", "A score", "B score", "B - A"))
    for r in sorted(q["problems"], key=lambda r: r["diff"]):
        t.add_row(r["problem"].split("/", 1)[-1], str(r["n"]), sc(r["a"]), sc(r["b"]), signed(r["diff"]))
    con.print(t)
