"""Take the code out of a completion.

Code is taken from fenced blocks (any language tag, an unclosed last fence included) or, when
there are none, from the raw text if it is Python. Among several blocks, the one that defines the
entry point wins (the last such block: models revise themselves). Reasoning sections
(``<think>...</think>``) are ignored. Finding no code is a verdict (``no_code``), never a crash.
"""

from __future__ import annotations

import ast
import re
import threading
from dataclasses import dataclass
from typing import Literal

MAX_COMPLETION_CHARS = 2_000_000

_THINK = re.compile(r"<think>.*?(</think>|$)", re.DOTALL | re.IGNORECASE)
_FENCE = re.compile(r"^[ \t]*(`{3,}|~{3,})[ \t]*([A-Za-z0-9_+.-]*)[^\n]*\n(.*?)(?:^[ \t]*\1[ \t]*$|\Z)",
                    re.DOTALL | re.MULTILINE)
_PY_TAGS = {"", "python", "py", "python3", "py3", "ipython", "python3.11"}


@dataclass(frozen=True)
class Extraction:
    code: str | None
    method: Literal["fenced", "raw", "none"]
    blocks: int
    reason: str

    def to_json(self) -> dict:
        return {"method": self.method, "blocks": self.blocks, "reason": self.reason}


# CPython 3.11's parser is not safe to run from several threads at once ("AST constructor
# recursion depth mismatch"); completions are extracted from a pool of request threads.
_PARSE_LOCK = threading.Lock()


def _parse(code: str) -> ast.Module:
    with _PARSE_LOCK:
        return ast.parse(code)


def _defines(code: str, name: str) -> bool:
    try:
        tree = _parse(code)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return re.search(rf"^\s*(async\s+)?def\s+{re.escape(name)}\s*\(", code, re.MULTILINE) is not None
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
            return True
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
            return True
    return False


def _parses(code: str) -> bool:
    try:
        _parse(code)
        return True
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False


def extract_code(text: str | None, entry_point: str) -> Extraction:
    if not text or not text.strip():
        return Extraction(None, "none", 0, "the completion is empty")
    if "\x00" in text[:MAX_COMPLETION_CHARS]:
        text = text.replace("\x00", "")
    if len(text) > MAX_COMPLETION_CHARS:
        return Extraction(None, "none", 0, f"the completion is longer than {MAX_COMPLETION_CHARS} characters")
    visible = _THINK.sub("", text)
    blocks = [(m.group(2).lower(), m.group(3)) for m in _FENCE.finditer(visible)]
    code_blocks = [b for tag, b in blocks if tag in _PY_TAGS and b.strip()]
    if blocks:
        defining = [b for b in code_blocks if _defines(b, entry_point)]
        if defining:
            return Extraction(defining[-1], "fenced", len(blocks),
                              f"block {code_blocks.index(defining[-1]) + 1} of {len(code_blocks)} defines {entry_point}")
        if code_blocks:
            best = max(code_blocks, key=len)
            return Extraction(best, "fenced", len(blocks),
                              f"no block defines {entry_point}; took the longest of {len(code_blocks)}")
        return Extraction(None, "none", len(blocks), "no Python code block in the completion")
    if _defines(visible, entry_point) and _parses(visible):
        return Extraction(visible, "raw", 0, "unfenced Python that defines the entry point")
    if _defines(visible, entry_point):
        # prose around unfenced code: keep from the first line that starts Python code
        lines = visible.splitlines()
        start = next((i for i, l in enumerate(lines) if re.match(r"^(import |from |def |class |@|[A-Z_]+ =)", l)), 0)
        return Extraction("\n".join(lines[start:]) + "\n", "raw", 0, "unfenced text that defines the entry point")
    return Extraction(None, "none", 0, f"no code block and no definition of {entry_point}")
