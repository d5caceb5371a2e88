"""The eval pipeline: completions in, one journal record per completion and per grade out.

Generation and grading overlap: a pool of request threads produces completions (from the model
service, a completions file or the offline demo model) and hands each one to a pool of grading
workers as soon as it arrives; each grading is one fresh sandbox container. Every record goes to
the run's journal (fsynced) before the next step relies on it, so a run interrupted at any moment
resumes with exactly the work that is missing: samples without a completion are generated (from
the completion cache, at no cost), samples without a grade are graded, and nothing is graded twice.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Any

from sandbox import Limits

from .demo import demo_completion
from ..errors import ModelServiceError
from ..grading.execution import GradingEngine, problem_limits
from ..grading.extract import extract_code
from .llm import ModelClient, TransientExhausted
from ..packs.problems import Problem
from ..results.runs import RunDir, now_iso
from ..grading.scoring import Grade, no_code_grade
from ..packs.vectors import VectorSet

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class FileCompletion:
    text: str
    meta: dict[str, Any] = field(default_factory=dict)


@dataclass
class EvalPlan:
    problems: list[Problem]
    samples: int
    source: str  # model | completions | demo
    prompts: dict[str, str]
    vectors: dict[str, VectorSet]
    client: ModelClient | None = None
    file_completions: dict[tuple[str, int], FileCompletion] | None = None
    concurrency: int = 4
    workers: int = 2
    regrade: int = 0
    base_limits: Limits = field(default_factory=Limits)
    batch_size: int = 1  # > 1: batch mode (several samples of one problem per container)


class Progress:
    """Callbacks for live progress; the CLI renders them, tests ignore them."""

    def start(self, gen_total: int, grade_total: int) -> None: ...
    def generated(self, problem: str, sample: int, cached: bool) -> None: ...
    def graded(self, problem: str, sample: int, verdict: str) -> None: ...
    def note(self, text: str) -> None: ...


@dataclass(frozen=True)
class _GradeItem:
    problem: str
    sample: int
    round: int
    code: str | None
    reason: str  # why there is no code, when there is none


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


class Evaluator:
    def __init__(self, run: RunDir, plan: EvalPlan, engine: GradingEngine | None,
                 progress: Progress | None = None) -> None:
        self.run = run
        self.plan = plan
        self.engine = engine
        self.progress = progress or Progress()
        self._by_id = {p.qualified_id: p for p in plan.problems}
        self._stop = threading.Event()  # no new generation (interrupt or fatal model error)
        self._interrupted = threading.Event()  # no new verdicts either: resume will redo them
        self._fatal: BaseException | None = None
        self._queue = GradeQueue()
        self._worker_errors: list[BaseException] = []

    # -- planning --------------------------------------------------------------------------
    def _pending(self) -> tuple[list[tuple[str, int]], list[_GradeItem]]:
        """(samples to generate, gradings to do for samples that already have a completion)."""
        st = self.run.state()
        rounds = range(self.plan.regrade + 1)
        to_generate = [(p.qualified_id, s) for p in self.plan.problems for s in range(self.plan.samples)
                       if (p.qualified_id, s) not in st.completions]
        need: dict[tuple[str, int], list[int]] = {}
        for pid, s in st.completions:
            if pid not in self._by_id or s >= self.plan.samples:
                continue
            missing = [r for r in rounds if (pid, s, r) not in st.final_grades]
            if missing:
                need[(pid, s)] = missing
        to_grade: list[_GradeItem] = []
        if need:
            for rec in self.run.journal.records():
                if rec.get("type") == "completion":
                    key = (rec["problem"], rec["sample"])
                    if key in need:
                        for r in need.pop(key):
                            to_grade.append(_GradeItem(key[0], key[1], r, rec.get("code"),
                                                       rec.get("extraction", {}).get("reason", "no code")))
        return to_generate, to_grade

    # -- work ------------------------------------------------------------------------------
    def interrupt(self) -> None:
        """Stop generating and stop writing verdicts (what is missing is done on --resume)."""
        self._interrupted.set()
        self._stop.set()

    def _complete(self, pid: str, sample: int) -> None:
        if self._stop.is_set():
            return
        problem = self._by_id[pid]
        meta: dict[str, Any] = {}
        cached = False
        try:
            if self.plan.source == "demo":
                text = demo_completion(problem, sample)
            elif self.plan.source == "completions":
                assert self.plan.file_completions is not None
                fc = self.plan.file_completions.get((pid, sample))
                if fc is None:
                    return  # the file has no completion for this sample; reported as ungraded
                text, meta = fc.text, {"file": fc.meta}
            else:
                assert self.plan.client is not None
                c = self.plan.client.complete(self.plan.prompts[pid], sample)
                text, meta, cached = c.text, c.to_json(), c.cached
        except ModelServiceError as exc:
            self._fatal = exc
            self._stop.set()
            return
        except TransientExhausted as exc:
            self.run.journal.append({"type": "event", "event": "generation_failed", "problem": pid,
                                     "sample": sample, "detail": str(exc), "attempts": exc.attempts, "ts": now_iso()})
            self.progress.note(f"{pid}#{sample}: {exc}")
            return
        ex = extract_code(text, problem.entry_point)
        rec = {"type": "completion", "problem": pid, "sample": sample, "source": self.plan.source,
               "text": text, "code": ex.code, "extraction": ex.to_json(), "meta": meta, "ts": now_iso()}
        self.run.journal.append(rec)
        self.progress.generated(pid, sample, cached)
        if self._interrupted.is_set():
            return
        for r in range(self.plan.regrade + 1):
            self._queue.put(_GradeItem(pid, sample, r, ex.code, ex.reason))

    def _record(self, item: _GradeItem, g: Grade, notes: list[str]) -> None:
        if self._interrupted.is_set():
            return  # a container torn down by the interrupt is not a verdict: resume grades it
        self.run.journal.append({"type": "grade", "problem": item.problem, "sample": item.sample,
                                 "round": item.round, "grade": g.model_dump(mode="json"), "infra_notes": notes,
                                 "image": self.engine.image_id if self.engine else None, "ts": now_iso()})
        self.progress.graded(item.problem, item.sample, g.verdict.value)

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
        graded = self.engine.grade(problem, [(f"s{it.sample}-r{it.round}", it.code or "") for it in with_code],
                                   hidden, limits, stop=self._interrupted)
        for it, (g, notes) in zip(with_code, graded):
            self._record(it, g, notes)

    def _grade_worker(self) -> None:
        try:
            while not self._interrupted.is_set():
                items = self._queue.take(max(1, self.plan.batch_size))
                if items is None:
                    return
                self._grade_items(items)
        except BaseException as exc:  # surfaced by execute() in the main thread
            self._worker_errors.append(exc)
            self._interrupted.set()
            self._stop.set()
            self._queue.close()

    # -- driver ----------------------------------------------------------------------------
    def execute(self) -> None:
        to_generate, to_grade = self._pending()
        gen_total = len(to_generate)
        grade_total = gen_total * (self.plan.regrade + 1) + len(to_grade)
        self.progress.start(gen_total, grade_total)
        self.run.journal.append({"type": "event", "event": "session_start", "to_generate": gen_total,
                                 "to_grade": grade_total, "ts": now_iso()})
        slots = self.engine.slots if self.engine is not None else self.plan.workers
        workers = [threading.Thread(target=self._grade_worker, name=f"grade-{i}", daemon=True)
                   for i in range(max(1, slots))]
        for w in workers:
            w.start()
        gen_pool = ThreadPoolExecutor(max_workers=max(1, self.plan.concurrency), thread_name_prefix="gen")
        try:
            for item in to_grade:
                self._queue.put(item)
            gen_futures = [gen_pool.submit(self._complete, pid, s) for pid, s in to_generate]
            self._wait(gen_futures)
            self._queue.close()
            for w in workers:
                while w.is_alive():
                    w.join(timeout=0.2)  # short joins keep Ctrl-C prompt
            if self._worker_errors:
                raise self._worker_errors[0]
        except BaseException:
            self._interrupted.set()
            self._stop.set()
            self._queue.close()
            gen_pool.shutdown(wait=False, cancel_futures=True)
            raise
        gen_pool.shutdown(wait=True)
        self.run.journal.append({"type": "event", "event": "session_end", "ts": now_iso()})
        if self._fatal is not None:
            raise self._fatal

    @staticmethod
    def _wait(futures: list[Future]) -> None:
        """Wait for every future, in short slices so that Ctrl-C reaches the main thread promptly;
        then raise the first unexpected error (a bug must not lose a sample silently)."""
        pending = set(futures)
        while pending:
            _, pending = wait(pending, timeout=0.2)
        for f in futures:
            exc = f.exception()
            if exc is not None:
                raise exc
