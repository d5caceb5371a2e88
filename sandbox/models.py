"""Typed records of the sandbox: what goes in (a job and its limits) and what comes out.

The sandbox knows nothing of problems, expected values or scores. A job is source text, an entry
point and a list of argument lists; a result is what the candidate returned for each of them, or
what stopped it.
"""

from __future__ import annotations

import math
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

StopReason = Literal[
    "cpu_time",  # the per-phase CPU budget ran out (in-container supervisor)
    "wall_time",  # the per-phase wall budget or the host backstop ran out
    "memory",  # the kernel recorded the memory limit reached (or the OOM killer) during the job
    "output",  # the candidate's stdout/stderr, or the channel, exceeded its cap
    "exit",  # the worker process exited before answering every case
    "signal",  # the worker process was killed by a signal (segfault, abort, ...)
    "protocol",  # the channel broke its protocol (a tampering candidate)
    "harness",  # the supervisor died or ended without its final record
]

LoadErrorKind = Literal["syntax", "import", "exception", "missing_entry", "not_callable"]


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


# At most this share of a wall budget's elapsed time is left out as the time the container's threads
# waited for a CPU (a sum over threads overstates it when many queue at once; the kernel's bandwidth
# control counts a throttled thread as waiting). The supervisor applies the same share to the
# host's figure under gVisor (sandbox/harness/pg_harness.py keeps its own copy: it imports nothing).
HOST_WAIT_SHARE = 2 / 3


class Limits(_Frozen):
    """Resource limits of one sandbox run.

    CPU budgets decide timeouts (they do not depend on how busy the machine is); wall budgets are a
    generous backstop for code that sleeps or waits.
    """

    case_cpu_s: float = Field(2.0, gt=0, le=600, description="CPU seconds per case")
    load_cpu_s: float = Field(10.0, gt=0, le=600, description="CPU seconds to load the module")
    wall_factor: float = Field(3.0, ge=1, le=100, description="wall budget = factor x CPU + slack")
    wall_slack_s: float = Field(1.0, ge=0, le=600)
    memory_mb: int = Field(512, ge=32, le=65536, description="memory limit (RAM = RAM+swap)")
    pids: int = Field(64, ge=8, le=4096, description="processes and threads in the container")
    cpus: float = Field(1.0, gt=0, le=64, description="CPU share of the container")
    output_bytes: int = Field(1 << 20, ge=1024, description="cap on the candidate's stdout+stderr")
    value_bytes: int = Field(256 << 10, ge=1024, description="cap on one returned value, as JSON")
    max_depth: int = Field(32, ge=2, le=200, description="nesting depth of a returned value")
    max_nodes: int = Field(200_000, ge=10)
    scratch_mb: int = Field(16, ge=1, le=4096, description="size of the writable /scratch tmpfs")
    nofile: int = Field(256, ge=16, le=65536)
    fsize_mb: int = Field(16, ge=1, le=4096, description="largest file the candidate may write")
    startup_s: float = Field(20.0, gt=0, description="host backstop allowance for container start")

    @property
    def case_wall_s(self) -> float:
        return self.case_cpu_s * self.wall_factor + self.wall_slack_s

    @property
    def load_wall_s(self) -> float:
        return self.load_cpu_s * self.wall_factor + self.wall_slack_s

    def backstop_s(self, n_cases: int, n_jobs: int = 1) -> float:
        """Host-side wall-clock limit for a whole container, not counting the time its threads
        waited for a CPU (up to ``HOST_WAIT_SHARE`` of the time elapsed; see
        :meth:`backstop_ceiling_s`)."""
        per_job = self.load_wall_s + n_cases * self.case_wall_s + 2.0
        return self.startup_s + per_job * max(1, n_jobs)

    def backstop_ceiling_s(self, n_cases: int, n_jobs: int = 1) -> float:
        """The longest the host lets a container run, however long it waited for a CPU: the
        backstop when at most ``HOST_WAIT_SHARE`` of the elapsed time is left out as wait."""
        return self.backstop_s(n_cases, n_jobs) / (1.0 - HOST_WAIT_SHARE)

    def harness_limits(self) -> dict[str, Any]:
        return {
            "load_cpu_s": self.load_cpu_s,
            "case_cpu_s": self.case_cpu_s,
            "load_wall_s": self.load_wall_s,
            "case_wall_s": self.case_wall_s,
            "output_bytes": self.output_bytes,
            "value_bytes": self.value_bytes,
            "max_depth": self.max_depth,
            "max_nodes": self.max_nodes,
        }


class Case(_Frozen):
    id: str = Field(min_length=1, max_length=64)
    args: list[Any]


class Job(_Frozen):
    """One candidate and the inputs to call it on."""

    id: str = Field("job", min_length=1, max_length=64)
    source: str
    entry_point: str = Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    cases: list[Case]

    @model_validator(mode="after")
    def _unique_ids(self) -> "Job":
        ids = [c.id for c in self.cases]
        if len(set(ids)) != len(ids):
            raise ValueError("case ids must be unique")
        return self


class ErrorInfo(_Frozen):
    type: str
    message: str = ""
    traceback: str = ""


class LoadResult(_Frozen):
    ok: bool
    kind: LoadErrorKind | None = None
    error: ErrorInfo | None = None
    cpu_s: float = 0.0
    wall_s: float = 0.0


class CaseResult(_Frozen):
    id: str
    ok: bool
    value: Any = None
    error: ErrorInfo | None = None
    cpu_s: float = 0.0
    wall_s: float = 0.0


class StopInfo(_Frozen):
    reason: StopReason
    phase: Literal["load", "case", "done", "container"]
    case: str | None = None
    detail: str = ""
    exit_code: int | None = None
    signal: int | None = None
    by_host: bool = False  # decided on the host (backstop, channel cap, container death)


class ContainerInfo(_Frozen):
    exit_code: int | None = None
    oom_killed: bool = False
    host_wall_s: float = 0.0
    channel_bytes: int = 0
    stderr_bytes: int = 0
    stderr_tail: str = ""
    runtime: str = "default"  # the OCI runtime asked for ("runsc" = gVisor; "default" = the engine's)
    host_cgroup: bool = False  # the host read the container's memory cgroup (memory verdicts)


class ExecResult(_Frozen):
    """Everything one candidate did in one sandbox run. Never an exception."""

    job: str
    load: LoadResult | None = None
    cases: list[CaseResult] = Field(default_factory=list)
    stop: StopInfo | None = None
    output_bytes: int = 0
    output_head: str = ""
    output_tail: str = ""
    max_rss_kb: int | None = None
    cpu_s: float = 0.0
    wall_s: float = 0.0
    container: ContainerInfo = Field(default_factory=ContainerInfo)

    @property
    def completed(self) -> bool:
        """The module loaded and every case has a record (value or exception)."""
        return self.load is not None and self.load.ok and self.stop is None

    def values(self) -> dict[str, Any]:
        return {c.id: c.value for c in self.cases if c.ok}


def finite_json(value: Any) -> bool:
    """True when every float inside value is finite."""
    stack = [value]
    while stack:
        v = stack.pop()
        if type(v) is float:
            if not math.isfinite(v):
                return False
        elif type(v) is list:
            stack.extend(v)
        elif type(v) is dict:
            stack.extend(v.values())
    return True
