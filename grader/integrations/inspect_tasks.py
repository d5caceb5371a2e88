"""The benchmark as inspect_ai tasks, scored by the grader (docs/integrations.md).

    inspect eval perfgrade/perf_core --model openai/gpt-4o-mini
    inspect eval perfgrade/perf_model -T mode=qa -T qa_items=3 --model openai/gpt-4o-mini
    inspect eval perfgrade/pack -T pack=my-pack -T pack_path=/path/to/packs --model ...

inspect finds these tasks through its ``inspect_ai`` entry point group: pyproject.toml maps the
name ``perfgrade`` to this module, which inspect imports the first time a task name starting
with ``perfgrade/`` is asked for. Nothing else in the grader imports this module, so inspect_ai
is needed only by whoever runs these tasks (the ``inspect`` extra).

**Samples.** A sample's input is exactly the prompt ``eval`` sends for it (what ``problems show``
prints). Code mode (the default): one sample per problem, its id the problem's id. Q&A mode
(``-T mode=qa``): one sample per Q&A item (``-T qa_items=N`` value items per problem, and N per
multiple-choice question, as ``eval --qa-items N``), its id ``<problem>:<item>``. A sample's
metadata names the problem (``pack/id``), the item (and in Q&A mode the item count), the mode,
the family, difficulty and tier and the problem's content hash: never an expected value. The
scorer looks those up on the host.

**Scores.** The scorer is the grader. A code answer is extracted by the grader's extractor and
graded in the grader's sandbox against the hidden vectors, through :class:`grader.reward.Rewarder`
(the verdicts ``eval`` gives); a Q&A answer is extracted and compared on the host by the grader's
Q&A grading, as in ``eval``. The value is 1 for ``pass`` or ``correct`` and 0 for any other
verdict (``-T partial=true``: the share of hidden vectors passed, or of a Q&A item's fields
answered correctly). The explanation starts with the verdict; the metadata holds the verdict and
the grade exactly as ``eval`` journals it, per-field diffs of the first failing vectors included.
An ``infra_error`` (the sandbox failed, was retried and gave up) is not the model's fault: its
score is recorded as unscored (value NaN, ``metadata["reason"] == "scoring_failed"``), which inspect leaves out of every
metric. The scorer reads everything but ``partial`` from the sample, so
``inspect score LOG --scorer perfgrade/grader`` grades a log again. It refuses a sample whose
problem changed since the sample was made (its content hash differs): the verdict would be
against other hidden vectors than the prompt's. Metrics: accuracy and its standard error.

**Sandbox.** In code mode the sandbox is opened when the task is made, so a sandbox that is not
ready stops the run before any model call is paid for. Gradings run in fresh containers, as many
at once as the grading engine has slots (shared by every perfgrade task of the process).

**Generation.** The task's generation defaults are ``eval``'s (temperature 0.8, top-p 1.0, at
most 4096 tokens); inspect's own options (``--temperature``, ``--max-tokens``, ``--epochs``...)
override them. No seed is set, so the epochs of a sample are independent draws.
"""

from __future__ import annotations

import atexit
import json
import os
import threading
from collections.abc import Sequence
from functools import partial as bind
from pathlib import Path
from typing import Any

import anyio
from inspect_ai import Task, task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import GenerateConfig
from inspect_ai.scorer import Score, Scorer, Target, accuracy, scorer, stderr
from inspect_ai.solver import TaskState, generate
from inspect_ai.util import concurrency

from .. import __version__
from ..errors import ConfigError
from ..grading.extract import extract_code
from ..grading.qa import extract_answer, grade_qa
from ..grading.scoring import Grade, Verdict
from ..packs import vectors
from ..packs.problems import Catalog, Problem, default_pack_roots
from ..packs.prompt import PROMPT_VERSION, render_prompt
from ..packs.qa import QA_PROMPT_VERSION, QAItem, render_qa_prompt
from ..packs.qa import qa_items as make_qa_items
from ..pipeline.llm import GenParams
from ..reward import Rewarder

