"""A run's results as one self-contained HTML page (the summary of ``report``, plus the failing samples).

The page shows what the terminal report shows, section by section: the code-mode headline, runs,
verdicts and the figures by tier, difficulty and family; the Q&A-mode headline and figures with
per-field accuracy; the reasoning-vs-code gap; the self-revision rounds per mode; the cost per
round; and the failing samples (code, Q&A answers, and revised samples' rounds one after another
with the feedback given between them). ``leaderboard.py`` draws several runs side by side with the
same page shell.

The page holds everything inline: CSS, a little JS (table sorting, sample filters) and charts drawn
here as SVG. It loads nothing, so it renders the same offline, and a Content-Security-Policy
forbids every fetch and every script but its own two (pinned by hash). Every string that comes
from a run (model output above all) is escaped; the summary travels to the page as a JSON data
block with ``<``, ``>`` and ``&`` escaped, never as script.

Test hooks: the page sets ``data-ready="1"`` on ``<body>`` when its script has run and collects
script errors and policy violations into ``data-errors``; the fragment ``#sort=<column>`` (``-``
before the column for descending) sorts the per-problem table on load (the Q&A one in a Q&A-only
run), ``#filter=<verdict>`` filters the failing samples and ``#mode=<code|qa>`` keeps one mode's.
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

from .render import ci_text, pct, points, points_ci, verdict_label
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
MODE_LABEL = {"code": "code", "qa": "Q&A"}

VERDICT_COLORS = {
    "pass": "#1a7f37",
    "correct": "#1a7f37",
    "wrong_answer": "#cf222e",
    "wrong_type": "#bf3989",
    "runtime_error": "#d1490b",
    "timeout": "#8250df",
    "memory_limit": "#6639ba",
    "output_limit": "#3e4ab8",
    "load_error": "#a0361c",
    "missing_entry_point": "#8c6d4f",
    "no_code": "#6e7781",
    "no_answer": "#6e7781",
    "crashed": "#424a53",
    "infra_error": "#a8b1bb",
}
PASSING = ("pass", "correct")


# ------------------------------------------------------------------------------------------
# data
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


def _clip_middle(text: str, limit: int) -> tuple[str, str, int]:
    """(head, tail, characters left out): the start and the end of a long text."""
    if len(text) <= limit:
        return text, "", 0
    half = limit // 2
    return text[:half], text[-half:], len(text) - 2 * half


def heat_color(v: float | None) -> tuple[str, str]:
    """(background, text colour) of a heat-map cell: one blue hue, darker for higher rates."""
    if v is None:
        return "#f6f8fa", "#59636e"
    v = max(0.0, min(1.0, v))
    light = 97 - 62 * v
    return f"hsl(212 72% {light:.0f}%)", ("#ffffff" if light < 58 else "#1f2328")


def _full_ids(s: dict[str, Any]) -> bool:
    """Problem ids keep their pack prefix when the run drew on several packs (ids may repeat across packs)."""
    return len((s.get("run") or {}).get("pack") or {}) > 1


def _pid_text(pid: str, full: bool) -> str:
    return pid if full else pid.split("/", 1)[-1]


def _modes_text(modes: list[str]) -> str:
    return " and ".join(MODE_LABEL.get(m, m) for m in modes)


# ------------------------------------------------------------------------------------------
# charts (inline SVG)
# ------------------------------------------------------------------------------------------

def runs_chart(runs: dict[str, Any], prefix: str = "runs", what: str = "pass rate") -> str:
    """Vertical bars of every run's pass rate (or accuracy), the mean as a dashed line, its 95% CI as a band."""
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
    out = [f'<svg class="chart runs" viewBox="0 0 {w} {h}" role="img" aria-labelledby="{prefix}-t {prefix}-d">',
           f'<title id="{prefix}-t">{esc(what.capitalize())} of each run</title>',
           f'<desc id="{prefix}-d">{n} runs; mean {esc(pct(runs.get("mean")))}</desc>']
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


def gap_svg(gap: float | None, width: int = 240) -> str:
    """A diverging bar from the middle: right (blue) when Q&A does better, left (orange) when code does."""
    h = 16
    mid = width / 2
    parts = [f'<svg class="gapbar" viewBox="0 0 {width} {h}" width="{width}" height="{h}" aria-hidden="true">',
             f'<rect class="track" x="0" y="3" width="{width}" height="10" rx="2"/>']
    for t in (-0.5, 0.5):
        parts.append(f'<line class="grid" x1="{_f(mid + t * mid)}" x2="{_f(mid + t * mid)}" y1="1" y2="{h - 1}"/>')
    if gap is not None:
        g = max(-1.0, min(1.0, gap))
        x0, x1 = sorted((mid, mid + g * mid))
        cls = "qa" if g > 0 else "code"
        parts.append(f'<rect class="{cls}" x="{_f(x0)}" y="3" width="{_f(max(0.8, x1 - x0))}" height="10" rx="1.5"/>')
    parts.append(f'<line class="zero" x1="{_f(mid)}" x2="{_f(mid)}" y1="0" y2="{h}"/></svg>')
    return "".join(parts)


def ci_svg(v: float | None, ci: list[float] | None, width: int = 130, cls: str = "") -> str:
    """A rate as a dot on a 0-100% track with its 95% CI as a whisker."""
    h, pad = 14, 3
    pw = width - 2 * pad

    def x(u: float) -> float:
        return pad + pw * max(0.0, min(1.0, u))

    parts = [f'<svg class="cisvg {esc(cls)}" viewBox="0 0 {width} {h}" width="{width}" height="{h}" aria-hidden="true">',
             f'<rect class="track" x="{pad}" y="5" width="{pw}" height="4" rx="2"/>']
    for t in (0.25, 0.5, 0.75):
        parts.append(f'<line class="grid" x1="{_f(x(t))}" x2="{_f(x(t))}" y1="2" y2="{h - 2}"/>')
    if ci:
        parts.append(f'<line class="whisker" x1="{_f(x(ci[0]))}" x2="{_f(x(ci[1]))}" y1="7" y2="7"/>'
                     f'<line class="whisker" x1="{_f(x(ci[0]))}" x2="{_f(x(ci[0]))}" y1="3" y2="11"/>'
                     f'<line class="whisker" x1="{_f(x(ci[1]))}" x2="{_f(x(ci[1]))}" y1="3" y2="11"/>')
    if v is not None:
        parts.append(f'<circle class="pt" cx="{_f(x(v))}" cy="7" r="4"/>')
    parts.append("</svg>")
    return "".join(parts)


def rounds_chart(rounds: list[dict[str, Any]], prefix: str, metric: str) -> str:
    """The rate after each revision round: a line through the rounds, each with its 95% CI."""
    pts = [(r["round"], r.get("rate"), r.get("rate_ci95")) for r in rounds]
    if not pts:
        return ""
    w, h = 960, 180
    ml, mr, mt, mb = 48, 40, 14, 30
    pw, ph = w - ml - mr, h - mt - mb
    n = len(pts)

    def x(i: int) -> float:
        return ml + (pw * (i + 0.5) / n)

    def y(v: float) -> float:
        return mt + ph * (1 - max(0.0, min(1.0, v)))

    out = [f'<svg class="chart rounds" viewBox="0 0 {w} {h}" role="img" aria-labelledby="{prefix}-t">',
           f'<title id="{prefix}-t">{esc(metric)} after each revision round, with its 95% CI</title>']
    for t in (0, 0.25, 0.5, 0.75, 1.0):
        out.append(f'<line class="grid" x1="{ml}" x2="{ml + pw}" y1="{_f(y(t))}" y2="{_f(y(t))}"/>'
                   f'<text class="ax" x="{ml - 6}" y="{_f(y(t) + 4)}" text-anchor="end">{int(t * 100)}%</text>')
    line = [(x(i), y(v)) for i, (_, v, _) in enumerate(pts) if v is not None]
    if len(line) > 1:
        out.append('<polyline class="trend" points="' + " ".join(f"{_f(a)},{_f(b)}" for a, b in line) + '"/>')
    for i, (rnd, v, ci) in enumerate(pts):
        cx = x(i)
        if ci:
            out.append(f'<line class="ciw" x1="{_f(cx)}" x2="{_f(cx)}" y1="{_f(y(ci[1]))}" y2="{_f(y(ci[0]))}"/>'
                       f'<line class="ciw" x1="{_f(cx - 7)}" x2="{_f(cx + 7)}" y1="{_f(y(ci[1]))}" y2="{_f(y(ci[1]))}"/>'
                       f'<line class="ciw" x1="{_f(cx - 7)}" x2="{_f(cx + 7)}" y1="{_f(y(ci[0]))}" y2="{_f(y(ci[0]))}"/>')
        if v is not None:
            out.append(f'<circle class="pt" cx="{_f(cx)}" cy="{_f(y(v))}" r="5">'
                       f'<title>{esc(f"round {rnd}: {pct(v)} (95% CI {ci_text(ci)})")}</title></circle>'
                       f'<text class="val" x="{_f(cx + 10)}" y="{_f(y(v) - 6)}">{esc(pct(v))}</text>')
        out.append(f'<text class="ax" x="{_f(cx)}" y="{mt + ph + 16}" text-anchor="middle">round {rnd}</text>')
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


