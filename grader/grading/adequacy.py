"""Is the hidden set adequate? Feature coverage, and every declared mistake caught.

A kill rate of 100% says every *declared* variant fails a hidden vector; it says nothing of a
wrong answer nobody declared, right on the common case and wrong on a corner the prompt allows.
Two checks close that gap, both measured against the problem's independent domain sample
(grader/packs/sampling.py):

* **coverage**: every feature the domain allows (the problem's ``[[features]]`` and the automatic
  integers of at least 2^31 and 2^53) that the domain sample exercises must be exercised by at
  least ``min`` hidden vectors (default 3); a declared feature the sample never exercises, or one
  the hidden vectors reach but the sample does not, shows a sampler that misses part of the domain;
* **adequacy**: every variant and every partial model (an answer right on a restricted domain
  only: one loop per dimension, no padding, 32-bit or float arithmetic...) is run on the domain
  sample and on the hidden vectors (on the host, each in a process of its own: hostrun.py) and
  compared with the reference's answers by the problem's own comparison rules. One that is wrong
  somewhere on the domain sample must also fail a hidden vector; one that the sample never shows
  wrong points at a sampler that misses a corner (or at a "mistake" that is none). A partial model
  with a ``rule`` must be right on every domain-sample input the rule accepts.

The hidden-set adequacy of a problem is the share of its variants and partial models for which
all of this holds ("6/6"), reported beside the kill rate. Model runs are cached under a key of
their source, the sample, the hidden vectors and the comparison rules.

Decisive mode (``exhaustive=False``; the test suite and ``problems validate --quick``) reaches the
same verdict for every model from fewer runs: a rule's inputs all run, then the hidden vectors and
the rest of the sample only until one answer is wrong. Its counts are lower bounds, so the shares
it reports are not the full ones; ``problems validate`` without ``--quick`` is exhaustive.
"""

from __future__ import annotations

import hashlib
import json
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from typing import Any

from sandbox.models import Limits

from ..packs.domain import DomainEvalError, evaluate
from ..errors import PackError
from ..packs.problems import DeclaredModule, PartialModel, Problem, Variant
from ..packs.sampling import DomainSample, Draw, features, tag_vectors
from ..packs.vectors import Vector, built_once, write_atomic
from ..settings import cache_dir
from .hostrun import CHILD, HostRunError, run_on_host
from .scoring import compare_output, summarize_inputs

ADEQUACY_FORMAT = 1


# ------------------------------------------------------------------------------------------
# coverage
# ------------------------------------------------------------------------------------------

@dataclass
class FeatureCoverage:
    """How often one feature occurs in the hidden vectors and in the domain sample."""

    name: str
    says: str
    min: int
    automatic: bool
    hidden: int
    hidden_total: int
    sample: int
    sample_total: int

    @property
    def required(self) -> bool:
        """The hidden vectors must exercise it: declared, or seen in the domain sample."""
        return not self.automatic or self.sample > 0 or self.hidden > 0

    @property
    def ok(self) -> bool:
        if not self.required:
            return True
        return self.sample > 0 and self.hidden >= self.min

    @property
    def sample_share(self) -> float:
        return self.sample / self.sample_total if self.sample_total else 0.0

    def finding(self) -> str | None:
        """Why the feature fails the check (None when it passes)."""
        if self.ok:
            return None
        if self.sample == 0 and self.hidden > 0:
            return (f"{self.name} is exercised by {self.hidden} hidden vectors but never by the domain sample: "
                    "the sampler misses part of the domain")
        if self.sample == 0:
            return (f"{self.name}: neither the domain sample nor the hidden vectors exercise it (the sampler "
                    "misses it, or its rule is wrong)")
        return (f"{self.name} {self.hidden}/{self.min} hidden vectors ({self.sample_share:.0%} of the domain "
                "sample)")

    def cell(self) -> str:
        """The table cell: hidden count, or a dash when the domain does not allow the feature."""
        return f"{self.hidden}" if self.required else "-"


