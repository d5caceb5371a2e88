"""The pack validator: prove a pack is sound before anyone trusts its numbers.

For every problem:

* **schema**: the files load (done by the catalog; a broken file never gets this far);
* **registry**: the reference and generator keys resolve in the pack's trusted code;
* **signature**: the reference takes exactly the declared parameters, in order;
* **determinism**: the vectors are identical when generated twice;
* **vectors**: hidden inputs are distinct and disjoint from the visible examples;
* **spec coverage**: every parameter, every input field and every output key is named in spec.md;
* **domain**: every hidden and visible input satisfies every ``[[domain]]`` rule of problem.toml;
* **qa**: the problem has Q&A instances (a ``[qa]`` seed), inside the domain and answered in range,
  and every choice question yields its full count of untied items;
* **reference range**: on every generated input the reference neither raises nor divides by zero,
  and returns no negative integer (unless its field is ``signed``) and no NaN or infinity;
* **gold**: the reference itself, bundled as a candidate, passes every hidden vector through the
  real sandbox; so does the bundled ``solution.py``;
* **variants apply**: every variant's declared change (switches, replace, patch) applies to the
  solution, so a solution edited without its variants is caught;
* **mutants**: every wrong-on-purpose variant fails at least one hidden vector (kill rate);
* **sampler**, **domain sample**, **coverage**, **adequacy** (problems with a ``[sampler]``): the
  independent domain sampler shares no code with the generator; every input it draws satisfies the
  ``[[domain]]`` rules and is answered by the reference in range; every feature the sample
  exercises is exercised by enough hidden vectors; and every variant and partial model that the
  sample shows wrong also fails a hidden vector (hidden-set adequacy; see adequacy.py);
* **search problems** (``[scoring]``): the reference search proved optimal by brute force on small
  instances, every best known reached by its recorded mapping, the solution at the best known
  everywhere, the variants clearly below it, the baselines scored, and no bundled candidate
  beating a proven optimum (mapping_checks.py);
* **tier** (``model`` packs): every problem has real-size vectors and a brute-force simulator;
* **analytical**: the simulator, a correct candidate written from the spec's semantics, passes
  every small hidden vector and runs out of CPU time on every real-size one, while the reference
  answers every real-size vector in milliseconds: the problem demands a model, not a simulation.
"""

from __future__ import annotations

import inspect
import json
import re
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from ..errors import GraderError, PackError
from ..packs.bundle import bundle_reference
from ..packs.domain import violations
from ..packs.problems import Problem
from ..packs.sampling import DomainSample, draw_sample, shared_modules
from ..packs.vectors import (Vector, answer_range, corner_prefixes, generate, generate_hidden, hidden_inputs,
                             is_real)
from . import mapping_checks
from .adequacy import FeatureCoverage, ModelResult, adequacy, coverage
from .execution import SandboxHandle, grade_source
from .scoring import Grade, Verdict

MIN_VARIANTS = 3


@dataclass
class CheckResult:
    name: str
    ok: bool
    detail: str = ""


@dataclass
class VariantResult:
    name: str
    mistake: str
    killed: bool
    verdict: str
    reason: str


