"""Grading one piece of source code against a problem's hidden vectors in the sandbox.

This is where the grader meets the sandbox: it opens a sandbox on the current image, runs the
source on the hidden inputs (the expected outputs stay here), scores the raw values and retries
infrastructure failures (never the candidate's own behaviour: a timeout is a verdict).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sandbox import InfrastructureError, Job, Limits
from sandbox.engine import connect
from sandbox.image import resolve
from sandbox.models import Case, ExecResult
from sandbox.runner import Sandbox

from ..packs.problems import Problem
from .scoring import Grade, grade_for, infra_grade
from ..packs.vectors import Vector

log = logging.getLogger(__name__)

DEFAULT_LIMITS = Limits()
INFRA_ATTEMPTS = 6  # backoff 0.5 + 1 + 2 + 4 + 8 s: rides out an engine restart


@dataclass(frozen=True)
class SandboxHandle:
    sandbox: Sandbox
    image_id: str
    image_tag: str


class GradingEngine:
    """Where gradings run: this machine's Docker engine (:class:`LocalEngine`) or a cluster.

    ``grade`` takes candidates of one problem and returns one (grade, infra notes) per candidate,
    exactly as :func:`grade_batch` does; an engine retries its own infrastructure failures and
    never the candidates' behaviour. ``slots`` is how many ``grade`` calls may be in flight at
    once (the eval pipeline runs that many grading workers: no more jobs are in flight than the
    engine has room for).
    """

    name = "local"
    image_id: str
    image_tag: str
    slots: int = 1

    def grade(self, problem: Problem, items: list[tuple[str, str]], hidden: tuple[Vector, ...],
              limits: Limits, stop: threading.Event | None = None) -> list[tuple[Grade, list[str]]]:
        raise NotImplementedError

    def sweep(self) -> int:
        """Remove this run's containers (after an interrupt); how many were removed."""
        return 0

    def describe(self) -> dict[str, Any]:
        """What the run manifest records about where the gradings run."""
        return {"name": self.name, "slots": self.slots}

    def close(self) -> None:
        """Release what the engine holds (connections, a cluster session)."""


class LocalEngine(GradingEngine):
    """Gradings in containers of the local Docker engine, ``slots`` at a time."""

    name = "local"

    def __init__(self, handle: SandboxHandle, slots: int = 1) -> None:
        self.handle = handle
        self.image_id = handle.image_id
        self.image_tag = handle.image_tag
        self.slots = max(1, slots)

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "slots": self.slots, "runtime": self.handle.sandbox.runtime or "default"}

    def grade(self, problem: Problem, items: list[tuple[str, str]], hidden: tuple[Vector, ...],
              limits: Limits, stop: threading.Event | None = None) -> list[tuple[Grade, list[str]]]:
        return grade_batch(self.handle, problem, items, hidden, limits, stop)

    def sweep(self) -> int:
        return self.handle.sandbox.sweep()


def open_sandbox(run_id: str | None = None, runtime: str | None = None) -> SandboxHandle:
    """A sandbox on the current image, under ``runtime`` (``runc``, ``runsc`` for gVisor; None: the
    engine's default, or $PERFGRADE_DOCKER_RUNTIME). Raises EngineUnavailable, ImageMissing or
    RuntimeNotRegistered with a hint."""
    import os

    from sandbox.runtimes import require_runtime

    client = connect()
    st = resolve(client)
    assert st.tag is not None and st.image_id is not None
    runtime = runtime or os.environ.get("PERFGRADE_DOCKER_RUNTIME") or None
    if runtime:
        require_runtime(client, runtime)  # a clear error now rather than at the first container
    sandbox = Sandbox(st.tag, run_id=run_id, client=client, runtime=runtime)
    return SandboxHandle(sandbox, st.image_id, st.tag)


MEMORY_SHARE = 0.5  # at most this share of the host's memory is promised to sandbox containers


