"""Completions produced elsewhere: a JSON Lines file of {"problem", "sample", "text"} records.

Optional keys: ``mode`` (``code``, the default, or ``qa``), ``item`` (the Q&A item id, e.g.
``q0`` or ``c0.1``; required in Q&A mode) and ``round`` (the revision round, default 0). Any other
key is kept as metadata of the completion.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from ..errors import CompletionsFileError, ProblemNotFound
from .evaluate import FileCompletion
from ..packs.problems import Catalog

MAX_LINE_BYTES = 16 * 1024 * 1024


def file_digest(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


CompletionKey = tuple[str, str, str, int, int]  # (problem, mode, item, sample, round)


def load_completions(path: Path, catalog: Catalog, pack: str | None = None) -> dict[CompletionKey, FileCompletion]:
    """Parse the file strictly; one clear error naming the file and line for anything wrong."""
    path = Path(path)
    if not path.is_file():
        raise CompletionsFileError(f"{path}: no such completions file")
    out: dict[CompletionKey, FileCompletion] = {}
    with path.open("rb") as f:
        for n, raw in enumerate(f, 1):
            where = f"{path}:{n}"
            if len(raw) > MAX_LINE_BYTES:
                raise CompletionsFileError(f"{where}: line longer than {MAX_LINE_BYTES} bytes")
            if not raw.strip():
                continue
            try:
                rec = json.loads(raw.decode("utf-8"))
            except UnicodeDecodeError:
                raise CompletionsFileError(f"{where}: not UTF-8 text (binary data?)") from None
            except ValueError as exc:
                raise CompletionsFileError(f"{where}: not valid JSON ({str(exc)[:80]})") from None
            if not isinstance(rec, dict):
                raise CompletionsFileError(f"{where}: expected a JSON object with problem, sample and text")
            for key, typ in (("problem", str), ("sample", int), ("text", str)):
                if key not in rec:
                    raise CompletionsFileError(f"{where}: missing field {key!r}")
                if not isinstance(rec[key], typ) or (typ is int and isinstance(rec[key], bool)):
                    raise CompletionsFileError(f"{where}: field {key!r} must be {typ.__name__}")
            if rec["sample"] < 0:
                raise CompletionsFileError(f"{where}: sample must be >= 0")
            mode = rec.get("mode", "code")
            if mode not in ("code", "qa"):
                raise CompletionsFileError(f"{where}: field 'mode' must be \"code\" or \"qa\"")
            item = rec.get("item", "")
            if not isinstance(item, str) or (mode == "qa" and not item) or (mode == "code" and item):
                raise CompletionsFileError(f"{where}: field 'item' names the Q&A item (mode qa only)")
            rnd = rec.get("round", 0)
            if not isinstance(rnd, int) or isinstance(rnd, bool) or rnd < 0:
                raise CompletionsFileError(f"{where}: field 'round' must be an integer >= 0")
            ident = rec["problem"]
            if pack and "/" not in ident:
                ident = f"{pack}/{ident}"
            try:
                problem = catalog.find(ident)
            except ProblemNotFound as exc:
                raise CompletionsFileError(f"{where}: {exc}") from None
            key = (problem.qualified_id, mode, item, rec["sample"], rnd)
            if key in out:
                what = f"{key[0]}{' item ' + item if item else ''} sample {key[3]}" + (f" round {rnd}" if rnd else "")
                raise CompletionsFileError(f"{where}: a second completion for {what}")
            meta = {k: v for k, v in rec.items() if k not in ("problem", "sample", "text", "mode", "item", "round")}
            out[key] = FileCompletion(text=rec["text"], meta=meta)
    if not out:
        raise CompletionsFileError(f"{path}: no completions in the file")
    return out
