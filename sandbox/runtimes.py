"""OCI runtimes the sandbox can run containers under: runc (Docker's default) and gVisor's runsc.

gVisor puts a user-space kernel (the Sentry) between the candidate and the host: the candidate's
system calls are served by the Sentry, which itself uses a small, seccomp-filtered set of host
system calls, so a kernel exploit in the candidate hits the Sentry, not the host kernel.

Registering it (what ``bin/setup --runsc`` does): install Debian's ``runsc`` package and add to
``/etc/docker/daemon.json``::

    {"runtimes": {"runsc": {"path": "/usr/bin/runsc", "runtimeArgs": ["--network=none"]}}}

then reload the engine (SIGHUP to dockerd, or ``systemctl reload docker``). ``--network=none``
gives the sandbox a loopback interface only, which is all a sandbox container has anyway; it is
also needed on recent kernels, where runsc 2022-12 mistakes a fresh network namespace for the
host's and refuses to start.

Where runsc differs, and what the sandbox does about it:

* **pids**: the Sentry and the gofer are host threads in the container's pids cgroup, and each
  process of the candidate has a stub process on the host (the ptrace platform), so the host
  pids limit would kill the whole sandbox instead of failing a ``fork``. Under runsc the
  candidate's limit is ``RLIMIT_NPROC`` (enforced by the Sentry, per sandbox, because the
  Sentry is the candidate's kernel: it is not the host-wide per-user count it is under runc),
  and the host pids limit is a looser backstop for the host (:func:`host_pids_limit`).
* **memory**: the Sentry's memory, the candidate's included, is charged to the container's
  host cgroup, so the host's reading of that cgroup (``sandbox/cgroups.py``) decides memory
  verdicts as it does under runc; there is no cgroup file inside the sandbox.
* **System V IPC**: not listed in ``/proc/sysvipc``; the harness removes objects by id.
"""

from __future__ import annotations

from typing import Any

from .errors import EngineUnavailable, SandboxError

DEFAULT_RUNTIME = "runc"
GVISOR = "runsc"
KNOWN_RUNTIMES = (DEFAULT_RUNTIME, GVISOR)
# host threads of the Sentry, the gofer and the stub processes (about 5 host threads for each
# process of the candidate under the ptrace platform, measured with runsc 2022-12)
RUNSC_HOST_PIDS_PER_PROCESS = 8
RUNSC_HOST_PIDS_BASE = 128
# processes of the container that are not the candidate's: the init process and the supervisor
# (they run as root, so the worker uid's RLIMIT_NPROC does not count them)
SUPERVISOR_PROCESSES = 2


class RuntimeNotRegistered(SandboxError):
    """The engine does not know the requested OCI runtime."""

    hint = "run bin/setup --runsc (installs gVisor's runsc and registers it with the Docker engine)"


def normalize_runtime(name: str | None) -> str | None:
    """None (the engine's default runtime) or a runtime name; empty strings mean the default."""
    if name is None:
        return None
    name = name.strip()
    if not name or name == "default":
        return None
    return name


def is_gvisor(runtime: str | None) -> bool:
    return runtime is not None and runtime.split("/")[-1].startswith(GVISOR)


def host_pids_limit(runtime: str | None, pids: int) -> int:
    """The pids cgroup limit for the container (the candidate's own limit under runc)."""
    if is_gvisor(runtime):
        return pids * RUNSC_HOST_PIDS_PER_PROCESS + RUNSC_HOST_PIDS_BASE
    return pids


def candidate_nproc(pids: int) -> int:
    """The worker uid's RLIMIT_NPROC under gVisor: the container's pids less init and the supervisor."""
    return max(1, pids - SUPERVISOR_PROCESSES)


def extra_ulimits(runtime: str | None, pids: int) -> list[tuple[str, int]]:
    """Ulimits only one runtime needs: under gVisor, nproc is the candidate's process limit."""
    if is_gvisor(runtime):
        return [("nproc", candidate_nproc(pids))]
    return []


def registered_runtimes(client: Any) -> tuple[list[str], str]:
    """The runtimes the engine knows and its default one (``client``: a docker.APIClient)."""
    from .engine import API_ERRORS, short_error  # docker is imported only when an engine is used

    try:
        info = client.info()
    except API_ERRORS as exc:
        raise EngineUnavailable(f"cannot ask the engine for its runtimes: {short_error(exc)}") from None
    return sorted((info.get("Runtimes") or {}).keys()), info.get("DefaultRuntime") or DEFAULT_RUNTIME


def require_runtime(client: Any, runtime: str | None) -> str:
    """Check that the engine can run containers under ``runtime``; returns the name in effect.

    Raises RuntimeNotRegistered with the fix when it cannot. None means the engine's default.
    """
    name = normalize_runtime(runtime)
    known, default = registered_runtimes(client)
    if name is None:
        return default
    if name not in known:
        if is_gvisor(name):
            raise RuntimeNotRegistered(f"runtime {name} is not registered with the Docker engine: run bin/setup --runsc")
        raise RuntimeNotRegistered(
            f"runtime {name} is not registered with the Docker engine (it knows: {', '.join(known) or 'none'})",
            hint="register it in /etc/docker/daemon.json (\"runtimes\") and reload the engine",
        )
    return name


__all__ = [
    "DEFAULT_RUNTIME",
    "GVISOR",
    "KNOWN_RUNTIMES",
    "RuntimeNotRegistered",
    "candidate_nproc",
    "extra_ulimits",
    "host_pids_limit",
    "is_gvisor",
    "normalize_runtime",
    "registered_runtimes",
    "require_runtime",
]