@dataclass
class ProblemReport:
    problem: Problem
    checks: list[CheckResult] = field(default_factory=list)
    variants: list[VariantResult] = field(default_factory=list)
    sample: DomainSample | None = None  # the domain sample (problems with a [sampler])
    coverage: list[FeatureCoverage] = field(default_factory=list)
    adequacy: list[ModelResult] = field(default_factory=list)
    scores: dict[str, float | None] = field(default_factory=dict)  # search problems: each candidate's mean score

    @property
    def ok(self) -> bool:
        return all(c.ok for c in self.checks)

    @property
    def kill_rate(self) -> float | None:
        if not self.variants:
            return None
        return sum(v.killed for v in self.variants) / len(self.variants)

    @property
    def covered(self) -> tuple[int, int] | None:
        """(features that pass, features the hidden set must exercise), or None without a sampler."""
        if self.sample is None:
            return None
        required = [c for c in self.coverage if c.required]
        return sum(c.ok for c in required), len(required)

    @property
    def adequate(self) -> tuple[int, int] | None:
        """(variants and partial models proved caught, all of them), or None without a sampler."""
        if self.sample is None:
            return None
        return sum(m.ok for m in self.adequacy), len(self.adequacy)

    def add(self, name: str, ok: bool, detail: str = "") -> None:
        self.checks.append(CheckResult(name, ok, detail))

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "problem": self.problem.qualified_id,
            "ok": self.ok,
            "checks": [c.__dict__ for c in self.checks],
            "variants": [v.__dict__ for v in self.variants],
            "kill_rate": self.kill_rate,
        }
        if self.scores:
            out["scores"] = dict(self.scores)
        if self.sample is not None:
            out["domain_sample"] = {"seed": self.sample.seed, "drawn": len(self.sample.draws),
                                    "accepted": len(self.sample.accepted)}
            out["coverage"] = [{"feature": c.name, "says": c.says, "automatic": c.automatic, "min": c.min,
                                "required": c.required, "ok": c.ok, "hidden": c.hidden, "hidden_total": c.hidden_total,
                                "sample": c.sample, "sample_total": c.sample_total} for c in self.coverage]
            out["adequacy"] = [{**m.__dict__, "ok": m.ok} for m in self.adequacy]
            out["covered"] = list(self.covered or ())
            out["adequate"] = list(self.adequate or ())
        return out


def _canonical(vectors: tuple[Vector, ...]) -> str:
    return json.dumps([[v.id, v.args, v.expected] for v in vectors], sort_keys=True)


def _input_keys(value: Any, out: set[str]) -> None:
    if isinstance(value, dict):
        for k, v in value.items():
            out.add(k)
            _input_keys(v, out)
    elif isinstance(value, list):
        for v in value:
            _input_keys(v, out)


def _mentioned(name: str, spec: str) -> bool:
    return re.search(rf"(?<![A-Za-z0-9_]){re.escape(name)}(?![A-Za-z0-9_])", spec) is not None


def _domain_check(problem: Problem, report: ProblemReport, inputs: list[tuple[str, dict[str, Any]]]) -> None:
    """Every input (id, arguments by name) satisfies every [[domain]] rule."""
    rules = problem.data.domain
    if not rules:
        report.add("domain", True, "no [[domain]] rules declared")
        return
    bad = [f"{vid} {v.describe()}" for vid, kwargs in inputs for v in violations(rules, kwargs)]
    report.add("domain", not bad,
               f"all {len(inputs)} inputs satisfy " + ("the rule" if len(rules) == 1 else f"all {len(rules)} rules")
               if not bad else
               f"{len(bad)} violation(s): " + "; ".join(bad[:3]) + (f"; and {len(bad) - 3} more" if len(bad) > 3 else ""))


def _range_check(report: ProblemReport, answers: list[tuple[str, list[str]]], n: int) -> None:
    bad = [f"{vid}: {why}" for vid, whys in answers for why in whys]
    report.add("reference range", not bad,
               f"the reference answers all {n} generated inputs with no exception, negative count or "
               "non-finite value" if not bad else
               f"{len(bad)} bad answer(s): " + "; ".join(bad[:3]) + (f"; and {len(bad) - 3} more" if len(bad) > 3 else ""))


def _plain_json(value: Any) -> Any:
    """A generator's or reference's value as plain JSON values (numpy scalars and arrays too)."""
    return json.loads(json.dumps(value, default=lambda o: o.tolist() if hasattr(o, "tolist") else repr(o)))


