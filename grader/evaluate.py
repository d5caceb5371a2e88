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
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from sandbox import Limits

from .demo import demo_completion
from .errors import GraderError, ModelServiceError
from .execution import SandboxHandle, grade_source, problem_limits
from .extract import extract_code
from .llm import ModelClient, TransientExhausted
from .problems import Problem
from .runs import RunDir, now_iso
from .scoring import no_code_grade
from .vectors import VectorSet

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


class Progress:
    """Callbacks for live progress; the CLI renders them, tests ignore them."""

    def start(self, gen_total: int, grade_total: int) -> None: ...
    def generated(self, problem: str, sample: int, cached: bool) -> None: ...
    def graded(self, problem: str, sample: int, verdict: str) -> None: ...
    def note(self, text: str) -> None: ...


class Evaluator:
    def __init__(self, run: RunDir, plan: EvalPlan, handle: SandboxHandle | None,
                 progress: Progress | None = None) -> None:
        self.run = run
        self.plan = plan
        self.handle = handle
        self.progress = progress or Progress()
        self._by_id = {p.qualified_id: p for p in plan.problems}
        self._stop = threading.Event()  # no new generation (interrupt or fatal model error)
        self._interrupted = threading.Event()  # no new verdicts either: resume will redo them
        self._fatal: BaseException | None = None
        self._grade_futures: list[Future] = []
        self._futures_lock = threading.Lock()
        self._grade_pool: ThreadPoolExecutor | None = None

    # -- planning --------------------------------------------------------------------------
    def _pending(self) -> tuple[list[tuple[str, int]], list[tuple[str, int, int, dict]]]:
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
        to_grade: list[tuple[str, int, int, dict]] = []
        if need:
            for rec in self.run.journal.records():
                if rec.get("type") == "completion":
                    key = (rec["problem"], rec["sample"])
                    if key in need:
                        for r in need.pop(key):
                            to_grade.append((key[0], key[1], r, rec))
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
        for r in range(self.plan.regrade + 1):
            self._submit_grade(pid, sample, r, rec)

    def _submit_grade(self, pid: str, sample: int, rnd: int, rec: dict) -> None:
        assert self._grade_pool is not None
        if self._interrupted.is_set():
            return
        try:
            fut = self._grade_pool.submit(self._grade, pid, sample, rnd, rec)
        except RuntimeError:  # the pool was shut down by an interrupt
            return
        with self._futures_lock:
            self._grade_futures.append(fut)

    def _grade(self, pid: str, sample: int, rnd: int, rec: dict) -> None:
        if self._interrupted.is_set():
            return  # left for --resume
        problem = self._by_id[pid]
        hidden = self.plan.vectors[pid].hidden
        code = rec.get("code")
        notes: list[str] = []
        if code is None:
            g = no_code_grade(rec.get("extraction", {}).get("reason", "no code"), len(hidden))
        else:
            assert self.handle is not None
            limits = problem_limits(problem, self.plan.base_limits)
            g, notes = grade_source(self.handle, problem, code, hidden, limits,
                                    job_id=f"s{sample}-r{rnd}", stop=self._interrupted)
        if self._interrupted.is_set():
            return  # a container torn down by the interrupt is not a verdict: resume grades it
        self.run.journal.append({"type": "grade", "problem": pid, "sample": sample, "round": rnd,
                                 "grade": g.model_dump(mode="json"), "infra_notes": notes,
                                 "image": self.handle.image_id if self.handle else None, "ts": now_iso()})
        self.progress.graded(pid, sample, g.verdict.value)

    # -- driver ----------------------------------------------------------------------------
    def execute(self) -> None:
        to_generate, to_grade = self._pending()
        gen_total = len(to_generate)
        grade_total = gen_total * (self.plan.regrade + 1) + len(to_grade)
        self.progress.start(gen_total, grade_total)
        self.run.journal.append({"type": "event", "event": "session_start", "to_generate": gen_total,
                                 "to_grade": grade_total, "ts": now_iso()})
        self._grade_pool = ThreadPoolExecutor(max_workers=max(1, self.plan.workers), thread_name_prefix="grade")
        gen_pool = ThreadPoolExecutor(max_workers=max(1, self.plan.concurrency), thread_name_prefix="gen")
        try:
            for pid, s, r, rec in to_grade:
                self._submit_grade(pid, s, r, rec)
            gen_futures = [gen_pool.submit(self._complete, pid, s) for pid, s in to_generate]
            self._wait(gen_futures)
            while True:
                with self._futures_lock:
                    pending = [f for f in self._grade_futures if not f.done()]
                if not pending:
                    break
                self._wait(pending)
            with self._futures_lock:
                for f in self._grade_futures:
                    exc = f.exception()
                    if exc is not None:
                        raise exc
        except BaseException:
            self._interrupted.set()
            self._stop.set()
            gen_pool.shutdown(wait=False, cancel_futures=True)
            self._grade_pool.shutdown(wait=False, cancel_futures=True)
            raise
        gen_pool.shutdown(wait=True)
        self._grade_pool.shutdown(wait=True)
        self.run.journal.append({"type": "event", "event": "session_end", "ts": now_iso()})
        if self._fatal is not None:
            raise self._fatal

    def _wait(self, futures: list[Future]) -> None:
        # wait in short slices so that Ctrl-C is delivered promptly to the main thread
        for f in futures:
            while not f.done():
                try:
                    f.result(timeout=0.2)
                except TimeoutError:
                    continue
                except GraderError:
                    raise
                except Exception:  # noqa: BLE001 - surfaced after every worker has finished
                    break
