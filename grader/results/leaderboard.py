"""Several runs side by side: a leaderboard (one row per run and model) and a family-by-model heat map.

Built from run summaries alone (the dicts of :func:`grader.results.summary.run_summary`), so it
needs nothing but the run directories. Each row carries the run's code pass@1 with its CI, its Q&A
accuracy with its CI and the reasoning-vs-code gap with its CI (``None`` where the run lacks the
mode), the run-to-run spread and, for revised runs, the change over the revision rounds. Rows are
ordered by code pass@1, then runs without code mode by Q&A accuracy. The heat map has a row per
family (and per tier) and a column per run: code pass@1, or Q&A accuracy for a Q&A-only run; a
second map holds the Q&A accuracy of every run that has it. Warnings say when the runs used
different pack contents (the same pack name with different content hashes) or are incomplete;
notes say when they cover different problems or packs.

A board never mixes instance seeds: runs drawn from different seeds (the release's and a private
one, or two private ones) answered different questions, so :func:`build_leaderboard` refuses
them with a :class:`~grader.errors.ConfigError` naming each seed's runs; report each seed's runs
on a board of their own.
"""

from __future__ import annotations

from typing import Any

from ..errors import ConfigError
from ..packs.vectors import seed_label, seed_words
from .render import ci_text, pct
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
        "code": code, "qa": qa, "gap": gap, "revision": revision,
        "cost": {"usd": cost.get("usd") or 0.0,
                 "tokens": (cost.get("prompt_tokens") or 0) + (cost.get("completion_tokens") or 0),
                 "calls": cost.get("calls") or 0},
    }


