"""Run directories: an immutable manifest and an append-only, fsynced journal.

::

    runs/<run-id>/manifest.json   what was run: grader, pack and image hashes, model, limits, host
    runs/<run-id>/journal.jsonl   one JSON record per line: completions, grades, events
    runs/<run-id>/.lock           held (flock) while a process works on the run

Every statistic is derived from these two files; nothing else is stored. A sample is identified
by (problem, mode, item, sample): ``mode`` is ``code`` (the model writes the function; ``item`` is
empty) or ``qa`` (the model answers one instance, ``item``, directly). A sample has one or more
revision ``round``s, each with one completion and, per ``regrade``, one grade; a ``feedback``
record holds what the model was told between two rounds. Records written before Q&A and rounds
existed (format 1) carry the regrade index in ``round``; :func:`record_key` reads both.

A record is written
with a single ``write`` of one line followed by ``fsync``, so a process killed at any moment
leaves at most one torn last line, which the reader drops (and the writer truncates before
appending again). A sample's grade is final once its record is in the journal: a resumed run
grades exactly the samples that have none.
"""

from __future__ import annotations

import fcntl
import json
import os
import platform
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from .. import __version__
from ..errors import RunDirError

MANIFEST = "manifest.json"
JOURNAL = "journal.jsonl"
LOCK = ".lock"
RUN_FORMAT = 2

SampleKey = tuple[str, str, str, int]  # (problem, mode, item, sample)


def sample_key(rec: dict[str, Any]) -> SampleKey:
    return (rec["problem"], rec.get("mode", "code"), rec.get("item", ""), rec["sample"])


def record_key(rec: dict[str, Any]) -> tuple:
    """The identity of a completion, feedback or grade record.

    completion / feedback: (problem, mode, item, sample, round); grade: the same plus regrade.
    """
    sk = sample_key(rec)
    if rec.get("type") == "grade":
        if "regrade" in rec:
            return sk + (rec.get("round", 0), rec["regrade"])
        return sk + (0, rec.get("round", 0))  # format 1: round was the regrade index
    return sk + (rec.get("round", 0),)


