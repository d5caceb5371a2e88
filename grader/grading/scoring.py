"""Turn what a candidate returned into exactly one verdict, comparing on the host.

Expected values never enter the container: the sandbox returns the candidate's raw values and
this module compares them, with strict types (``True`` is not ``1``, ``18.0`` is not ``18``) and
each output field's declared tolerance. Nothing the candidate controls is called here: values are
plain JSON parsed strictly by the sandbox channel.

For failing samples the first failing vectors are kept field by field (expected, got, relative
error), and every field gets a summary over all vectors (how many failed, the range of got/expected
ratios and differences) from which failure signatures are derived.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from enum import Enum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from sandbox.models import ExecResult

from ..packs.problems import FieldSpec, TypeSpec
from ..packs.vectors import Vector, check_value

MAX_FAILURES_KEPT = 5
MAX_DIFFS_PER_VECTOR = 24


class Verdict(str, Enum):
    PASS = "pass"
    WRONG_ANSWER = "wrong_answer"
    WRONG_TYPE = "wrong_type"
    RUNTIME_ERROR = "runtime_error"
    TIMEOUT = "timeout"
    MEMORY_LIMIT = "memory_limit"
    OUTPUT_LIMIT = "output_limit"
    LOAD_ERROR = "load_error"
    MISSING_ENTRY = "missing_entry_point"
    NO_CODE = "no_code"
    CRASHED = "crashed"
    INFRA_ERROR = "infra_error"
    # Q&A mode (no code runs: the answer itself is compared)
    CORRECT = "correct"
    NO_ANSWER = "no_answer"

    @property
    def counts_against_model(self) -> bool:
        return self is not Verdict.INFRA_ERROR

    @property
    def label(self) -> str:
        return VERDICT_LABELS[self]


VERDICT_LABELS = {
    Verdict.PASS: "pass",
    Verdict.WRONG_ANSWER: "wrong answer",
    Verdict.WRONG_TYPE: "wrong type or shape",
    Verdict.RUNTIME_ERROR: "runtime error",
    Verdict.TIMEOUT: "timeout",
    Verdict.MEMORY_LIMIT: "memory limit",
    Verdict.OUTPUT_LIMIT: "output limit",
    Verdict.LOAD_ERROR: "load error",
    Verdict.MISSING_ENTRY: "missing entry point",
    Verdict.NO_CODE: "no code",
    Verdict.CRASHED: "crashed",
    Verdict.INFRA_ERROR: "infrastructure error",
    Verdict.CORRECT: "correct",
    Verdict.NO_ANSWER: "no answer",
}
PASSING = frozenset({Verdict.PASS, Verdict.CORRECT})


class _Rec(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class FieldDiff(_Rec):
    path: str
    kind: Literal["value", "type", "missing", "extra"]
    expected: Any = None
    got: Any = None
    abs_err: float | None = None
    rel_err: float | None = None
    ratio: float | None = None
    note: str = ""


class VectorFailure(_Rec):
    vector: str
    kind: Literal["wrong_answer", "wrong_type", "runtime_error"]
    inputs: str = ""  # the vector's arguments, summarised (JSON, truncated)
    diffs: list[FieldDiff] = Field(default_factory=list)
    error_type: str | None = None
    error_message: str = ""
    traceback: str = ""


class FieldSummary(_Rec):
    """How one output field fared over every answered vector."""

    failed: int = 0
    answered: int = 0
    type_errors: int = 0
    ratio_min: float | None = None
    ratio_max: float | None = None
    diff_min: float | None = None
    diff_max: float | None = None


class Grade(_Rec):
    verdict: Verdict
    reason: str
    vectors_total: int
    vectors_answered: int = 0
    vectors_passed: int = 0
    failures: list[VectorFailure] = Field(default_factory=list)
    failed_vectors: list[str] = Field(default_factory=list)
    fields: dict[str, FieldSummary] = Field(default_factory=dict)
    exception_type: str | None = None
    load_kind: str | None = None
    stop_reason: str | None = None
    stop_detail: str = ""
    cpu_s: float = 0.0
    wall_s: float = 0.0
    max_rss_kb: int | None = None
    output_bytes: int = 0
    output_tail: str = ""
    # search problems only (docs/mapper.md): the mean score over the hidden instances, in [0, 1],
    # and how each instance fared; None and empty for pass/fail problems
    score: float | None = None
    instances: list["InstanceScore"] = Field(default_factory=list)

    @property
    def at_best(self) -> int:
        """Instances at the best known (search problems)."""
        return sum(i.at_best for i in self.instances)

    @property
    def new_best(self) -> list[str]:
        """Instances where the mapping beat the best known (search problems)."""
        return [i.vector for i in self.instances if i.new_best]

    @property
    def passed(self) -> bool:
        return self.verdict in PASSING


# ------------------------------------------------------------------------------------------
# comparison
# ------------------------------------------------------------------------------------------

def _num_pair(expected: Any, got: Any) -> tuple[float | None, float | None, float | None]:
    try:
        e, g = float(expected), float(got)
    except (TypeError, ValueError, OverflowError):
        return None, None, None
    if not (math.isfinite(e) and math.isfinite(g)):
        return None, None, None
    abs_err = abs(g - e)
    rel = abs_err / abs(e) if e != 0 else (0.0 if g == 0 else math.inf)
    ratio = g / e if e != 0 else None
    return abs_err, (rel if math.isfinite(rel) else None), ratio


def _sort_key(v: Any) -> str:
    return json.dumps(v, sort_keys=True)


def compare(t: TypeSpec, spec: FieldSpec, expected: Any, got: Any, path: str, out: list[FieldDiff]) -> None:
    """Append the differences between expected and got (of type t) to out."""
    if len(out) >= MAX_DIFFS_PER_VECTOR:
        return
    why = check_value(t, got, spec.choices)
    if why is not None and t.kind not in ("list", "set", "map"):
        out.append(FieldDiff(path=path, kind="type", expected=expected, got=_clip(got), note=why))
        return
    k = t.kind
    if k == "float":
        assert spec.rtol is not None and spec.atol is not None
        e = float(expected)
        try:
            g = float(got)
        except OverflowError:  # an integer beyond the float range: far from any finite expectation
            out.append(FieldDiff(path=path, kind="value", expected=expected, got=_clip(got),
                                 note="integer beyond the range of a float"))
            return
        if not abs(g - e) <= spec.atol + spec.rtol * abs(e):
            abs_err, rel, ratio = _num_pair(e, g)
            out.append(FieldDiff(path=path, kind="value", expected=expected, got=got,
                                 abs_err=abs_err, rel_err=rel, ratio=ratio))
        return
    if k in ("int", "str", "bool", "enum"):
        if got != expected:
            abs_err, rel, ratio = _num_pair(expected, got) if k == "int" else (None, None, None)
            out.append(FieldDiff(path=path, kind="value", expected=expected, got=got,
                                 abs_err=abs_err, rel_err=rel, ratio=ratio))
        return
    assert t.inner is not None
    if k in ("list", "set"):
        if type(got) is not list:
            out.append(FieldDiff(path=path, kind="type", expected=_clip(expected), got=_clip(got),
                                 note=f"expected a list, got {type(got).__name__}"))
            return
        if len(got) != len(expected):
            out.append(FieldDiff(path=path, kind="type", expected=_clip(expected), got=_clip(got),
                                 note=f"expected {len(expected)} elements, got {len(got)}"))
            return
        if k == "set":
            bad = check_value(t, got, spec.choices)
            if bad:
                out.append(FieldDiff(path=path, kind="type", expected=_clip(expected), got=_clip(got), note=bad))
                return
            if sorted(got, key=_sort_key) != sorted(expected, key=_sort_key):
                out.append(FieldDiff(path=path, kind="value", expected=_clip(expected), got=_clip(got),
                                     note="compared as a set"))
            return
        for i, (e, g) in enumerate(zip(expected, got)):
            compare(t.inner, spec, e, g, f"{path}[{i}]", out)
        return
    if k == "map":
        if type(got) is not dict:
            out.append(FieldDiff(path=path, kind="type", expected=_clip(expected), got=_clip(got),
                                 note=f"expected a dict, got {type(got).__name__}"))
            return
        for key in expected:
            if key not in got:
                out.append(FieldDiff(path=f"{path}.{key}", kind="missing", expected=_clip(expected[key])))
        for key in got:
            if key not in expected:
                if len(out) >= MAX_DIFFS_PER_VECTOR:
                    return
                out.append(FieldDiff(path=f"{path}.{key}", kind="extra", got=_clip(got[key])))
        for key in expected:
            if key in got:
                compare(t.inner, spec, expected[key], got[key], f"{path}.{key}", out)


def _clip(value: Any, limit: int = 2000) -> Any:
    text = json.dumps(value)
    if len(text) <= limit:
        return value
    return text[:limit] + "...[truncated]"


def compare_output(outputs: Sequence[FieldSpec], expected: dict[str, Any], got: Any) -> list[FieldDiff]:
    """Differences between a returned value and the expected dict (empty when it passes)."""
    if type(got) is not dict:
        return [FieldDiff(path="", kind="type", expected="a dict", got=_clip(got),
                          note=f"expected a dict, got {type(got).__name__}")]
    diffs: list[FieldDiff] = []
    for f in outputs:
        if f.name not in got:
            diffs.append(FieldDiff(path=f.name, kind="missing", expected=_clip(expected[f.name])))
    for key in got:
        if key not in expected:
            if len(diffs) >= MAX_DIFFS_PER_VECTOR:
                break  # enough to say why; scanning every extra key would cost host CPU
            diffs.append(FieldDiff(path=key, kind="extra", got=_clip(got[key])))
    for f in outputs:
        if f.name in got:
            compare(f.parsed, f, expected[f.name], got[f.name], f.name, diffs)
    return diffs[:MAX_DIFFS_PER_VECTOR]


def summarize_inputs(args: list[Any], limit: int = 600) -> str:
    text = json.dumps(args, separators=(",", ":"))
    return text if len(text) <= limit else text[: limit - 15] + "...[truncated]"


def _top_field(path: str) -> str:
    for sep in (".", "["):
        path = path.split(sep, 1)[0]
    return path


# ------------------------------------------------------------------------------------------
# verdicts
# ------------------------------------------------------------------------------------------

_STOP_VERDICTS = {
    "cpu_time": Verdict.TIMEOUT,
    "wall_time": Verdict.TIMEOUT,
    "memory": Verdict.MEMORY_LIMIT,
    "output": Verdict.OUTPUT_LIMIT,
    "exit": Verdict.CRASHED,
    "signal": Verdict.CRASHED,
    "protocol": Verdict.CRASHED,
    "harness": Verdict.CRASHED,
}


def no_code_grade(reason: str, n_vectors: int) -> Grade:
    return Grade(verdict=Verdict.NO_CODE, reason=reason, vectors_total=n_vectors)


def infra_grade(reason: str, n_vectors: int) -> Grade:
    return Grade(verdict=Verdict.INFRA_ERROR, reason=reason, vectors_total=n_vectors)


def grade(result: ExecResult, vectors: Sequence[Vector], outputs: Sequence[FieldSpec]) -> Grade:
    """Exactly one verdict for one sandbox result against the hidden vectors."""
    total = len(vectors)
    common: dict[str, Any] = {
        "vectors_total": total,
        "cpu_s": result.cpu_s,
        "wall_s": result.wall_s or result.container.host_wall_s,
        "max_rss_kb": result.max_rss_kb,
        "output_bytes": result.output_bytes,
        "output_tail": (result.output_head + result.output_tail)[-4000:] if result.output_bytes else "",
    }
    by_id = {v.id: v for v in vectors}
    failures: list[VectorFailure] = []
    failed_ids: list[str] = []
    summaries: dict[str, dict[str, Any]] = {f.name: {"failed": 0, "answered": 0, "type_errors": 0,
                                                     "ratios": [], "diffs": []} for f in outputs}
    passed = 0
    worst = Verdict.PASS
    first_exc: str | None = None
    rank = {Verdict.PASS: 0, Verdict.WRONG_ANSWER: 1, Verdict.WRONG_TYPE: 2, Verdict.RUNTIME_ERROR: 3}

    for case in result.cases:
        vec = by_id.get(case.id)
        if vec is None:  # the channel already refuses unknown ids; be defensive anyway
            continue
        if not case.ok:
            err = case.error
            etype = err.type if err else "UnknownError"
            kind = Verdict.WRONG_TYPE if etype == "UnsupportedResult" else Verdict.RUNTIME_ERROR
            if kind is Verdict.RUNTIME_ERROR and first_exc is None:
                first_exc = etype
            failed_ids.append(case.id)
            if len(failures) < MAX_FAILURES_KEPT:
                failures.append(VectorFailure(
                    vector=case.id, kind=kind.value, inputs=summarize_inputs(vec.args), error_type=etype,
                    error_message=err.message if err else "", traceback=err.traceback if err else ""))
            worst = max(worst, kind, key=rank.__getitem__)
            continue
        diffs = compare_output(outputs, vec.expected, case.value)
        for f in outputs:
            summaries[f.name]["answered"] += 1
        failed_fields: dict[str, list[FieldDiff]] = {}
        for d in diffs:
            failed_fields.setdefault(_top_field(d.path), []).append(d)
        for name, ds in failed_fields.items():
            s = summaries.get(name)
            if s is None:
                continue
            s["failed"] += 1
            if any(d.kind != "value" for d in ds):
                s["type_errors"] += 1
            for d in ds:
                if d.ratio is not None:
                    s["ratios"].append(d.ratio)
                if d.abs_err is not None and isinstance(d.got, (int, float)) and isinstance(d.expected, (int, float)):
                    s["diffs"].append(float(d.got) - float(d.expected))
        if not diffs:
            passed += 1
            continue
        kind = Verdict.WRONG_TYPE if any(d.kind != "value" for d in diffs) else Verdict.WRONG_ANSWER
        failed_ids.append(case.id)
        if len(failures) < MAX_FAILURES_KEPT:
            failures.append(VectorFailure(vector=case.id, kind=kind.value, inputs=summarize_inputs(vec.args),
                                          diffs=diffs))
        worst = max(worst, kind, key=rank.__getitem__)

    fields = {
        name: FieldSummary(
            failed=s["failed"], answered=s["answered"], type_errors=s["type_errors"],
            ratio_min=min(s["ratios"]) if s["ratios"] else None,
            ratio_max=max(s["ratios"]) if s["ratios"] else None,
            diff_min=min(s["diffs"]) if s["diffs"] else None,
            diff_max=max(s["diffs"]) if s["diffs"] else None,
        )
        for name, s in summaries.items()
    }
    common.update(vectors_answered=len(result.cases), vectors_passed=passed, failures=failures,
                  failed_vectors=failed_ids[:1000], fields=fields, exception_type=first_exc)

    load = result.load
    if load is not None and not load.ok:
        err = load.error
        etype = err.type if err else "UnknownError"
        msg = (err.message if err else "")[:300]
        if load.kind in ("missing_entry", "not_callable"):
            return Grade(verdict=Verdict.MISSING_ENTRY, reason=msg or "entry point missing",
                         load_kind=load.kind, exception_type=etype,
                         failures=[VectorFailure(vector="(load)", kind="runtime_error", error_type=etype,
                                                 error_message=msg)],
                         **{k: v for k, v in common.items() if k not in ("failures", "exception_type")})
        return Grade(verdict=Verdict.LOAD_ERROR, reason=f"{etype}: {msg}".strip(), load_kind=load.kind,
                     exception_type=etype,
                     failures=[VectorFailure(vector="(load)", kind="runtime_error", error_type=etype,
                                             error_message=msg, traceback=err.traceback if err else "")],
                     **{k: v for k, v in common.items() if k not in ("failures", "exception_type")})
    if result.stop is not None:
        verdict = _STOP_VERDICTS.get(result.stop.reason, Verdict.CRASHED)
        where = f" on vector {result.stop.case}" if result.stop.case else f" during {result.stop.phase}"
        return Grade(verdict=verdict, reason=f"{result.stop.reason}{where}: {result.stop.detail}"[:400],
                     stop_reason=result.stop.reason, stop_detail=result.stop.detail, **common)
    if len(result.cases) != total:
        return Grade(verdict=Verdict.CRASHED, reason=f"answered {len(result.cases)} of {total} vectors",
                     **common)
    if worst is Verdict.PASS:
        return Grade(verdict=Verdict.PASS, reason=f"all {total} vectors match", **common)
    n_bad = len(failed_ids)
    if worst is Verdict.RUNTIME_ERROR:
        f0 = next((f for f in failures if f.kind == "runtime_error"), None)
        detail = f"{f0.error_type}: {f0.error_message[:200]}" if f0 else first_exc or "exception"
        reason = f"raised {detail} on {n_bad} of {total} vectors"
    elif worst is Verdict.WRONG_TYPE:
        f0 = next((f for f in failures if f.kind == "wrong_type"), None)
        d0 = next((d for d in f0.diffs if d.kind != "value"), None) if f0 and f0.diffs else None
        if d0 is not None:
            detail = f"{d0.path or 'result'}: {d0.note or d0.kind}"
        elif f0 is not None and f0.error_message:
            detail = f0.error_message
        else:
            detail = "wrong type"
        reason = f"{detail} ({n_bad} of {total} vectors)"
    else:
        bad_fields = [n for n, s in fields.items() if s.failed]
        reason = f"wrong {', '.join(bad_fields[:6])} on {n_bad} of {total} vectors"
    return Grade(verdict=worst, reason=reason[:400], **common)


# ------------------------------------------------------------------------------------------
# search problems: the answer is a mapping, scored against the best known (docs/mapper.md)
# ------------------------------------------------------------------------------------------

class InstanceScore(_Rec):
    """How one returned mapping of a search problem fared on one hidden instance."""

    vector: str
    score: float  # min(1, best / objective); 0 when invalid, raised or unanswered
    best: float
    proven: bool
    objective: float | None = None
    at_best: bool = False  # within the problem's tolerance of the best known
    new_best: bool = False  # better than the best known (only possible where it is not proven)
    invalid: str = ""  # "invalid_mapping: <reason>"
    error: str = ""  # the candidate raised, or never answered this instance
    # the returned mapping as compact JSON (cut at MAPPING_KEPT characters), kept for the audit
    # where the instance is not at the best known
    mapping: str = ""


MAPPING_KEPT = 2000


def _kept(value: Any) -> str:
    try:
        text = json.dumps(value, separators=(",", ":"), sort_keys=True)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= MAPPING_KEPT else text[:MAPPING_KEPT - 3] + "..."


def instance_score(objective: float, best: float, tolerance: float) -> tuple[float, bool, bool]:
    """(score, at best, new best) of a valid mapping's objective against the best known.

    A best known of 0 is met only by 0; a mapping better than the best known scores 1."""
    if not (math.isfinite(objective) and objective >= 0):
        return 0.0, False, False
    if best <= 0:
        return (1.0, True, False) if objective <= 0 else (0.0, False, False)
    new_best = objective < best * (1 - 1e-12)
    score = 1.0 if objective <= best else best / objective
    return score, objective <= best * (1 + tolerance), new_best


def judge_mapping(evaluator: Any, value: Any, args: Sequence[Any], max_bytes: int) -> tuple[str, float | None]:
    """(invalid reason or "", objective) of one returned mapping; the evaluator is trusted code,
    but it meets hostile data: anything it raises is the mapping's fault, named as such."""
    try:
        out = evaluator(value, *args, max_bytes=max_bytes)
    except Exception as exc:  # noqa: BLE001 - a mapping the evaluator cannot read is invalid
        return f"invalid_mapping: unreadable ({type(exc).__name__})", None
    if not out.get("valid"):
        return f"invalid_mapping: {str(out.get('reason') or 'invalid')[:300]}", None
    obj = out.get("objective")
    if type(obj) not in (int, float) or not math.isfinite(obj):
        return "invalid_mapping: the evaluator gave no finite objective", None
    return "", float(obj)


