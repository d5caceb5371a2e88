"""Grading a Q&A answer on the host: no code runs, so no sandbox is needed.

The answer is the last valid JSON object in a fenced block of the completion (```json or an
untagged fence; reasoning in ``<think>`` sections is ignored). It is parsed with the same strict
rules as a candidate's output in code mode (no NaN or infinity, no duplicate keys, size and depth
caps) and compared field by field with the problem's tolerances. Verdicts: ``correct``,
``wrong_answer``, ``wrong_type`` (a key missing or extra, a value of the wrong type: 48.0 where an
integer is due), ``no_answer`` (no fenced JSON object, or none that parses strictly) and
``infra_error`` (never the model's fault).

A search problem's item (kind ``mapping``, docs/mapper.md) asks for one mapping: the same
extraction gives it, the problem's trusted evaluator judges it (the code mode's caps and checks)
and it is scored against the item's best known: ``score = min(1, best / objective)``, 0 for an
invalid mapping (``invalid_mapping: <reason>``, verdict ``wrong_answer``) or none (``no_answer``).
It is ``correct`` within the problem's tolerance of the best known, else ``wrong_answer``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from sandbox.channel import ChannelError, parse_strict

from ..packs.qa import QAItem
from .extract import _FENCE, _THINK, MAX_COMPLETION_CHARS
from .scoring import (FieldSummary, Grade, InstanceScore, VectorFailure, Verdict, _kept, _top_field, compare_output,
                      instance_score, judge_mapping, summarize_inputs)

MAX_ANSWER_BYTES = 256 << 10
MAX_ANSWER_DEPTH = 32

_JSON_TAGS = {"", "json", "json5", "jsonc"}


@dataclass(frozen=True)
class AnswerExtraction:
    value: dict[str, Any] | None
    method: Literal["fenced", "none"]
    blocks: int
    reason: str

    def to_json(self) -> dict[str, Any]:
        return {"method": self.method, "blocks": self.blocks, "reason": self.reason}


def extract_answer(text: str | None) -> AnswerExtraction:
    """The last fenced block holding a strict JSON object, or why there is none."""
    if not text or not text.strip():
        return AnswerExtraction(None, "none", 0, "the completion is empty")
    if len(text) > MAX_COMPLETION_CHARS:
        return AnswerExtraction(None, "none", 0, f"the completion is longer than {MAX_COMPLETION_CHARS} characters")
    visible = _THINK.sub("", text.replace("\x00", ""))
    blocks = [(m.group(2).lower(), m.group(3)) for m in _FENCE.finditer(visible)]
    candidates = [b for tag, b in blocks if tag in _JSON_TAGS and b.strip()]
    last_error = ""
    for n, body in reversed(list(enumerate(candidates, 1))):
        try:
            value = parse_strict(body.strip(), max_bytes=MAX_ANSWER_BYTES, max_depth=MAX_ANSWER_DEPTH)
        except ChannelError as exc:
            last_error = last_error or f"block {n} of {len(candidates)}: {exc}"
            continue
        if isinstance(value, dict):
            return AnswerExtraction(value, "fenced", len(blocks), f"JSON block {n} of {len(candidates)}")
        last_error = last_error or f"block {n} of {len(candidates)} holds a {type(value).__name__}, not an object"
    if not blocks:
        return AnswerExtraction(None, "none", 0, "no fenced block in the completion")
    if not candidates:
        return AnswerExtraction(None, "none", len(blocks), "no JSON block in the completion")
    return AnswerExtraction(None, "none", len(blocks), f"no JSON block holds a valid object ({last_error})")


def grade_answer(item: QAItem, extraction: AnswerExtraction) -> Grade:
    """Exactly one verdict for one extracted answer."""
    if extraction.value is None:
        return Grade(verdict=Verdict.NO_ANSWER, reason=extraction.reason, vectors_total=1)
    diffs = compare_output(item.fields, item.expected, extraction.value)
    failed = {_top_field(d.path) for d in diffs}
    typed = {_top_field(d.path) for d in diffs if d.kind != "value"}
    fields = {f.name: FieldSummary(failed=int(f.name in failed), answered=1, type_errors=int(f.name in typed))
              for f in item.fields}
    if not diffs:
        return Grade(verdict=Verdict.CORRECT, reason=f"every field of {item.id} matches", vectors_total=1,
                     vectors_answered=1, vectors_passed=1, fields=fields)
    kind = Verdict.WRONG_TYPE if any(d.kind != "value" for d in diffs) else Verdict.WRONG_ANSWER
    bad = [f.name for f in item.fields if f.name in failed] + sorted(failed - {f.name for f in item.fields})
    if kind is Verdict.WRONG_TYPE:
        d0 = next(d for d in diffs if d.kind != "value")
        reason = f"{d0.path or 'answer'}: {d0.note or d0.kind}"
    else:
        reason = f"wrong {', '.join(bad[:6])}"
    return Grade(verdict=kind, reason=reason[:400], vectors_total=1, vectors_answered=1, vectors_passed=0,
                 failures=[VectorFailure(vector=item.id, kind=kind.value, inputs=summarize_inputs(item.args),
                                         diffs=diffs)],
                 failed_vectors=[item.id], fields=fields)


def grade_mapping_answer(problem: Any, item: QAItem, extraction: AnswerExtraction) -> Grade:
    """Exactly one verdict and a score for the mapping a reply proposes for a search problem's item."""
    sc = problem.data.scoring
    best, proven = float(item.expected["best"]), bool(item.expected["proven"])
    if extraction.value is None:
        inst = InstanceScore(vector=item.id, score=0.0, best=best, proven=proven, error=f"no_answer: {extraction.reason}")
        return Grade(verdict=Verdict.NO_ANSWER, reason=extraction.reason, vectors_total=1, score=0.0,
                     instances=[inst], failed_vectors=[item.id])
    invalid, obj = judge_mapping(problem.evaluator_fn, extraction.value, item.args, sc.max_bytes)
    common: dict[str, Any] = {"vectors_total": 1, "vectors_answered": 1}
    if invalid:
        inst = InstanceScore(vector=item.id, score=0.0, best=best, proven=proven, invalid=invalid,
                             mapping=_kept(extraction.value))
        return Grade(verdict=Verdict.WRONG_ANSWER, reason=f"score 0: {invalid} on {item.id}"[:400], score=0.0,
                     instances=[inst], failed_vectors=[item.id], **common)
    assert obj is not None
    s, at, new = instance_score(obj, best, sc.tolerance)
    inst = InstanceScore(vector=item.id, score=s, best=best, proven=proven, objective=obj, at_best=at, new_best=new,
                         mapping="" if at and not new else _kept(extraction.value))
    if at:
        return Grade(verdict=Verdict.CORRECT, reason=f"{item.id} at the best known (score {s:.4f})"
                     + (", a new best known" if new else ""), score=s, instances=[inst], vectors_passed=1, **common)
    return Grade(verdict=Verdict.WRONG_ANSWER, reason=f"score {s:.3f}: {sc.objective_name} {obj:.6g} against the best "
                 f"known {best:.6g} on {item.id}"[:400], score=s, instances=[inst], failed_vectors=[item.id], **common)


def grade_qa(problem: Any, item: QAItem, text: str | None) -> Grade:
    """The grade of one Q&A reply: a mapping item is judged and scored, the others compared."""
    extraction = extract_answer(text)
    if item.kind == "mapping":
        return grade_mapping_answer(problem, item, extraction)
    return grade_answer(item, extraction)