def _rank_key(row: dict[str, Any]) -> tuple:
    if row["code"] is not None:
        v = row["code"]["pass@1"]
        return (0, v is None, -(v or 0.0), -((row["qa"] or {}).get("accuracy") or 0.0), row["index"])
    v = (row["qa"] or {}).get("accuracy")
    return (1, v is None, -(v or 0.0), 0.0, row["index"])


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
    order = sorted(range(len(rows)), key=lambda i: _rank_key(rows[i]))
    ranked = [rows[i] for i in order]
    for rank, row in enumerate(ranked, 1):
        row["rank"] = rank
    ordered = [summaries[i] for i in order]
    warnings, notes = _warnings(summaries)
    has_qa = any(r["qa"] is not None for r in ranked)
    return {
        "instance_seed": seed,
        "runs": ranked,
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


def _points(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:+.1f}"


def _with_ci(v: float | None, ci: list[float] | None) -> str:
    return pct(v) + (f" [{100 * ci[0]:.1f},{100 * ci[1]:.1f}]" if ci else "")


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
    t = table("#", "model", "run", "code pass@1 [95% CI]", "Q&A acc. [95% CI]", "gap [95% CI]", "run std",
              title=f"leaderboard (instance seed {seed_label(board.get('instance_seed'))})", right=("#", "code pass@1 [95% CI]", "Q&A acc. [95% CI]", "gap [95% CI]", "run std"))
    for r in board.get("runs") or []:
        code, qa, gap = r.get("code"), r.get("qa"), r.get("gap")
        spread = (code or qa or {}).get("runs") or {}
        t.add_row(str(r.get("rank")), escape(str(r.get("model"))), escape(str(r.get("run"))),
                  _with_ci(code["pass@1"], code["ci95"]) if code else "-",
                  _with_ci(qa["accuracy"], qa["ci95"]) if qa else "-",
                  (f"{_points(gap['gap'])} " + (f"[{_points(gap['ci95'][0])},{_points(gap['ci95'][1])}]"
                                                if gap.get("ci95") else "")).strip() if gap else "-",
                  pct(spread.get("std"), 2))
    con.print(t)


# ------------------------------------------------------------------------------------------
# the page
# ------------------------------------------------------------------------------------------

def _metric_cell(v: float | None, ci: list[float] | None, cls: str = "") -> str:
    from .html_report import _num_v, ci_svg, esc

    if v is None and not ci:
        return '<td class="num" data-v="">-</td>'
    return (f'<td class="num" data-v="{_num_v(v)}"><span class="strong big">{esc(pct(v))}</span> '
            f'{ci_svg(v, ci, 90, cls)}<span class="sub2">95% CI {esc(ci_text(ci))}</span></td>')


def _board_table(board: dict[str, Any]) -> str:
    from .html_report import MODE_LABEL, SHORT_VERDICT, _num_v, _sort_head, esc, gap_svg, points, points_ci

    cols = [("rank", "#", "num", "num"), ("model", "model / run", "text", ""),
            ("code", "code pass@1", "num", "num"), ("qa", "Q&A accuracy", "num", "num"),
            ("gap", "gap (Q&A \u2212 code)", "num", "num"), ("std", "run-to-run spread", "num", "num"),
            ("revision", "revision", "text", ""), ("cost", "cost", "num", "num")]
    rows = []
    for i, r in enumerate(board.get("runs") or []):
        code, qa, gap = r.get("code"), r.get("qa"), r.get("gap")
        spread = []
        for mode, part in (("code", code), ("qa", qa)):
            sp = (part or {}).get("runs") or {}
            if part is not None:
                rng = f"{pct(sp.get('min'))}-{pct(sp.get('max'))}" if sp.get("min") is not None else "-"
                spread.append(f'<span class="sp">{esc(MODE_LABEL[mode])} std <b>{esc(pct(sp.get("std"), 2))}</b>'
                              f'<span class="sub2">range {esc(rng)}</span></span>')
        std0 = ((code or qa or {}).get("runs") or {}).get("std")
        rev = [(MODE_LABEL.get(m, m), v) for m, v in (r.get("revision") or {}).items()]
        rev_html = "".join(f'<span class="sp">{esc(m)} <b>{esc(points(v.get("final_change")))}</b>'
                           f'<span class="sub2">{esc(SHORT_VERDICT.get(v.get("overall") or "", v.get("overall") or "-"))}</span></span>'
                           for m, v in rev)
        rev_v = " ".join(f"{m} {points(v.get('final_change'))}" for m, v in rev)
        if gap is not None:
            gap_cell = (f'<td class="num" data-v="{_num_v(gap.get("gap"))}"><span class="strong">'
                        f'{esc(points(gap.get("gap")))}</span> {gap_svg(gap.get("gap"), 90)}'
                        f'<span class="sub2">95% CI {esc(points_ci(gap.get("ci95")))}</span></td>')
        else:
            gap_cell = '<td class="num" data-v="">-</td>'
        cost = r.get("cost") or {}
        about = (f'{esc(r.get("problems"))} problems &times; {esc(r.get("samples"))} samples &middot; '
                 f'{esc(" and ".join(MODE_LABEL.get(m, m) for m in r.get("modes") or []))}'
                 + (f' &middot; {esc(r.get("rounds"))} rounds' if (r.get("rounds") or 1) > 1 else ""))
        rows.append(
            f'<tr data-run="{esc(r.get("run"))}" data-i="{i}">'
            f'<td class="num rank" data-v="{esc(r.get("rank"))}">{esc(r.get("rank"))}</td>'
            f'<td class="model" data-v="{esc(r.get("model"))}"><span class="name">{esc(r.get("model"))}</span>'
            + (' <span class="tag">demo</span>' if r.get("source") == "demo" else "")
            + (' <span class="tag rev">incomplete</span>' if r.get("ungraded") else "")
            + f'<code class="rid">{esc(r.get("run"))}</code><span class="about">{about}</span></td>'
            + _metric_cell((code or {}).get("pass@1"), (code or {}).get("ci95"))
            + _metric_cell((qa or {}).get("accuracy"), (qa or {}).get("ci95"), "qa")
            + gap_cell
            + f'<td class="num" data-v="{_num_v(std0)}">{"".join(spread) or "-"}</td>'
            f'<td data-v="{esc(rev_v)}">{rev_html or "-"}</td>'
            f'<td class="num" data-v="{_num_v(cost.get("usd"))}">${esc(format(float(cost.get("usd") or 0), ".2f"))}'
            f'<span class="sub2">{esc(format(int(cost.get("tokens") or 0), ","))} tokens</span></td></tr>')
    return ('<section id="leaderboard"><h2>Leaderboard</h2>'
            '<p class="caption">One row per run. Ordered by code pass@1 (runs without code mode after them, by '
            'Q&amp;A accuracy); click a column header to sort. pass@1 and accuracy: mean over problems, 95% CI by '
            'bootstrap over problems (the dot and whisker on a 0-100% track); gap: Q&amp;A accuracy minus code '
            'pass@1 over the problems graded in both modes, with a paired bootstrap CI; spread: the standard '
            'deviation and range of the per-run rates (run <i>i</i> = sample <i>i</i> of every problem); revision: '
            'the change from round 0 to the last round, in points.</p>'
            f'<div class="scroll"><table class="data board sortable" id="board"><thead><tr>{_sort_head(cols)}'
            f'</tr></thead><tbody>{"".join(rows)}</tbody></table></div></section>')


def _heat_table(board: dict[str, Any], which: str, tid: str) -> str:
    from .html_report import esc, heat_color

    maps = board["heatmap"][which]
    cols = board.get("runs") or []
    metric = [c.get("metric") for c in board.get("columns") or []]
    head = ['<th scope="col">family</th>']
    for j, r in enumerate(cols):
        tag = ""
        if which == "primary" and metric[j] == "accuracy":
            tag = ' <span class="tag qa" title="a Q&amp;A-only run: the cells are Q&amp;A accuracy">Q&amp;A</span>'
        head.append(f'<th scope="col" data-run="{esc(r.get("run"))}">{esc(r.get("model"))}{tag}'
                    f'<span class="rid">{esc(r.get("run"))}</span></th>')
    body = []
    for key, label in (("by_family", None), ("by_tier", "by tier")):
        groups = maps.get(key) or {}
        if not groups:
            continue
        if label:
            body.append(f'<tr class="grp"><th colspan="{len(cols) + 1}">{esc(label)}</th></tr>')
        for name, cells in groups.items():
            tds = []
            for j, c in enumerate(cells):
                what = "Q&A accuracy" if which == "qa" or metric[j] == "accuracy" else "pass@1"
                if c is None:
                    why = "not in this run" if which == "primary" or (cols[j].get("qa") is not None) else "no Q&A mode"
                    tds.append(f'<td class="none" data-v="" title="{esc(why)}">-</td>')
                    continue
                bg, fg = heat_color(c["value"])
                tip = f'{name}, {cols[j].get("model")} ({cols[j].get("run")}): {what} {pct(c["value"])}, ' \
                      f'{c.get("problems")} problem(s)'
                tds.append(f'<td data-v="{c["value"]!r}" style="background:{bg};color:{fg}" title="{esc(tip)}">'
                           f'{esc(pct(c["value"]))}</td>')
            body.append(f'<tr data-group="{esc(name)}" data-kind="{esc(key)}"><th scope="row">{esc(name)}</th>'
                        + "".join(tds) + "</tr>")
    legend = ('<div class="legend">0%' + "".join(
        f'<span class="sw" style="background:{heat_color(v / 4)[0]}"></span>' for v in range(5))
        + '100% <span class="muted">&middot; hatched: not in the run</span></div>')
    return (f'<div class="scroll"><table class="heat" id="{esc(tid)}"><thead><tr>{"".join(head)}</tr></thead>'
            f'<tbody>{"".join(body)}</tbody></table></div>{legend}')


def _board_runs(board: dict[str, Any]) -> str:
    from .html_report import esc

    rows = []
    for r in board.get("runs") or []:
        packs = ", ".join(f'{esc(k)} {esc((v or {}).get("version"))} <code title="{esc((v or {}).get("hash"))}">'
                          f'{esc(str((v or {}).get("hash"))[:12])}</code>' for k, v in (r.get("pack") or {}).items())
        rows.append(f'<tr><td class="num">{esc(r.get("rank"))}</td><td>{esc(r.get("model"))}</td>'
                    f'<td><code>{esc(r.get("run"))}</code></td><td>{esc(r.get("source"))}</td>'
                    f'<td>{packs or "-"}</td><td>{esc(r.get("grader_version"))}</td>'
                    f'<td>{esc(r.get("created") or "")}</td><td><code>{esc(r.get("path") or "")}</code></td></tr>')
    return ('<section id="provenance"><h2>Runs</h2><div class="scroll"><table class="data">'
            '<thead><tr><th class="num">#</th><th>model</th><th>run</th><th>source</th><th>pack</th><th>grader</th>'
            f'<th>created</th><th>run directory</th></tr></thead><tbody>{"".join(rows)}</tbody></table></div></section>')


def render_leaderboard_html(board: dict[str, Any]) -> str:
    """One self-contained HTML page: the leaderboard and the family-by-model heat maps."""
    from .html_report import esc, page_shell

    runs = board.get("runs") or []
    head = ['<header class="top"><div class="kicker">perfgrade &middot; leaderboard</div>',
            f'<h1>Leaderboard: {len(runs)} runs</h1>',
            '<p class="sub">' + ", ".join(f'{esc(r.get("model"))} <code>{esc(r.get("run"))}</code>' for r in runs)
            + "</p>"]
    for w in board.get("warnings") or []:
        head.append(f'<div class="notice warn" role="alert"><strong>Warning:</strong> {esc(w)}</div>')
    for n in board.get("notes") or []:
        head.append(f'<div class="notice" role="note"><strong>Note:</strong> {esc(n)}</div>')
    notices = {r.get("notice") for r in runs if r.get("notice")}
    for n in sorted(notices):
        head.append(f'<div class="notice" role="note"><strong>NOTE:</strong> {esc(n)}</div>')
    head.append("</header>")
    toc = [("leaderboard", "Leaderboard"), ("heatmap", "By family")]
    main = ["<main>", _board_table(board),
            '<section id="heatmap"><h2>By family</h2>'
            '<p class="caption">Rows: families, then tiers; columns: runs, in leaderboard order. A cell is the '
            'code pass@1 of the family in that run (Q&amp;A accuracy for a Q&amp;A-only run, marked Q&amp;A); '
            'darker is higher.</p>' + _heat_table(board, "primary", "heat") + "</section>"]
    if board["heatmap"].get("qa"):
        toc.append(("heatmap-qa", "By family (Q&amp;A)"))
        main.append('<section id="heatmap-qa"><h2>By family (Q&amp;A)</h2>'
                    '<p class="caption">The same map for Q&amp;A accuracy, for every run with Q&amp;A mode.</p>'
                    + _heat_table(board, "qa", "heat-qa") + "</section>")
    toc.append(("provenance", "Runs"))
    main += [_board_runs(board), "</main>"]
    footer = ("every figure is recomputed from the run directories by <code>python -m grader report RUN RUN ...</code>")
    return page_shell(f"perfgrade leaderboard: {len(runs)} runs", toc, ["".join(head), *main], footer, board,
                      wide=True)