def spread_svg(p1: float | None, spread: dict[str, Any], width: int = 300, label: str = "pass@1") -> str:
    """A pass@1 (or accuracy) bar with the run-to-run range as a whisker and each run as a dot."""
    h, pad = 22, 4
    pw = width - 2 * pad

    def x(v: float) -> float:
        return pad + pw * max(0.0, min(1.0, v))

    parts = [f'<svg class="spread" viewBox="0 0 {width} {h}" width="{width}" height="{h}" role="img">']
    tip = (f"{label} {pct(p1)}; run std {pct(spread.get('std'), 2)}; "
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
    modes = s.get("modes") or run.get("modes") or ["code"]
    out = ['<header class="top">', '<div class="kicker">perfgrade &middot; run report</div>',
           f'<h1>{esc(run.get("model", "?"))}</h1>',
           f'<p class="sub">run <code>{esc(run.get("id", "?"))}</code> &middot; source {esc(run.get("source", "?"))}'
           + (f' &middot; created {esc(run.get("created"))}' if run.get("created") else "") + "</p>"]
    if run.get("notice"):
        out.append(f'<div class="notice" role="note"><strong>NOTE:</strong> {esc(run["notice"])}</div>')
    if run.get("ungraded"):
        out.append(f'<div class="notice warn" role="note"><strong>Incomplete run:</strong> '
                   f'{esc(run["ungraded"])} sample(s) not graded yet (resume the run).</div>')
    counted = (f'{esc(run.get("problems"))} problems &times; {esc(run.get("samples_per_problem"))} samples; ')
    if "code" in modes:
        counted += f'{esc(samples.get("counted", 0))} graded samples counted'
        if samples.get("infra_excluded"):
            counted += f', {esc(samples["infra_excluded"])} excluded (infrastructure errors)'
    if "qa" in modes:
        qs = (s.get("qa") or {}).get("samples") or {}
        counted += ("; " if "code" in modes else "") + f'{esc(qs.get("counted", 0))} Q&amp;A answers counted'
        if qs.get("infra_excluded"):
            counted += f', {esc(qs["infra_excluded"])} excluded (infrastructure errors)'
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
            f'{esc(str((v or {}).get("hash"))[:12])}</code>'
            + (f' <span class="muted">({esc((v or {}).get("tier"))} tier)</span>' if (v or {}).get("tier") else "")
            for k, v in packs.items())))
    if modes != ["code"]:
        meta.append(("modes", esc(_modes_text(modes))))
    if (run.get("rounds") or 1) > 1:
        meta.append(("revision", f'up to {esc(run["rounds"])} rounds per sample; feedback: {esc(run.get("feedback"))}'
                     + ("; passing samples revised too" if run.get("revise_all") else "")))
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


def _part(mode: str, s: dict[str, Any]) -> str:
    """A banner between the code-mode and the Q&A-mode sections of a run with both."""
    if mode == "code":
        what = "the model writes the function; its code runs in the sandbox against the hidden vectors"
    else:
        what = "the model answers concrete instances directly; no code runs, the answer is compared field by field"
    rounds = ((s.get("run") or {}).get("rounds") or 1) > 1
    note = " Figures here are round 0 (the one-shot answers); the revision rounds follow below." if rounds else ""
    return (f'<div class="part" id="part-{esc(mode)}"><span class="pk">{esc(MODE_LABEL[mode])} mode</span>'
            f'<span class="pd">{esc(what)}.{esc(note)}</span></div>')


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
        f'<div class="s">{esc(n_runs)} runs; CI by bootstrap over runs</div></div>',
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
    title = "Headline (code mode)" if "qa" in (s.get("modes") or []) else "Headline"
    return f'<section id="headline"><h2>{title}</h2><div class="cards">' + "".join(cards) + "</div></section>"


def _runs(r: dict[str, Any], sec: str = "runs", title: str = "Runs", what: str = "pass rate",
          whats: str = "pass rates") -> str:
    rates = r.get("runs") or []
    line = ""
    if rates:
        line = (f'<p class="rates">per-run {esc(whats)}: '
                + " ".join(f'<span class="rate">{esc(pct(x))}</span>' for x in rates) + "</p>")
    return (f'<section id="{sec}"><h2>{esc(title)}</h2>'
            '<p class="caption">Run <i>i</i> is sample <i>i</i> of every problem. Dashed line: the mean over runs; '
            'shaded band: its 95% confidence interval.</p>'
            f'<figure class="chartbox">{runs_chart(r, sec, what)}</figure>{line}</section>')


def _verdicts(verdicts: dict[str, int], sec: str = "verdicts", title: str = "Verdicts", unit: str = "samples") -> str:
    total = sum(verdicts.values()) or 1
    rows = []
    for name, n in verdicts.items():
        rows.append(f'<tr data-verdict="{esc(name)}"><td>{_badge(name)}</td><td class="num">{esc(n)}</td>'
                    f'<td class="num">{esc(pct(n / total))}</td>'
                    f'<td class="barcell">{share_svg(n / total, _color(name))}</td></tr>')
    body = "".join(rows) or f'<tr><td colspan="4" class="muted">no graded {esc(unit)}</td></tr>'
    return (f'<section id="{sec}"><h2>{esc(title)}</h2>'
            f'<table class="data verdicts"><thead><tr><th>verdict</th><th class="num">{esc(unit)}</th>'
            f'<th class="num">share</th><th></th></tr></thead><tbody>{body}</tbody></table></section>')


def _groups(groups: dict[str, Any], key: str, title: str, col: str, sec: str | None = None,
            metric: str = "pass@1") -> str:
    rows = []
    for name in _group_order(key, list(groups)):
        row = groups[name]
        sp = row.get("spread") or {}
        rng = f"{pct(sp.get('min'))} - {pct(sp.get('max'))}" if sp.get("min") is not None else "-"
        rows.append(f'<tr data-group="{esc(name)}"><th scope="row">{esc(name or "(none)")}</th>'
                    f'<td class="num">{esc(row.get("problems"))}</td>'
                    f'<td class="num strong">{esc(pct(row.get("pass@1")))}</td>'
                    f'<td class="barcell">{spread_svg(row.get("pass@1"), sp, label=metric)}</td>'
                    f'<td class="num">{esc(pct(sp.get("std"), 2))}</td><td class="num">{esc(rng)}</td></tr>')
    body = "".join(rows) or '<tr><td colspan="6" class="muted">nothing graded</td></tr>'
    sec = sec or key.replace("_", "-")
    return (f'<section id="{esc(sec)}"><h2>{esc(title)}</h2>'
            f'<p class="caption">Bar: {esc(metric)}. Whisker: the run-to-run range (lowest to highest run); '
            'dots: each run.</p>'
            f'<table class="data groups"><thead><tr><th>{esc(col)}</th><th class="num">problems</th>'
            f'<th class="num">{esc(metric)}</th><th class="barcell">{_axis_svg()}</th><th class="num">run std</th>'
            f'<th class="num">run range</th></tr></thead><tbody>{body}</tbody></table></section>')


