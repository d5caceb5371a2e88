"""Execute untrusted candidate code in disposable, hardened Docker containers.

The sandbox knows nothing of problems or scores: it runs source text on input cases and reports
what happened. ``docker`` is imported in this package only.
"""

from .errors import EngineUnavailable, ImageBuildError, ImageMissing, InfrastructureError, SandboxError
from .models import Case, CaseResult, ContainerInfo, ErrorInfo, ExecResult, Job, Limits, LoadResult, StopInfo
from .runtimes import RuntimeNotRegistered, require_runtime

__all__ = [
    "Case",
    "CaseResult",
    "ContainerInfo",
    "EngineUnavailable",
    "ErrorInfo",
    "ExecResult",
    "ImageBuildError",
    "ImageMissing",
    "InfrastructureError",
    "Job",
    "Limits",
    "LoadResult",
    "RuntimeNotRegistered",
    "SandboxError",
    "StopInfo",
    "require_runtime",
]
