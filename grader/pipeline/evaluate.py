"""The eval pipeline: completions in, one journal record per completion, feedback and grade out.

A **sample** is one question put to the model, identified by (problem, mode, item, sample):

* mode ``code``: the model writes the function; the code is graded in a fresh sandbox container
  against the hidden vectors (``item`` is empty);
* mode ``qa``: the model answers one concrete instance (``item``) directly; the answer is compared
  on the host, no code runs.

A sample has one or more revision **rounds**. After round r is graded, a sample that did not pass
(or every sample, with ``revise_all``) goes back to the model as a continued conversation with a
feedback message (:mod:`.revision`) and round r+1 is graded like round 0.

Generation and grading overlap: a pool of request threads produces completions (from the model
service, a completions file or the offline demo model) and hands code to a pool of grading
workers (one per slot of the grading engine) as soon as it arrives; Q&A answers are graded on the
spot. Every record goes to the run's journal (fsynced) before the next step relies on it, so a run
interrupted at any moment resumes with exactly the work that is missing: completions not yet
made are generated (from the completion cache, at no cost), grades not yet written are graded,
feedback not yet given is given, and nothing is generated or graded twice.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from sandbox import Limits

from ..errors import ModelServiceError
from ..grading.execution import GradingEngine, problem_limits
from ..grading.extract import extract_code
from ..grading.qa import extract_answer, grade_qa
from ..grading.scoring import Grade, Verdict, infra_grade, no_code_grade
from ..packs.problems import Problem
from ..packs.qa import QAItem
from ..packs.vectors import VectorSet
from ..results.runs import RunDir, now_iso, record_key
from .demo import demo_completion, demo_qa_answer, demo_revision
from .llm import ModelClient, TransientExhausted
from .revision import NO_FEEDBACK_CODE, NO_FEEDBACK_QA, code_examples_feedback, conversation, qa_examples_feedback

log = logging.getLogger(__name__)

TaskKey = tuple[str, str, str, int]  # (problem, mode, item, sample)
_UNREACHABLE = {"APIConnectionError", "APITimeoutError"}  # errors that mean nothing is answering


@dataclass(frozen=True)
class FileCompletion:
    text: str
    meta: dict[str, Any] = field(default_factory=dict)


@dataclass
class EvalPlan:
    problems: list[Problem]
    samples: int
    source: str  # model | completions | demo
    prompts: dict[tuple[str, str, str], str]  # (problem, mode, item) -> the prompt
    vectors: dict[str, VectorSet]
    modes: tuple[str, ...] = ("code",)
    qa_items: dict[str, tuple[QAItem, ...]] = field(default_factory=dict)
    client: ModelClient | None = None
    # (problem, mode, item, sample, round) -> completion text from a file
    file_completions: dict[tuple[str, str, str, int, int], FileCompletion] | None = None
    concurrency: int = 4
    workers: int = 2
    regrade: int = 0
    base_limits: Limits = field(default_factory=Limits)
    batch_size: int = 1  # > 1: batch mode (several samples of one problem per container)
    rounds: int = 1
    feedback: str = "none"  # none | examples
    revise_all: bool = False

    def tasks(self) -> list[TaskKey]:
        out: list[TaskKey] = []
        for p in self.problems:
            pid = p.qualified_id
            for mode in self.modes:
                items = [""] if mode == "code" else [it.id for it in self.qa_items.get(pid, ())]
                for item in items:
                    out.extend((pid, mode, item, s) for s in range(self.samples))
        return out


class Progress:
    """Callbacks for live progress; the CLI renders them, tests ignore them."""

    def start(self, gen_total: int, grade_total: int) -> None: ...
    def generated(self, problem: str, sample: int, cached: bool) -> None: ...
    def graded(self, problem: str, sample: int, verdict: str) -> None: ...
    def more(self, gen: int, grade: int) -> None: ...
    def note(self, text: str) -> None: ...


@dataclass(frozen=True)
class _GradeItem:
    task: TaskKey
    round: int
    regrade: int
    code: str | None
    reason: str  # why there is no code, when there is none

    @property
    def problem(self) -> str:
        return self.task[0]


class GradeQueue:
    """Completions waiting to be graded, grouped by problem.

    A grading worker takes the oldest waiting item together with up to ``n - 1`` more items of
    the same problem that are already waiting: batches form by themselves when grading lags
    generation, and nothing ever waits for a batch to fill.
    """

    def __init__(self) -> None:
        self._by_problem: dict[str, deque[_GradeItem]] = {}
        self._order: deque[str] = deque()
        self._cv = threading.Condition()
        self._closed = False

    def put(self, item: _GradeItem) -> None:
        with self._cv:
            q = self._by_problem.setdefault(item.problem, deque())
            if not q:
                self._order.append(item.problem)
            q.append(item)
            self._cv.notify()

    def close(self) -> None:
        with self._cv:
            self._closed = True
            self._cv.notify_all()

    def take(self, n: int) -> list[_GradeItem] | None:
        """Up to n items of one problem; None once closed and empty."""
        with self._cv:
            while not self._order and not self._closed:
                self._cv.wait()
            if not self._order:
                return None
            pid = self._order.popleft()
            q = self._by_problem[pid]
            batch = [q.popleft() for _ in range(min(n, len(q)))]
            if q:
                self._order.append(pid)
            return batch


@dataclass
class _Sample:
    """What the pipeline knows of one sample while it runs: its answers and the feedback so far."""

    texts: dict[int, str] = field(default_factory=dict)  # round -> completion text
    codes: dict[int, str | None] = field(default_factory=dict)
    reasons: dict[int, str] = field(default_factory=dict)  # round -> why no code was extracted
    feedback: dict[int, str] = field(default_factory=dict)  # round -> feedback given after it


class Evaluator:
    def __init__(self, run: RunDir, plan: EvalPlan, engine: GradingEngine | None,
                 progress: Progress | None = None) -> None:
        self.run = run
        self.plan = plan
        self.engine = engine
        self.progress = progress or Progress()
        self._by_id = {p.qualified_id: p for p in plan.problems}
        self._items = {(pid, it.id): it for pid, items in plan.qa_items.items() for it in items}
        self._samples: dict[TaskKey, _Sample] = {}
        self._stop = threading.Event()  # no new generation (interrupt or fatal model error)
        self._interrupted = threading.Event()  # no new verdicts either: resume will redo them
        self._fatal: BaseException | None = None
        self._queue = GradeQueue()
        self._errors: list[BaseException] = []
        self._pending = 0  # units of work scheduled and not finished (generation or grading)
        self._cv = threading.Condition()
        self._pool: ThreadPoolExecutor | None = None
        self._round_grade: dict[tuple[TaskKey, int], Grade] = {}  # the verdict of each graded round
        self.failed_requests = 0
        self.completed_requests = 0
        self.last_failure = ""

    # -- bookkeeping -------------------------------------------------------------------------
    def _sample(self, task: TaskKey) -> _Sample:
        with self._cv:
            return self._samples.setdefault(task, _Sample())

    def _begin(self, n: int = 1) -> None:
        with self._cv:
            self._pending += n

    def _end(self) -> None:
        with self._cv:
            self._pending -= 1
            if self._pending <= 0:
                self._cv.notify_all()

    def _fail(self, exc: BaseException) -> None:
        with self._cv:
            self._errors.append(exc)
        self._interrupted.set()
        self._stop.set()
        self._queue.close()
        with self._cv:
            self._cv.notify_all()

    def interrupt(self) -> None:
        """Stop generating and stop writing verdicts (what is missing is done on --resume)."""
        self._interrupted.set()
        self._stop.set()
        with self._cv:
            self._cv.notify_all()

    # -- planning ----------------------------------------------------------------------------
    def _resume_state(self) -> tuple[list[tuple[TaskKey, int]], list[_GradeItem], list[tuple[TaskKey, int, Grade]]]:
        """Read the journal: (generations to do, gradings to do, follow-ups to decide).

        A follow-up is a graded round whose next step (feedback, next round) is not in the journal.
        """
        st = self.run.state()
        final, _ = self.run.final_grades()
        wanted = set(self.plan.tasks())
        regrades = range(self.plan.regrade + 1)
        for rec in self.run.journal.records():
            t = rec.get("type")
            if t not in ("completion", "feedback"):
                continue
            key = record_key(rec)
            task, r = key[:4], key[4]
            if task not in wanted:
                continue
            smp = self._sample(task)
            if t == "completion":
                smp.texts[r] = rec.get("text") or ""
                smp.codes[r] = rec.get("code")
                smp.reasons[r] = (rec.get("extraction") or {}).get("reason", "no code")
            else:
                smp.feedback[r] = rec.get("message", "")
        to_generate: list[tuple[TaskKey, int]] = []
        to_grade: list[_GradeItem] = []
        follow: list[tuple[TaskKey, int, Grade]] = []
        for task in self.plan.tasks():
            smp = self._samples.get(task)
            if smp is None or 0 not in smp.texts:
                to_generate.append((task, 0))
                continue
            last = max(smp.texts)
            for r in sorted(smp.texts):
                done = final.get(task + (r, 0))
                if done is not None and task + (r, 0) not in st.infra_grades:
                    self._round_grade[(task, r)] = Grade.model_validate(done["grade"])
                if task[1] == "code":
                    for g in regrades:
                        if task + (r, g) not in final or task + (r, g) in st.infra_grades:
                            to_grade.append(_GradeItem(task, r, g, smp.codes.get(r), smp.reasons.get(r, "no code")))
                elif task + (r, 0) not in final or task + (r, 0) in st.infra_grades:
                    to_grade.append(_GradeItem(task, r, 0, None, ""))
            g0 = final.get(task + (last, 0))
            if g0 is not None and g0["grade"]["verdict"] != Verdict.INFRA_ERROR.value:
                grade = Grade.model_validate(g0["grade"])
                if last in smp.feedback:
                    to_generate.append((task, last + 1))  # feedback given, next round not generated
                else:
                    follow.append((task, last, grade))
        return to_generate, to_grade, follow

    # -- generation ----------------------------------------------------------------------------
    def _request(self, task: TaskKey, round_: int) -> tuple[str, dict[str, Any], bool] | None:
        pid, mode, item_id, sample = task
        problem = self._by_id[pid]
        item = self._items.get((pid, item_id)) if mode == "qa" else None
        smp = self._sample(task)
        if self.plan.source == "demo":
            if round_ == 0:
                text = demo_completion(problem, sample) if mode == "code" else demo_qa_answer(problem, item, sample)
            else:
                prev = self._round_grade.get((task, round_ - 1))
                text = demo_revision(problem, mode, item, sample, round_, self.plan.feedback,
                                     bool(prev and prev.passed))
            return text, {}, False
        if self.plan.source == "completions":
            assert self.plan.file_completions is not None
            fc = self.plan.file_completions.get(task + (round_,))
            if fc is None:
                return None  # the file has no completion for this sample (or round)
            return fc.text, {"file": fc.meta}, False
        assert self.plan.client is not None
        prompt = self.plan.prompts[(pid, mode, item_id)]
        turns = [(smp.texts[r], smp.feedback[r]) for r in range(round_)]
        c = self.plan.client.complete(conversation(prompt, turns), sample)
        return c.text, c.to_json(), c.cached

    def _generate(self, task: TaskKey, round_: int) -> None:
        try:
            if self._stop.is_set():
                return
            pid, mode, item_id, sample = task
            problem = self._by_id[pid]
            try:
                got = self._request(task, round_)
            except ModelServiceError as exc:
                self._fatal = exc
                self._stop.set()
                return
            except TransientExhausted as exc:
                with self._cv:
                    self.failed_requests += 1
                    self.last_failure = str(exc)
                    unreachable = self.completed_requests == 0 and all(
                        a.get("error") in _UNREACHABLE for a in exc.attempts if a.get("error"))
                if unreachable and self.plan.client is not None:
                    # nothing has ever answered: stop now rather than retry every sample the same way
                    detail = next((a.get("detail") for a in reversed(exc.attempts) if a.get("detail")), "")
                    self._fatal = ModelServiceError(
                        f"cannot reach the model service at {self.plan.client.base_url}: {exc.attempts[-1].get('error')}"
                        + (f" ({detail[:120]})" if detail else ""))
                    self._stop.set()
                self.run.journal.append({"type": "event", "event": "generation_failed", "problem": pid, "mode": mode,
                                         "item": item_id, "sample": sample, "round": round_, "detail": str(exc),
                                         "attempts": exc.attempts, "ts": now_iso()})
                self.progress.note(f"{pid}{'/' + item_id if item_id else ''}#{sample}: {exc}")
                return
            if got is None:
                return
            text, meta, cached = got
            with self._cv:
                self.completed_requests += 1
            rec: dict[str, Any] = {"type": "completion", "problem": pid, "mode": mode, "item": item_id,
                                   "sample": sample, "round": round_, "source": self.plan.source, "text": text}
            if mode == "code":
                ex = extract_code(text, problem.entry_point)
                rec.update(code=ex.code, extraction=ex.to_json())
            else:
                ax = extract_answer(text)
                rec.update(answer=ax.value, extraction=ax.to_json())
            rec.update(meta=meta, ts=now_iso())
            self.run.journal.append(rec)
            smp = self._sample(task)
            smp.texts[round_] = text
            smp.codes[round_] = rec.get("code")
            self.progress.generated(pid, sample, cached)
            if self._interrupted.is_set():
                return
            if mode == "code":
                regrades = self.plan.regrade + 1
                self._begin(regrades)
                for g in range(regrades):
                    self._queue.put(_GradeItem(task, round_, g, rec["code"],
                                               rec["extraction"].get("reason", "no code")))
            else:
                self._grade_qa(task, round_)
        except BaseException as exc:  # surfaced by execute() in the main thread
            self._fail(exc)
        finally:
            self._end()

    def _schedule(self, task: TaskKey, round_: int) -> None:
        if self._stop.is_set() or self._pool is None:
            return
        self._begin()
        try:
            self._pool.submit(self._generate, task, round_)
        except RuntimeError:  # the pool is shutting down (interrupt)
            self._end()

    # -- grading --------------------------------------------------------------------------------
    def _record(self, item: _GradeItem, g: Grade, notes: list[str]) -> None:
        if self._interrupted.is_set():
            return  # a container torn down by the interrupt is not a verdict: resume grades it
        pid, mode, item_id, sample = item.task
        self.run.journal.append({"type": "grade", "problem": pid, "mode": mode, "item": item_id, "sample": sample,
                                 "round": item.round, "regrade": item.regrade, "grade": g.model_dump(mode="json"),
                                 "infra_notes": notes,
                                 "image": self.engine.image_id if (self.engine and mode == "code") else None,
                                 "ts": now_iso()})
        self.progress.graded(pid, sample, g.verdict.value)
        if item.regrade == 0 and g.verdict is not Verdict.INFRA_ERROR:
            self._after_grade(item.task, item.round, g)

    def _grade_qa(self, task: TaskKey, round_: int) -> None:
        pid, _, item_id, _ = task
        qa_item = self._items.get((pid, item_id))
        text = self._sample(task).texts.get(round_, "")
        if qa_item is None:
            g = infra_grade(f"Q&A item {item_id} is not in the plan", 1)
        else:
            g = grade_qa(self._by_id[pid], qa_item, text)
        self._record(_GradeItem(task, round_, 0, None, ""), g, [])

    def _grade_items(self, items: list[_GradeItem]) -> None:
        problem = self._by_id[items[0].problem]
        hidden = self.plan.vectors[problem.qualified_id].hidden
        with_code = []
        for it in items:
            if it.code is None:
                self._record(it, no_code_grade(it.reason, len(hidden)), [])
            else:
                with_code.append(it)
        if not with_code or self._interrupted.is_set():
            return
        assert self.engine is not None
        limits = problem_limits(problem, self.plan.base_limits)
        graded = self.engine.grade(problem, [(f"s{it.task[3]}-r{it.round}-g{it.regrade}", it.code or "")
                                             for it in with_code], hidden, limits, stop=self._interrupted)
        for it, (g, notes) in zip(with_code, graded):
            self._record(it, g, notes)

    def _grade_worker(self) -> None:
        try:
            while not self._interrupted.is_set():
                items = self._queue.take(max(1, self.plan.batch_size))
                if items is None:
                    return
                try:
                    self._grade_items(items)
                finally:
                    for _ in items:
                        self._end()
        except BaseException as exc:
            self._fail(exc)

    # -- revision ----------------------------------------------------------------------------------
    def _after_grade(self, task: TaskKey, round_: int, g: Grade) -> None:
        """Decide the sample's next step once round r has its verdict."""
        with self._cv:
            self._round_grade[(task, round_)] = g
        if round_ + 1 >= self.plan.rounds or (g.passed and not self.plan.revise_all) or self._stop.is_set():
            return
        message = self._feedback(task, round_)
        if message is None or self._interrupted.is_set():
            return
        pid, mode, item_id, sample = task
        self.run.journal.append({"type": "feedback", "problem": pid, "mode": mode, "item": item_id, "sample": sample,
                                 "round": round_, "feedback": self.plan.feedback, "message": message, "ts": now_iso()})
        self._sample(task).feedback[round_] = message
        self.progress.more(1, self.plan.regrade + 1 if mode == "code" else 1)
        self._schedule(task, round_ + 1)

    def _feedback(self, task: TaskKey, round_: int) -> str | None:
        pid, mode, _, _ = task
        problem = self._by_id[pid]
        visible = self.plan.vectors[pid].visible
        if self.plan.feedback == "none":
            return NO_FEEDBACK_CODE if mode == "code" else NO_FEEDBACK_QA
        if mode == "qa":
            return qa_examples_feedback(problem, visible)
        code = self._sample(task).codes.get(round_)
        if code is None:
            g = no_code_grade("no code", len(visible))
        else:
            assert self.engine is not None
            limits = problem_limits(problem, self.plan.base_limits)
            g, _ = self.engine.grade(problem, [(f"s{task[3]}-r{round_}-examples", code)], visible, limits,
                                     stop=self._interrupted)[0]
            if g.verdict is Verdict.INFRA_ERROR:
                return None  # no verdict on the examples: the resumed run gives this feedback
        return code_examples_feedback(problem, visible, g)

    # -- driver ------------------------------------------------------------------------------------
    def execute(self) -> None:
        to_generate, to_grade, follow = self._resume_state()
        per_sample = (self.plan.regrade + 1)
        grade_total = sum(per_sample if t[1] == "code" else 1 for t, _ in to_generate) + len(to_grade)
        self.progress.start(len(to_generate), grade_total)
        self.run.journal.append({"type": "event", "event": "session_start", "to_generate": len(to_generate),
                                 "to_grade": grade_total, "ts": now_iso()})
        slots = self.engine.slots if self.engine is not None else self.plan.workers
        needs_workers = any(m == "code" for m in self.plan.modes)
        workers = [threading.Thread(target=self._grade_worker, name=f"grade-{i}", daemon=True)
                   for i in range(max(1, slots) if needs_workers else 0)]
        for w in workers:
            w.start()
        self._pool = ThreadPoolExecutor(max_workers=max(1, self.plan.concurrency), thread_name_prefix="gen")
        try:
            for item in to_grade:
                if item.task[1] == "qa":
                    self._begin()
                    try:
                        self._grade_qa(item.task, item.round)
                    finally:
                        self._end()
                else:
                    self._begin()
                    self._queue.put(item)
            for task, r, g in follow:
                self._round_grade[(task, r)] = g
                self._begin()
                try:
                    self._after_grade(task, r, g)
                finally:
                    self._end()
            for task, r in to_generate:
                self._schedule(task, r)
            with self._cv:
                while self._pending > 0 and not self._errors and not self._interrupted.is_set():
                    self._cv.wait(timeout=0.2)  # short waits keep Ctrl-C prompt
            self._queue.close()
            for w in workers:
                while w.is_alive():
                    w.join(timeout=0.2)
            if self._errors:
                raise self._errors[0]
        except BaseException:
            self._interrupted.set()
            self._stop.set()
            self._queue.close()
            self._pool.shutdown(wait=False, cancel_futures=True)
            raise
        self._pool.shutdown(wait=True)
        self.run.journal.append({"type": "event", "event": "session_end", "ts": now_iso()})
        if self._fatal is not None:
            raise self._fatal
