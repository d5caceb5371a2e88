"""Declared changes of a module: how a variant is made from its problem's solution.

A variant is not a copy of the solution with one thing changed; it is the change, declared in
``problem.toml``, applied when the variant is needed:

* **switches**: the solution carries mistake switches, read as ``FLAGS.get("name")`` (or any use
  of the quoted name), and exactly one line ``FLAGS: dict = {}`` (or ``FLAGS = {}``) that the
  variant fills in: ``switches = { no_reuse = true }``;
* **replace**: exact search-and-replace edits, applied in order; each ``old`` text must occur
  exactly once in the text it is applied to;
* **patch**: a unified diff of the solution (``diff -u`` / ``git diff`` output; the file names are
  ignored); each hunk's old lines must be found exactly once at or after the previous hunk.

A change that no longer applies (a switch the solution never reads, a text that is gone or
ambiguous, a hunk whose context changed) raises :class:`ChangeError` saying why, so a solution
edited without its variants fails loudly instead of silently producing the wrong mutant.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

FLAGS_LINE = re.compile(r"^FLAGS(?:[ \t]*:[ \t]*dict)?[ \t]*=[ \t]*\{\}", re.MULTILINE)


class ChangeError(ValueError):
    """A declared change does not apply to the module it changes."""


class _Edit(Protocol):
    old: str
    new: str


def apply_switches(source: str, switches: Mapping[str, Any]) -> str:
    """The module with its ``FLAGS`` line set to ``switches``."""
    lines = FLAGS_LINE.findall(source)
    if len(lines) != 1:
        raise ChangeError(f"the solution needs exactly one line 'FLAGS: dict = {{}}' for switches (found {len(lines)})")
    unread = [k for k in switches if f'"{k}"' not in source and f"'{k}'" not in source]
    if unread:
        raise ChangeError(f"the solution never reads switch(es) {', '.join(unread)}")
    flags = {k: switches[k] for k in switches}
    return FLAGS_LINE.sub(lambda _m: f"FLAGS: dict = {flags!r}", source, count=1)


def apply_replacements(source: str, edits: Sequence[_Edit]) -> str:
    """The module with each exact edit applied in order."""
    text = source
    for i, e in enumerate(edits):
        n = text.count(e.old)
        if n != 1:
            head = e.old.strip().splitlines()[0][:60] if e.old.strip() else repr(e.old)
            raise ChangeError(f"replace[{i}]: the text starting {head!r} occurs {n} times (must be exactly once)")
        text = text.replace(e.old, e.new)
    return text


_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


def apply_patch(source: str, patch: str) -> str:
    """The module with a unified diff applied (exact context; hunks may have moved, never fuzzed)."""
    lines = source.splitlines(keepends=True)
    hunks: list[tuple[list[str], list[str]]] = []
    cur: tuple[list[str], list[str]] | None = None
    for raw in patch.splitlines(keepends=True):
        if raw.startswith(("--- ", "+++ ", "diff ", "index ")) and cur is None:
            continue
        if raw.startswith("@@"):
            if not _HUNK.match(raw):
                raise ChangeError(f"malformed hunk header {raw.strip()!r}")
            cur = ([], [])
            hunks.append(cur)
            continue
        if cur is None:
            if raw.strip():
                raise ChangeError(f"text before the first hunk: {raw.strip()[:60]!r}")
            continue
        if raw.startswith("\\"):  # "\ No newline at end of file"
            for side in cur:
                if side and side[-1].endswith("\n"):
                    side[-1] = side[-1][:-1]
            continue
        tag, body = raw[:1], raw[1:]
        if not body.endswith("\n"):
            body += "\n"
        if tag == " ":
            cur[0].append(body)
            cur[1].append(body)
        elif tag == "-":
            cur[0].append(body)
        elif tag == "+":
            cur[1].append(body)
        elif raw.strip() == "":
            cur[0].append("\n")
            cur[1].append("\n")
        else:
            raise ChangeError(f"unexpected line in a hunk: {raw.strip()[:60]!r}")
    if not hunks:
        raise ChangeError("the patch has no hunks")
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
        strip_last = True
    else:
        strip_last = False
    out: list[str] = []
    pos = 0
    for n, (old, new) in enumerate(hunks):
        k = len(old)
        hits = [i for i in range(pos, len(lines) - k + 1) if lines[i:i + k] == old]
        if len(hits) != 1:
            first = next((x.strip() for x in old if x.strip()), "")[:60]
            raise ChangeError(f"hunk {n + 1} (near {first!r}) matches {len(hits)} places (must be exactly one)")
        at = hits[0]
        out.extend(lines[pos:at])
        out.extend(new)
        pos = at + k
    out.extend(lines[pos:])
    text = "".join(out)
    return text[:-1] if strip_last and text.endswith("\n") else text


def apply_change(source: str, *, switches: Mapping[str, Any] | None = None, replace: Sequence[_Edit] | None = None,
                 patch: str | None = None) -> str:
    """Apply the one declared change (switches, replace or patch) to ``source``."""
    given = [x is not None for x in (switches, replace, patch)]
    if sum(given) != 1:
        raise ChangeError("exactly one of switches, replace and patch")
    if switches is not None:
        return apply_switches(source, switches)
    if replace is not None:
        return apply_replacements(source, replace)
    assert patch is not None
    return apply_patch(source, patch)
