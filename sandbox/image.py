"""Build the sandbox image, offline when no registry is reachable, and tell whether it is current.

The image tag carries a content hash of everything that goes into the image: the Dockerfile,
the harness and the identity of the base image. ``perfgrade-sandbox:latest`` names the most
recent build; :func:`status` recomputes the hash from the files on disk and the base on the
engine, so a stale image (harness edited, base replaced) is detected before it is used.

Base selection (``base``):

* ``auto`` (default): ``python:3.11-slim`` if it is on the engine or can be pulled, otherwise a
  local base made offline;
* ``offline``: a minimal Debian with python3 and python3-numpy, made with debootstrap from
  Debian's package mirror and imported with ``docker import`` (no image registry involved);
* any other value: that image reference, pulled if missing.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import tarfile
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import docker
import docker.errors

from .errors import EngineUnavailable, ImageBuildError, ImageMissing
from .engine import API_ERRORS, short_error

REPO = "perfgrade-sandbox"
LATEST = f"{REPO}:latest"
BASE_REPO = "perfgrade-base"
DEFAULT_BASE = "python:3.11-slim"
LABEL_CONTENT = "perfgrade.content-hash"
LABEL_BASE = "perfgrade.base"
LABEL_BASE_ID = "perfgrade.base-id"
OFFLINE_RECIPE = {
    "version": 1,
    "suite": "bookworm",
    "variant": "minbase",
    "include": ["python3", "python3-numpy"],
}
DEFAULT_MIRROR = "http://deb.debian.org/debian"

Progress = Callable[[str], None]


def _quiet(_: str) -> None:
    pass


def project_root() -> Path:
    return Path(__file__).resolve().parents[1]


def context_files() -> dict[str, bytes]:
    """The files that make up the build context (and nothing else)."""
    root = project_root()
    dockerfile = root / "Dockerfile.sandbox"
    harness = Path(__file__).resolve().parent / "harness" / "pg_harness.py"
    if not dockerfile.is_file():
        raise ImageBuildError(
            f"{dockerfile} not found", hint="build the sandbox image from a source checkout of the project"
        )
    return {"Dockerfile": dockerfile.read_bytes(), "harness/pg_harness.py": harness.read_bytes()}


def content_hash(files: dict[str, bytes], base_ref: str, base_id: str) -> str:
    h = hashlib.sha256(b"perfgrade-sandbox\0")
    for name in sorted(files):
        h.update(name.encode() + b"\0" + hashlib.sha256(files[name]).digest())
    h.update(b"base\0" + base_ref.encode() + b"\0" + base_id.encode())
    return h.hexdigest()


def _context_tar(files: dict[str, bytes]) -> io.BytesIO:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name in sorted(files):
            info = tarfile.TarInfo(name)
            info.size = len(files[name])
            info.mode = 0o644
            info.mtime = 0
            tar.addfile(info, io.BytesIO(files[name]))
    buf.seek(0)
    return buf


@dataclass(frozen=True)
class ImageStatus:
    present: bool
    current: bool
    tag: str | None = None
    image_id: str | None = None
    base_ref: str | None = None
    reason: str = ""


def _image_id(client: docker.APIClient, ref: str) -> str | None:
    try:
        return client.inspect_image(ref)["Id"]
    except docker.errors.ImageNotFound:
        return None
    except docker.errors.NotFound:
        return None
    except API_ERRORS as exc:
        raise EngineUnavailable(f"cannot inspect image {ref}: {short_error(exc)}") from None


def status(client: docker.APIClient) -> ImageStatus:
    """Whether a sandbox image built from exactly these files (and a base that has not changed
    since) is on the engine.

    Images are found by their content-hash label, not by the ``latest`` tag, so checkouts of
    different versions sharing one engine each find their own image.
    """
    try:
        files = context_files()
    except ImageBuildError as exc:
        return ImageStatus(False, False, reason=str(exc))
    try:
        images = client.images(filters={"label": LABEL_CONTENT})
    except API_ERRORS as exc:
        raise EngineUnavailable(f"cannot list the sandbox images: {short_error(exc)}") from None
    if not images:
        return ImageStatus(present=False, current=False, reason="the sandbox image has not been built")
    ours = []
    for img in images:
        labels = img.get("Labels") or {}
        built = labels.get(LABEL_CONTENT, "")
        if built and content_hash(files, labels.get(LABEL_BASE, ""), labels.get(LABEL_BASE_ID, "")) == built:
            ours.append(img)
    if not ours:
        return ImageStatus(True, False, LATEST, None, None,
                           "the Dockerfile or harness changed since the image was built")
    stale_reason = ""
    for img in sorted(ours, key=lambda i: i.get("Created", 0), reverse=True):
        labels = img["Labels"]
        base_ref, base_id = labels.get(LABEL_BASE, ""), labels.get(LABEL_BASE_ID, "")
        tag = f"{REPO}:{labels[LABEL_CONTENT][:16]}"
        now_id = _image_id(client, base_ref) if base_ref else None
        if now_id is not None and now_id != base_id:
            stale_reason = f"the base image {base_ref} changed since the image was built"
            continue
        return ImageStatus(True, True, tag, img["Id"], base_ref, "up to date")
    return ImageStatus(True, False, LATEST, None, None, stale_reason)


def resolve(client: docker.APIClient) -> ImageStatus:
    """The current sandbox image, or ImageMissing saying why there is none."""
    st = status(client)
    if not st.current:
        raise ImageMissing(f"sandbox image not usable: {st.reason}")
    return st


def build(
    client: docker.APIClient,
    *,
    base: str = "auto",
    force: bool = False,
    progress: Progress = _quiet,
) -> ImageStatus:
    """Build (or confirm) the sandbox image. Idempotent: an up-to-date image is reused."""
    files = context_files()
    base_ref, base_id = choose_base(client, base, progress)
    digest = content_hash(files, base_ref, base_id)
    tag = f"{REPO}:{digest[:16]}"
    existing = _image_id(client, tag)
    if existing and not force:
        progress(f"image {tag} is up to date")
        client.tag(tag, REPO, "latest")
        return status(client)
    progress(f"building {tag} from {base_ref}")
    labels = {LABEL_CONTENT: digest, LABEL_BASE: base_ref, LABEL_BASE_ID: base_id}
    try:
        stream = client.build(
            fileobj=_context_tar(files),
            custom_context=True,
            tag=tag,
            buildargs={"BASE": base_ref},
            labels=labels,
            rm=True,
            forcerm=True,
            pull=False,
            decode=True,
            # the offline base already holds numpy: build without any network at all
            network_mode="none" if base_ref.startswith(BASE_REPO + ":") else None,
        )
        log: list[str] = []
        for chunk in stream:
            if "error" in chunk:
                detail = chunk.get("error", "").strip()
                raise ImageBuildError(
                    f"docker build failed: {detail}\n" + "\n".join(log[-15:]),
                    hint="see the build log above; `python -m grader sandbox build --base offline` "
                    "avoids registries entirely",
                )
            text = (chunk.get("stream") or "").rstrip()
            if text:
                log.append(text)
                if text.startswith("Step ") or "numpy" in text:
                    progress(text)
    except API_ERRORS as exc:
        raise ImageBuildError(f"docker build failed: {short_error(exc)}") from None
    client.tag(tag, REPO, "latest")
    st = status(client)
    if not st.current:
        raise ImageBuildError(f"the image was built but is not current: {st.reason}")
    progress(f"built {tag}")
    return st


def choose_base(client: docker.APIClient, base: str, progress: Progress = _quiet) -> tuple[str, str]:
    """Resolve the base image to (reference, image id), making or pulling it if needed."""
    if base == "offline":
        return ensure_offline_base(client, progress)
    ref = DEFAULT_BASE if base == "auto" else base
    found = _image_id(client, ref)
    if found:
        return ref, found
    progress(f"pulling {ref}")
    try:
        repo, _, tag = ref.rpartition(":") if ":" in ref.split("/")[-1] else (ref, "", "latest")
        client.pull(repo, tag=tag or "latest")
        found = _image_id(client, ref)
    except API_ERRORS as exc:
        if base != "auto":
            raise ImageBuildError(
                f"cannot pull the base image {ref}: {short_error(exc)}",
                hint="use `--base offline` to make a local Debian base without a registry",
            ) from None
        progress(f"no registry reachable ({short_error(exc)[:80]}); using a local base made offline")
        return ensure_offline_base(client, progress)
    if not found:
        raise ImageBuildError(f"pulled {ref} but the engine does not list it")
    return ref, found


def offline_base_ref() -> str:
    digest = hashlib.sha256(json.dumps(OFFLINE_RECIPE, sort_keys=True).encode()).hexdigest()[:12]
    return f"{BASE_REPO}:{OFFLINE_RECIPE['suite']}-{digest}"


def debian_mirror() -> str:
    """The Debian mirror: PERFGRADE_DEBIAN_MIRROR, else the host's apt configuration."""
    env = os.environ.get("PERFGRADE_DEBIAN_MIRROR")
    if env:
        return env
    candidates = [Path("/etc/apt/sources.list")] + sorted(Path("/etc/apt/sources.list.d").glob("*"))
    for path in candidates:
        try:
            text = path.read_text()
        except OSError:
            continue
        for m in re.finditer(r"(?:URIs:\s*|^deb\s+(?:\[[^\]]*\]\s+)?)(\S+)", text, re.MULTILINE):
            uri = m.group(1)
            if uri.startswith(("http://", "https://")) and uri.rstrip("/").endswith("/debian"):
                return uri
    return DEFAULT_MIRROR


