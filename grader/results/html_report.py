"""A run's results as one self-contained HTML page (the summary of ``report``, plus the failing samples).

The page holds everything inline: CSS, a little JS (table sorting, sample filters) and charts drawn
here as SVG. It loads nothing, so it renders the same offline, and a Content-Security-Policy
forbids every fetch and every script but its own two (pinned by hash). Every string that comes
from a run (model output above all) is escaped; the summary travels to the page as a JSON data
block with ``<``, ``>`` and ``&`` escaped, never as script.

Test hooks: the page sets ``data-ready="1"`` on ``<body>`` when its script has run and collects
script errors and policy violations into ``data-errors``; the fragment ``#sort=<column>`` (``-``
before the column for descending) sorts the per-problem table on load and ``#filter=<verdict>``
filters the failing samples.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
import math
import re
from pathlib import Path
from typing import Any

from .render import ci_text, pct, verdict_label
from .summary import failing_records

MAX_SAMPLES_SHOWN = 200
MAX_CODE_CHARS = 8_000
MAX_CODE_LINES = 250
MAX_TRACE_CHARS = 3_000
MAX_OUTPUT_CHARS = 1_500
MAX_VALUE_CHARS = 200
MAX_INPUT_CHARS = 600
MAX_DIFF_ROWS = 40

DIFFICULTY_ORDER = {"easy": 0, "medium": 1, "hard": 2}

VERDICT_COLORS = {
    "pass": "#1a7f37",
    "wrong_answer": "#cf222e",
    "wrong_type": "#bf3989",
    "runtime_error": "#d1490b",
    "timeout": "#8250df",
    "memory_limit": "#6639ba",
    "output_limit": "#3e4ab8",
    "load_error": "#a0361c",
    "missing_entry_point": "#8c6d4f",
    "no_code": "#6e7781",
    "crashed": "#424a53",
    "infra_error": "#a8b1bb",
}


# ------------------------------------------------------------------------------------------
# data
# ------------------------------------------------------------------------------------------

def failing_samples(run_path: Path) -> list[dict[str, Any]]:
    """Every sample of a run whose final verdict is not a pass, with what the page shows of it."""
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
        })
    return out


# ------------------------------------------------------------------------------------------
# small helpers
# ------------------------------------------------------------------------------------------

def esc(value: Any) -> str:
    """Escape anything for HTML text or a quoted attribute."""
    return html.escape("" if value is None else str(value), quote=True)


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"


def _clip_tail(text: str, limit: int) -> str:
    return text if len(text) <= limit else "\u2026" + text[-(limit - 1):]


def _finite(obj: Any) -> Any:
    """JSON-safe copy: non-finite floats become null (JSON.parse refuses NaN)."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {str(k): _finite(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_finite(v) for v in obj]
    return obj


def json_for_script(obj: Any) -> str:
    """JSON that is inert inside ``<script type="application/json">`` (no ``</script>``, no ``<!--``)."""
    text = json.dumps(_finite(obj), ensure_ascii=True, separators=(",", ":"), default=str)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _natural(s: str) -> list:
    return [(0, int(t), "") if t.isdigit() else (1, 0, t.lower()) for t in re.split(r"(\d+)", s) if t]


def _group_order(key: str, names: list[str]) -> list[str]:
    if key == "by_difficulty":
        return sorted(names, key=lambda n: (DIFFICULTY_ORDER.get(n, 9), n))
    return sorted(names, key=_natural)


def _num(x: float | None, fmt: str) -> str:
    return "-" if x is None else format(x, fmt)


def _value(v: Any) -> str:
    """A compared value as JSON (so "18" and 18 look different), clipped."""
    try:
        text = json.dumps(v, ensure_ascii=False, allow_nan=True)
    except (TypeError, ValueError):
        text = repr(v)
    return _clip(text, MAX_VALUE_CHARS)


def _color(verdict: str) -> str:
    return VERDICT_COLORS.get(verdict, "#57606a")


def _badge(verdict: str) -> str:
    return (f'<span class="badge" style="--c:{_color(verdict)}" data-verdict="{esc(verdict)}">'
            f"{esc(verdict_label(verdict))}</span>")


def _f(x: float) -> str:
    return f"{x:.1f}".rstrip("0").rstrip(".") if x != int(x) else str(int(x))


# ------------------------------------------------------------------------------------------
# charts (inline SVG)
# ------------------------------------------------------------------------------------------

def runs_chart(runs: dict[str, Any]) -> str:
    """Vertical bars of every run's pass rate, the mean as a dashed line, its 95% CI as a band."""
    rates = [r for r in runs.get("runs") or [] if r is not None]
    if not rates:
        return '<p class="muted">No graded samples yet.</p>'
    w, h = 960, 250
    ml, mr, mt, mb = 48, 110, 16, 34
    pw, ph = w - ml - mr, h - mt - mb

    def y(v: float) -> float:
        return mt + ph * (1 - max(0.0, min(1.0, v)))

    n = len(rates)
    band = pw / n
    bw = max(1.5, min(56.0, band * 0.68))
    out = [f'<svg class="chart runs" viewBox="0 0 {w} {h}" role="img" aria-labelledby="runs-t runs-d">',
           '<title id="runs-t">Pass rate of each run</title>',
           f'<desc id="runs-d">{n} runs; mean {esc(pct(runs.get("mean")))}</desc>']
    for t in (0, 0.25, 0.5, 0.75, 1.0):
        out.append(f'<line class="grid" x1="{ml}" x2="{ml + pw}" y1="{_f(y(t))}" y2="{_f(y(t))}"/>'
                   f'<text class="ax" x="{ml - 6}" y="{_f(y(t) + 4)}" text-anchor="end">{int(t * 100)}%</text>')
    ci = runs.get("ci95")
    if ci:
        out.append(f'<rect class="ci" x="{ml}" y="{_f(y(ci[1]))}" width="{pw}" height="{_f(max(0.5, y(ci[0]) - y(ci[1])))}">'
                   f'<title>{esc("95% CI of the mean " + ci_text(ci))}</title></rect>')
    step = max(1, math.ceil(n / 30))
    for i, v in enumerate(rates):
        x = ml + band * i + (band - bw) / 2
        top = y(v)
        out.append(f'<rect class="bar" x="{_f(x)}" y="{_f(top)}" width="{_f(bw)}" height="{_f(max(0.0, mt + ph - top))}">'
                   f'<title>{esc(f"run {i}: {pct(v)}")}</title></rect>')
        if n <= 24:
            out.append(f'<text class="val" x="{_f(x + bw / 2)}" y="{_f(top - 4)}" text-anchor="middle">{esc(pct(v))}</text>')
        if i % step == 0:
            out.append(f'<text class="ax" x="{_f(x + bw / 2)}" y="{mt + ph + 15}" text-anchor="middle">{i}</text>')
    out.append(f'<text class="ax" x="{ml + pw / 2:.1f}" y="{h - 3}" text-anchor="middle">run (sample index)</text>')
    mean = runs.get("mean")
    if mean is not None:
        ym = _f(y(mean))
        out.append(f'<line class="mean" x1="{ml}" x2="{ml + pw}" y1="{ym}" y2="{ym}"/>'
                   f'<text class="meanlabel" x="{ml + pw + 6}" y="{_f(y(mean) + 4)}">{esc("mean " + pct(mean))}</text>')
    out.append("</svg>")
    return "".join(out)