NAMESPACE = "perfgrade"  # the entry point's name: inspect loads this module for perfgrade/<task>
MODES = ("code", "qa")
DEFAULT_QA_ITEMS = 5
SANDBOX_CONCURRENCY = "perfgrade-sandbox"

_LOCK = threading.Lock()
_CATALOGS: dict[tuple[str, ...], Catalog] = {}
_REWARDERS: dict[tuple[str, ...], Rewarder] = {}
_ITEMS: dict[tuple[str, str, int], dict[str, QAItem]] = {}


# ------------------------------------------------------------------------------------------
# the tasks
# ------------------------------------------------------------------------------------------

@task(name=f"{NAMESPACE}/perf_core")
def perf_core(mode: str = "code", problems: str | list[str] | None = None, qa_items: int = DEFAULT_QA_ITEMS,
              partial: bool = False) -> Task:
    """The guided tier (pack perf-core): specs state the formulas."""
    return pack_task("perf-core", mode=mode, problems=problems, qa_items=qa_items, partial=partial)


@task(name=f"{NAMESPACE}/perf_model")
def perf_model(mode: str = "code", problems: str | list[str] | None = None, qa_items: int = DEFAULT_QA_ITEMS,
               partial: bool = False) -> Task:
    """The model tier (pack perf-model): specs state what the hardware does, on real sizes."""
    return pack_task("perf-model", mode=mode, problems=problems, qa_items=qa_items, partial=partial)


@task(name=f"{NAMESPACE}/pack")
def pack(pack: str, mode: str = "code", problems: str | list[str] | None = None, qa_items: int = DEFAULT_QA_ITEMS,
         partial: bool = False, pack_path: str | list[str] | None = None) -> Task:
    """Any pack, the built-in ones or one found under ``pack_path`` (directories, or one string
    separated by the path separator; $PERFGRADE_PACKS is read too)."""
    return pack_task(pack, mode=mode, problems=problems, qa_items=qa_items, partial=partial, pack_path=pack_path)


def pack_task(pack: str, *, mode: str = "code", problems: str | list[str] | None = None,
              qa_items: int = DEFAULT_QA_ITEMS, partial: bool = False,
              pack_path: str | list[str] | None = None) -> Task:
    """The task of one pack in one mode (what every registered task returns)."""
    mode = _mode(mode)
    if not isinstance(qa_items, int) or isinstance(qa_items, bool) or qa_items < 1:
        raise ConfigError(f"qa_items must be an integer >= 1 (got {qa_items!r})")
    paths = _paths(pack_path)
    catalog = _catalog(paths)
    chosen = select_problems(catalog, pack, problems, mode)
    # each sample's metadata carries its problem's content hash (the pack's whole hash would cost
    # hashing every problem's reference code when a few problems are asked for)
    meta: dict[str, Any] = {"pack": pack, "pack_version": catalog.pack(pack).version, "mode": mode,
                            "grader_version": __version__}
    if mode == "code":
        engine = _rewarder(paths).engine  # the sandbox is ready, or this raises before any model call
        samples = [code_sample(p) for p in chosen]
        meta.update(prompt_version=PROMPT_VERSION, image={"id": engine.image_id, "tag": engine.image_tag})
    else:
        samples = [s for p in chosen for s in qa_samples(p, qa_items)]
        meta.update(prompt_version=QA_PROMPT_VERSION, qa_items=qa_items)
    return Task(
        dataset=MemoryDataset(samples, name=f"{pack}-{mode}"),
        solver=generate(),
        scorer=perfgrade_grader(partial=partial, pack_path=list(paths) or None),
        config=GenerateConfig(temperature=GenParams.temperature, top_p=GenParams.top_p,
                              max_tokens=GenParams.max_tokens),
        version=catalog.pack(pack).version,
        metadata=meta,
    )


