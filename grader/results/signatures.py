"""Failure signatures: one line that says how a sample failed, so failures can be clustered.

Two samples share a signature when they have the same verdict, the same failing fields and the
same pattern of error in each field: off by exactly the same factor on every vector ("x2", "x8"
is bits for bytes), off by the same amount ("+1" is often a rounding slip), consistently too
high or too low, a wrong type; or, for crashes, the same exception type and message. Clustering
by signature across samples, problems and models shows which convention a model keeps getting
wrong.
"""

from __future__ import annotations

import math
import re
from typing import Any

_NUM = re.compile(r"\b\d+(?:\.\d+)?\b")


def _fmt_factor(r: float) -> str:
    for q in (1, 2, 3, 4, 8, 16):
        if abs(r * q - round(r * q)) < 1e-9 * max(1.0, abs(r * q)):
            n = round(r * q)
            return f"x{n}" if q == 1 else f"x{n}/{q}"
    return f"x{r:.4g}"


def field_pattern(s: dict[str, Any]) -> str:
    """Describe how one field failed over the answered vectors (a FieldSummary as a dict)."""
    failed, answered = s.get("failed", 0), s.get("answered", 0)
    # counts are coarsened so that the same mistake clusters across problems and models
    where = "on every vector" if failed == answered else "on some vectors"
    if s.get("type_errors"):
        return f"wrong type or shape {where}"
    rmin, rmax = s.get("ratio_min"), s.get("ratio_max")
    dmin, dmax = s.get("diff_min"), s.get("diff_max")
    if rmin is not None and rmax is not None and math.isclose(rmin, rmax, rel_tol=1e-9, abs_tol=1e-12):
        return f"off by exactly {_fmt_factor(rmin)} {where}"
    if dmin is not None and dmax is not None and math.isclose(dmin, dmax, rel_tol=1e-9, abs_tol=1e-12):
        return f"off by {dmin:+.6g} {where}"
    if dmin is not None and dmin > 0:
        return f"too high {where}"
    if dmax is not None and dmax < 0:
        return f"too low {where}"
    return f"wrong {where}"


def signature(grade: dict[str, Any]) -> str:
    """The signature of a failing grade (a Grade as a dict). Empty for a pass."""
    v = grade.get("verdict", "")
    if v == "pass":
        return ""
    instances = grade.get("instances") or []
    if v == "wrong_answer" and instances:  # a search problem: below the best known, or invalid mappings
        below = sum(1 for i in instances if not i.get("at_best") and not i.get("invalid") and not i.get("error"))
        parts = ([f"below the best known on {'every' if below == len(instances) else 'some'} instance"]
                 if below else [])
        parts += sorted({_generic(i["invalid"]) for i in instances if i.get("invalid")})
        return f"{v}: " + "; ".join(parts)
    if v in ("wrong_answer", "wrong_type"):
        fields = grade.get("fields") or {}
        parts = [f"{name} {field_pattern(s)}" for name, s in sorted(fields.items()) if s.get("failed")]
        if not parts:
            f0 = (grade.get("failures") or [{}])[0]
            d0 = (f0.get("diffs") or [{}])[0]
            note = d0.get("note") or f0.get("error_message") or ""
            parts = [f"{d0.get('path') or 'result'}: {_generic(note)}"]
        return f"{v}: " + "; ".join(parts)
    if v in ("runtime_error", "load_error", "missing_entry_point"):
        f0 = next((f for f in grade.get("failures") or [] if f.get("error_type")), {})
        etype = f0.get("error_type") or grade.get("exception_type") or "?"
        return f"{v}: {etype} {_generic(f0.get('error_message', ''))}".rstrip()
    if v in ("timeout", "memory_limit", "output_limit", "crashed"):
        return f"{v}: {grade.get('stop_reason') or ''}".rstrip(": ")
    return v


def _generic(message: str) -> str:
    """Keep what identifies an error, drop what varies between samples (numbers, long tails)."""
    message = " ".join(str(message).split())[:120]
    return _NUM.sub("N", message)