def _axis_svg(width: int = 300) -> str:
    """The 0-100% scale above a column of spread bars."""
    parts = [f'<svg class="scale" viewBox="0 0 {width} 14" width="{width}" height="14" aria-hidden="true">']
    for t in (0, 25, 50, 75, 100):
        x = 4 + (width - 8) * t / 100
        anchor = "start" if t == 0 else "end" if t == 100 else "middle"
        parts.append(f'<text x="{_f(x)}" y="11" text-anchor="{anchor}">{t}%</text>')
    parts.append("</svg>")
    return "".join(parts)


def spread_svg(p1: float | None, spread: dict[str, Any], width: int = 300) -> str:
    """A pass@1 bar with the run-to-run range as a whisker and each run as a dot."""
    h, pad = 22, 4
    pw = width - 2 * pad

    def x(v: float) -> float:
        return pad + pw * max(0.0, min(1.0, v))

    parts = [f'<svg class="spread" viewBox="0 0 {width} {h}" width="{width}" height="{h}" role="img">']
    tip = (f"pass@1 {pct(p1)}; run std {pct(spread.get('std'), 2)}; "
           f"run range {pct(spread.get('min'))} - {pct(spread.get('max'))}")
    parts.append(f"<title>{esc(tip)}</title>")
    for t in (0.25, 0.5, 0.75):
        parts.append(f'<line class="grid" x1="{_f(x(t))}" x2="{_f(x(t))}" y1="1" y2="{h - 1}"/>')
    parts.append(f'<rect class="track" x="{pad}" y="5" width="{pw}" height="12" rx="2"/>')
    if p1 is not None:
        parts.append(f'<rect class="bar" x="{pad}" y="5" width="{_f(max(0.0, x(p1) - pad))}" height="12" rx="2"/>')
    lo, hi = spread.get("min"), spread.get("max")
    if lo is not None and hi is not None:
        parts.append(f'<line class="whisker" x1="{_f(x(lo))}" x2="{_f(x(hi))}" y1="11" y2="11"/>'
                     f'<line class="whisker" x1="{_f(x(lo))}" x2="{_f(x(lo))}" y1="6" y2="16"/>'
                     f'<line class="whisker" x1="{_f(x(hi))}" x2="{_f(x(hi))}" y1="6" y2="16"/>')
    for r in spread.get("runs") or []:
        if r is not None:
            parts.append(f'<circle class="dot" cx="{_f(x(r))}" cy="11" r="2.6"/>')
    parts.append("</svg>")
    return "".join(parts)


def share_svg(share: float, color: str, width: int = 260) -> str:
    h = 14
    bw = max(0.0, min(1.0, share)) * width
    return (f'<svg class="share" viewBox="0 0 {width} {h}" width="{width}" height="{h}" aria-hidden="true">'
            f'<rect class="track" x="0" y="2" width="{width}" height="10" rx="2"/>'
            f'<rect x="0" y="2" width="{_f(bw)}" height="10" rx="2" fill="{esc(color)}"/></svg>')


def mini_svg(v: float | None, width: int = 64) -> str:
    if v is None:
        return ""
    bw = max(0.0, min(1.0, v)) * width
    return (f'<svg class="mini" viewBox="0 0 {width} 8" width="{width}" height="8" aria-hidden="true">'
            f'<rect class="track" x="0" y="0" width="{width}" height="8" rx="1.5"/>'
            f'<rect class="bar" x="0" y="0" width="{_f(bw)}" height="8" rx="1.5"/></svg>')


# ------------------------------------------------------------------------------------------
# sections
# ------------------------------------------------------------------------------------------

def _header(s: dict[str, Any]) -> str:
    run = s.get("run") or {}
    samples = s.get("samples") or {}
    out = ['<header class="top">', '<div class="kicker">perfgrade &middot; run report</div>',
           f'<h1>{esc(run.get("model", "?"))}</h1>',
           f'<p class="sub">run <code>{esc(run.get("id", "?"))}</code> &middot; source {esc(run.get("source", "?"))}'
           + (f' &middot; created {esc(run.get("created"))}' if run.get("created") else "") + "</p>"]
    if run.get("notice"):
        out.append(f'<div class="notice" role="note"><strong>NOTE:</strong> {esc(run["notice"])}</div>')
    if run.get("ungraded"):
        out.append(f'<div class="notice warn" role="note"><strong>Incomplete run:</strong> '
                   f'{esc(run["ungraded"])} sample(s) not graded yet (resume the run).</div>')
    counted = (f'{esc(run.get("problems"))} problems &times; {esc(run.get("samples_per_problem"))} samples; '
               f'{esc(samples.get("counted", 0))} graded samples counted')
    if samples.get("infra_excluded"):
        counted += f', {esc(samples["infra_excluded"])} excluded (infrastructure errors)'
    if run.get("ungraded"):
        counted += f', {esc(run["ungraded"])} not graded yet (resume the run)'
    if run.get("generation_failures"):
        counted += f', {esc(run["generation_failures"])} completion request(s) failed'
    out.append(f'<p class="counts">{counted}</p>')
    meta: list[tuple[str, str]] = []
    packs = run.get("pack") or {}
    if packs:
        meta.append(("pack", ", ".join(
            f'{esc(k)} {esc((v or {}).get("version"))} <code title="{esc((v or {}).get("hash"))}">'
            f'{esc(str((v or {}).get("hash"))[:12])}</code>' for k, v in packs.items())))
    if run.get("base_url"):
        meta.append(("endpoint", f'<code>{esc(run["base_url"])}</code>'))
    gen = {k: v for k, v in (run.get("generation") or {}).items() if k != "model" and v is not None}
    if gen:
        meta.append(("generation", ", ".join(f"{esc(k)} {esc(_clip(str(v), 80))}" for k, v in gen.items())))
    image = run.get("image") or {}
    if image:
        meta.append(("sandbox image", f'<code>{esc(image.get("tag") or "")}</code>'
                     + (f' <span class="muted">({esc(str(image.get("id", ""))[:19])})</span>' if image.get("id") else "")))
    if run.get("exec_mode"):
        meta.append(("execution", esc(run["exec_mode"])))
    grader = f'perfgrade {esc(run.get("grader_version", "?"))}'
    if run.get("git_commit"):
        commit = str(run["git_commit"])
        short = commit[:12] + ("+dirty" if commit.endswith("+dirty") else "")
        grader += f' <code title="{esc(commit)}">{esc(short)}</code>'
    meta.append(("grader", grader))
    if run.get("path"):
        meta.append(("run directory", f'<code>{esc(run["path"])}</code>'))
    out.append('<dl class="meta">' + "".join(f"<dt>{esc(k)}</dt><dd>{v}</dd>" for k, v in meta) + "</dl>")
    out.append("</header>")
    return "".join(out)


