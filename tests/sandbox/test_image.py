"""The image: content-hashed, found by content (not by a moving tag), stale when its inputs change."""

from __future__ import annotations

import time

import pytest

from sandbox import image

pytestmark = pytest.mark.docker


def test_content_hash_covers_files_and_base():
    files = {"Dockerfile": b"FROM x", "harness/pg_harness.py": b"print(1)"}
    h = image.content_hash(files, "base:1", "sha256:a")
    assert h != image.content_hash({**files, "harness/pg_harness.py": b"print(2)"}, "base:1", "sha256:a")
    assert h != image.content_hash(files, "base:1", "sha256:b")
    assert h != image.content_hash(files, "base:2", "sha256:a")
    assert h == image.content_hash(dict(reversed(list(files.items()))), "base:1", "sha256:a")


def test_current_image_is_found_and_a_changed_harness_makes_it_stale(docker_api, sandbox_image, monkeypatch):
    st = image.status(docker_api)
    assert st.current and st.tag == sandbox_image.tag
    real = image.context_files()
    monkeypatch.setattr(image, "context_files",
                        lambda: {**real, "harness/pg_harness.py": real["harness/pg_harness.py"] + b"\n# edited\n"})
    st = image.status(docker_api)
    assert not st.current and "harness changed" in st.reason
    from sandbox.errors import ImageMissing

    with pytest.raises(ImageMissing, match="harness changed"):
        image.resolve(docker_api)


def test_build_is_idempotent_and_quick_when_current(docker_api, sandbox_image):
    msgs: list[str] = []
    t0 = time.monotonic()
    st = image.build(docker_api, progress=msgs.append)
    assert time.monotonic() - t0 < 30
    assert st.current and st.tag == sandbox_image.tag
    assert any("up to date" in m for m in msgs)


def test_offline_base_recipe_and_mirror(monkeypatch):
    assert image.offline_base_ref().startswith("perfgrade-base:bookworm-")
    monkeypatch.setenv("PERFGRADE_DEBIAN_MIRROR", "http://mirror.example/debian")
    assert image.debian_mirror() == "http://mirror.example/debian"
