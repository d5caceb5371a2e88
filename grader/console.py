"""Terminal output: colour and tables on a terminal, plain text when piped."""

from __future__ import annotations

import os
import sys
from rich import box
from rich.console import Console
from rich.table import Table


def console(stderr: bool = False) -> Console:
    """A console on the current stdout or stderr (made per use: streams may be replaced)."""
    stream = sys.stderr if stderr else sys.stdout
    try:
        is_tty = stream.isatty()
    except (ValueError, AttributeError):
        is_tty = False
    width = None if is_tty else int(os.environ.get("COLUMNS", "120"))
    return Console(file=stream, width=width, highlight=False, soft_wrap=not is_tty,
                   no_color=not is_tty or "NO_COLOR" in os.environ)


def table(*columns: str, title: str | None = None, right: tuple[str, ...] = ()) -> Table:
    t = Table(title=title, box=box.SIMPLE_HEAD, title_justify="left", pad_edge=False)
    for c in columns:
        t.add_column(c, justify="right" if c in right else "left", overflow="fold")
    return t


def ok_mark(ok: bool) -> str:
    return "[green]ok[/green]" if ok else "[bold red]FAIL[/bold red]"