def _headline(s: dict[str, Any]) -> str:
    h = s.get("headline") or {}
    r = s.get("runs") or {}
    n_runs = len(r.get("runs") or [])
    cards = [
        '<div class="card hero"><div class="k">pass@1</div>'
        f'<div class="v" id="headline-pass1">{esc(pct(h.get("pass@1")))}</div>'
        f'<div class="s">95% CI {esc(ci_text(h.get("pass@1_ci95")))}</div>'
        '<div class="s">mean over problems; CI by bootstrap over problems '
        f'({esc(h.get("problems", 0))} problems)</div></div>',
        '<div class="card"><div class="k">run-to-run mean</div>'
        f'<div class="v">{esc(pct(r.get("mean")))}</div>'
        f'<div class="s">95% CI {esc(ci_text(r.get("ci95")))}</div>'
        f'<div class="s">{n_runs} runs; CI by bootstrap over runs</div></div>',
        '<div class="card"><div class="k">run-to-run std</div>'
        f'<div class="v">{esc(pct(r.get("std"), 2))}</div>'
        f'<div class="s">min {esc(pct(r.get("min")))}, max {esc(pct(r.get("max")))}</div>'
        '<div class="s">sample standard deviation of the per-run pass rates</div></div>',
    ]
    ks = [k for k in (h.get("pass@k") or {}) if k != "1"]
    if ks:
        rows = "".join(f'<tr><th scope="row">k = {esc(k)}</th><td class="num">{esc(pct(h["pass@k"][k]))}</td>'
                       f'<td class="num">{esc(pct((h.get("pass^k") or {}).get(k)))}</td></tr>' for k in ks)
        cards.append('<div class="card"><div class="k">pass@k and pass^k</div>'
                     '<table class="kt"><thead><tr><th></th><th class="num">pass@k</th><th class="num">pass^k</th></tr>'
                     f'</thead><tbody>{rows}</tbody></table>'
                     '<div class="s">pass@k: at least one of k samples passes; pass^k: all k pass</div></div>')
    else:
        cards.append('<div class="card"><div class="k">pass@k and pass^k</div><div class="v">-</div>'
                     '<div class="s">no requested k above 1 fits the samples per problem</div></div>')
    fl = s.get("flakiness") or {}
    if fl.get("regraded_samples"):
        ex = "".join(f"<li><code>{esc(e)}</code></li>" for e in fl.get("examples") or [])
        cards.append('<div class="card"><div class="k">grader flakiness</div>'
                     f'<div class="v">{esc(pct(fl.get("rate"), 2))}</div>'
                     f'<div class="s">{esc(fl.get("changed"))} of {esc(fl.get("regraded_samples"))} re-graded samples '
                     f'changed verdict</div>' + (f'<ul class="s">{ex}</ul>' if ex else "") + "</div>")
    return '<section id="headline"><h2>Headline</h2><div class="cards">' + "".join(cards) + "</div></section>"


def _runs(s: dict[str, Any]) -> str:
    r = s.get("runs") or {}
    rates = r.get("runs") or []
    line = ""
    if rates:
        line = ('<p class="rates">per-run pass rates: '
                + " ".join(f'<span class="rate">{esc(pct(x))}</span>' for x in rates) + "</p>")
    return ('<section id="runs"><h2>Runs</h2>'
            '<p class="caption">Run <i>i</i> is sample <i>i</i> of every problem. Dashed line: the mean over runs; '
            'shaded band: its 95% confidence interval.</p>'
            f'<figure class="chartbox">{runs_chart(r)}</figure>{line}</section>')


def _verdicts(s: dict[str, Any]) -> str:
    verdicts = s.get("verdicts") or {}
    total = sum(verdicts.values()) or 1
    rows = []
    for name, n in verdicts.items():
        rows.append(f'<tr data-verdict="{esc(name)}"><td>{_badge(name)}</td><td class="num">{esc(n)}</td>'
                    f'<td class="num">{esc(pct(n / total))}</td>'
                    f'<td class="barcell">{share_svg(n / total, _color(name))}</td></tr>')
    body = "".join(rows) or '<tr><td colspan="4" class="muted">no graded samples</td></tr>'
    return ('<section id="verdicts"><h2>Verdicts</h2>'
            '<table class="data verdicts"><thead><tr><th>verdict</th><th class="num">samples</th>'
            f'<th class="num">share</th><th></th></tr></thead><tbody>{body}</tbody></table></section>')


