"""Connecting to the Docker engine, labelling containers and sweeping leftovers."""

from __future__ import annotations

import os
import socket
import struct

import docker
import docker.errors
import requests.exceptions

from .errors import EngineUnavailable

LABEL_MANAGED = "perfgrade.managed"
LABEL_RUN = "perfgrade.run"
LABEL_OWNER = "perfgrade.owner"
API_TIMEOUT_S = 60.0

API_ERRORS = (docker.errors.APIError, requests.exceptions.RequestException, OSError)


def owner_tag() -> str:
    """Identifies this grader process: host, pid and the pid's start time (pids are reused)."""
    return f"{socket.gethostname()}:{os.getpid()}:{_pid_start(os.getpid())}"


def _pid_start(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            data = f.read()
        return data[data.rindex(b")") + 2:].split()[19].decode()
    except (OSError, ValueError, IndexError):
        return "?"


def owner_alive(tag: str) -> bool:
    """Whether the grader process that labelled a container is still running on this host."""
    try:
        host, pid_s, start = tag.rsplit(":", 2)
        pid = int(pid_s)
    except ValueError:
        return False
    if host != socket.gethostname():
        return True  # another machine's container on a shared engine: not ours to judge
    if not os.path.exists(f"/proc/{pid}"):
        return False
    return start == "?" or _pid_start(pid) == start


def connect(timeout: float = API_TIMEOUT_S) -> docker.APIClient:
    """A low-level client for the engine named by DOCKER_HOST (or the local socket)."""
    try:
        client = docker.APIClient(
            base_url=os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock"),
            timeout=timeout,
            version="auto",
        )
        client.ping()
        return client
    except docker.errors.DockerException as exc:
        raise EngineUnavailable(f"cannot reach the Docker engine: {short_error(exc)}") from None
    except API_ERRORS as exc:
        raise EngineUnavailable(f"cannot reach the Docker engine: {short_error(exc)}") from None


def engine_identity(base_url: str | None = None) -> str | None:
    """Which daemon process answers on a local unix socket: its pid and the pid's start time.

    A changed identity means the engine restarted. Read with SO_PEERCRED, so nothing running
    inside a container can influence it. None when the engine is not on a local unix socket.
    """
    url = base_url or os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock")
    if not url.startswith("unix://"):
        return None
    path = url[len("unix://"):]
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(2.0)
            s.connect(path)
            raw = s.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
        pid = struct.unpack("3i", raw)[0]
    except OSError:
        return None
    return f"{pid}:{_pid_start(pid)}"


def short_error(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return (text[0] if text else type(exc).__name__)[:300]



def sweep(client: docker.APIClient, labels: dict[str, str] | None = None, *, orphans_only: bool = False) -> int:
    """Force-remove managed containers matching labels. Returns how many were removed.

    With ``orphans_only`` only containers whose owner process is gone are removed, so that
    graders running side by side on one engine never touch each other's containers.
    """
    filters = [f"{LABEL_MANAGED}=1"] + [f"{k}={v}" for k, v in (labels or {}).items()]
    try:
        found = client.containers(all=True, filters={"label": filters})
    except API_ERRORS as exc:
        raise EngineUnavailable(f"cannot list containers: {short_error(exc)}") from None
    removed = 0
    for c in found:
        owner = (c.get("Labels") or {}).get(LABEL_OWNER, "")
        if orphans_only and owner_alive(owner):
            continue
        try:
            client.remove_container(c["Id"], force=True)
            removed += 1
        except docker.errors.NotFound:
            pass
        except API_ERRORS:
            pass
    return removed
