"""Shared fixtures.

Docker tests never skip: when the engine or the image is missing they fail with the fix, because
a skipped Docker test in CI would hide exactly what the suite exists to prove.
"""

from __future__ import annotations

import os
import sys
import uuid
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from support import TINY_PACK, leftovers  # noqa: E402


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path_factory, monkeypatch):
    """The test run gets a cache directory of its own, apart from the user's (vectors, domain
    samples, adequacy, completions). Its entries are keyed by content and written atomically, so
    the run's xdist workers share it, as concurrent grader processes share the user's: a domain
    sample drawn by one worker serves the other. A test that needs an empty cache sets its own."""
    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent  # the run's base directory; each worker's is a folder in it
    monkeypatch.setenv("PERFGRADE_CACHE", str(base / "perfgrade-cache"))


@pytest.fixture(scope="session")
def docker_api():
    from sandbox.engine import connect
    from sandbox.errors import SandboxError

    try:
        client = connect(timeout=60)
    except SandboxError as exc:
        pytest.fail(f"Docker engine unavailable: {exc} (run bin/setup)", pytrace=False)
    yield client
    client.close()


@pytest.fixture(scope="session")
def sandbox_image(docker_api):
    from sandbox.errors import SandboxError
    from sandbox.image import resolve

    try:
        st = resolve(docker_api)
    except SandboxError as exc:
        pytest.fail(f"sandbox image unavailable: {exc} (run bin/setup)", pytrace=False)
    return st


@pytest.fixture
def run_label():
    return f"test-{uuid.uuid4().hex[:10]}"


# the OCI runtimes the conformance suite and the hostile corpus run under (bin/setup --test
# registers runsc); --runtime narrows them for a quick local run, CI runs both
RUNTIMES = ("runc", "runsc")


def pytest_addoption(parser):
    parser.addoption("--runtime", action="append", choices=RUNTIMES, default=None,
                     help="run the runtime-parametrized sandbox tests under this OCI runtime only "
                          "(repeatable; default: every runtime)")


def pytest_generate_tests(metafunc):
    """Tests that ask for ``each_runtime`` run once per runtime (runc, runsc)."""
    if "each_runtime" in metafunc.fixturenames:
        chosen = metafunc.config.getoption("--runtime") or list(RUNTIMES)
        metafunc.parametrize("each_runtime", [r for r in RUNTIMES if r in chosen], scope="function")


def require_runtime(client, name: str | None) -> None:
    """Fail (never skip) when the engine cannot run containers under the runtime."""
    from sandbox.errors import SandboxError
    from sandbox.runtimes import require_runtime as check

    try:
        check(client, name)
    except SandboxError as exc:
        pytest.fail(f"{exc} (bin/setup --test does it)", pytrace=False)


@pytest.fixture
def runtime():
    """The OCI runtime of the ``sandbox`` fixture: the engine's default.

    A module overrides it (``def runtime(each_runtime)``) to run its tests under every runtime.
    """
    return None


@pytest.fixture
def sandbox(docker_api, sandbox_image, run_label, runtime):
    """A Sandbox on the current image; after the test, no container of its run may remain."""
    from sandbox.runner import Sandbox

    if runtime is not None:
        require_runtime(docker_api, runtime)
    sb = Sandbox(sandbox_image.tag, run_id=run_label, client=docker_api, runtime=runtime)
    yield sb
    left = leftovers(docker_api, run_label)
    sb.sweep()
    assert not left, f"containers left behind by run {run_label}: {[c['Id'][:12] for c in left]}"


@pytest.fixture
def handle(sandbox, sandbox_image):
    from grader.grading.execution import SandboxHandle

    return SandboxHandle(sandbox, sandbox_image.image_id, sandbox_image.tag)


@pytest.fixture
def tiny_registry():
    """The tiny pack's trusted code (its own references and generators, in tests/data/packs/tiny-pack/_trusted)."""
    from grader.packs.problems import load_pack

    return load_pack(TINY_PACK).trusted.module


@pytest.fixture
def tiny_catalog(tiny_registry):
    from grader.packs.problems import Catalog

    return Catalog([TINY_PACK])


@pytest.fixture
def pack_copy(tmp_path, tiny_registry):
    """A writable copy of the tiny pack (for tests that break files on purpose)."""
    import shutil

    dst = tmp_path / "packs" / "tiny-pack"
    shutil.copytree(TINY_PACK, dst)
    return dst