def host_memory_mb() -> int | None:
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    return int(line.split()[1]) // 1024
    except (OSError, ValueError):
        pass
    return None


def safe_workers(requested: int, memory_mb: int, host_mb: int | None = None) -> tuple[int, str | None]:
    """Cap parallel containers so that their memory limits together fit in half the host.

    Each container may use up to ``memory_mb`` (RAM = RAM + swap, tmpfs included), so the sum of
    the limits of the containers that can run at once bounds what sandboxed code can take.
    Returns (workers, a note when the request was lowered).
    """
    host_mb = host_mb if host_mb is not None else host_memory_mb()
    if not host_mb:
        return requested, None
    cap = max(1, int(host_mb * MEMORY_SHARE) // max(1, memory_mb))
    if requested <= cap:
        return requested, None
    return cap, (f"grading workers lowered from {requested} to {cap}: {cap} containers x {memory_mb} MB "
                 f"is what fits in {MEMORY_SHARE:.0%} of this host's {host_mb} MB")


def problem_limits(problem: Problem, base: Limits = DEFAULT_LIMITS) -> Limits:
    return problem.sandbox_limits(base)


def make_job(job_id: str, problem: Problem, source: str, vectors: tuple[Vector, ...]) -> Job:
    return Job(
        id=job_id,
        source=source,
        entry_point=problem.entry_point,
        cases=[Case(id=v.id, args=v.args) for v in vectors],
    )


def run_with_retries(
    fn: Callable[[], ExecResult | list[ExecResult]],
    attempts: int = INFRA_ATTEMPTS,
    stop: threading.Event | None = None,
) -> tuple[ExecResult | list[ExecResult] | None, list[str]]:
    """Call fn, retrying InfrastructureError with capped exponential backoff.

    Returns (result or None, notes on each failed attempt). Never retries the candidate's own
    behaviour (that is a result, not an exception). Gives up at once when ``stop`` is set.
    """
    notes: list[str] = []
    for attempt in range(1, attempts + 1):
        try:
            return fn(), notes
        except InfrastructureError as exc:
            notes.append(f"attempt {attempt}: {exc}")
            log.warning("sandbox infrastructure error (attempt %d/%d): %s", attempt, attempts, exc)
            if attempt < attempts:
                delay = min(8.0, 0.5 * 2 ** (attempt - 1))
                if stop is not None:
                    if stop.wait(delay):
                        break
                else:
                    time.sleep(delay)
    return None, notes


def grade_source(
    handle: SandboxHandle,
    problem: Problem,
    source: str,
    hidden: tuple[Vector, ...],
    limits: Limits | None = None,
    job_id: str = "sample",
    stop: threading.Event | None = None,
) -> tuple[Grade, list[str]]:
    """Run one candidate on the hidden vectors in a fresh container and score it."""
    return grade_batch(handle, problem, [(job_id, source)], hidden, limits, stop)[0]


def grade_batch(
    handle: SandboxHandle,
    problem: Problem,
    items: list[tuple[str, str]],
    hidden: tuple[Vector, ...],
    limits: Limits | None = None,
    stop: threading.Event | None = None,
) -> list[tuple[Grade, list[str]]]:
    """Grade several candidates of one problem in one container (batch mode).

    ``items`` are (job id, source). Each candidate runs in its own fresh process; the verdicts are
    the ones per-sample mode gives (see Sandbox.run_many). Infrastructure errors are retried;
    the candidates' own behaviour never is.
    """
    limits = limits or problem_limits(problem)
    jobs = [make_job(job_id, problem, source, hidden) for job_id, source in items]
    results, notes = run_with_retries(lambda: handle.sandbox.run_many(jobs, limits), stop=stop)
    if results is None:
        g = infra_grade("; ".join(notes[-2:]) or "sandbox unavailable", len(hidden))
        return [(g, notes) for _ in items]
    assert isinstance(results, list)
    return [(grade_for(r, hidden, problem), notes) for r in results]