def select_problems(catalog: Catalog, pack: str, problems: str | list[str] | None, mode: str) -> list[Problem]:
    """The pack's problems, or those named (bare ids or ``pack/id``, a list or one comma-separated string)."""
    names = _names(problems)
    catalog.pack(pack)  # an unknown pack fails here, with the known ones named
    chosen = catalog.select(pack, names or None)
    outside = [p.qualified_id for p in chosen if p.pack.name != pack]
    if outside:
        raise ConfigError(f"not in pack {pack}: {', '.join(outside)}")
    if not chosen:
        raise ConfigError(f"pack {pack} has no problems")
    if mode == "qa":
        without = [p.qualified_id for p in chosen if p.data.qa is None]
        if without:
            raise ConfigError(f"{len(without)} selected problem(s) have no [qa] table, so no Q&A items: "
                              + ", ".join(without[:5]))
    return chosen


# ------------------------------------------------------------------------------------------
# the samples
# ------------------------------------------------------------------------------------------

def _identity(problem: Problem, mode: str) -> dict[str, Any]:
    return {"problem": problem.qualified_id, "mode": mode, "item": "", "family": problem.family,
            "difficulty": problem.difficulty, "tier": problem.tier, "content_hash": problem.content_hash}


def code_sample(problem: Problem) -> Sample:
    """One problem in code mode: the prompt ``eval`` sends, and the problem's identity."""
    text = render_prompt(problem, vectors.load(problem).visible)
    return Sample(id=problem.id, input=text, metadata=_identity(problem, "code"))


def qa_samples(problem: Problem, count: int = DEFAULT_QA_ITEMS) -> list[Sample]:
    """The problem's Q&A items (``count`` per kind, as ``eval --qa-items``), one sample each."""
    visible = vectors.load(problem).visible
    out = []
    for item in problem_items(problem, count).values():
        meta = _identity(problem, "qa") | {"item": item.id, "kind": item.kind, "qa_items": count}
        out.append(Sample(id=f"{problem.id}:{item.id}", input=render_qa_prompt(problem, item, visible),
                          metadata=meta))
    return out


def problem_items(problem: Problem, count: int) -> dict[str, QAItem]:
    """The problem's Q&A items by id (computed once per process for a problem version and count)."""
    key = (problem.qualified_id, problem.content_hash, count)
    with _LOCK:
        got = _ITEMS.get(key)
    if got is None:
        got = {it.id: it for it in make_qa_items(problem, vectors.load(problem).hidden, count)}
        with _LOCK:
            _ITEMS[key] = got
    return got


# ------------------------------------------------------------------------------------------
# the scorer
# ------------------------------------------------------------------------------------------

@scorer(metrics=[accuracy(), stderr()], name=f"{NAMESPACE}/grader")
def perfgrade_grader(partial: bool = False, pack_path: list[str] | None = None) -> Scorer:
    """The grader as inspect's scorer: the verdict ``eval`` gives, as 1 or 0 (or the share passed).

    Everything else it needs is in each sample's metadata (problem, mode, item, the Q&A item count
    and the content hash), so a log is graded again with ``inspect score LOG --scorer perfgrade/grader``.
    """
    paths = _paths(pack_path)
    catalog = _catalog(paths)

    async def score(state: TaskState, target: Target) -> Score:
        meta = state.metadata
        problem = _sample_problem(catalog, meta)
        mode = _mode(meta.get("mode"))
        text = state.output.completion if state.output is not None else ""
        item_id = str(meta.get("item") or "")
        if mode == "code":
            rewarder = await anyio.to_thread.run_sync(_rewarder, paths)
            async with concurrency(SANDBOX_CONCURRENCY, rewarder.engine.slots):
                out = await anyio.to_thread.run_sync(
                    bind(rewarder.score, problem.qualified_id, [text], mode="code", partial=partial))
            g, value = out.grades[0], out.rewards[0]
            ex = extract_code(text, problem.entry_point)
            answer, extraction = ex.code, ex.to_json()
        else:
            count = meta.get("qa_items", DEFAULT_QA_ITEMS)
            item = (await anyio.to_thread.run_sync(problem_items, problem, count)).get(item_id)
            if item is None:
                raise ConfigError(f"{problem.qualified_id} has no Q&A item {item_id!r} (with {count} per kind)")
            ans = extract_answer(text)
            g = grade_qa(problem, item, text)  # a search problem's item: the proposed mapping, scored
            value = qa_value(g, partial)
            answer = None if ans.value is None else _json(ans.value)
            extraction = ans.to_json()
        info = {"verdict": g.verdict.value, "problem": problem.qualified_id, "item": item_id, "mode": mode,
                "extraction": extraction, "grade": g.model_dump(mode="json")}
        explanation = f"{g.verdict.value}: {g.reason}"
        if g.verdict is Verdict.INFRA_ERROR or value is None:
            return Score.unscored(answer=answer, explanation=explanation, metadata={**info, "reason": "scoring_failed"})
        return Score(value=float(value), answer=answer, explanation=explanation, metadata=info)

    return score