class ProblemEntry(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    id: str
    family: str
    difficulty: str
    title: str
    content_hash: str
    vectors_digest: str
    n_hidden: int
    tier: str = "guided"
    qa_items: list[str] = Field(default_factory=list)  # ids of the Q&A items asked (mode qa)


class RunManifest(BaseModel):
    """What a run is: enough to reproduce it and to refuse mixing it with anything else."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    format: int = RUN_FORMAT
    run_id: str
    created: str
    grader_version: str = __version__
    git_commit: str | None = None
    command: list[str] = Field(default_factory=list)
    source: str  # "model", "completions", "demo"
    model: str
    base_url: str | None = None
    generation: dict[str, Any] = Field(default_factory=dict)
    completions_file: str | None = None
    samples: int
    k_values: list[int]
    regrade: int = 0
    pack: dict[str, Any]  # {name: {version, hash}}
    problems: list[ProblemEntry]
    image: dict[str, Any] = Field(default_factory=dict)  # {id, tag}
    limits: dict[str, Any] = Field(default_factory=dict)
    exec_mode: str = "per-sample"
    host: dict[str, Any] = Field(default_factory=dict)
    notes: list[str] = Field(default_factory=list)
    # where the gradings ran: {name: local|ray, slots, ...; for ray the address and nodes}; {} in older runs
    engine: dict[str, Any] = Field(default_factory=dict)
    modes: list[str] = Field(default_factory=lambda: ["code"])  # code, qa or both
    rounds: int = 1  # revision rounds per sample
    feedback: str = "none"  # between rounds: none | examples
    revise_all: bool = False  # revise passing samples too
    # the seed the hidden vectors and Q&A items were drawn from; None: the release's (every run
    # written before instance seeds existed)
    instance_seed: int | None = Field(None, ge=0)


def git_commit() -> str | None:
    root = Path(__file__).resolve().parents[2]
    if not (root / ".git").exists():
        return None
    try:
        out = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5)
        if out.returncode != 0:
            return None
        commit = out.stdout.strip()
        dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=5)
        return commit + ("+dirty" if dirty.stdout.strip() else "")
    except (OSError, subprocess.SubprocessError):
        return None


def host_facts() -> dict[str, Any]:
    facts: dict[str, Any] = {
        "hostname": socket.gethostname(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
    }
    try:
        pages = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        facts["memory_gib"] = round(pages / 2**30, 1)
    except (ValueError, OSError, AttributeError):
        pass
    return facts


def now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def new_run_id(model: str) -> str:
    slug = "".join(ch if ch.isalnum() or ch in "-." else "-" for ch in model.split("/")[-1])[:32].strip("-")
    return f"{time.strftime('%Y%m%d-%H%M%S')}-{slug or 'run'}-{os.urandom(2).hex()}"


# ------------------------------------------------------------------------------------------
# journal
# ------------------------------------------------------------------------------------------

def _truncate_torn_tail(path: Path) -> int:
    """Drop a partial last line left by a killed writer. Returns bytes removed."""
    if not path.exists():
        return 0
    size = path.stat().st_size
    if size == 0:
        return 0
    with path.open("rb+") as f:
        f.seek(max(0, size - 1))
        if f.read(1) == b"\n":
            return 0
        # find the last newline
        pos = size
        chunk = 65536
        while pos > 0:
            start = max(0, pos - chunk)
            f.seek(start)
            data = f.read(pos - start)
            nl = data.rfind(b"\n")
            if nl >= 0:
                keep = start + nl + 1
                f.truncate(keep)
                return size - keep
            pos = start
        f.truncate(0)
        return size


class Journal:
    """Append-only JSON lines with fsync after every record; thread-safe for one process."""

    def __init__(self, path: Path) -> None:
        import threading

        self.path = path
        self._lock = threading.Lock()
        self._fd: int | None = None

    def open_for_append(self) -> None:
        _truncate_torn_tail(self.path)
        self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def append(self, record: dict[str, Any]) -> None:
        if self._fd is None:
            raise RuntimeError("journal is not open for appending")
        line = (json.dumps(record, separators=(",", ":"), ensure_ascii=True, allow_nan=False) + "\n").encode()
        with self._lock:
            view = memoryview(line)
            while view:
                n = os.write(self._fd, view)
                view = view[n:]
            os.fsync(self._fd)

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def records(self) -> Iterator[dict[str, Any]]:
        """Every complete record, streamed (a torn last line is skipped)."""
        if not self.path.exists():
            return
        with self.path.open("rb") as f:
            for n, raw in enumerate(f, 1):
                if not raw.endswith(b"\n"):
                    return  # torn tail of a killed writer
                try:
                    rec = json.loads(raw)
                except ValueError:
                    raise RunDirError(f"{self.path}: line {n} is not valid JSON (the journal is damaged)") from None
                if not isinstance(rec, dict) or "type" not in rec:
                    raise RunDirError(f"{self.path}: line {n} is not a journal record")
                yield rec


# ------------------------------------------------------------------------------------------
# run directory
# ------------------------------------------------------------------------------------------

@dataclass
class RunState:
    """What the journal says is done (keys only: the records themselves stay on disk)."""

    completions: set[tuple] = field(default_factory=set)  # record_key of completions
    feedback: set[tuple] = field(default_factory=set)  # record_key of feedback records
    final_grades: set[tuple] = field(default_factory=set)  # record_key of grades
    infra_grades: set[tuple] = field(default_factory=set)
    duplicates: int = 0


class RunDir:
    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.journal = Journal(self.path / JOURNAL)
        self._lock_fd: int | None = None

    # -- creation and opening --------------------------------------------------------------
    @classmethod
    def create(cls, parent: Path, manifest: RunManifest) -> "RunDir":
        path = Path(parent) / manifest.run_id
        try:
            path.mkdir(parents=True, exist_ok=False)
        except FileExistsError:
            raise RunDirError(f"{path} already exists") from None
        run = cls(path)
        tmp = path / (MANIFEST + ".tmp")
        tmp.write_text(manifest.model_dump_json(indent=2) + "\n")
        os.replace(tmp, path / MANIFEST)
        (path / JOURNAL).touch()
        return run

    @classmethod
    def open(cls, path: Path) -> "RunDir":
        path = Path(path)
        if not path.is_dir():
            raise RunDirError(f"{path}: no such run directory")
        if not (path / MANIFEST).is_file() or not (path / JOURNAL).is_file():
            raise RunDirError(f"{path} is not a run directory (expected {MANIFEST} and {JOURNAL})")
        run = cls(path)
        run.manifest  # validate now
        return run

    @property
    def manifest(self) -> RunManifest:
        try:
            return RunManifest.model_validate_json((self.path / MANIFEST).read_text())
        except (OSError, ValueError, ValidationError) as exc:
            first = exc.errors()[0] if isinstance(exc, ValidationError) else None
            where = f" (field {'.'.join(map(str, first['loc']))}: {first['msg']})" if first else ""
            raise RunDirError(f"{self.path / MANIFEST}: not a valid run manifest{where}") from None

    def lock(self) -> None:
        fd = os.open(self.path / LOCK, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise RunDirError(f"{self.path} is in use by another grader process") from None
        self._lock_fd = fd
        self.journal.open_for_append()

    def unlock(self) -> None:
        self.journal.close()
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None

    # -- state -----------------------------------------------------------------------------
    def final_grades(self) -> tuple[dict[tuple, dict[str, Any]], int]:
        """The grade record that counts for each grade key (see :func:`record_key`), and how many
        real verdicts were written more than once (zero in a healthy run).

        A later attempt supersedes an infrastructure error; a real verdict is never replaced.
        """
        final: dict[tuple[str, int, int], dict[str, Any]] = {}
        duplicates = 0
        for rec in self.journal.records():
            if rec.get("type") != "grade":
                continue
            key = record_key(rec)
            prev = final.get(key)
            if prev is None or _is_infra(prev):
                final[key] = rec
            elif not _is_infra(rec):
                duplicates += 1
        return final, duplicates

    def state(self) -> RunState:
        st = RunState()
        for rec in self.journal.records():
            if rec.get("type") == "completion":
                st.completions.add(record_key(rec))
            elif rec.get("type") == "feedback":
                st.feedback.add(record_key(rec))
        final, st.duplicates = self.final_grades()
        for key, rec in final.items():
            (st.infra_grades if _is_infra(rec) else st.final_grades).add(key)
        return st


def _is_infra(rec: dict[str, Any]) -> bool:
    return rec.get("grade", {}).get("verdict") == "infra_error"