def _probe(problem: Problem, report: ProblemReport) -> None:
    """When the vectors cannot be made: draw every input again, check it against the domain and
    call the reference on it, so the report says which inputs break the reference and why."""
    import numpy as np

    d = problem.data
    gen, ref = problem.generator_fn, problem.reference_fn
    names = [p.name for p in d.signature.params]
    draws = [("h", d.generator.hidden_seed, d.generator.hidden_count, dict(d.generator.options)),
             ("v", d.generator.visible_seed, d.generator.visible_count, dict(d.generator.options))]
    extras = [*zip(corner_prefixes(d.generator.corners), d.generator.corners), ("r", d.generator.real)]
    for prefix, extra in extras:
        if extra is not None:
            draws.append((prefix, extra.seed, extra.count, {**d.generator.options, **extra.options}))
    inputs: list[tuple[str, dict[str, Any]]] = []
    answers: list[tuple[str, list[str]]] = []
    for prefix, seed, count, options in draws:
        width = len(str(count - 1))
        for i in range(count):
            vid = f"{prefix}{i:0{width}d}"
            try:
                kwargs = _plain_json(gen(np.random.default_rng([seed, i]), **options))
                args = [kwargs[n] for n in names]
            except Exception:  # noqa: BLE001 - a broken generator is the vectors check's finding
                continue
            inputs.append((vid, kwargs))
            try:
                answer = _plain_json(ref(*json.loads(json.dumps(args))))
            except ZeroDivisionError as exc:
                answers.append((vid, [f"the reference divides by zero ({exc})"]))
                continue
            except Exception as exc:  # noqa: BLE001 - what the reference does is the finding
                answers.append((vid, [f"the reference raises {type(exc).__name__}: {exc}"]))
                continue
            answers.append((vid, answer_range(d.outputs, answer)))
    _domain_check(problem, report, inputs)
    _range_check(report, answers, len(inputs))


QA_CHECK_ITEMS = 5


def _qa_check(problem: Problem, report: ProblemReport, hidden: tuple[Vector, ...]) -> None:
    """Q&A items: a [qa] seed, instances inside the domain that the reference answers in range,
    and the full count of items for every choice question (ties leave too few otherwise)."""
    from ..packs.qa import qa_items

    if problem.data.qa is None and problem.data.scoring is not None:
        report.add("qa", True, "no [qa] table: code mode only (a search problem's Q&A items are optional)")
        return
    if problem.data.qa is None:
        report.add("qa", False, "no [qa] table: the problem has no Q&A items (add [qa] seed = N)")
        return
    try:
        items = qa_items(problem, hidden, QA_CHECK_ITEMS)
    except GraderError as exc:
        report.add("qa", False, str(exc))
        return
    names = [p.name for p in problem.data.signature.params]
    values = [it for it in items if it.kind in ("value", "mapping")]
    bad = [f"{it.id} {v.describe()}" for it in values
           for v in violations(problem.data.domain, dict(zip(names, it.args)))]
    ranged = [(it.id, answer_range(problem.data.outputs, it.expected)) for it in values]
    out_of_range = [f"{i}: {w}" for i, ws in ranged for w in ws]
    short = [f"question {j} ({c.kind} {c.field or c.keys}) gave {n} of {QA_CHECK_ITEMS} items"
             for j, c in enumerate(problem.data.qa.choices)
             if (n := sum(it.id.startswith(f"c{j}.") for it in items)) < QA_CHECK_ITEMS]
    # a search problem's item: its best known mapping is valid and costs the best known
    unjudged = [] if problem.data.scoring is None else _best_mappings_judged(problem, values)
    problems = bad + out_of_range + short + unjudged
    kind = "mapping" if problem.data.scoring is not None else "value"
    report.add("qa", not problems,
               f"{len(values)} {kind} items and {len(items) - len(values)} choice items from seed {problem.data.qa.seed}"
               if not problems else "; ".join(problems[:4]))


def _best_mappings_judged(problem: Problem, items: list) -> list[str]:
    """What is wrong with the Q&A items' best known mappings, judged by the problem's evaluator."""
    import json

    from .scoring import judge_mapping

    out = []
    for it in items:
        invalid, obj = judge_mapping(problem.evaluator_fn, json.loads(it.expected["mapping"]), it.args,
                                     problem.data.scoring.max_bytes)
        best = float(it.expected["best"])
        if invalid:
            out.append(f"{it.id}: its best known mapping is {invalid}")
        elif obj is None or abs(obj - best) > 1e-9 * max(1.0, abs(best)):
            out.append(f"{it.id}: its best known mapping costs {obj}, not the best known {best}")
    return out