def _groups(s: dict[str, Any], key: str, title: str, col: str) -> str:
    groups = s.get(key) or {}
    rows = []
    for name in _group_order(key, list(groups)):
        row = groups[name]
        sp = row.get("spread") or {}
        rng = f"{pct(sp.get('min'))} - {pct(sp.get('max'))}" if sp.get("min") is not None else "-"
        rows.append(f'<tr><th scope="row">{esc(name or "(none)")}</th><td class="num">{esc(row.get("problems"))}</td>'
                    f'<td class="num strong">{esc(pct(row.get("pass@1")))}</td>'
                    f'<td class="barcell">{spread_svg(row.get("pass@1"), sp)}</td>'
                    f'<td class="num">{esc(pct(sp.get("std"), 2))}</td><td class="num">{esc(rng)}</td></tr>')
    body = "".join(rows) or '<tr><td colspan="6" class="muted">nothing graded</td></tr>'
    return (f'<section id="{esc(key.replace("_", "-"))}"><h2>{esc(title)}</h2>'
            '<p class="caption">Bar: pass@1. Whisker: the run-to-run range (lowest to highest run); dots: each run.</p>'
            f'<table class="data groups"><thead><tr><th>{esc(col)}</th><th class="num">problems</th>'
            f'<th class="num">pass@1</th><th class="barcell">{_axis_svg()}</th><th class="num">run std</th>'
            f'<th class="num">run range</th></tr></thead><tbody>{body}</tbody></table></section>')


def _problems(s: dict[str, Any], first_sample: dict[str, int], titles: dict[str, str]) -> str:
    h = s.get("headline") or {}
    ks = [k for k in (h.get("pass@k") or {}) if k != "1"]
    cols = [("problem", "problem", "text", ""), ("family", "family", "text", ""),
            ("difficulty", "difficulty", "num", ""), ("n", "n", "num", "num"), ("pass1", "pass@1", "num", "num")]
    cols += [(f"pass{k}", f"pass@{k}", "num", "num") for k in ks]
    cols += [("top", "top failure", "text", "")]
    head = "".join(f'<th scope="col" class="{c}" data-key="{esc(key)}" data-type="{t}" aria-sort="none">'
                   f'<button type="button" class="sort">{esc(label)}<span class="arrow" aria-hidden="true"></span>'
                   f"</button></th>" for key, label, t, c in cols)
    rows = []
    for i, row in enumerate(s.get("problems") or []):
        pid = str(row.get("problem", ""))
        verdicts = row.get("verdicts") or {}
        fails = {k: n for k, n in verdicts.items() if k != "pass"}
        top = max(fails, key=fails.get) if fails else None
        p1 = row.get("pass@1")
        diff = str(row.get("difficulty", ""))
        pk = row.get("pass@k") or {}
        title = titles.get(pid)
        tip = f' title="{esc(title)}"' if title else ""
        cells = [
            f'<td data-v="{esc(pid)}"><span class="pid"{tip}>{esc(pid.split("/", 1)[-1])}</span></td>',
            f'<td data-v="{esc(row.get("family", ""))}">{esc(row.get("family", ""))}</td>',
            f'<td data-v="{DIFFICULTY_ORDER.get(diff, 9)}">{esc(diff)}</td>',
            f'<td class="num" data-v="{esc(row.get("n", ""))}">{esc(row.get("n", ""))}'
            + (f' <span class="muted" title="excluded: infrastructure errors">(+{esc(row["infra"])})</span>'
               if row.get("infra") else "") + "</td>",
            f'<td class="num" data-v="{"" if p1 is None else repr(float(p1))}">{mini_svg(p1)} {esc(pct(p1))}</td>',
        ]
        for k in ks:
            v = pk.get(k)
            cells.append(f'<td class="num" data-v="{"" if v is None else repr(float(v))}">{esc(pct(v))}</td>')
        if top is None:
            cells.append('<td data-v="">-</td>')
        else:
            text = f"{verdict_label(top)} ({fails[top]})"
            inner = esc(text)
            if pid in first_sample:
                inner = f'<a href="#sample-{first_sample[pid]}">{inner}</a>'
            cells.append(f'<td data-v="{esc(verdict_label(top))}">'
                         f'<span class="dot" style="--c:{_color(top)}"></span>{inner}</td>')
        rows.append(f'<tr data-problem="{esc(pid)}" data-i="{i}">' + "".join(cells) + "</tr>")
    body = "".join(rows) or f'<tr><td colspan="{len(cols)}" class="muted">no problems graded</td></tr>'
    return ('<section id="problems-section"><h2>Problems</h2>'
            '<p class="caption">Click a column header to sort (again to reverse). '
            '<span class="noprint">A failure links to its first failing sample below.</span></p>'
            f'<div class="scroll"><table class="data problems" id="problems"><thead><tr>{head}</tr></thead>'
            f"<tbody>{body}</tbody></table></div></section>")


def _code_block(code: str | None, extraction: str) -> str:
    if not code:
        why = f": {extraction}" if extraction else ""
        return f'<p class="muted small">(no code extracted{esc(why)})</p>'
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
    note = ""
    if len(shown) < len(lines) or (len(lines) == 1 and len(lines[0]) > MAX_CODE_CHARS):
        note = (f'<p class="muted small">code truncated: showing {len(shown)} of {len(lines)} lines '
                f"({len(code)} characters in all)</p>")
    body = "".join(f'<span class="l">{esc(line)}</span>' for line in shown)
    return f'<pre class="code"><code>{body}</code></pre>{note}'