def ensure_offline_base(client: docker.APIClient, progress: Progress = _quiet) -> tuple[str, str]:
    """Make (once) a minimal Debian base with python3 and numpy, without any image registry."""
    ref = offline_base_ref()
    found = _image_id(client, ref)
    if found:
        return ref, found
    debootstrap = shutil.which("debootstrap") or shutil.which("debootstrap", path="/usr/sbin:/sbin")
    if not debootstrap:
        raise ImageBuildError(
            "debootstrap is not installed",
            hint="install it (`apt-get install debootstrap`, or run bin/setup) and build again",
        )
    if os.geteuid() != 0:
        raise ImageBuildError(
            "making the offline base needs root (debootstrap creates device nodes and owners)",
            hint="run `sudo python -m grader sandbox build --base offline` once, or bin/setup",
        )
    mirror = debian_mirror()
    work = Path(tempfile.mkdtemp(prefix="perfgrade-base-", dir="/var/tmp"))
    rootfs = work / "rootfs"
    try:
        progress(f"debootstrap {OFFLINE_RECIPE['suite']} from {mirror} (about a minute)")
        cmd = [
            debootstrap,
            f"--variant={OFFLINE_RECIPE['variant']}",
            "--include=" + ",".join(OFFLINE_RECIPE["include"]),
            OFFLINE_RECIPE["suite"],
            str(rootfs),
            mirror,
        ]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
        if proc.returncode != 0:
            tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-15:])
            raise ImageBuildError(
                f"debootstrap failed (exit {proc.returncode}):\n{tail}",
                hint="check that Debian's mirror is reachable (PERFGRADE_DEBIAN_MIRROR overrides it)",
            )
        for sub in ("var/cache/apt/archives", "var/lib/apt/lists", "usr/share/doc", "usr/share/man",
                    "usr/share/info", "usr/share/locale"):
            target = rootfs / sub
            if target.is_dir():
                for child in target.iterdir():
                    if child.is_dir() and not child.is_symlink():
                        shutil.rmtree(child, ignore_errors=True)
                    else:
                        child.unlink(missing_ok=True)
        tar_path = work / "rootfs.tar"
        progress("packing the root file system")
        subprocess.run(["tar", "--numeric-owner", "-C", str(rootfs), "-cf", str(tar_path), "."],
                       check=True, capture_output=True, timeout=900)
        progress(f"importing {ref}")
        repo, tag = ref.split(":", 1)
        client.import_image_from_file(
            str(tar_path),
            repository=repo,
            tag=tag,
            changes=[
                "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                "ENV LANG=C.UTF-8",
                'CMD ["python3"]',
                f"LABEL perfgrade.recipe={json.dumps(OFFLINE_RECIPE, sort_keys=True).replace(' ', '')}",
            ],
        )
    except subprocess.SubprocessError as exc:
        raise ImageBuildError(f"making the offline base failed: {short_error(exc)}") from None
    except API_ERRORS as exc:
        raise ImageBuildError(f"importing the offline base failed: {short_error(exc)}") from None
    finally:
        shutil.rmtree(work, ignore_errors=True)
    found = _image_id(client, ref)
    if not found:
        raise ImageBuildError(f"imported {ref} but the engine does not list it")
    return ref, found