def coverage(problem: Problem, hidden: tuple[Vector, ...], sample: DomainSample) -> tuple[list[FeatureCoverage], list[str]]:
    """The coverage table, and the feature rules that cannot be evaluated on some input."""
    tags = tag_vectors(problem, hidden)
    errors = [f"{vid} {e}" for vid, (_, errs) in tags.items() for e in errs]
    accepted = sample.accepted
    errors += [f"{d.id} {e}" for d in accepted for e in d.feature_errors]
    table = []
    for f in features(problem):
        table.append(FeatureCoverage(
            name=f.name, says=f.says, min=f.min, automatic=f.automatic,
            hidden=sum(f.name in found for found, _ in tags.values()), hidden_total=len(hidden),
            sample=sum(f.name in d.features for d in accepted), sample_total=len(accepted)))
    return table, errors


def coverage_markdown(problem: Problem, table: list[FeatureCoverage]) -> str:
    """The coverage table of one problem, as the pack README shows it."""
    hidden_total = table[0].hidden_total if table else 0
    sample_total = table[0].sample_total if table else 0
    lines = [f"`{problem.id}` ({hidden_total} hidden vectors, a domain sample of {sample_total} inputs):", "",
             "| feature | what it is | hidden vectors | domain sample |", "|---|---|---:|---:|"]
    for c in table:
        name = c.name if c.automatic else f"`{c.name}`"
        hidden = f"{c.hidden} (min {c.min})" if c.required else "- (not in the domain sample)"
        lines.append(f"| {name} | {c.says} | {hidden} | {c.sample_share:.0%} |")
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------------------------------
# adequacy
# ------------------------------------------------------------------------------------------

@dataclass
class ModelResult:
    """One variant or partial model against the domain sample and the hidden vectors."""

    name: str
    kind: str  # "variant" or "partial model"
    says: str  # the mistake, or where the partial model is right
    sample_wrong: int = 0
    sample_total: int = 0
    hidden_wrong: int = 0
    hidden_total: int = 0
    example: str = ""  # a domain-sample input where it is wrong (its id), and how
    example_input: str = ""  # that input's arguments (JSON, capped)
    rule_breaks: int = 0  # partial models with a rule: inputs the rule accepts where it is wrong
    rule_example: str = ""
    error: str | None = None  # it could not run on the host
    exhaustive: bool = True  # False: the counts are lower bounds (decisive mode), the verdict is the same

    @property
    def sample_share(self) -> float:
        return self.sample_wrong / self.sample_total if self.sample_total else 0.0

    @property
    def ok(self) -> bool:
        return self.error is None and self.rule_breaks == 0 and self.sample_wrong > 0 and self.hidden_wrong > 0

    def finding(self) -> str | None:
        """Why the model fails the check (None when it passes)."""
        if self.ok:
            return None
        if self.error is not None:
            return f"{self.name} could not run on the host: {self.error}"
        if self.rule_breaks:
            return (f"{self.name} is wrong on {self.rule_breaks} domain-sample input(s) its rule accepts "
                    f"({self.rule_example}): the rule or the model is not what it says")
        if self.sample_wrong and not self.hidden_wrong:
            share = f"{self.sample_share:.0%} of" if self.exhaustive else "inputs of"
            return (f"{self.name} is wrong on {share} the domain sample but passes every "
                    f"hidden vector (e.g. {self.example})")
        if self.hidden_wrong:
            return (f"the domain sample never shows {self.name} wrong, the hidden vectors do: the sampler "
                    "misses a corner the generator draws")
        return (f"{self.name} is right on the whole domain sample and on every hidden vector: not a mistake on "
                "this domain, or the sampler never draws where it is wrong")


def _rules_accept(rule: str, args: list[Any], names: list[str]) -> bool:
    try:
        return evaluate(rule, dict(zip(names, args)))
    except DomainEvalError:
        return False