def _failure_table(failures: list[dict[str, Any]]) -> str:
    rows: list[str] = []
    traces: list[tuple[str, str]] = []
    shown = 0
    hidden = 0
    has_diffs = any(f.get("diffs") for f in failures)
    for f in failures:
        diffs = f.get("diffs") or []
        vec = esc(f.get("vector", ""))
        inputs = _clip(str(f.get("inputs") or ""), MAX_INPUT_CHARS)
        inputs_cell = f'<code class="inputs">{esc(inputs)}</code>' if inputs else '<span class="muted">-</span>'
        if f.get("traceback"):
            tb = str(f["traceback"])
            if all(tb != t for _, t in traces):
                traces.append((str(f.get("vector", "")), tb))
        if not diffs:
            msg = f.get("error_type") or f.get("kind") or "error"
            detail = f'<strong>{esc(msg)}</strong>' + (f": {esc(_clip(str(f.get('error_message') or ''), 600))}"
                                                       if f.get("error_message") else "")
            span = ' colspan="6"' if has_diffs else ""
            rows.append(f'<tbody class="vec"><tr><td>{vec}</td><td>{inputs_cell}</td>'
                        f'<td{span} class="err">{detail}</td></tr></tbody>')
            continue
        room = MAX_DIFF_ROWS - shown
        if room <= 0:
            hidden += len(diffs)
            continue
        take = diffs[:room]
        hidden += len(diffs) - len(take)
        shown += len(take)
        group = []
        for j, d in enumerate(take):
            kind = d.get("kind", "value")
            note = d.get("note") or ("missing" if kind == "missing" else "extra" if kind == "extra" else "")
            lead = (f'<td rowspan="{len(take)}">{vec}</td><td rowspan="{len(take)}">{inputs_cell}</td>' if j == 0 else "")
            exp = "" if kind == "extra" else _value(d.get("expected"))
            got = "" if kind == "missing" else _value(d.get("got"))
            group.append(
                f'<tr class="k-{esc(kind)}">{lead}<td><code>{esc(d.get("path") or "(result)")}</code></td>'
                f'<td class="val"><code>{esc(exp)}</code></td><td class="val got"><code>{esc(got)}</code></td>'
                f'<td class="num">{esc(_num(d.get("ratio"), ".6g"))}</td>'
                f'<td class="num">{esc(_num(d.get("rel_err"), ".3g"))}</td>'
                f"<td>{esc(note)}</td></tr>")
        rows.append('<tbody class="vec">' + "".join(group) + "</tbody>")
    out = []
    if rows:
        head = ("<th>field</th><th>expected</th><th>got</th><th class=\"num\">ratio</th>"
                "<th class=\"num\">rel. error</th><th>note</th>" if has_diffs else "<th>error</th>")
        out.append('<div class="scroll"><table class="data diffs"><thead><tr><th>vector</th><th>inputs</th>'
                   f"{head}</tr></thead>" + "".join(rows) + "</table></div>")
    if hidden:
        out.append(f'<p class="muted small">{hidden} more field difference(s) not shown.</p>')
    for vec, tb in traces[:3]:
        out.append(f'<div class="label">traceback (vector {esc(vec)})</div>'
                   f'<pre class="text">{esc(_clip_tail(tb, MAX_TRACE_CHARS))}</pre>')
    return "".join(out)


def _resources(sm: dict[str, Any]) -> str:
    rss = sm.get("max_rss_kb")
    mem = f"{rss / 1024:.1f} MiB" if rss else "-"
    text = f"cpu {float(sm.get('cpu_s') or 0):.3f}s, wall {float(sm.get('wall_s') or 0):.3f}s, peak memory {mem}"
    if sm.get("stop_reason"):
        text += f", stopped by {sm['stop_reason']}" + (f": {sm['stop_detail']}" if sm.get("stop_detail") else "")
    if sm.get("vectors_total") is not None:
        text += f"; vectors passed {sm.get('vectors_passed') or 0}/{sm['vectors_total']}"
    return esc(_clip(text, 600))


def _sample(i: int, sm: dict[str, Any]) -> str:
    verdict = str(sm.get("verdict", ""))
    pid = str(sm.get("problem", ""))
    reason = str(sm.get("reason") or "")
    parts = [f'<details class="sample" id="sample-{i}" data-verdict="{esc(verdict)}" data-problem="{esc(pid)}">',
             f'<summary>{_badge(verdict)} <code class="pid">{esc(pid)}</code>'
             f' <span class="sno">#{esc(sm.get("sample"))}</span>'
             f' <span class="reason">{esc(_clip(reason, 160))}</span></summary>', '<div class="body">']
    if sm.get("title"):
        parts.append(f'<p class="ptitle">{esc(sm["title"])}</p>')
    facts = [("verdict", esc(verdict_label(verdict))), ("reason", esc(_clip(reason, 2000)))]
    if sm.get("signature"):
        facts.append(("signature", f'<code>{esc(sm["signature"])}</code>'))
    parts.append('<dl class="facts">' + "".join(f"<dt>{k}</dt><dd>{v}</dd>" for k, v in facts) + "</dl>")
    parts.append('<div class="label">code</div>' + _code_block(sm.get("code"), str(sm.get("extraction") or "")))
    failures = sm.get("failures") or []
    if failures:
        parts.append('<div class="label">failing vectors</div>' + _failure_table(failures))
    tail = str(sm.get("output_tail") or "")
    if tail.strip():
        parts.append('<div class="label">output (tail)</div>'
                     f'<pre class="text">{esc(_clip_tail(tail.rstrip(), MAX_OUTPUT_CHARS))}</pre>')
    parts.append(f'<dl class="facts res"><dt>resources</dt><dd>{_resources(sm)}</dd></dl>')
    parts.append("</div></details>")
    return "".join(parts)


def _samples(samples: list[dict[str, Any]]) -> str:
    total = len(samples)
    shown = samples[:MAX_SAMPLES_SHOWN]
    counts: dict[str, int] = {}
    for sm in samples:
        v = str(sm.get("verdict", ""))
        counts[v] = counts.get(v, 0) + 1
    out = [f'<section id="failing"><h2>Failing samples <span class="count">({total})</span></h2>']
    if not samples:
        out.append('<p class="muted">No failing samples.</p></section>')
        return "".join(out)
    if total > len(shown):
        out.append(f'<p class="notice warn small" id="capped">Showing the first {len(shown)} of {total} failing samples; '
                   "<code>python -m grader audit &lt;run&gt;</code> lists them all.</p>")
    chips = [f'<button type="button" class="chip" data-filter="" aria-pressed="true">all <span>{total}</span></button>']
    for v, n in sorted(counts.items(), key=lambda kv: -kv[1]):
        chips.append(f'<button type="button" class="chip" data-filter="{esc(v)}" aria-pressed="false">'
                     f'<span class="dot" style="--c:{_color(v)}"></span>{esc(verdict_label(v))} <span>{n}</span></button>')
    out.append('<div class="controls noprint">' + "".join(chips)
               + '<span class="spacer"></span><button type="button" class="btn" data-action="expand">expand all</button>'
               '<button type="button" class="btn" data-action="collapse">collapse all</button></div>')
    out.append('<p class="caption">Each sample opens to its verdict and reason, the code, the failing vectors field '
               "by field, the traceback or output tail and the resources used.</p>")
    out.append('<div class="samples">' + "".join(_sample(i, sm) for i, sm in enumerate(shown)) + "</div></section>")
    return "".join(out)


