"""``python -m grader report | audit | compare``."""

from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction, formatter: type) -> None:
    pass