def _wrong(problem: Problem, expected: dict[str, Any], answer: Any) -> str | None:
    """Why an answer differs from the expected one (None when it matches)."""
    if answer.error is not None:
        return answer.error
    diffs = compare_output(problem.data.outputs, expected, answer.value)
    if not diffs:
        return None
    d = diffs[0]
    if d.kind == "value":
        return f"{d.path} {json.dumps(d.got)[:40]}, expected {json.dumps(d.expected)[:40]}"
    return f"{d.path or 'result'}: {d.note or d.kind}"


def _blank(module: DeclaredModule, sample_total: int, hidden_total: int) -> ModelResult:
    if isinstance(module, PartialModel):
        return ModelResult(module.name, "partial model", module.restricted, sample_total=sample_total,
                           hidden_total=hidden_total)
    assert isinstance(module, Variant)
    return ModelResult(module.name, "variant", module.mistake, sample_total=sample_total, hidden_total=hidden_total)


def _run(problem: Problem, module: DeclaredModule, inputs: list[list[Any]], limits: Limits) -> list[Any]:
    return run_on_host(module.source, problem.entry_point, inputs,  # type: ignore[arg-type]
                       case_cpu_s=limits.case_cpu_s, memory_mb=max(2048, limits.memory_mb))


def _note_sample(result: ModelResult, d: Draw, why: str, rule: str | None, names: list[str]) -> None:
    result.sample_wrong += 1
    shown = f"{d.id}: {why}"
    if not result.example:
        result.example, result.example_input = shown, summarize_inputs(d.args or [], 4000)
    if rule is not None and _rules_accept(rule, d.args or [], names):
        result.rule_breaks += 1
        result.rule_example = result.rule_example or shown


def _judge(problem: Problem, module: DeclaredModule, accepted: tuple[Draw, ...], hidden: tuple[Vector, ...],
           limits: Limits) -> ModelResult:
    """Every input of the sample and every hidden vector: the counts are exact."""
    result = _blank(module, len(accepted), len(hidden))
    try:
        answers = _run(problem, module, [d.args for d in accepted] + [v.args for v in hidden], limits)
    except HostRunError as exc:
        result.error = str(exc)
        return result
    names = [p.name for p in problem.data.signature.params]
    rule = module.rule if isinstance(module, PartialModel) else None
    for d, answer in zip(accepted, answers):
        why = _wrong(problem, d.expected or {}, answer)
        if why is not None:
            _note_sample(result, d, why, rule, names)
    for v, answer in zip(hidden, answers[len(accepted):]):
        if _wrong(problem, v.expected, answer) is not None:
            result.hidden_wrong += 1
    return result


FIRST_CHUNK = 8  # decisive mode: inputs of the first run; each next run takes four times as many


def _until_wrong(problem: Problem, module: DeclaredModule, items: list[tuple[list[Any], dict[str, Any]]],
                 limits: Limits) -> tuple[str | None, int]:
    """Runs ``items`` (arguments, expected) in growing chunks until one answer is wrong.

    Returns (why the first wrong one is wrong, its index), or (None, -1) when every answer is right."""
    done, size = 0, FIRST_CHUNK
    while done < len(items):
        chunk = items[done:done + size]
        answers = _run(problem, module, [args for args, _ in chunk], limits)
        for i, ((_, expected), answer) in enumerate(zip(chunk, answers)):
            why = _wrong(problem, expected, answer)
            if why is not None:
                return why, done + i
        done += len(chunk)
        size *= 4
    return None, -1