# ------------------------------------------------------------------------------------------
# page
# ------------------------------------------------------------------------------------------

CSS = """
:root{color-scheme:light;--fg:#1f2328;--muted:#59636e;--line:#d1d9e0;--soft:#eef1f4;--panel:#f6f8fa;
--accent:#0969da;--accent-soft:#ddf4ff;--pass:#1a7f37;--mono:ui-monospace,SFMono-Regular,"SF Mono",Menlo,Consolas,
"Liberation Mono","DejaVu Sans Mono",monospace}
*{box-sizing:border-box}
html{-webkit-text-size-adjust:100%}
body{margin:0;background:#fff;color:var(--fg);font:14px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,
"Helvetica Neue","Noto Sans","Liberation Sans",Arial,sans-serif}
.wrap{max-width:1120px;margin:0 auto;padding:20px 28px 64px}
code,pre{font-family:var(--mono);font-size:12.5px}
a{color:var(--accent);text-decoration:none}a:hover{text-decoration:underline}
.muted{color:var(--muted)}.small{font-size:12.5px}.strong{font-weight:600}
nav.toc{position:sticky;top:0;z-index:5;background:rgba(255,255,255,.94);border-bottom:1px solid var(--line);
font-size:13px}
nav.toc .in{max-width:1120px;margin:0 auto;padding:7px 28px;display:flex;gap:18px;flex-wrap:wrap}
nav.toc a{color:var(--muted)}nav.toc a:hover{color:var(--accent)}
.kicker{text-transform:uppercase;letter-spacing:.08em;font-size:11.5px;color:var(--muted);font-weight:600;margin-top:8px}
h1{font-size:26px;line-height:1.25;margin:2px 0 2px;word-break:break-word}
h2{font-size:17px;margin:34px 0 10px;padding-bottom:6px;border-bottom:1px solid var(--line)}
h2 .count{color:var(--muted);font-weight:400}
.sub{margin:0 0 10px;color:var(--muted)}.sub code{color:var(--fg)}
.notice{border:1px solid #d4a72c;background:#fff8c5;color:#3b2300;padding:10px 14px;border-radius:6px;margin:12px 0;
font-size:14.5px}
.notice.warn{border-color:#e0823d;background:#fff1e5}
.counts{margin:8px 0 6px;font-weight:500}
dl.meta{display:grid;grid-template-columns:max-content 1fr;gap:2px 18px;font-size:13px;margin:6px 0 0}
dl.meta dt{color:var(--muted)}dl.meta dd{margin:0;word-break:break-all}
.cards{display:grid;grid-template-columns:repeat(auto-fit,minmax(230px,1fr));gap:12px}
.card{border:1px solid var(--line);border-radius:8px;padding:12px 16px;background:#fff;break-inside:avoid}
.card .k{font-size:11.5px;color:var(--muted);text-transform:uppercase;letter-spacing:.05em;font-weight:600}
.card .v{font-size:28px;font-weight:700;font-variant-numeric:tabular-nums;line-height:1.3}
.card.hero{border-color:#54aeff;background:var(--accent-soft)}
.card.hero .v{font-size:38px;color:#0550ae}
.card .s{font-size:12.5px;color:var(--muted)}
.card ul.s{margin:4px 0 0;padding-left:18px}
table.kt{border-collapse:collapse;margin:2px 0 4px;font-variant-numeric:tabular-nums}
table.kt thead th{font-size:11.5px;color:var(--muted);font-weight:600;padding:0 0 0 18px;text-align:right}
table.kt tbody th{text-align:left;font-weight:600;padding:0 0 0 0;white-space:nowrap;color:var(--muted)}
table.kt td{padding:0 0 0 18px;text-align:right;font-size:17px;white-space:nowrap}
table.kt td:nth-child(2){font-weight:700;font-size:22px}
.caption{color:var(--muted);font-size:13px;margin:0 0 8px}
figure.chartbox{margin:0;border:1px solid var(--line);border-radius:8px;padding:8px 6px 2px;break-inside:avoid}
svg.chart{display:block;width:100%;height:auto}
svg text{font-family:system-ui,-apple-system,"Segoe UI",Roboto,Arial,sans-serif}
svg.chart .ax{font-size:11px;fill:var(--muted)}
svg.chart .val{font-size:11px;fill:#24292f;font-variant-numeric:tabular-nums}
svg.chart .grid,svg.spread .grid{stroke:#e3e8ee;stroke-width:1}
svg.chart .bar{fill:#4c8fe0}
svg.chart .ci{fill:#f9c513;fill-opacity:.22}
svg.chart .mean{stroke:#9a6700;stroke-width:2;stroke-dasharray:6 4}
svg.chart .meanlabel{font-size:12px;font-weight:600;fill:#7d4e00}
.rates{font-size:13px;color:var(--muted);margin:6px 0 0}
.rates .rate{color:var(--fg);font-variant-numeric:tabular-nums;margin-right:8px}
.scroll{overflow-x:auto}
table.data{border-collapse:collapse;width:100%;font-size:13px}
table.data th,table.data td{padding:5px 9px;border-bottom:1px solid var(--soft);text-align:left;vertical-align:middle}
table.data thead th{font-weight:600;color:#424a53;background:var(--panel);border-bottom:1px solid var(--line);
white-space:nowrap}
table.data .num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
table.data tbody tr:hover{background:#f6f8fa}
table.verdicts{max-width:720px}
td.barcell,th.barcell{width:1%;white-space:nowrap}
svg.share,svg.spread,svg.mini,svg.scale{display:inline-block;vertical-align:middle}
svg.scale text{font-size:10px;fill:var(--muted)}
svg .track{fill:#eef1f4}
svg.spread .bar{fill:#8cc4ff}
svg.spread .whisker{stroke:#1f2328;stroke-width:1.3}
svg.spread .dot{fill:#0550ae;fill-opacity:.55}
svg.mini .bar{fill:#4c8fe0}
svg.mini{margin-right:6px}
.badge{display:inline-block;padding:1px 8px;border-radius:999px;font-size:12px;font-weight:600;color:#fff;
background:var(--c);white-space:nowrap;-webkit-print-color-adjust:exact;print-color-adjust:exact}
.dot{display:inline-block;width:9px;height:9px;border-radius:50%;background:var(--c);margin-right:6px;
-webkit-print-color-adjust:exact;print-color-adjust:exact}
table.problems th button.sort{all:unset;cursor:pointer;display:inline-flex;align-items:center;gap:4px}
table.problems th button.sort:focus-visible{outline:2px solid var(--accent);outline-offset:2px}
table.problems th .arrow::after{content:"\\2195";color:#afb8c1;font-size:11px}
table.problems th[aria-sort=ascending] .arrow::after{content:"\\25B2";color:var(--accent)}
table.problems th[aria-sort=descending] .arrow::after{content:"\\25BC";color:var(--accent)}
table.problems th[aria-sort=ascending],table.problems th[aria-sort=descending]{color:var(--accent)}
table.problems .pid{font-family:var(--mono);font-size:12.5px}
.controls{display:flex;flex-wrap:wrap;gap:6px;align-items:center;margin:0 0 10px}
.controls .spacer{flex:1}
.chip,.btn{font:inherit;font-size:12.5px;border:1px solid var(--line);background:#fff;border-radius:999px;
padding:3px 10px;cursor:pointer;color:var(--fg)}
.chip span:last-child{color:var(--muted);margin-left:2px}
.chip[aria-pressed=true]{background:var(--accent-soft);border-color:#54aeff}
.btn{border-radius:6px}
.chip:hover,.btn:hover{border-color:#8c959f}
details.sample{border:1px solid var(--line);border-radius:8px;margin:0 0 8px;background:#fff}
details.sample>summary{cursor:pointer;padding:8px 12px;list-style:none;display:flex;gap:8px;align-items:baseline;
flex-wrap:wrap}
details.sample>summary::-webkit-details-marker{display:none}
details.sample>summary::before{content:"\\25B8";color:var(--muted);width:10px;flex:none}
details.sample[open]>summary::before{content:"\\25BE"}
details.sample[open]>summary{border-bottom:1px solid var(--line);background:var(--panel);border-radius:8px 8px 0 0}
details.sample .pid{font-size:12.5px;font-weight:600}
details.sample .sno{color:var(--muted);font-family:var(--mono);font-size:12.5px}
details.sample .reason{color:var(--muted);font-size:13px;flex:1 1 300px;min-width:0;overflow-wrap:anywhere}
details.sample .body{padding:10px 14px 14px}
.ptitle{font-weight:600;margin:0 0 6px}
dl.facts{display:grid;grid-template-columns:max-content 1fr;gap:2px 16px;font-size:13px;margin:0 0 8px}
dl.facts dt{color:var(--muted)}dl.facts dd{margin:0;overflow-wrap:anywhere}
dl.facts.res{margin:12px 0 0}
.label{font-size:11.5px;text-transform:uppercase;letter-spacing:.05em;color:var(--muted);font-weight:600;margin:12px 0 4px}
table.diffs{font-size:12.5px}
table.diffs td{vertical-align:top}
table.diffs tbody.vec{border-top:2px solid var(--line)}
table.diffs code.inputs{display:block;max-width:280px;white-space:pre-wrap;word-break:break-all;font-size:11.5px;
color:#424a53}
table.diffs td.val{max-width:220px;overflow-wrap:anywhere}
table.diffs td.got code{color:#a40e26}
table.diffs td.err{color:#a40e26}
pre.text{background:var(--panel);border:1px solid var(--line);border-radius:6px;padding:8px 10px;margin:0;
max-height:360px;overflow:auto;white-space:pre-wrap;word-break:break-word}
pre.code{background:#fbfcfd;border:1px solid var(--line);border-radius:6px;margin:0;padding:6px 0;max-height:520px;
overflow:auto;line-height:1.45}
pre.code code{display:block;counter-reset:ln;min-width:max-content}
pre.code .l{display:block;padding-right:12px;white-space:pre}
pre.code .l::before{counter-increment:ln;content:counter(ln);display:inline-block;width:3.2em;padding-right:.9em;
margin-right:.8em;text-align:right;color:#8c959f;border-right:1px solid var(--soft);-webkit-user-select:none;
user-select:none}
footer{margin-top:40px;color:var(--muted);font-size:12px;border-top:1px solid var(--line);padding-top:10px}
@media (max-width:720px){.wrap{padding:14px}dl.meta{grid-template-columns:1fr}}
@page{margin:14mm}
@media print{
nav.toc,.noprint,.controls,table.problems th .arrow{display:none!important}
.wrap{max-width:none;padding:0}
body{font-size:11.5px}
h2{break-after:avoid;margin-top:22px}
a{color:inherit}
.card.hero{background:#fff}
table.data tr,details.sample,figure.chartbox{break-inside:avoid}
pre.text,pre.code{max-height:none;overflow:visible}
pre.code .l{white-space:pre-wrap;word-break:break-all}
details.sample:not([open]){border-color:#eaeef2}
*{-webkit-print-color-adjust:exact;print-color-adjust:exact}
}
"""