def qa_value(g: Grade, partial: bool) -> float:
    """A Q&A grade as a number, by the reward's rule: 1 when correct; with ``partial``, the share of
    the item's fields answered correctly (0 with no answer), or a search problem's score."""
    if partial and g.score is not None:
        return g.score
    if g.passed:
        return 1.0
    if partial and g.fields and g.verdict is not Verdict.NO_ANSWER:
        return sum(not f.failed for f in g.fields.values()) / len(g.fields)
    return 0.0


def _sample_problem(catalog: Catalog, metadata: dict[str, Any]) -> Problem:
    pid = metadata.get("problem")
    if not isinstance(pid, str) or not pid:
        raise ConfigError("the sample's metadata names no problem: it was not made by a perfgrade task")
    problem = catalog.find(pid)
    made = metadata.get("content_hash")
    if made and made != problem.content_hash:
        raise ConfigError(f"{pid} changed since this sample was made (content hash {str(made)[:12]} -> "
                          f"{problem.content_hash[:12]}): its verdict would be against other hidden vectors; "
                          "run the task again")
    return problem


# ------------------------------------------------------------------------------------------
# shared per process: catalogs and the grading engine
# ------------------------------------------------------------------------------------------

def _mode(mode: object) -> str:
    if mode not in MODES:
        raise ConfigError(f"mode {mode!r}: expected one of {', '.join(MODES)}")
    return str(mode)


def _names(problems: str | Sequence[str] | None) -> list[str]:
    if problems is None:
        return []
    if isinstance(problems, str):
        problems = problems.split(",")
    return [str(p).strip() for p in problems if str(p).strip()]


def _paths(pack_path: str | Sequence[str] | None) -> tuple[str, ...]:
    if pack_path is None:
        return ()
    if isinstance(pack_path, (str, Path)):
        pack_path = str(pack_path).split(os.pathsep)
    return tuple(str(Path(p).resolve()) for p in pack_path if str(p))


def _roots(paths: tuple[str, ...]) -> tuple[str, ...]:
    """Where packs are looked for: the given paths first, then $PERFGRADE_PACKS and the built-in packs."""
    extra = [Path(p) for p in paths]
    return tuple(str(r) for r in extra + [r for r in default_pack_roots() if r.resolve() not in extra])


def _catalog(paths: tuple[str, ...]) -> Catalog:
    roots = _roots(paths)
    with _LOCK:
        got = _CATALOGS.get(roots)
        if got is None:
            got = _CATALOGS[roots] = Catalog([Path(r) for r in roots])
        return got


def _rewarder(paths: tuple[str, ...]) -> Rewarder:
    """The process's Rewarder for these pack roots (one grading engine, closed at exit)."""
    roots = _roots(paths)
    catalog = _catalog(paths)
    with _LOCK:
        got = _REWARDERS.get(roots)
        if got is None:
            got = _REWARDERS[roots] = Rewarder(catalog=catalog, batch=1)
            atexit.register(got.close)
        return got


def _json(value: Any) -> str:
    return json.dumps(value, separators=(", ", ": "))
