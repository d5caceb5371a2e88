"""Locations and defaults shared by the grader's commands."""

from __future__ import annotations

import os
from pathlib import Path

ENV_CACHE = "PERFGRADE_CACHE"
ENV_RUNS = "PERFGRADE_RUNS"


def cache_dir() -> Path:
    """Content-keyed caches (vectors, completions): PERFGRADE_CACHE, else ~/.cache/perfgrade."""
    env = os.environ.get(ENV_CACHE)
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "perfgrade"


def runs_dir() -> Path:
    """Where new run directories go: PERFGRADE_RUNS, else ./runs."""
    return Path(os.environ.get(ENV_RUNS, "runs"))
