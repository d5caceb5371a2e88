"""The machinery of the HTML pages: the Jinja2 environment, the filters the templates format with,
and the page shell's inline assets and Content-Security-Policy.

The templates live in ``templates/``: ``base.html`` is the document around every page (the policy,
the styles, the table of contents, the data block and the two scripts), ``report.html`` the run
page and ``leaderboard.html`` the page of several runs; the other files are the macros and sections
they share. Every template is autoescaped and every variable must exist (``StrictUndefined``): the
Python side (``html_report.py``, ``leaderboard.py``) hands over plain data, never markup. The CSS
and the two scripts are static files read through the same loader and inlined; the policy allows
exactly those two scripts, by hash. The page's data travels as JSON through Jinja's ``tojson``
(``<``, ``>``, ``&`` and ``'`` escaped, so it cannot end its ``<script>`` element), with
non-finite floats as ``null``.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import json
import math
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined
from markupsafe import Markup

from . import charts
from .render import ci_text, pct, points, points_ci, score, score_ci, verdict_label

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
MODE_LABEL = {"code": "code", "qa": "Q&A"}
SHORT_VERDICT = {"neither helped nor hurt (the CI includes 0)": "neither (CI includes 0)"}  # where room is short


def verdict_color(verdict: str) -> str:
    return VERDICT_COLORS.get(verdict, "#57606a")


def heat_color(v: float | None) -> tuple[str, str]:
    """(background, text colour) of a heat-map cell: one blue hue, darker for higher rates."""
    if v is None:
        return "#f6f8fa", "#59636e"
    v = max(0.0, min(1.0, v))
    light = 97 - 62 * v
    return f"hsl(212 72% {light:.0f}%)", ("#ffffff" if light < 58 else "#1f2328")


def svg_number(x: float) -> str:
    """A coordinate for an SVG attribute: one decimal at most, no trailing zeros."""
    return f"{x:.1f}".rstrip("0").rstrip(".") if x != int(x) else str(int(x))


def sort_value(v: float | None) -> str:
    """A number as a table cell's ``data-v`` (what the page's sorting reads); empty for none."""
    return "" if v is None else repr(float(v))


def _finite(obj: Any) -> Any:
    """JSON-safe copy: non-finite floats become null (JSON.parse refuses NaN)."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {str(k): _finite(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_finite(v) for v in obj]
    return obj


def _dumps(obj: Any, **kwargs: Any) -> str:
    return json.dumps(_finite(obj), **kwargs)


@functools.cache
def environment() -> Environment:
    """The templates' environment: autoescaped, strict about missing variables; a None shows as nothing."""
    env = Environment(loader=PackageLoader("grader.results", "templates"), autoescape=True,
                      undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True,
                      finalize=lambda v: "" if v is None else v)
    env.filters.update(
        pct=pct, ci_text=ci_text, points=points, points_ci=points_ci,  # rates, as the terminal prints them
        score=score, score_ci=score_ci,  # search problems' scores
        verdict_label=verdict_label, short_verdict=lambda v: SHORT_VERDICT.get(v, v),
        mode_label=lambda m: MODE_LABEL.get(m, m),
        color=verdict_color, heat=heat_color,
        svg=svg_number, sort_value=sort_value, fmt=format,
    )
    env.globals["chart"] = charts  # the charts' geometry
    env.policies["json.dumps_function"] = _dumps
    env.policies["json.dumps_kwargs"] = {"ensure_ascii": True, "separators": (",", ":"), "default": str}
    return env


def asset(name: str) -> str:
    """A static file of the templates folder (the CSS, a script), as it is inlined."""
    env = environment()
    return env.loader.get_source(env, name)[0]  # type: ignore[union-attr]


def csp_hash(script: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode() + "'"


def content_security_policy(scripts: list[str]) -> str:
    return ("default-src 'none'; "
            f"script-src {' '.join(csp_hash(s) for s in scripts)}; "
            "style-src 'unsafe-inline'; img-src data:; font-src 'none'; connect-src 'none'; "
            "base-uri 'none'; form-action 'none'")


def render_page(template: str, **context: Any) -> str:
    """A page from its template and data; the shell's assets and policy are added here."""
    errors_js, init_js = asset("errors.js").rstrip("\n"), asset("init.js").rstrip("\n")
    page = environment().get_template(template).render(
        csp=content_security_policy([errors_js, init_js]), css=Markup(asset("report.css")),
        errors_js=Markup(errors_js), init_js=Markup(init_js), **context)
    # lone surrogates (possible in decoded model output) cannot be written as UTF-8
    return page.encode("utf-8", "replace").decode("utf-8")