def grade_mapping(result: ExecResult, vectors: Sequence[Vector], problem: Any) -> Grade:
    """Exactly one verdict and a score for a search problem's sandbox result: every returned
    mapping is checked and evaluated on the host by the pack's trusted evaluator and scored
    against the best known (the hidden vector's expected ``best``)."""
    sc = problem.data.scoring
    evaluator = problem.evaluator_fn
    total = len(vectors)
    answers = {c.id: c for c in result.cases}
    instances: list[InstanceScore] = []
    failures: list[VectorFailure] = []
    first_exc: str | None = None
    for vec in vectors:
        best, proven = float(vec.expected["best"]), bool(vec.expected["proven"])
        case = answers.get(vec.id)
        if case is None:
            instances.append(InstanceScore(vector=vec.id, score=0.0, best=best, proven=proven, error="not answered"))
            continue
        if not case.ok:
            err = case.error
            etype = err.type if err else "UnknownError"
            first_exc = first_exc or etype
            instances.append(InstanceScore(vector=vec.id, score=0.0, best=best, proven=proven,
                                           error=f"{etype}: {(err.message if err else '')[:200]}"))
            if len(failures) < MAX_FAILURES_KEPT:
                failures.append(VectorFailure(vector=vec.id, kind="runtime_error", inputs=summarize_inputs(vec.args),
                                              error_type=etype, error_message=err.message if err else "",
                                              traceback=err.traceback if err else ""))
            continue
        invalid, obj = judge_mapping(evaluator, case.value, vec.args, sc.max_bytes)
        if invalid:
            instances.append(InstanceScore(vector=vec.id, score=0.0, best=best, proven=proven, invalid=invalid,
                                           mapping=_kept(case.value)))
            continue
        assert obj is not None
        s, at, new = instance_score(obj, best, sc.tolerance)
        instances.append(InstanceScore(vector=vec.id, score=s, best=best, proven=proven, objective=obj,
                                       at_best=at, new_best=new, mapping="" if at else _kept(case.value)))
    score = sum(i.score for i in instances) / total if total else 0.0
    at_best = sum(i.at_best for i in instances)
    failed = [i.vector for i in instances if not i.at_best]
    common: dict[str, Any] = {
        "vectors_total": total, "vectors_answered": len(result.cases), "vectors_passed": at_best,
        "failures": failures, "failed_vectors": failed[:1000], "exception_type": first_exc,
        "score": score, "instances": instances,
        "cpu_s": result.cpu_s, "wall_s": result.wall_s or result.container.host_wall_s,
        "max_rss_kb": result.max_rss_kb, "output_bytes": result.output_bytes,
        "output_tail": (result.output_head + result.output_tail)[-4000:] if result.output_bytes else "",
    }
    load = result.load
    if load is not None and not load.ok:
        err = load.error
        etype = err.type if err else "UnknownError"
        msg = (err.message if err else "")[:300]
        verdict = Verdict.MISSING_ENTRY if load.kind in ("missing_entry", "not_callable") else Verdict.LOAD_ERROR
        common.update(exception_type=etype, score=0.0, failures=[VectorFailure(
            vector="(load)", kind="runtime_error", error_type=etype, error_message=msg,
            traceback=err.traceback if err else "")])
        reason = msg or "entry point missing" if verdict is Verdict.MISSING_ENTRY else f"{etype}: {msg}".strip()
        return Grade(verdict=verdict, reason=reason, load_kind=load.kind, **common)
    summary = f"score {score:.3f}, {at_best} of {total} instances at the best known"
    if result.stop is not None:
        verdict = _STOP_VERDICTS.get(result.stop.reason, Verdict.CRASHED)
        where = f" on vector {result.stop.case}" if result.stop.case else f" during {result.stop.phase}"
        return Grade(verdict=verdict, reason=f"{result.stop.reason}{where}: {result.stop.detail}"[:300] + f" ({summary})",
                     stop_reason=result.stop.reason, stop_detail=result.stop.detail, **common)
    if len(result.cases) != total:
        return Grade(verdict=Verdict.CRASHED, reason=f"answered {len(result.cases)} of {total} vectors ({summary})",
                     **common)
    if at_best == total:
        return Grade(verdict=Verdict.PASS, reason=f"all {total} instances at the best known (score {score:.4f})",
                     **common)
    if first_exc is not None:
        raised = [i for i in instances if i.error]
        return Grade(verdict=Verdict.RUNTIME_ERROR,
                     reason=f"raised {raised[0].error[:200]} on {len(raised)} of {total} instances ({summary})"[:400],
                     **common)
    invalid = [i for i in instances if i.invalid]
    detail = f"; {invalid[0].invalid} on {invalid[0].vector}" + (f" and {len(invalid) - 1} more" if len(invalid) > 1 else "") \
        if invalid else ""
    return Grade(verdict=Verdict.WRONG_ANSWER, reason=(summary + detail)[:400], **common)


def grade_for(result: ExecResult, vectors: Sequence[Vector], problem: Any) -> Grade:
    """The grade of one sandbox result for ``problem``: compared field by field, or for a search
    problem (``[scoring]``), judged and scored mapping by mapping."""
    if problem.data.scoring is not None:
        return grade_mapping(result, vectors, problem)
    return grade(result, vectors, problem.data.outputs)


Grade.model_rebuild()