def _sort_head(cols: list[tuple[str, str, str, str]]) -> str:
    return "".join(f'<th scope="col" class="{c}" data-key="{esc(key)}" data-type="{t}" aria-sort="none">'
                   f'<button type="button" class="sort">{esc(label)}<span class="arrow" aria-hidden="true"></span>'
                   f"</button></th>" for key, label, t, c in cols)


def _num_v(v: float | None) -> str:
    return "" if v is None else repr(float(v))


def _top_failure(verdicts: dict[str, int], link: int | None) -> str:
    fails = {k: n for k, n in verdicts.items() if k not in PASSING}
    if not fails:
        return '<td data-v="">-</td>'
    top = max(fails, key=fails.get)
    inner = esc(f"{verdict_label(top)} ({fails[top]})")
    if link is not None:
        inner = f'<a href="#sample-{link}">{inner}</a>'
    return f'<td data-v="{esc(verdict_label(top))}"><span class="dot" style="--c:{_color(top)}"></span>{inner}</td>'


def _problems(s: dict[str, Any], first_sample: dict[tuple[str, str], int], titles: dict[str, str]) -> str:
    h = s.get("headline") or {}
    full = _full_ids(s)
    ks = [k for k in (h.get("pass@k") or {}) if k != "1"]
    cols = [("problem", "problem", "text", ""), ("family", "family", "text", ""), ("tier", "tier", "text", ""),
            ("difficulty", "difficulty", "num", ""), ("n", "n", "num", "num"), ("pass1", "pass@1", "num", "num")]
    cols += [(f"pass{k}", f"pass@{k}", "num", "num") for k in ks]
    cols += [("top", "top failure", "text", "")]
    rows = []
    for i, row in enumerate(s.get("problems") or []):
        pid = str(row.get("problem", ""))
        p1 = row.get("pass@1")
        diff = str(row.get("difficulty", ""))
        pk = row.get("pass@k") or {}
        title = titles.get(pid)
        tip = f' title="{esc(title)}"' if title else ""
        cells = [
            f'<td data-v="{esc(pid)}"><span class="pid"{tip}>{esc(_pid_text(pid, full))}</span></td>',
            f'<td data-v="{esc(row.get("family", ""))}">{esc(row.get("family", ""))}</td>',
            f'<td data-v="{esc(row.get("tier", ""))}">{esc(row.get("tier", ""))}</td>',
            f'<td data-v="{DIFFICULTY_ORDER.get(diff, 9)}">{esc(diff)}</td>',
            f'<td class="num" data-v="{esc(row.get("n", ""))}">{esc(row.get("n", ""))}'
            + (f' <span class="muted" title="excluded: infrastructure errors">(+{esc(row["infra"])})</span>'
               if row.get("infra") else "") + "</td>",
            f'<td class="num" data-v="{_num_v(p1)}">{mini_svg(p1)} {esc(pct(p1))}</td>',
        ]
        for k in ks:
            v = pk.get(k)
            cells.append(f'<td class="num" data-v="{_num_v(v)}">{esc(pct(v))}</td>')
        cells.append(_top_failure(row.get("verdicts") or {}, first_sample.get(("code", pid))))
        rows.append(f'<tr data-problem="{esc(pid)}" data-i="{i}">' + "".join(cells) + "</tr>")
    body = "".join(rows) or f'<tr><td colspan="{len(cols)}" class="muted">no problems graded</td></tr>'
    return ('<section id="problems-section"><h2>Problems</h2>'
            '<p class="caption">Click a column header to sort (again to reverse). '
            '<span class="noprint">A failure links to its first failing sample below.</span></p>'
            f'<div class="scroll"><table class="data problems sortable" id="problems"><thead><tr>{_sort_head(cols)}'
            f"</tr></thead><tbody>{body}</tbody></table></div></section>")


# ------------------------------------------------------------------------------------------
# Q&A mode
# ------------------------------------------------------------------------------------------

def _qa_headline(q: dict[str, Any]) -> str:
    h = q.get("headline") or {}
    r = q.get("runs") or {}
    n_runs = len(r.get("runs") or [])
    cards = [
        '<div class="card hero"><div class="k">Q&amp;A accuracy</div>'
        f'<div class="v" id="qa-accuracy">{esc(pct(h.get("accuracy")))}</div>'
        f'<div class="s">95% CI {esc(ci_text(h.get("accuracy_ci95")))}</div>'
        '<div class="s">items fully correct; mean over problems; CI by bootstrap over problems '
        f'({esc(h.get("problems", 0))} problems)</div></div>',
        '<div class="card"><div class="k">run-to-run mean</div>'
        f'<div class="v">{esc(pct(r.get("mean")))}</div>'
        f'<div class="s">95% CI {esc(ci_text(r.get("ci95")))}</div>'
        f'<div class="s">{esc(n_runs)} runs; CI by bootstrap over runs</div></div>',
        '<div class="card"><div class="k">run-to-run std</div>'
        f'<div class="v">{esc(pct(r.get("std"), 2))}</div>'
        f'<div class="s">min {esc(pct(r.get("min")))}, max {esc(pct(r.get("max")))}</div>'
        '<div class="s">sample standard deviation of the per-run accuracies</div></div>',
    ]
    kinds = q.get("by_kind") or {}
    if kinds:
        rows = "".join(f'<div class="kv" data-kind="{esc(k)}"><span class="kn">{esc(k)} items</span>'
                       f'<b>{esc(pct(v.get("accuracy")))}</b><span class="muted">{esc(v.get("items"))} answers</span></div>'
                       for k, v in kinds.items())
        cards.append('<div class="card" id="qa-by-kind"><div class="k">by kind</div>'
                     f'{rows}<div class="s">value: compute the outputs; choice: pick the right option</div></div>')
    return ('<section id="qa-headline"><h2>Headline (Q&amp;A mode)</h2><div class="cards">' + "".join(cards)
            + "</div></section>")


def _field_chips(fields: dict[str, float]) -> str:
    if not fields:
        return '<span class="muted">choice items only</span>'
    chips = []
    for name, v in sorted(fields.items(), key=lambda kv: (kv[1], kv[0])):
        bg, fg = heat_color(v)
        chips.append(f'<span class="fchip" data-field="{esc(name)}" style="background:{bg};color:{fg}" '
                     f'title="{esc(f"{name}: {pct(v)} of value answers right on this field")}">'
                     f'{esc(name)} <b>{esc(pct(v, 0))}</b></span>')
    return '<div class="fchips">' + "".join(chips) + "</div>"


