"""Strict parsing of the channel: the JSON lines a sandbox container writes to its stdout.

Everything that comes out of a container is untrusted. The parser refuses what ``json.loads``
would silently accept: ``NaN`` and ``Infinity`` tokens, numbers that overflow to infinity
(``1e999``), duplicate keys (``json`` keeps the last), nesting deeper than a bound, over-long
lines and integers with absurdly many digits. It never uses pickle or eval.

:class:`ChannelAssembler` turns the record stream of one request into :class:`ExecResult` values
and enforces the protocol: one ``start`` per job, one ``load``, case records for exactly the
expected ids in order, no duplicates, nothing after ``end``; ``sync`` records only between jobs
(once per position), ``retire`` only between two jobs.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import math
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from .models import CaseResult, ErrorInfo, ExecResult, Job, LoadResult, StopInfo

MAX_LINE_BYTES = 4 * 1024 * 1024
MAX_DEPTH = 64


class ChannelError(ValueError):
    """A record that is not strict, bounded JSON, or that breaks the protocol."""


def _reject_constant(name: str) -> Any:
    raise ChannelError(f"non-finite number {name} in record")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ChannelError(f"number {text[:20]} overflows to infinity")
    return value


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise ChannelError(f"duplicate key {key[:40]!r} in record")
        out[key] = value
    return out


def _depth(value: Any) -> int:
    deepest = 0
    stack = [(value, 1)]
    while stack:
        v, d = stack.pop()
        if d > deepest:
            deepest = d
        if type(v) is list:
            stack.extend((x, d + 1) for x in v)
        elif type(v) is dict:
            stack.extend((x, d + 1) for x in v.values())
    return deepest


def parse_strict(data: bytes | str, *, max_bytes: int = MAX_LINE_BYTES, max_depth: int = MAX_DEPTH) -> Any:
    """Parse one JSON document strictly, or raise ChannelError."""
    if len(data) > max_bytes:
        raise ChannelError(f"record of {len(data)} bytes exceeds the {max_bytes}-byte cap")
    try:
        text = data.decode("utf-8") if isinstance(data, bytes) else data
        value = json.loads(
            text,
            parse_constant=_reject_constant,
            parse_float=_finite_float,
            object_pairs_hook=_no_duplicates,
        )
    except ChannelError:
        raise
    except RecursionError:
        raise ChannelError("record is nested too deeply") from None
    except (ValueError, UnicodeDecodeError) as exc:  # includes JSONDecodeError, huge ints
        raise ChannelError(f"record is not valid JSON: {str(exc)[:200]}") from None
    if _depth(value) > max_depth:
        raise ChannelError(f"record is nested deeper than {max_depth}")
    return value


@dataclass
class _JobState:
    job: Job
    started: bool = False
    load: LoadResult | None = None
    cases: list[CaseResult] = field(default_factory=list)
    stop: StopInfo | None = None
    end: dict[str, Any] | None = None


BOUNDARY_RECORDS = ("start", "sync", "retire", "end")


def record_mac(key: bytes, rec: dict[str, Any]) -> str:
    """The MAC the supervisor puts on a boundary record (as pg_harness.record_mac)."""
    msg = f"{rec.get('t')}\0{rec.get('job', '')}\0{rec.get('n', '')}".encode()
    return hmac.new(key, msg, hashlib.sha256).hexdigest()[:32]


class ChannelAssembler:
    """Consumes channel lines for a request of one or more jobs and builds their results.

    With a ``key``, the records that move the stream from one job to the next (start, sync,
    retire, end) must carry the supervisor's MAC: a candidate can open the container's stdout and
    write records, but it never holds the key (batch workers are fresh interpreters), so it can
    claim answers for its own job only and never open a batch mate's. An unauthenticated
    boundary record is a protocol violation of the job in progress, if any; one that comes after
    a forged end of the job (nothing in progress) leaves the jobs that had not started to run
    again in a fresh container.
    """

    def __init__(self, jobs: list[Job], key: bytes | None = None) -> None:
        self.jobs = jobs
        self.key = key
        self._states = [_JobState(j) for j in jobs]
        self._current = 0
        self.ended = False
        self.fatal: str | None = None
        self.protocol_error: str | None = None
        self.retired: str | None = None  # the harness gave up the container between two jobs
        self.pending_syncs: list[int] = []  # sync points the host has yet to answer
        self._synced: set[int] = set()

    # -- feeding ---------------------------------------------------------------------------
    def feed_line(self, line: bytes) -> None:
        """Parse and apply one line. A protocol violation is recorded, never raised."""
        if self.protocol_error is not None:
            return
        try:
            rec = parse_strict(line)
            self._apply(rec)
        except ChannelError as exc:
            self.protocol_error = str(exc)
        except ValidationError as exc:
            self.protocol_error = f"malformed record: {exc.errors()[0].get('msg', 'invalid')}"[:300]

    def _state(self, rec: dict[str, Any]) -> _JobState:
        if self._current >= len(self._states):
            raise ChannelError("record after the last job")
        st = self._states[self._current]
        if rec.get("job") != st.job.id:
            raise ChannelError(f"record for job {str(rec.get('job'))[:40]!r}, expected {st.job.id!r}")
        return st

    def _apply(self, rec: Any) -> None:
        if type(rec) is not dict:
            raise ChannelError("record is not an object")
        if self.ended:
            raise ChannelError("record after the end record")
        kind = rec.get("t")
        if self.key is not None and kind in BOUNDARY_RECORDS:
            mac = rec.get("mac")
            if type(mac) is not str or not hmac.compare_digest(mac, record_mac(self.key, rec)):
                raise ChannelError(f"unauthenticated {kind} record")
        if kind == "end":
            if self._current != len(self._states):
                raise ChannelError("end record before every job finished")
            self.ended = True
            return
        if kind == "fatal":
            self.fatal = str(rec.get("detail", ""))[:500]
            return
        if kind == "sync":
            n = rec.get("n")
            between = self._current >= len(self._states) or not self._states[self._current].started
            if type(n) is not int or n != self._current or n in self._synced or not between:
                raise ChannelError("sync record out of place")
            self._synced.add(n)
            self.pending_syncs.append(n)
            return
        if kind == "retire":
            between = self._current < len(self._states) and not self._states[self._current].started
            if self._current == 0 or not between:
                raise ChannelError("retire record out of place")
            self.retired = str(rec.get("detail", ""))[:500] or "the harness retired the container"
            self.ended = True
            return
        st = self._state(rec)
        if kind == "start":
            if st.started:
                raise ChannelError("duplicate start record")
            st.started = True
        elif kind == "load":
            if not st.started or st.load is not None:
                raise ChannelError("unexpected load record")
            st.load = LoadResult(
                ok=rec.get("ok") is True,
                kind=None if rec.get("ok") is True else rec.get("kind"),
                error=_error(rec.get("error")) if rec.get("ok") is not True else None,
                cpu_s=_num(rec.get("cpu_s")),
                wall_s=_num(rec.get("wall_s")),
            )
        elif kind == "case":
            if st.load is None or not st.load.ok or st.stop is not None:
                raise ChannelError("case record without a successful load")
            n = len(st.cases)
            if n >= len(st.job.cases):
                raise ChannelError("more case records than cases")
            cid = rec.get("id")
            expected = st.job.cases[n].id
            if cid != expected:
                seen = {c.id for c in st.cases}
                what = "duplicate" if cid in seen else "unexpected"
                raise ChannelError(f"{what} case id {str(cid)[:40]!r} where {expected!r} was due")
            ok = rec.get("ok") is True
            if ok and "value" not in rec:
                raise ChannelError("case record without a value")
            st.cases.append(
                CaseResult(
                    id=cid,
                    ok=ok,
                    value=rec.get("value") if ok else None,
                    error=None if ok else _error(rec.get("error")),
                    cpu_s=_num(rec.get("cpu_s")),
                    wall_s=_num(rec.get("wall_s")),
                )
            )
        elif kind == "stop":
            if st.stop is not None:
                raise ChannelError("duplicate stop record")
            st.stop = StopInfo(
                reason=rec.get("reason"),
                phase=rec.get("phase") if rec.get("phase") in ("load", "case", "done") else "case",
                case=rec.get("case") if isinstance(rec.get("case"), str) else None,
                detail=str(rec.get("detail", ""))[:500],
                exit_code=rec.get("exit_code") if type(rec.get("exit_code")) is int else None,
                signal=rec.get("signal") if type(rec.get("signal")) is int else None,
            )
        elif kind == "job_end":
            if not st.started or st.end is not None:
                raise ChannelError("unexpected job_end record")
            complete = st.stop is not None or (
                st.load is not None and (not st.load.ok or len(st.cases) == len(st.job.cases))
            )
            if not complete:
                raise ChannelError("job_end before every case was answered")
            st.end = rec
            self._current += 1
        else:
            raise ChannelError(f"unknown record type {str(kind)[:40]!r}")

    def current_index(self) -> int | None:
        """Index of the job the channel is in the middle of (started, not ended), or None."""
        if self._current < len(self._states) and self._states[self._current].started:
            return self._current
        return None

    def started(self) -> set[str]:
        """Ids of the jobs the harness started (a later job never ran if the container died)."""
        return {st.job.id for st in self._states if st.started}

    # -- results ---------------------------------------------------------------------------
    def results(self, container_stop: StopInfo | None = None) -> list[ExecResult]:
        """Results for every job. Jobs the channel did not finish get a stop reason."""
        out = []
        for i, st in enumerate(self._states):
            stop = st.stop
            if st.end is None and stop is None:
                if self.protocol_error is not None and i == self._current:
                    stop = StopInfo(reason="protocol", phase=_phase(st), case=_pending(st),
                                    detail=self.protocol_error, by_host=True)
                elif container_stop is not None:
                    stop = container_stop.model_copy(update={"phase": _phase(st), "case": _pending(st)})
                else:
                    detail = self.fatal or "the harness ended without reporting this job"
                    stop = StopInfo(reason="harness", phase=_phase(st), case=_pending(st),
                                    detail=detail, by_host=True)
            elif self.protocol_error is not None and i == self._current and st.end is None:
                stop = StopInfo(reason="protocol", phase=_phase(st), case=_pending(st),
                                detail=self.protocol_error, by_host=True)
            end = st.end or {}
            out.append(
                ExecResult(
                    job=st.job.id,
                    load=st.load,
                    cases=st.cases,
                    stop=stop,
                    output_bytes=_int(end.get("output_bytes")),
                    output_head=_str(end.get("output_head")),
                    output_tail=_str(end.get("output_tail")),
                    max_rss_kb=end.get("max_rss_kb") if type(end.get("max_rss_kb")) is int else None,
                    cpu_s=_num(end.get("cpu_s")),
                    wall_s=_num(end.get("wall_s")),
                )
            )
        return out


def _phase(st: _JobState) -> str:
    if st.load is None:
        return "load"
    if not st.load.ok or len(st.cases) >= len(st.job.cases):
        return "done"
    return "case"


def _pending(st: _JobState) -> str | None:
    if st.load is not None and st.load.ok and len(st.cases) < len(st.job.cases):
        return st.job.cases[len(st.cases)].id
    return None


def _error(obj: Any) -> ErrorInfo:
    if type(obj) is not dict:
        return ErrorInfo(type="UnknownError", message="the harness sent no error details")
    return ErrorInfo(
        type=_str(obj.get("type"), 200) or "UnknownError",
        message=_str(obj.get("message"), 4000),
        traceback=_str(obj.get("traceback"), 12000),
    )


def _num(v: Any) -> float:
    return float(v) if type(v) in (int, float) else 0.0


def _int(v: Any) -> int:
    return v if type(v) is int else 0


def _str(v: Any, cap: int = 10000) -> str:
    return v[:cap] if type(v) is str else ""