# Runs first, in <head>: records script errors and blocked loads into <body data-errors>.
ERRORS_JS = """(function () {
  "use strict";
  var errors = [];
  function flush() { if (document.body) document.body.setAttribute("data-errors", errors.join(" | ")); }
  function record(msg) { errors.push(String(msg).slice(0, 300)); flush(); }
  window.addEventListener("error", function (e) {
    if (e.target && e.target !== window && e.target.tagName) {
      record("failed to load a " + e.target.tagName.toLowerCase() + " element");
    } else {
      record((e.message || "error") + (e.filename ? " at " + e.filename + ":" + e.lineno : ""));
    }
  }, true);
  window.addEventListener("unhandledrejection", function (e) { record("unhandled rejection: " + e.reason); });
  document.addEventListener("securitypolicyviolation", function (e) {
    record("blocked by the page's policy: " + e.violatedDirective + " " + (e.blockedURI || ""));
  });
  document.addEventListener("DOMContentLoaded", flush);
})();"""

# Runs last, at the end of <body>.
INIT_JS = """(function () {
  "use strict";
  var doc = document, body = doc.body;
  var dataEl = doc.getElementById("report-data");
  window.perfgradeReport = dataEl ? JSON.parse(dataEl.textContent) : null;

  var table = doc.getElementById("problems");
  var current = { key: null, dir: 1 };
  function cellValue(row, idx, type) {
    var cell = row.cells[idx];
    var raw = cell ? cell.getAttribute("data-v") : null;
    if (raw === null) raw = cell ? cell.textContent : "";
    if (type === "num") { var x = parseFloat(raw); return isNaN(x) ? null : x; }
    return raw === "" ? null : raw.toLowerCase();
  }
  function sortTable(key, dir) {
    if (!table || !table.tHead) return false;
    var ths = table.tHead.rows[0].cells, idx = -1, type = "text", i;
    for (i = 0; i < ths.length; i++) {
      if (ths[i].getAttribute("data-key") === key) { idx = i; type = ths[i].getAttribute("data-type") || "text"; }
    }
    if (idx < 0) return false;
    var tbody = table.tBodies[0];
    var rows = Array.prototype.slice.call(tbody.rows).filter(function (r) { return r.hasAttribute("data-i"); });
    rows.sort(function (a, b) {
      var ia = +a.getAttribute("data-i"), ib = +b.getAttribute("data-i");
      var x = cellValue(a, idx, type), y = cellValue(b, idx, type);
      if (x === null || y === null) { return x === y ? ia - ib : (x === null ? 1 : -1); }
      var c = type === "num" ? x - y : (x < y ? -1 : x > y ? 1 : 0);
      return c === 0 ? ia - ib : c * dir;
    });
    rows.forEach(function (r) { tbody.appendChild(r); });
    for (i = 0; i < ths.length; i++) {
      ths[i].setAttribute("aria-sort", i === idx ? (dir > 0 ? "ascending" : "descending") : "none");
    }
    current.key = key; current.dir = dir;
    table.setAttribute("data-sorted", (dir < 0 ? "-" : "") + key);
    return true;
  }
  if (table && table.tHead) {
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th) {
      var btn = th.querySelector("button");
      if (!btn) return;
      btn.addEventListener("click", function () {
        var key = th.getAttribute("data-key");
        sortTable(key, current.key === key ? -current.dir : 1);
      });
    });
  }

  var samples = Array.prototype.slice.call(doc.querySelectorAll("details.sample"));
  var chips = Array.prototype.slice.call(doc.querySelectorAll("[data-filter]"));
  function filterSamples(verdict) {
    samples.forEach(function (d) { d.hidden = !!verdict && d.getAttribute("data-verdict") !== verdict; });
    chips.forEach(function (c) { c.setAttribute("aria-pressed", String(c.getAttribute("data-filter") === verdict)); });
    var section = doc.getElementById("failing");
    if (section) section.setAttribute("data-filter", verdict);
  }
  chips.forEach(function (c) {
    c.addEventListener("click", function () { filterSamples(c.getAttribute("data-filter") || ""); });
  });
  Array.prototype.forEach.call(doc.querySelectorAll("[data-action]"), function (b) {
    b.addEventListener("click", function () {
      var open = b.getAttribute("data-action") === "expand";
      samples.forEach(function (d) { if (!d.hidden) d.open = open; });
    });
  });

  function fromHash() {
    var hash = location.hash || "";
    var m = /(?:^#|[&;])sort=(-?)([A-Za-z0-9_]+)/.exec(hash);
    if (m) sortTable(m[2], m[1] ? -1 : 1);
    var f = /(?:^#|[&;])filter=([A-Za-z0-9_]*)/.exec(hash);
    if (f) filterSamples(f[1]);
    var s = /^#(sample-[0-9]+)$/.exec(hash);
    if (s) {
      var el = doc.getElementById(s[1]);
      if (el && el.tagName === "DETAILS") { el.hidden = false; el.open = true; }
    }
  }
  window.addEventListener("hashchange", fromHash);
  fromHash();

  body.setAttribute("data-ready", "1");
})();"""