def _qa_problems(q: dict[str, Any], first_sample: dict[tuple[str, str], int], titles: dict[str, str],
                 full: bool = False) -> str:
    cols = [("problem", "problem", "text", ""), ("family", "family", "text", ""), ("tier", "tier", "text", ""),
            ("difficulty", "difficulty", "num", ""), ("n", "answers", "num", "num"),
            ("accuracy", "accuracy", "num", "num"), ("fields", "per-field accuracy, weakest first", "num", "wide"),
            ("top", "top failure", "text", "")]
    rows = []
    for i, row in enumerate(q.get("problems") or []):
        pid = str(row.get("problem", ""))
        acc = row.get("accuracy")
        diff = str(row.get("difficulty", ""))
        fields = row.get("fields") or {}
        weak = min(fields, key=lambda k: (fields[k], k)) if fields else None
        title = titles.get(pid)
        tip = f' title="{esc(title)}"' if title else ""
        cells = [
            f'<td data-v="{esc(pid)}"><span class="pid"{tip}>{esc(_pid_text(pid, full))}</span></td>',
            f'<td data-v="{esc(row.get("family", ""))}">{esc(row.get("family", ""))}</td>',
            f'<td data-v="{esc(row.get("tier", ""))}">{esc(row.get("tier", ""))}</td>',
            f'<td data-v="{DIFFICULTY_ORDER.get(diff, 9)}">{esc(diff)}</td>',
            f'<td class="num" data-v="{esc(row.get("n", ""))}">{esc(row.get("n", ""))}</td>',
            f'<td class="num" data-v="{_num_v(acc)}">{mini_svg(acc)} {esc(pct(acc))}</td>',
            f'<td class="wide" data-v="{_num_v(fields[weak]) if weak else ""}">{_field_chips(fields)}</td>',
            _top_failure(row.get("verdicts") or {}, first_sample.get(("qa", pid))),
        ]
        rows.append(f'<tr data-problem="{esc(pid)}" data-i="{i}">' + "".join(cells) + "</tr>")
    body = "".join(rows) or f'<tr><td colspan="{len(cols)}" class="muted">no Q&amp;A answers graded</td></tr>'
    return ('<section id="qa-problems-section"><h2>Q&amp;A problems</h2>'
            '<p class="caption">Accuracy: the share of a problem&#x27;s answers (items &times; samples) right on every '
            'field. Per-field accuracy: the share of its value answers right on that field (value items only), '
            'weakest first. '
            '<span class="noprint">Click a column header to sort.</span></p>'
            f'<div class="scroll"><table class="data problems qa sortable" id="qa-problems"><thead><tr>{_sort_head(cols)}'
            f"</tr></thead><tbody>{body}</tbody></table></div></section>")


def _qa_sections(s: dict[str, Any], first_sample: dict[tuple[str, str], int], titles: dict[str, str]) -> list[str]:
    q = s.get("qa") or {}
    out = [_qa_headline(q), _runs(q.get("runs") or {}, "qa-runs", "Runs (Q&A)", "accuracy", "accuracies"),
           _verdicts(q.get("verdicts") or {}, "qa-verdicts", "Verdicts (Q&A)", "answers")]
    for key, title, col in (("by_tier", "Q&A by tier", "tier"), ("by_difficulty", "Q&A by difficulty", "difficulty"),
                            ("by_family", "Q&A by family", "family")):
        if key == "by_tier" and not q.get(key):
            continue
        out.append(_groups(q.get(key) or {}, key, title, col, sec="qa-" + key.replace("_", "-"), metric="accuracy"))
    out.append(_qa_problems(q, first_sample, titles, _full_ids(s)))
    return out


# ------------------------------------------------------------------------------------------
# reasoning vs code, revision, cost
# ------------------------------------------------------------------------------------------

def _problem_list(pids: list[str], full: bool = False) -> str:
    if not pids:
        return '<span class="muted">none</span>'
    return " ".join(f'<code class="pill">{esc(_pid_text(p, full))}</code>' for p in pids)


def _gap(s: dict[str, Any]) -> str:
    g = s.get("gap") or {}
    full = _full_ids(s)
    ci = g.get("gap_ci95")
    gap = g.get("gap")
    if gap is None:
        conclusion = "No problem was graded in both modes."
    elif ci and ci[0] > 0:
        conclusion = "Answering directly did reliably better than writing code (the CI is above 0)."
    elif ci and ci[1] < 0:
        conclusion = "Writing code did reliably better than answering directly (the CI is below 0)."
    elif ci:
        conclusion = "Neither mode did reliably better (the CI includes 0)."
    else:
        conclusion = "Too few shared problems for a confidence interval."
    fam = {str(p.get("problem")): p.get("family", "") for p in s.get("problems") or []}
    cards = ('<div class="cards gapcards">'
             '<div class="card hero"><div class="k">Q&amp;A accuracy &minus; code pass@1</div>'
             f'<div class="v" id="gap-value">{esc(points(gap))}<span class="unit"> points</span></div>'
             f'<div class="s">95% paired bootstrap CI over {esc(g.get("problems", 0))} problems '
             f'<span id="gap-ci">{esc(points_ci(ci))}</span></div></div>'
             '<div class="card"><div class="k">the two modes</div>'
             f'<table class="kt"><tbody><tr><th scope="row">Q&amp;A accuracy</th><td class="num">{esc(pct(g.get("qa_accuracy")))}</td></tr>'
             f'<tr><th scope="row">code pass@1</th><td class="num">{esc(pct(g.get("code_pass@1")))}</td></tr></tbody></table>'
             '<div class="s">over the problems graded in both modes</div></div>'
             '<div class="card"><div class="k">problems won</div>'
             f'<table class="kt"><tbody><tr><th scope="row">Q&amp;A better</th><td class="num">{len(g.get("qa_wins") or [])}</td></tr>'
             f'<tr><th scope="row">code better</th><td class="num">{len(g.get("code_wins") or [])}</td></tr>'
             f'<tr><th scope="row">tied</th><td class="num">{len(g.get("ties") or [])}</td></tr></tbody></table></div>'
             "</div>")
    rows = []
    for i, r in enumerate(sorted(g.get("rows") or [], key=lambda r: (-r["gap"], r["problem"]))):
        pid = str(r["problem"])
        rows.append(f'<tr data-problem="{esc(pid)}" data-i="{i}">'
                    f'<td data-v="{esc(pid)}"><span class="pid">{esc(_pid_text(pid, full))}</span></td>'
                    f'<td data-v="{esc(fam.get(pid, ""))}">{esc(fam.get(pid, ""))}</td>'
                    f'<td class="num" data-v="{_num_v(r["qa"])}">{esc(pct(r["qa"]))}</td>'
                    f'<td class="num" data-v="{_num_v(r["code"])}">{esc(pct(r["code"]))}</td>'
                    f'<td class="num strong" data-v="{_num_v(r["gap"])}">{esc(points(r["gap"]))}</td>'
                    f'<td class="barcell">{gap_svg(r["gap"])}</td></tr>')
    cols = [("problem", "problem", "text", ""), ("family", "family", "text", ""), ("qa", "Q&A", "num", "num"),
            ("code", "code", "num", "num"), ("gap", "gap (points)", "num", "num")]
    head = _sort_head(cols) + ('<th class="barcell"><span class="gapaxis"><span>code better</span>'
                               '<span>Q&amp;A better</span></span></th>')
    body = "".join(rows) or '<tr><td colspan="6" class="muted">no problem graded in both modes</td></tr>'
    return ('<section id="gap"><h2>Reasoning vs code</h2>'
            '<p class="caption">The same problems in both modes: Q&amp;A accuracy minus code pass@1, per problem and '
            'overall, with a 95% bootstrap CI that resamples the problems (paired).</p>'
            f'{cards}<p class="conclusion" id="gap-conclusion">{esc(conclusion)}</p>'
            f'<dl class="facts wins"><dt>Q&amp;A better on</dt><dd id="qa-wins">{_problem_list(g.get("qa_wins") or [], full)}</dd>'
            f'<dt>code better on</dt><dd id="code-wins">{_problem_list(g.get("code_wins") or [], full)}</dd>'
            f'<dt>tied on</dt><dd id="ties">{_problem_list(g.get("ties") or [], full)}</dd></dl>'
            '<p class="caption">Per problem, sorted by the gap (largest first). Bar: the gap, right of the middle when '
            'Q&amp;A did better, left when code did; gridlines at &plusmn;50 points.</p>'
            f'<div class="scroll"><table class="data gap sortable" id="gap-table"><thead><tr>{head}</tr></thead>'
            f"<tbody>{body}</tbody></table></div></section>")


VERDICT_TONE = {"helped": "good", "hurt": "bad"}
SHORT_VERDICT = {"neither helped nor hurt (the CI includes 0)": "neither (CI includes 0)"}


