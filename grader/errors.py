"""Exceptions of the grader package.

A user's mistake (a bad pack file, an unknown problem, a malformed completions file, a directory
that is not a run) raises a :class:`UserError` subclass; the CLI prints its one-line message and
exits with status 2. Nothing here is raised for what a candidate does: that is a verdict.

    GraderError
    ├── UserError                    printed as one line, exit status 2
    │   ├── PackError                a pack or problem file is malformed (names file and field)
    │   ├── ProblemNotFound          an id that no loaded pack defines
    │   ├── CompletionsFileError     a --completions file is malformed (names file and line)
    │   ├── RunDirError              a path that is not a run directory, or a locked/inconsistent one
    │   └── ConfigError              contradictory or invalid command-line options
    ├── ReferenceError_              a reference model or generator raised or returned a bad value
    └── ModelServiceError            the model service refused the run (auth, unknown model, ...)
"""

from __future__ import annotations


class GraderError(Exception):
    """Base class of every grader exception."""


class UserError(GraderError):
    """Something the user can fix; printed as one line without a traceback."""


class PackError(UserError):
    def __init__(self, path: object, message: str, field: str | None = None) -> None:
        self.path = str(path)
        self.field = field
        where = f"{self.path}: {field}: " if field else f"{self.path}: "
        super().__init__(where + message)


class ProblemNotFound(UserError):
    pass


class CompletionsFileError(UserError):
    pass


class RunDirError(UserError):
    pass


class ConfigError(UserError):
    pass


class ReferenceError_(GraderError):
    """A reference model or input generator failed: the pack is broken, not the candidate."""


class ModelServiceError(UserError):
    """The model service refused the run in a way retrying cannot fix (401, 403, 404, 400)."""