def static_checks(problem: Problem, report: ProblemReport) -> tuple[tuple[Vector, ...], tuple[Vector, ...]] | None:
    """Every check that needs no sandbox. Returns (hidden, visible) when vectors could be made."""
    d = problem.data
    ref = problem.trusted.references.get(d.reference)
    gen = problem.trusted.generators.get(d.generator.name)
    missing = [k for k, reg in ((d.reference, ref), (d.generator.name, gen)) if reg is None]
    report.add("registry", not missing, f"not in the pack's trusted code: {', '.join(missing)}" if missing else
               f"{d.reference}, {d.generator.name}")
    if ref is None or gen is None:
        return None

    params = [p.name for p in d.signature.params]
    try:
        sig = inspect.signature(ref)
        ref_params = [p.name for p in sig.parameters.values()
                      if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        ok = ref_params == params
        detail = f"({', '.join(params)})" if ok else f"reference takes ({', '.join(ref_params)}), problem declares ({', '.join(params)})"
    except (TypeError, ValueError) as exc:
        ok, detail = False, f"cannot inspect the reference: {exc}"
    report.add("signature", ok, detail)

    try:
        t0 = time.process_time()
        hidden = generate_hidden(problem)
        gen_s = time.process_time() - t0
        visible = generate(problem, "visible", exclude=hidden_inputs(hidden))
        again = generate_hidden(problem)
    except GraderError as exc:
        report.add("vectors", False, str(exc))
        _probe(problem, report)
        return None
    same = _canonical(hidden) == _canonical(again)
    report.add("determinism", same, "identical when generated twice" if same else
               "hidden vectors differ between two generations (randomness outside rng?)")

    inputs = [json.dumps(v.args, sort_keys=True) for v in hidden]
    dup = len(inputs) - len(set(inputs))
    vis_inputs = {json.dumps(v.args, sort_keys=True) for v in visible}
    overlap = len(vis_inputs & set(inputs))
    distinct_outputs = len({json.dumps(v.expected, sort_keys=True) for v in hidden})
    ok = dup == 0 and overlap == 0 and (distinct_outputs > 1 or len(hidden) == 1)
    report.add("vectors", ok,
               f"{len(hidden)} hidden ({distinct_outputs} distinct outputs), {len(visible)} visible"
               + (f"; {dup} duplicate hidden inputs" if dup else "")
               + (f"; {overlap} visible example(s) also hidden" if overlap else "")
               + ("; every hidden vector has the same expected output" if distinct_outputs <= 1 < len(hidden) else ""))

    _domain_check(problem, report, [(v.id, v.kwargs(problem)) for v in hidden + visible])
    _range_check(report, [(v.id, answer_range(d.outputs, v.expected)) for v in hidden + visible],
                 len(hidden) + len(visible))

    keys: set[str] = set()
    for v in hidden + visible:
        _input_keys(v.args, keys)
    names = set(params) | keys | ({f.name for f in d.outputs} if d.scoring is None else set())
    undocumented = sorted(n for n in names if not _mentioned(n, problem.spec))
    report.add("spec coverage", not undocumented,
               "every parameter, input field and output key is named in spec.md" if not undocumented
               else "not named in spec.md: " + ", ".join(undocumented[:12]))

    _qa_check(problem, report, hidden)

    n_real = sum(1 for v in hidden if is_real(v))
    if problem.tier == "model" or n_real or d.simulator:
        missing = [what for what, have in (("[generator.real] real-size vectors", n_real),
                                           ("a brute-force simulator", d.simulator)) if not have]
        report.add("tier", not missing,
                   f"{n_real} real-size vectors (all vectors drawn and answered in {gen_s * 1000:.0f} ms of CPU), "
                   "and a simulator" if not missing else "a model-tier problem needs " + " and ".join(missing))

    try:
        have_solution = problem.solution_source is not None
        report.add("solution", have_solution, "present" if have_solution else "solution.py is missing")
    except PackError as exc:
        report.add("solution", False, str(exc))
    n_var = len(problem.variants)
    report.add("variants", n_var >= MIN_VARIANTS,
               f"{n_var} wrong-on-purpose variants" + ("" if n_var >= MIN_VARIANTS else f" (need {MIN_VARIANTS})"))
    broken = []
    for v in problem.variants:
        try:
            v.source
        except PackError as exc:
            broken.append(str(exc))
    report.add("variants apply", not broken,
               f"all {n_var} declared changes apply to the solution" if not broken else "; ".join(broken))
    return hidden, visible


def _some(items: list[str], n: int = 3) -> str:
    return "; ".join(items[:n]) + (f"; and {len(items) - n} more" if len(items) > n else "")


def domain_checks(problem: Problem, report: ProblemReport, hidden: tuple[Vector, ...], workers: int = 2,
                  exhaustive: bool = True) -> None:
    """The sampler, the domain sample, feature coverage and hidden-set adequacy (needs a [sampler];
    runs the variants and partial models on the host, never in the sandbox)."""
    spec = problem.data.sampler
    if spec is None:
        return
    try:
        problem.sampler_fn
    except PackError as exc:
        report.add("sampler", False, str(exc))
        return
    shared = shared_modules(problem)
    report.add("sampler", not shared,
               f"{spec.name} shares no code with the generator {problem.data.generator.name}" if not shared else
               f"{spec.name} shares code with the generator {problem.data.generator.name} (modules "
               f"{', '.join(shared)}): a sampler must be written apart, or it inherits the generator's blind spots")
    sample = draw_sample(problem)
    report.sample = sample
    rejected = sample.rejected
    report.add("domain sample", not rejected,
               f"{len(sample.draws)} inputs, all accepted (seed {sample.seed})" if not rejected else
               f"{len(rejected)} of {len(sample.draws)} inputs not accepted: "
               + _some([f"{d.id} {d.problem}" for d in rejected]))
    if not sample.accepted:
        return
    report.coverage, errors = coverage(problem, hidden, sample)
    findings = [f for c in report.coverage if (f := c.finding())]
    if errors:
        findings.append("feature rules that cannot be evaluated: " + _some(errors))
    done, total = report.covered or (0, 0)
    report.add("coverage", not findings,
               f"{done}/{total} features exercised by enough hidden vectors" if not findings else
               f"{done}/{total}: " + _some(findings, 4))
    report.adequacy = adequacy(problem, hidden, sample, workers, exhaustive=exhaustive)
    if report.adequacy:
        caught, n = report.adequate or (0, 0)
        bad = [f for m in report.adequacy if (f := m.finding())]
        report.add("adequacy", not bad,
                   f"hidden-set adequacy {caught}/{n}: every variant and partial model the domain sample shows "
                   "wrong fails a hidden vector" if not bad else f"hidden-set adequacy {caught}/{n}: " + _some(bad, 4))


def validate_problem(
    problem: Problem, handle: SandboxHandle | None, workers: int = 2, analytical_sample: int | None = None,
    exhaustive: bool = True,
) -> ProblemReport:
    """Every check of one problem. ``analytical_sample`` runs the simulator on only that many of the
    real-size vectors (spread over them) instead of all, and ``exhaustive=False`` decides adequacy
    from as few host runs as settle each model's verdict (adequacy.py): quicker proofs with the
    same verdicts, for test suites and authors at work."""
    report = ProblemReport(problem)
    made = static_checks(problem, report)
    if made is None:
        return report
    hidden, _ = made
    domain_checks(problem, report, hidden, workers, exhaustive)
    search = problem.data.scoring is not None
    if search:
        mapping_checks.proof_check(problem, report)
        mapping_checks.best_known_check(problem, report, hidden)
    if handle is None:
        return report
    jobs: list[tuple[str, str]] = []
    if search:  # the reference is the search (it records the best known): its mappings are checked above
        jobs += mapping_checks.candidate_jobs(problem)
    else:
        try:
            jobs.append(("gold:reference", bundle_reference(problem.reference_fn, problem.entry_point)))
        except (OSError, ValueError, SyntaxError) as exc:
            report.add("gold (reference)", False, f"cannot bundle the reference: {exc}")
    if problem.solution_source is not None:
        jobs.append(("gold:solution", problem.solution_source))
    for v in problem.variants:
        try:
            jobs.append((f"variant:{v.name}", v.source))
        except PackError:
            pass  # reported by the "variants apply" check

    small = tuple(v for v in hidden if not is_real(v))
    real = tuple(v for v in hidden if is_real(v))
    if analytical_sample is not None and 0 < analytical_sample < len(real):
        step = len(real) / analytical_sample
        real = tuple(real[int(i * step)] for i in range(analytical_sample))
    sim = problem.simulator_source
    runs: list[tuple[str, str, tuple[Vector, ...]]] = [(name, source, hidden) for name, source in jobs]
    if sim is not None:
        runs.append(("sim:small", sim, small))
        runs += [(f"sim:{v.id}", sim, (v,)) for v in real]

    def run(item: tuple[str, str, tuple[Vector, ...]]) -> tuple[str, Grade]:
        name, source, vectors = item
        g, _ = grade_source(handle, problem, source, vectors, job_id=name.replace(":", "-")[:60])
        return name, g

    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        graded = dict(pool.map(run, runs))
    if sim is not None:
        g = graded.pop("sim:small")
        report.add("simulator (small)", g.verdict is Verdict.PASS,
                   f"passes all {g.vectors_total} small hidden vectors" if g.verdict is Verdict.PASS
                   else f"{g.verdict.value}: {g.reason}")
        finished = [vid for vid in (v.id for v in real) if graded.pop(f"sim:{vid}").verdict is not Verdict.TIMEOUT]
        report.add("analytical", not finished,
                   f"the simulator runs out of time on all {len(real)} real-size vectors"
                   + (" checked" if analytical_sample else "")
                   if not finished else f"the simulator finishes real-size vector(s) {', '.join(finished)}: "
                   "make them larger, or the problem does not demand a model")
    mistakes = {v.name: v.mistake for v in problem.variants}
    if search:
        report.scores = mapping_checks.judge_runs(problem, report, graded)
        graded = {n: g for n, g in graded.items() if not n.startswith(("gold:", "baseline:"))}
    for name, g in graded.items():
        kind, _, label = name.partition(":")
        if kind == "gold":
            ok = g.verdict is Verdict.PASS
            report.add(f"gold ({label})", ok,
                       f"passes all {g.vectors_total} hidden vectors" if ok else f"{g.verdict.value}: {g.reason}")
        else:
            infra = g.verdict is Verdict.INFRA_ERROR
            killed = g.verdict is not Verdict.PASS and not infra
            report.variants.append(VariantResult(label, mistakes[label], killed, g.verdict.value, g.reason))
    if problem.variants:
        survivors = [v.name for v in report.variants if not v.killed]
        report.add("mutants", not survivors,
                   f"{len(report.variants) - len(survivors)}/{len(report.variants)} killed"
                   + (f"; not killed: {', '.join(survivors)}" if survivors else ""))
    return report


def validate(
    problems: list[Problem],
    handle: SandboxHandle | None,
    workers: int = 2,
    progress: Callable[[ProblemReport], None] | None = None,
    quick: bool = False,
) -> list[ProblemReport]:
    """Every problem's checks; ``quick``: three real-size vectors for the simulator check and
    decisive adequacy (the same verdicts, counts that are lower bounds)."""
    reports = []
    for p in problems:
        r = validate_problem(p, handle, workers, analytical_sample=3 if quick else None, exhaustive=not quick)
        reports.append(r)
        if progress:
            progress(r)
    return reports
