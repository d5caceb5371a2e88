"""The command line: ``python -m grader <command>``."""

from .app import main

__all__ = ["main"]