def _revision_sentence(mode: str, rev: dict[str, Any]) -> str:
    rounds = rev.get("rounds") or []
    if len(rounds) < 2:
        return "Only one round was graded."
    metric = "pass@1" if mode == "code" else "Q&A accuracy"
    first, last = rounds[0], rounds[-1]
    fixed = sum((r.get("transitions") or {}).get("fixed", 0) for r in rounds[1:])
    broken = sum((r.get("transitions") or {}).get("broken", 0) for r in rounds[1:])
    ci = rev.get("final_change_ci95")
    return (f"{metric} went from {pct(first.get('rate'))} in round 0 to {pct(last.get('rate'))} after round "
            f"{last.get('round')} ({points(rev.get('final_change'))} points"
            + (f"; 95% paired bootstrap CI over problems {points_ci(ci)}" if ci else "")
            + f"). Across the revision rounds {fixed} sample(s) were fixed and {broken} broken.")


def _revision_mode(mode: str, rev: dict[str, Any], feedback: str) -> str:
    metric = "pass@1" if mode == "code" else "accuracy"
    rounds = rev.get("rounds") or []
    overall = rev.get("overall") or "no verdict"
    tone = VERDICT_TONE.get(overall, "neutral")
    out = [f'<div class="revmode" id="revision-{esc(mode)}" data-mode="{esc(mode)}">',
           f'<h3>{esc(MODE_LABEL.get(mode, mode))} mode <span class="muted">(feedback: {esc(feedback)})</span></h3>',
           f'<p class="verdictline {tone}"><span class="rv" data-overall="{esc(overall)}">revision {esc(overall)}</span> '
           f'{esc(_revision_sentence(mode, rev))}</p>']
    rows = []
    for r in rounds:
        tr = r.get("transitions") or {}
        first = r is rounds[0]
        sp = r.get("runs") or {}
        rng = f"{pct(sp.get('min'))} - {pct(sp.get('max'))}" if sp.get("min") is not None else "-"

        def cell(k: str, tr: dict = tr, first: bool = first) -> str:
            return f'<td class="num t-{k.replace(" ", "-")}">{"-" if first else esc(tr.get(k, 0))}</td>'

        rows.append(f'<tr data-round="{esc(r.get("round"))}"><th scope="row">round {esc(r.get("round"))}</th>'
                    f'<td class="num strong">{esc(pct(r.get("rate")))}</td>'
                    f'<td class="num">{esc(ci_text(r.get("rate_ci95")))}</td>'
                    f'<td class="num">{"-" if first else esc(points(r.get("change")))}</td>'
                    f'<td class="num">{"-" if first else esc(points_ci(r.get("change_ci95")))}</td>'
                    + "".join(cell(k) for k in ("fixed", "broken", "stayed passing", "stayed failing"))
                    + f'<td class="num" title="{esc("run range " + rng)}">{esc(pct(sp.get("std"), 2))}</td>'
                    f'<td>{esc(SHORT_VERDICT.get(r.get("verdict") or "", r.get("verdict") or ""))}</td></tr>')
    out.append('<div class="scroll"><table class="data revision"><thead><tr><th>round</th>'
               f'<th class="num">{esc(metric)}</th><th class="num">95% CI</th><th class="num">change</th>'
               '<th class="num">change CI</th><th class="num">fixed</th><th class="num">broken</th>'
               '<th class="num">stayed pass</th><th class="num">stayed fail</th><th class="num">run std</th>'
               '<th>vs round 0</th></tr></thead>'
               f'<tbody>{"".join(rows)}</tbody></table></div>')
    out.append(f'<figure class="chartbox">{rounds_chart(rounds, f"rev-{mode}", metric)}</figure>')
    for key, col in (("by_tier", "tier"), ("by_family", "family")):
        names = _group_order(key, sorted({n for r in rounds for n in (r.get(key) or {})}))
        if not names:
            continue
        head = "".join(f'<th class="num">round {esc(r.get("round"))}</th>' for r in rounds)
        body = []
        for n in names:
            vals = [(r.get(key) or {}).get(n) for r in rounds]
            change = vals[-1] - vals[0] if vals and vals[0] is not None and vals[-1] is not None else None
            body.append(f'<tr data-group="{esc(n)}"><th scope="row">{esc(n)}</th>'
                        + "".join(f'<td class="num">{mini_svg(v, 40)} {esc(pct(v))}</td>' for v in vals)
                        + f'<td class="num strong">{esc(points(change))}</td></tr>')
        out.append(f'<div class="label">{esc(metric)} by {esc(col)}, round by round</div>'
                   f'<div class="scroll"><table class="data byround"><thead><tr><th>{esc(col)}</th>{head}'
                   f'<th class="num">change</th></tr></thead><tbody>{"".join(body)}</tbody></table></div>')
    out.append("</div>")
    return "".join(out)


def _revision(s: dict[str, Any]) -> str:
    revs = {m: r for m, r in (s.get("revision") or {}).items() if r}
    if not revs:
        return ""
    run = s.get("run") or {}
    parts = ['<section id="revision"><h2>Self-revision</h2>',
             '<p class="caption">After each graded round a sample that did not pass went back to the model with '
             'feedback' + (" (passing samples too)" if run.get("revise_all") else "") + '. Each round&#x27;s figure '
             'is the state after it (a sample not revised keeps its last verdict); change: from round 0, with a '
             '95% paired bootstrap CI over problems; transitions: from the round before.</p>']
    for mode in sorted(revs, key=lambda m: MODE_ORDER.get(m, 9)):
        parts.append(_revision_mode(mode, revs[mode], str(run.get("feedback") or "none")))
    parts.append("</section>")
    return "".join(parts)


def _cost(s: dict[str, Any]) -> str:
    cost = (s.get("run") or {}).get("cost_usd") or {}
    by_round = cost.get("by_round") or {}
    if not by_round:
        return ""
    total = cost.get("total") or {}

    def row(label: str, r: dict[str, Any], cls: str = "") -> str:
        return (f'<tr class="{cls}"><th scope="row">{esc(label)}</th><td class="num">{esc(r.get("calls", 0))}</td>'
                f'<td class="num">{esc(format(int(r.get("prompt_tokens", 0)), ","))}</td>'
                f'<td class="num">{esc(format(int(r.get("completion_tokens", 0)), ","))}</td>'
                f'<td class="num">${esc(format(float(r.get("usd") or 0.0), ".4f"))}</td></tr>')

    rows = [row(f"round {k}", v) for k, v in sorted(by_round.items(), key=lambda kv: int(kv[0]))]
    rows.append(row("total", total, "total"))
    note = ""
    if not total.get("prompt_tokens") and not total.get("completion_tokens"):
        note = ('<p class="muted small">No tokens recorded: the completions came from the offline demo model, a '
                "completions file or the cache.</p>")
    elif not total.get("usd"):
        note = '<p class="muted small">No prices given (eval --price-in and --price-out set USD per million tokens).</p>'
    return ('<section id="cost"><h2>Cost</h2>'
            '<p class="caption">Model calls, tokens and USD per revision round (cached calls cost nothing).</p>'
            '<table class="data cost"><thead><tr><th>round</th><th class="num">calls</th>'
            '<th class="num">prompt tokens</th><th class="num">completion tokens</th><th class="num">USD</th></tr>'
            f'</thead><tbody>{"".join(rows)}</tbody></table>{note}</section>')


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


