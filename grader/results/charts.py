"""The geometry of the pages' inline SVG charts: plain dicts of coordinates and values.

Each function lays out one kind of chart (the templates' ``charts.html`` draws it): where the bars,
gridlines, whiskers and labels go, in the chart's own units. Rates are clamped to 0-100%.
"""

from __future__ import annotations

import math
from typing import Any

GRID = (0, 0.25, 0.5, 0.75, 1.0)
INNER = (0.25, 0.5, 0.75)


def _unit(v: float) -> float:
    return max(0.0, min(1.0, v))


def runs_chart(runs: dict[str, Any], prefix: str = "runs", what: str = "pass rate") -> dict[str, Any] | None:
    """Vertical bars of every run's pass rate (or accuracy), the mean as a dashed line, its 95% CI
    as a band; None when no run has a rate."""
    rates = [r for r in runs.get("runs") or [] if r is not None]
    if not rates:
        return None
    w, h = 960, 250
    ml, mr, mt, mb = 48, 110, 16, 34
    pw, ph = w - ml - mr, h - mt - mb

    def y(v: float) -> float:
        return mt + ph * (1 - _unit(v))

    n = len(rates)
    band = pw / n
    bw = max(1.5, min(56.0, band * 0.68))
    step = max(1, math.ceil(n / 30))
    bars = []
    for i, v in enumerate(rates):
        x = ml + band * i + (band - bw) / 2
        bars.append({"i": i, "v": v, "x": x, "y": y(v), "width": bw, "height": max(0.0, mt + ph - y(v)),
                     "mid": x + bw / 2, "label": n <= 24, "tick": i % step == 0})
    ci = runs.get("ci95")
    mean = runs.get("mean")
    return {
        "id": prefix, "what": what, "w": w, "h": h, "n": n, "mean": mean, "ci95": ci,
        "left": ml, "right": ml + pw, "width": pw, "bottom": mt + ph,
        "grid": [{"y": y(t), "label": f"{int(t * 100)}%"} for t in GRID],
        "band": {"y": y(ci[1]), "height": max(0.5, y(ci[0]) - y(ci[1]))} if ci else None,
        "bars": bars, "caption_x": ml + pw / 2, "caption_y": h - 3,
        "mean_y": None if mean is None else y(mean),
    }


def gap_bar(gap: float | None, width: int = 240) -> dict[str, Any]:
    """A diverging bar from the middle: right (Q&A did better) or left (code did)."""
    mid = width / 2
    bar = None
    if gap is not None:
        g = max(-1.0, min(1.0, gap))
        x0, x1 = sorted((mid, mid + g * mid))
        bar = {"mode": "qa" if g > 0 else "code", "x": x0, "width": max(0.8, x1 - x0)}
    return {"w": width, "h": 16, "mid": mid, "grid": [mid + t * mid for t in (-0.5, 0.5)], "bar": bar}


def ci_track(v: float | None, ci: list[float] | None, width: int = 130) -> dict[str, Any]:
    """A rate as a dot on a 0-100% track with its 95% CI as a whisker."""
    pad = 3
    pw = width - 2 * pad

    def x(u: float) -> float:
        return pad + pw * _unit(u)

    return {"w": width, "h": 14, "pad": pad, "track": pw, "grid": [x(t) for t in INNER],
            "ci": (x(ci[0]), x(ci[1])) if ci else None, "dot": None if v is None else x(v)}


def rounds_chart(rounds: list[dict[str, Any]], prefix: str, metric: str) -> dict[str, Any] | None:
    """The rate after each revision round: a line through the rounds, each with its 95% CI."""
    if not rounds:
        return None
    w, h = 960, 180
    ml, mr, mt, mb = 48, 40, 14, 30
    pw, ph = w - ml - mr, h - mt - mb
    n = len(rounds)

    def x(i: int) -> float:
        return ml + (pw * (i + 0.5) / n)

    def y(v: float) -> float:
        return mt + ph * (1 - _unit(v))

    points = []
    for i, r in enumerate(rounds):
        v, ci = r.get("rate"), r.get("rate_ci95")
        points.append({"round": r["round"], "v": v, "ci95": ci, "x": x(i), "y": None if v is None else y(v),
                       "lo": y(ci[0]) if ci else None, "hi": y(ci[1]) if ci else None})
    line = [(p["x"], p["y"]) for p in points if p["y"] is not None]
    return {"id": prefix, "metric": metric, "w": w, "h": h, "left": ml, "right": ml + pw, "bottom": mt + ph,
            "grid": [{"y": y(t), "label": f"{int(t * 100)}%"} for t in GRID],
            "line": line if len(line) > 1 else [], "points": points}


def scale(width: int = 300) -> dict[str, Any]:
    """The 0-100% scale above a column of spread bars."""
    ticks = [{"x": 4 + (width - 8) * t / 100, "label": f"{t}%",
              "anchor": "start" if t == 0 else "end" if t == 100 else "middle"} for t in (0, 25, 50, 75, 100)]
    return {"w": width, "ticks": ticks}


def spread_bar(p1: float | None, spread: dict[str, Any], width: int = 300) -> dict[str, Any]:
    """A pass@1 (or accuracy) bar with the run-to-run range as a whisker and each run as a dot."""
    pad = 4
    pw = width - 2 * pad

    def x(v: float) -> float:
        return pad + pw * _unit(v)

    lo, hi = spread.get("min"), spread.get("max")
    return {"w": width, "h": 22, "pad": pad, "track": pw, "grid": [x(t) for t in INNER],
            "bar": None if p1 is None else max(0.0, x(p1) - pad),
            "range": (x(lo), x(hi)) if lo is not None and hi is not None else None,
            "dots": [x(r) for r in spread.get("runs") or [] if r is not None]}


def unit_bar(v: float | None, width: int) -> float | None:
    """The length of a 0-100% bar of the given width; None for no rate."""
    return None if v is None else _unit(v) * width


def score_strip(values: list[float], mean: float | None, ci: list[float] | None, width: int = 220) -> dict[str, Any]:
    """Scores (0 to 1) as a strip: each value a dot on the track (stacked where they coincide), the
    mean as a tick and its 95% CI as a whisker."""
    pad = 4
    pw = width - 2 * pad

    def x(v: float) -> float:
        return pad + pw * _unit(v)

    seen: dict[int, int] = {}
    dots = []
    for v in values:
        px = x(v)
        slot = round(px / 3)  # dots closer than 3 units stack upwards
        level = seen.get(slot, 0)
        seen[slot] = level + 1
        dots.append({"x": px, "y": 15 - min(level, 3) * 3.5, "v": v})
    return {"w": width, "h": 22, "pad": pad, "track": pw, "grid": [x(t) for t in INNER], "dots": dots,
            "mean": None if mean is None else x(mean), "ci": (x(ci[0]), x(ci[1])) if ci else None}


def histogram(values: list[float], bins: int = 10, width: int = 120, height: int = 24) -> dict[str, Any]:
    """Scores (0 to 1) counted in ``bins`` equal bins (the last one closed: a score of 1 is in it),
    as bars scaled to the fullest bin."""
    counts = [0] * bins
    for v in values:
        counts[min(bins - 1, int(_unit(v) * bins))] += 1
    top = max(counts) or 1
    bw = width / bins
    bars = [{"x": i * bw + 0.5, "width": max(0.5, bw - 1), "height": (height - 2) * c / top,
             "y": height - 1 - (height - 2) * c / top, "n": c, "lo": i / bins, "hi": (i + 1) / bins}
            for i, c in enumerate(counts)]
    return {"w": width, "h": height, "bars": bars, "counts": counts}
