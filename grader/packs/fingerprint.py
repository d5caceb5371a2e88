"""A pack's fingerprint: digests of everything a model sees and everything it is scored against.

Per problem: the hidden vectors (ids, inputs and expected outputs), the visible examples, the
code-mode prompt, the Q&A items (inputs, expected answers, questions, options) and their
prompts. Digests only: a fingerprint reveals no input and no expected value.

Two fingerprints that agree prove a change (a new pack layout, a refactored reference, a faster
generator) moved nothing a model or a score sees; ``problems fingerprint PACK --check FILE``
compares the pack with a saved one and names every problem and part that differs.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from .problems import Pack, Problem
from .prompt import render_prompt
from .qa import qa_items, render_qa_prompt
from .vectors import load

FINGERPRINT_FORMAT = 1
QA_ITEMS = 5  # the default number of Q&A items per kind, as eval draws them


def _digest(obj: Any) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True, separators=(",", ":"), allow_nan=False).encode()).hexdigest()


def problem_fingerprint(problem: Problem) -> dict[str, Any]:
    vs = load(problem)
    out: dict[str, Any] = {
        "hidden": _digest([[v.id, v.args, v.expected] for v in vs.hidden]),
        "hidden_count": len(vs.hidden),
        "visible": _digest([[v.id, v.args, v.expected] for v in vs.visible]),
        "prompt": hashlib.sha256(render_prompt(problem, vs.visible).encode()).hexdigest(),
    }
    if problem.data.qa is not None:
        items = qa_items(problem, vs.hidden, QA_ITEMS)
        out["qa_items"] = _digest([[i.id, i.kind, i.args, i.expected, i.question, list(i.options)] for i in items])
        out["qa_prompts"] = _digest([render_qa_prompt(problem, i, vs.visible) for i in items])
    return out


def pack_fingerprint(pack: Pack) -> dict[str, Any]:
    return {"format": FINGERPRINT_FORMAT, "pack": pack.name,
            "problems": {p.id: problem_fingerprint(p) for p in sorted(pack.problems, key=lambda p: p.id)}}


def differences(saved: dict[str, Any], now: dict[str, Any]) -> list[str]:
    """Every problem and part whose digest differs, or that one side lacks."""
    out = []
    a, b = saved.get("problems", {}), now.get("problems", {})
    for pid in sorted(set(a) | set(b)):
        if pid not in b:
            out.append(f"{pid}: gone")
        elif pid not in a:
            out.append(f"{pid}: new")
        else:
            parts = sorted(k for k in set(a[pid]) | set(b[pid]) if a[pid].get(k) != b[pid].get(k))
            if parts:
                out.append(f"{pid}: {', '.join(parts)} differ")
    return out