def _failure_table(failures: list[dict[str, Any]], unit: str = "vector") -> str:
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
                f'<td class="note">{esc(note)}</td></tr>')
        rows.append('<tbody class="vec">' + "".join(group) + "</tbody>")
    out = []
    if rows:
        head = ("<th>field</th><th>expected</th><th>got</th><th class=\"num\">ratio</th>"
                "<th class=\"num\">rel. error</th><th>note</th>" if has_diffs else "<th>error</th>")
        out.append(f'<div class="scroll"><table class="data diffs"><thead><tr><th>{esc(unit)}</th><th>inputs</th>'
                   f"{head}</tr></thead>" + "".join(rows) + "</table></div>")
    if hidden:
        out.append(f'<p class="muted small">{hidden} more field difference(s) not shown.</p>')
    for vec, tb in traces[:3]:
        out.append(f'<div class="label">traceback ({esc(unit)} {esc(vec)})</div>'
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


def _reply_block(text: str) -> str:
    """The model's whole reply (its reasoning), collapsed; head and tail when it is long."""
    if not text.strip():
        return '<p class="muted small">(empty reply)</p>'
    head, tail, cut = _clip_middle(text.rstrip(), MAX_REPLY_CHARS)
    body = esc(head) + (f'\n<span class="cut">[... {cut} characters left out ...]</span>\n' + esc(tail) if cut else "")
    return (f'<details class="reply"><summary>the model&#x27;s reasoning ({esc(format(len(text), ","))} characters)'
            f'</summary><pre class="text">{body}</pre></details>')


def _answer_block(answer: Any, reason: str) -> str:
    if answer is None:
        return f'<p class="muted small">(no answer extracted{esc(": " + reason if reason else "")})</p>'
    try:
        if isinstance(answer, dict) and answer:  # one field a line, each value compact
            text = "{\n" + ",\n".join(f"  {json.dumps(str(k), ensure_ascii=False)}: "
                                       f"{json.dumps(v, ensure_ascii=False, allow_nan=True)}"
                                       for k, v in answer.items()) + "\n}"
        else:
            text = json.dumps(answer, ensure_ascii=False, allow_nan=True)
    except (TypeError, ValueError):
        text = repr(answer)
    return f'<pre class="text answer">{esc(_clip(text, MAX_ANSWER_CHARS))}</pre>'


def _attempt_body(mode: str, a: dict[str, Any], extraction: str = "") -> str:
    """What one answer of a sample shows: the code, or the Q&A reasoning and JSON answer; then the
    failing vectors (items) field by field and the output tail."""
    parts = []
    if mode == "qa":
        parts.append(_reply_block(str(a.get("text") or "")))
        parts.append('<div class="label">answer (JSON)</div>'
                     + _answer_block(a.get("answer"), extraction or str(a.get("reason") or "")))
        failures = a.get("failures") or []
        if failures:
            parts.append('<div class="label">per field: expected vs got</div>' + _failure_table(failures, "item"))
        return "".join(parts)
    parts.append('<div class="label">code</div>' + _code_block(a.get("code"), extraction))
    failures = a.get("failures") or []
    if failures:
        parts.append('<div class="label">failing vectors</div>' + _failure_table(failures))
    tail = str(a.get("output_tail") or "")
    if tail.strip():
        parts.append('<div class="label">output (tail)</div>'
                     f'<pre class="text">{esc(_clip_tail(tail.rstrip(), MAX_OUTPUT_CHARS))}</pre>')
    return "".join(parts)


def _rounds_block(mode: str, rounds: list[dict[str, Any]], extraction: str) -> str:
    """A revised sample: every round one after another, the feedback given between them."""
    out = ['<ol class="rounds">']
    last = len(rounds) - 1
    for j, a in enumerate(rounds):
        verdict = str(a.get("verdict") or "")
        out.append(f'<li class="round" data-round="{esc(a.get("round"))}" data-verdict="{esc(verdict)}">'
                   f'<div class="rhead"><span class="rno">round {esc(a.get("round"))}</span> '
                   f'{_badge(verdict) if verdict else ""} <span class="reason">{esc(_clip(str(a.get("reason") or ""), 300))}</span>'
                   + (' <span class="tag">final</span>' if j == last else "") + "</div>")
        inner = _attempt_body(mode, a, extraction if j == last else "")
        if mode == "code" and j != last:  # earlier code rounds fold away; their feedback stays in sight
            inner = (f'<details class="rbody"><summary>code and failing vectors of round {esc(a.get("round"))}'
                     f"</summary>{inner}</details>")
        out.append(inner)
        fb = str(a.get("feedback") or "")
        if fb.strip():
            out.append(f'<div class="feedback"><div class="label">feedback given to the model after round '
                       f'{esc(a.get("round"))}</div><pre class="text">{esc(_clip(fb.rstrip(), MAX_FEEDBACK_CHARS))}</pre></div>')
        out.append("</li>")
    out.append("</ol>")
    return "".join(out)


def _sample(i: int, sm: dict[str, Any]) -> str:
    verdict = str(sm.get("verdict", ""))
    pid = str(sm.get("problem", ""))
    reason = str(sm.get("reason") or "")
    mode = str(sm.get("mode") or "code")
    item = str(sm.get("item") or "")
    rounds = sm.get("rounds") or []
    revised = len(rounds) > 1
    tags = (' <span class="tag qa">Q&amp;A</span>' if mode == "qa" else "") + (
        f' <code class="item">{esc(item)}</code>' if item else "")
    if revised:
        tags += f' <span class="tag rev" title="revised: every round below">{len(rounds)} rounds</span>'
    parts = [f'<details class="sample" id="sample-{i}" data-verdict="{esc(verdict)}" data-problem="{esc(pid)}" '
             f'data-mode="{esc(mode)}">',
             f'<summary>{_badge(verdict)} <code class="pid">{esc(pid)}</code>{tags}'
             f' <span class="sno">#{esc(sm.get("sample"))}</span>'
             f' <span class="reason">{esc(_clip(reason, 160))}</span></summary>', '<div class="body">']
    if sm.get("title"):
        parts.append(f'<p class="ptitle">{esc(sm["title"])}</p>')
    facts = [("verdict", esc(verdict_label(verdict))), ("reason", esc(_clip(reason, 2000)))]
    if mode == "qa":
        facts.append(("mode", "Q&amp;A" + (f", item <code>{esc(item)}</code>" if item else "")))
    if revised:
        facts.append(("rounds", f"{len(rounds)}; the verdict above is after round {esc(sm.get('round'))}"))
    if sm.get("signature"):
        facts.append(("signature", f'<code>{esc(sm["signature"])}</code>'))
    parts.append('<dl class="facts">' + "".join(f"<dt>{k}</dt><dd>{v}</dd>" for k, v in facts) + "</dl>")
    extraction = str(sm.get("extraction") or "")
    if revised:
        parts.append(_rounds_block(mode, rounds, extraction))
    else:
        parts.append(_attempt_body(mode, sm, extraction))
    if mode != "qa":
        parts.append(f'<dl class="facts res"><dt>resources</dt><dd>{_resources(sm)}</dd></dl>')
    parts.append("</div></details>")
    return "".join(parts)


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


def _chips(attr: str, counts: dict[str, int], label: Any, color: Any, every: str = "all",
           order: Any = lambda kv: -kv[1]) -> str:
    total = sum(counts.values())
    out = [f'<button type="button" class="chip" {attr}="" aria-pressed="true">{esc(every)} <span>{total}</span></button>']
    for v, n in sorted(counts.items(), key=order):
        dot = f'<span class="dot" style="--c:{color(v)}"></span>' if color else ""
        out.append(f'<button type="button" class="chip" {attr}="{esc(v)}" aria-pressed="false">'
                   f'{dot}{esc(label(v))} <span>{n}</span></button>')
    return "".join(out)


def _samples(samples: list[dict[str, Any]]) -> str:
    total = len(samples)
    shown = shown_samples(samples)
    counts: dict[str, int] = {}
    modes: dict[str, int] = {}
    for sm in samples:
        v = str(sm.get("verdict", ""))
        counts[v] = counts.get(v, 0) + 1
        m = str(sm.get("mode") or "code")
        modes[m] = modes.get(m, 0) + 1
    out = [f'<section id="failing"><h2>Failing samples <span class="count">({total})</span></h2>']
    if not samples:
        out.append('<p class="muted">No failing samples.</p></section>')
        return "".join(out)
    if total > len(shown):
        what = (f"the first {MAX_SAMPLES_SHOWN} of each mode ({len(shown)} of {total} failing samples)"
                if len(modes) > 1 else f"the first {len(shown)} of {total} failing samples")
        out.append(f'<p class="notice warn small" id="capped">Showing {what}; '
                   "<code>python -m grader audit &lt;run&gt;</code> lists them all.</p>")
    bar = _chips("data-filter", counts, verdict_label, _color)
    if len(modes) > 1:
        bar += '<span class="sep"></span>' + _chips("data-mode-filter", modes, lambda m: MODE_LABEL.get(m, m), None,
                                                    "all modes", order=lambda kv: MODE_ORDER.get(kv[0], 9))
    out.append('<div class="controls noprint">' + bar
               + '<span class="spacer"></span><button type="button" class="btn" data-action="expand">expand all</button>'
               '<button type="button" class="btn" data-action="collapse">collapse all</button></div>')
    caption = ("Each sample opens to its verdict and reason, the code, the failing vectors field "
               "by field, the traceback or output tail and the resources used.")
    if "qa" in modes:
        caption += (" A Q&amp;A answer opens to the model&#x27;s reply (collapsed), its JSON answer and, "
                    "field by field, what was expected and what it gave.")
    if any(len(sm.get("rounds") or []) > 1 for sm in samples):
        caption += " A revised sample shows every round one after another, with the feedback given between them."
    out.append(f'<p class="caption">{caption}</p>')
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
.wrap{max-width:1120px;margin:0 auto;padding:20px 28px 64px}.wrap.wide,nav.toc.wide .in{max-width:1400px}
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
table.sortable th button.sort{all:unset;cursor:pointer;display:inline-flex;align-items:center;gap:4px}
table.sortable th button.sort:focus-visible{outline:2px solid var(--accent);outline-offset:2px}
table.sortable th .arrow::after{content:"\\2195";color:#afb8c1;font-size:11px}
table.sortable th[aria-sort=ascending] .arrow::after{content:"\\25B2";color:var(--accent)}
table.sortable th[aria-sort=descending] .arrow::after{content:"\\25BC";color:var(--accent)}
table.sortable th[aria-sort=ascending],table.sortable th[aria-sort=descending]{color:var(--accent)}
table.data .pid{font-family:var(--mono);font-size:12.5px;white-space:nowrap}
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
table.diffs td.val{min-width:110px;max-width:220px;overflow-wrap:anywhere}
table.diffs td.note{max-width:240px;overflow-wrap:anywhere;color:var(--muted)}
table.diffs code.inputs{min-width:150px}
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
h3{font-size:15px;margin:22px 0 8px}
.part{display:flex;gap:12px;align-items:baseline;flex-wrap:wrap;margin:40px 0 -14px;padding:10px 14px;
border-radius:8px;background:#f3f0ff;border:1px solid #d8ccff}
.part .pk{font-weight:700;font-size:15px;color:#4b2bb3;text-transform:uppercase;letter-spacing:.06em}
.part .pd{color:#3d3553;font-size:13px}
.tag{display:inline-block;padding:0 7px;border-radius:4px;font-size:11.5px;font-weight:600;background:var(--soft);
color:#424a53;border:1px solid var(--line);white-space:nowrap}
.tag.qa{background:#f3f0ff;color:#4b2bb3;border-color:#d8ccff}
.tag.rev{background:#fff8c5;color:#7d4e00;border-color:#eac54f}
code.item{font-size:12px;color:#424a53}
code.pill{display:inline-block;background:var(--panel);border:1px solid var(--line);border-radius:4px;padding:0 6px;
margin:1px 2px 1px 0;font-size:12px}
.fchips{display:flex;flex-wrap:wrap;gap:3px}
.fchip{display:inline-block;font-family:var(--mono);font-size:11px;padding:0 6px;border-radius:4px;white-space:nowrap;
-webkit-print-color-adjust:exact;print-color-adjust:exact}
table.data td.wide{min-width:260px;max-width:420px}
svg.gapbar,svg.cisvg{display:inline-block;vertical-align:middle}
svg.gapbar .qa{fill:#4c8fe0}svg.gapbar .code{fill:#e0823d}svg.gapbar .zero{stroke:#1f2328;stroke-width:1.2}
svg.gapbar .grid,svg.cisvg .grid{stroke:#d8dee4;stroke-width:1}
.gapaxis{display:flex;justify-content:space-between;width:240px;font-size:11px;color:var(--muted);font-weight:400}
svg.cisvg .whisker{stroke:#0550ae;stroke-width:1.4}svg.cisvg .pt{fill:#0969da}
svg.cisvg.qa .whisker{stroke:#4b2bb3}svg.cisvg.qa .pt{fill:#8250df}
svg.chart .trend{fill:none;stroke:#4c8fe0;stroke-width:2}
svg.chart .ciw{stroke:#1f2328;stroke-width:1.3}
svg.chart .pt{fill:#0969da}
.card .v .unit{font-size:15px;font-weight:500;color:var(--muted)}
.conclusion{font-weight:600;margin:12px 0 6px}
dl.facts.wins{margin:4px 0 12px}
.verdictline{border-left:4px solid #8c959f;background:var(--panel);padding:8px 12px;border-radius:0 6px 6px 0;
margin:4px 0 10px}
.verdictline .rv{font-weight:700;margin-right:6px}
.verdictline.good{border-color:#1a7f37;background:#dafbe1}.verdictline.good .rv{color:#116329}
.verdictline.bad{border-color:#cf222e;background:#ffebe9}.verdictline.bad .rv{color:#a40e26}
.revmode{margin:0 0 24px}
table.revision td:last-child{color:var(--muted);font-size:12.5px;white-space:nowrap}
table.revision th{white-space:nowrap}
.card .kv{display:flex;gap:10px;align-items:baseline;font-variant-numeric:tabular-nums}
.card .kv .kn{color:var(--muted);font-weight:600;min-width:96px}.card .kv b{font-size:21px}
table.byround{max-width:900px}
table.cost{max-width:720px}table.cost tr.total th,table.cost tr.total td{font-weight:700;border-top:2px solid var(--line)}
ol.rounds{list-style:none;margin:8px 0 0;padding:0}
li.round{border:1px solid var(--line);border-left:4px solid #8c959f;border-radius:6px;padding:8px 12px;margin:0 0 8px}
li.round[data-verdict=pass],li.round[data-verdict=correct]{border-left-color:#1a7f37}
.rhead{display:flex;gap:8px;align-items:baseline;flex-wrap:wrap}
.rhead .rno{font-weight:700}
.rhead .reason{color:var(--muted);font-size:13px;overflow-wrap:anywhere}
.feedback{margin:8px 0 0 18px;padding:4px 0 0 12px;border-left:3px dashed #d4a72c}
.feedback pre.text{background:#fffbea;border-color:#eac54f}
details.reply>summary,details.rbody>summary{cursor:pointer;color:var(--accent);font-size:13px;margin-top:4px}
details.reply[open]>summary{margin-bottom:4px}
pre.text .cut{color:var(--muted);font-style:italic}
.controls .sep{width:1px;height:20px;background:var(--line);margin:0 4px}
table.heat{border-collapse:separate;border-spacing:2px;font-size:13px}
table.heat th{font-weight:600;padding:4px 8px;text-align:left;white-space:nowrap}
table.heat thead th{vertical-align:bottom;text-align:center;max-width:160px;white-space:normal}
table.heat thead th .rid{display:block;font-family:var(--mono);font-size:10.5px;color:var(--muted);font-weight:400;
word-break:break-all}
table.heat td{min-width:84px;text-align:center;padding:6px 8px;border-radius:4px;font-variant-numeric:tabular-nums;
font-weight:600;-webkit-print-color-adjust:exact;print-color-adjust:exact}
table.heat td.none{color:var(--muted);font-weight:400;background:repeating-linear-gradient(45deg,#f6f8fa,#f6f8fa 4px,
#eef1f4 4px,#eef1f4 8px)}
table.heat tr.grp th{padding-top:12px;color:var(--muted);font-size:11.5px;text-transform:uppercase;letter-spacing:.05em}
.legend{display:flex;align-items:center;gap:6px;font-size:12px;color:var(--muted);margin:8px 0 0}
.legend .sw{display:inline-block;width:26px;height:12px;border-radius:2px;-webkit-print-color-adjust:exact;
print-color-adjust:exact}
table.board td .sub2{display:block;font-size:11.5px;color:var(--muted);white-space:nowrap}
table.board td.model{min-width:170px;max-width:250px}
table.board td .about{display:block;font-size:11.5px;color:var(--muted)}
table.board td.model .name{font-weight:700;overflow-wrap:anywhere}
table.board td.model code.rid{display:block;font-size:11px;color:var(--muted);word-break:break-all}
table.board td .sp{display:block;white-space:nowrap;margin:0 0 3px}
table.board td .big{font-size:15px}
table.board td{vertical-align:top;padding-top:8px;padding-bottom:8px}
table.board .rank{font-weight:700;color:var(--muted)}
footer{margin-top:40px;color:var(--muted);font-size:12px;border-top:1px solid var(--line);padding-top:10px}
@media (max-width:720px){.wrap{padding:14px}dl.meta{grid-template-columns:1fr}}
@page{margin:14mm}
@media print{
nav.toc,.noprint,.controls,table.sortable th .arrow{display:none!important}
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

  function cellValue(row, idx, type) {
    var cell = row.cells[idx];
    var raw = cell ? cell.getAttribute("data-v") : null;
    if (raw === null) raw = cell ? cell.textContent : "";
    if (type === "num") { var x = parseFloat(raw); return isNaN(x) ? null : x; }
    return raw === "" ? null : raw.toLowerCase();
  }
  function makeSortable(table) {
    var current = { key: null, dir: 1 };
    function sortTable(key, dir) {
      if (!table.tHead) return false;
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
        if (ths[i].hasAttribute("data-key")) {
          ths[i].setAttribute("aria-sort", i === idx ? (dir > 0 ? "ascending" : "descending") : "none");
        }
      }
      current.key = key; current.dir = dir;
      table.setAttribute("data-sorted", (dir < 0 ? "-" : "") + key);
      return true;
    }
    if (table.tHead) {
      Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th) {
        var btn = th.querySelector("button.sort");
        if (!btn) return;
        btn.addEventListener("click", function () {
          var key = th.getAttribute("data-key");
          sortTable(key, current.key === key ? -current.dir : 1);
        });
      });
    }
    return sortTable;
  }
  var sortables = Array.prototype.slice.call(doc.querySelectorAll("table.sortable"));
  var sorters = sortables.map(makeSortable);
  var mainIdx = -1;
  sortables.forEach(function (t, i) { if (mainIdx < 0 && t.id === "problems") mainIdx = i; });
  if (mainIdx < 0 && sortables.length) mainIdx = 0;

  var samples = Array.prototype.slice.call(doc.querySelectorAll("details.sample"));
  var vchips = Array.prototype.slice.call(doc.querySelectorAll("button[data-filter]"));
  var mchips = Array.prototype.slice.call(doc.querySelectorAll("button[data-mode-filter]"));
  var state = { verdict: "", mode: "" };
  function applyFilters() {
    samples.forEach(function (d) {
      d.hidden = (!!state.verdict && d.getAttribute("data-verdict") !== state.verdict) ||
                 (!!state.mode && d.getAttribute("data-mode") !== state.mode);
    });
    vchips.forEach(function (c) { c.setAttribute("aria-pressed", String(c.getAttribute("data-filter") === state.verdict)); });
    mchips.forEach(function (c) { c.setAttribute("aria-pressed", String(c.getAttribute("data-mode-filter") === state.mode)); });
    var section = doc.getElementById("failing");
    if (section) { section.setAttribute("data-filter", state.verdict); section.setAttribute("data-mode", state.mode); }
  }
  vchips.forEach(function (c) {
    c.addEventListener("click", function () { state.verdict = c.getAttribute("data-filter") || ""; applyFilters(); });
  });
  mchips.forEach(function (c) {
    c.addEventListener("click", function () { state.mode = c.getAttribute("data-mode-filter") || ""; applyFilters(); });
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
    if (m && mainIdx >= 0) sorters[mainIdx](m[2], m[1] ? -1 : 1);
    var f = /(?:^#|[&;])filter=([A-Za-z0-9_]*)/.exec(hash);
    var md = /(?:^#|[&;])mode=([A-Za-z0-9_]*)/.exec(hash);
    if (f) state.verdict = f[1];
    if (md) state.mode = md[1];
    if (f || md) applyFilters();
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


def page_shell(title: str, toc: list[tuple[str, str]], content: list[str], footer: str, data: Any,
               wide: bool = False) -> str:
    """The document around a page's content: the policy, the styles, the table of contents, the
    data block and the two scripts. ``toc`` is (anchor, label) pairs; ``content`` is trusted HTML."""
    csp = ("default-src 'none'; "
           f"script-src {_csp_hash(ERRORS_JS)} {_csp_hash(INIT_JS)}; "
           "style-src 'unsafe-inline'; img-src data:; font-src 'none'; connect-src 'none'; "
           "base-uri 'none'; form-action 'none'")
    nav = (f'<nav class="toc{" wide" if wide else ""}" aria-label="sections"><div class="in">'
           + "".join(f'<a href="#{esc(a)}">{label}</a>' for a, label in toc) + "</div></nav>")
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
        nav,
        f'<div class="wrap{" wide" if wide else ""}">',
        *content,
        f"<footer>{footer}</footer>",
        "</div>",
        f'<script type="application/json" id="report-data">{json_for_script(data)}</script>',
        f"<script>{INIT_JS}</script>",
        "</body>",
        "</html>",
    ]
    page = "\n".join(parts) + "\n"
    # lone surrogates (possible in decoded model output) cannot be written as UTF-8
    return page.encode("utf-8", "replace").decode("utf-8")


def render_html(summary: dict[str, Any], samples: list[dict[str, Any]]) -> str:
    """One self-contained HTML document showing a run summary and its failing samples."""
    run = summary.get("run") or {}
    modes = summary.get("modes") or run.get("modes") or ["code"]
    shown = shown_samples(samples)
    first_sample: dict[tuple[str, str], int] = {}
    titles: dict[str, str] = {}
    for i, sm in enumerate(shown):
        first_sample.setdefault((str(sm.get("mode") or "code"), str(sm.get("problem", ""))), i)
    for sm in samples:
        if sm.get("title"):
            titles.setdefault(str(sm.get("problem", "")), str(sm["title"]))
    both = "code" in modes and "qa" in modes
    toc: list[tuple[str, str]] = []
    main: list[str] = []
    if "code" in modes:
        if both:
            main.append(_part("code", summary))
        toc += [("headline", "Headline"), ("runs", "Runs"), ("verdicts", "Verdicts")]
        main += [_headline(summary), _runs(summary.get("runs") or {}), _verdicts(summary.get("verdicts") or {})]
        if summary.get("by_tier"):
            toc.append(("by-tier", "By tier"))
            main.append(_groups(summary["by_tier"], "by_tier", "By tier", "tier"))
        toc += [("by-difficulty", "By difficulty"), ("by-family", "By family"), ("problems-section", "Problems")]
        main += [_groups(summary.get("by_difficulty") or {}, "by_difficulty", "By difficulty", "difficulty"),
                 _groups(summary.get("by_family") or {}, "by_family", "By family", "family"),
                 _problems(summary, first_sample, titles)]
    if "qa" in modes:
        if both:
            main.append(_part("qa", summary))
        toc += [("qa-headline", "Q&amp;A"), ("qa-problems-section", "Q&amp;A problems")]
        main += _qa_sections(summary, first_sample, titles)
    if summary.get("gap"):
        toc.append(("gap", "Reasoning vs code"))
        main.append(_gap(summary))
    revision = _revision(summary)
    if revision:
        toc.append(("revision", "Revision"))
        main.append(revision)
    cost = _cost(summary)
    if cost:
        toc.append(("cost", "Cost"))
        main.append(cost)
    toc.append(("failing", f"Failing samples ({len(samples)})"))
    main.append(_samples(samples))
    title = f"perfgrade report: {run.get('model', '?')} ({run.get('id', '?')})"
    footer = (f'perfgrade {esc(run.get("grader_version", ""))} &middot; run {esc(run.get("id", ""))} &middot; '
              "every statistic is recomputed from the run directory by <code>python -m grader report</code>")
    return page_shell(title, toc, [_header(summary), "<main>", *main, "</main>"], footer, summary)