def _csp_hash(script: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode() + "'"


def render_html(summary: dict[str, Any], samples: list[dict[str, Any]]) -> str:
    """One self-contained HTML document showing a run summary and its failing samples."""
    run = summary.get("run") or {}
    shown = samples[:MAX_SAMPLES_SHOWN]
    first_sample: dict[str, int] = {}
    titles: dict[str, str] = {}
    for i, sm in enumerate(shown):
        first_sample.setdefault(str(sm.get("problem", "")), i)
    for sm in samples:
        if sm.get("title"):
            titles.setdefault(str(sm.get("problem", "")), str(sm["title"]))
    csp = ("default-src 'none'; "
           f"script-src {_csp_hash(ERRORS_JS)} {_csp_hash(INIT_JS)}; "
           "style-src 'unsafe-inline'; img-src data:; font-src 'none'; connect-src 'none'; "
           "base-uri 'none'; form-action 'none'")
    title = f"perfgrade report: {run.get('model', '?')} ({run.get('id', '?')})"
    toc = ('<nav class="toc" aria-label="sections"><div class="in">'
           '<a href="#headline">Headline</a><a href="#runs">Runs</a><a href="#verdicts">Verdicts</a>'
           '<a href="#by-difficulty">By difficulty</a><a href="#by-family">By family</a>'
           '<a href="#problems-section">Problems</a>'
           f'<a href="#failing">Failing samples ({len(samples)})</a></div></nav>')
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en">',
        "<head>",
        '<meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{esc(csp)}">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        '<meta name="color-scheme" content="light">',
        '<meta name="generator" content="perfgrade">',
        f"<title>{esc(title)}</title>",
        f"<script>{ERRORS_JS}</script>",
        f"<style>{CSS}</style>",
        "</head>",
        '<body data-ready="0" data-errors="">',
        toc,
        '<div class="wrap">',
        _header(summary),
        "<main>",
        _headline(summary),
        _runs(summary),
        _verdicts(summary),
        _groups(summary, "by_difficulty", "By difficulty", "difficulty"),
        _groups(summary, "by_family", "By family", "family"),
        _problems(summary, first_sample, titles),
        _samples(samples),
        "</main>",
        f'<footer>perfgrade {esc(run.get("grader_version", ""))} &middot; run {esc(run.get("id", ""))} &middot; '
        "every statistic is recomputed from the run directory by <code>python -m grader report</code></footer>",
        "</div>",
        f'<script type="application/json" id="report-data">{json_for_script(summary)}</script>',
        f"<script>{INIT_JS}</script>",
        "</body>",
        "</html>",
    ]
    page = "\n".join(parts) + "\n"
    # lone surrogates (possible in decoded model output) cannot be written as UTF-8
    return page.encode("utf-8", "replace").decode("utf-8")
