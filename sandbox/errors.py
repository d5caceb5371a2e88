"""Exceptions of the sandbox package.

Only infrastructure failures raise. Anything the candidate does (crash, hang, flood, exit, forge)
is reported as data in :class:`sandbox.models.ExecResult`.

    SandboxError                 base class
    ├── EngineUnavailable        the Docker daemon cannot be reached or answers with errors
    ├── ImageMissing             the sandbox image is not built (or is stale, where that matters)
    ├── ImageBuildError          building the image or its offline base failed
    └── InfrastructureError      a run failed for reasons outside the candidate's control
                                 (API error, broken stream, daemon restarted mid-run); retry it
"""

from __future__ import annotations


class SandboxError(Exception):
    """Base class of every sandbox exception."""

    hint: str = ""

    def __init__(self, message: str, *, hint: str = "") -> None:
        super().__init__(message)
        if hint:
            self.hint = hint


class EngineUnavailable(SandboxError):
    hint = "start the Docker engine (bin/setup does it), then run `python -m grader sandbox doctor`"


class ImageMissing(SandboxError):
    hint = "build it with `python -m grader sandbox build`"


class ImageBuildError(SandboxError):
    pass


class InfrastructureError(SandboxError):
    """A sandbox run failed for reasons the candidate cannot cause. Safe to retry."""
