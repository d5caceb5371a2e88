"""Nothing a model sees or is scored against changes without the pack saying so.

Each built-in pack keeps its fingerprint beside pack.toml (``fingerprint.json``: digests of every
hidden vector with its expected output, visible example, prompt, Q&A item and Q&A prompt). A
change that moves any of them fails here, naming the problem and the part; a deliberate one
bumps the pack's version, says so in its CHANGELOG and writes the new fingerprint with
``python -m grader problems fingerprint PACK --out problems/PACK/fingerprint.json``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from grader.packs.fingerprint import differences, pack_fingerprint
from grader.packs.problems import Catalog

ROOT = Path(__file__).resolve().parents[1]
BUILTIN = sorted(p.parent.name for p in (ROOT / "problems").glob("*/pack.toml"))


def test_every_builtin_pack_has_a_fingerprint():
    assert BUILTIN and all((ROOT / "problems" / name / "fingerprint.json").is_file() for name in BUILTIN)


@pytest.mark.parametrize("name", BUILTIN)
def test_the_pack_matches_its_fingerprint(name):
    saved = json.loads((ROOT / "problems" / name / "fingerprint.json").read_text())
    now = pack_fingerprint(Catalog().pack(name))
    assert differences(saved, now) == [], f"update problems/{name}/fingerprint.json, the version and the CHANGELOG"


def test_differences_name_the_problem_and_the_part():
    a = {"problems": {"x": {"hidden": "1", "prompt": "2"}, "y": {"hidden": "3"}}}
    b = {"problems": {"x": {"hidden": "1", "prompt": "9"}, "z": {"hidden": "3"}}}
    assert differences(a, b) == ["x: prompt differ", "y: gone", "z: new"]


def test_the_check_names_a_changed_spec_and_exits_one(pack_copy, tmp_path):
    import os
    import subprocess
    import sys

    def grader(*args):
        return subprocess.run([sys.executable, "-m", "grader", "problems", "fingerprint", "tiny-pack", *args,
                               "--pack-path", str(pack_copy)], capture_output=True, text=True, cwd=ROOT,
                              env=dict(os.environ, PERFGRADE_CACHE=str(tmp_path / "cache")), timeout=120)

    saved = tmp_path / "fp.json"
    assert grader("--out", str(saved)).returncode == 0
    assert "expected" not in saved.read_text() and "hidden" in saved.read_text()  # digests only
    ok = grader("--check", str(saved))
    assert ok.returncode == 0, ok.stdout + ok.stderr
    spec = pack_copy / "sound" / "spec.md"
    spec.write_text(spec.read_text() + "\nOne more sentence.\n")
    bad = grader("--check", str(saved))
    assert bad.returncode == 1 and "sound: prompt" in bad.stdout and "weak-variant" not in bad.stdout