def _decide(problem: Problem, module: DeclaredModule, accepted: tuple[Draw, ...], hidden: tuple[Vector, ...],
            limits: Limits) -> ModelResult:
    """The same verdict as :func:`_judge`, from as few runs as decide it.

    A partial model's rule must hold on every sample input it accepts, so those all run. Past them,
    the model runs on the hidden vectors until one is wrong, and on the rest of the sample until one
    is wrong: whether such an input exists is all the verdict asks. ``sample_wrong`` and
    ``hidden_wrong`` are then at least 1 where the full count is, and the shares are lower bounds.
    """
    result = _blank(module, len(accepted), len(hidden))
    result.exhaustive = False
    names = [p.name for p in problem.data.signature.params]
    rule = module.rule if isinstance(module, PartialModel) else None
    in_rule = [d for d in accepted if rule is not None and _rules_accept(rule, d.args or [], names)]
    ruled = {d.id for d in in_rule}
    rest = [d for d in accepted if d.id not in ruled]
    try:
        if in_rule:
            for d, answer in zip(in_rule, _run(problem, module, [d.args for d in in_rule], limits)):
                why = _wrong(problem, d.expected or {}, answer)
                if why is not None:
                    _note_sample(result, d, why, rule, names)
        why, _ = _until_wrong(problem, module, [(v.args, v.expected) for v in hidden], limits)
        result.hidden_wrong = int(why is not None)
        if not result.sample_wrong:
            why, at = _until_wrong(problem, module, [(d.args, d.expected or {}) for d in rest], limits)
            if why is not None:
                _note_sample(result, rest[at], why, None, names)
    except HostRunError as exc:
        result.error = str(exc)
    return result


def _cache_key(problem: Problem, module: DeclaredModule, sample: DomainSample, hidden: tuple[Vector, ...],
               limits: Limits, exhaustive: bool = True) -> str:
    mode = "" if exhaustive else "-decisive"
    h = hashlib.sha256(f"perfgrade-adequacy-v{ADEQUACY_FORMAT}{mode}\0".encode())
    for part in (module.source, problem.entry_point, sample.key, type(module).__name__,
                 json.dumps([[v.id, v.args, v.expected] for v in hidden], sort_keys=True),
                 json.dumps([f.model_dump() for f in problem.data.outputs], sort_keys=True),
                 json.dumps(getattr(module.spec, "rule", None)), repr(limits.case_cpu_s),
                 CHILD.read_text(encoding="utf-8")):
        h.update(hashlib.sha256(part.encode()).digest())
    return h.hexdigest()


def adequacy(problem: Problem, hidden: tuple[Vector, ...], sample: DomainSample, workers: int = 2,
             use_cache: bool = True, exhaustive: bool = True) -> list[ModelResult]:
    """Every variant, then every partial model, against the domain sample and the hidden vectors.

    ``exhaustive=False`` (decisive mode) reaches the same verdict for each model from fewer runs
    (see :func:`_decide`): the counts it reports are lower bounds. An exhaustive result already in
    the cache serves either mode.
    """
    limits = problem.sandbox_limits(Limits())
    accepted = sample.accepted
    modules: list[DeclaredModule] = [*problem.variants, *problem.partial_models]

    def cached(path) -> dict | None:
        if not (use_cache and path.is_file()):
            return None
        try:
            return json.loads(path.read_text())
        except (ValueError, OSError):
            return None  # a damaged entry is recomputed

    def one(module: DeclaredModule) -> ModelResult:
        blank = _blank(module, len(accepted), len(hidden))
        try:
            keys = [_cache_key(problem, module, sample, hidden, limits, True)]
            if not exhaustive:
                keys.append(_cache_key(problem, module, sample, hidden, limits, False))
        except PackError as exc:  # a change that no longer applies ("variants apply" says so too)
            blank.error = str(exc)
            return blank
        paths = [cache_dir() / "adequacy" / f"{key}.json" for key in keys]

        def known() -> ModelResult | None:
            for path in paths:
                found = cached(path)
                if found is not None:
                    try:
                        return ModelResult(**{**found, "name": blank.name, "kind": blank.kind, "says": blank.says})
                    except TypeError:
                        pass
            return None

        def judge() -> ModelResult:
            result = (_judge if exhaustive else _decide)(problem, module, accepted, hidden, limits)
            if use_cache and result.error is None:
                write_atomic(paths[-1], json.dumps(asdict(result)))
            return result

        return built_once(paths[-1], known, judge) if use_cache else judge()

    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        return list(pool.map(one, modules))
