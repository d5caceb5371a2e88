"""docs/authoring.md's walkthrough, run as written: from nothing to a validated eval of a new pack."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "authoring.md"


def walkthrough() -> list[list[str]]:
    text = DOC.read_text()
    m = re.search(r"<!-- walkthrough:[^>]*-->\s*```sh\n(.*?)```", text, re.S)
    assert m, "docs/authoring.md lost its walkthrough block"
    return [shlex.split(line.split("#")[0]) for line in m.group(1).splitlines() if line.strip()]


def test_the_walkthrough_is_grader_commands():
    cmds = walkthrough()
    assert [c[:4] for c in cmds][:2] == [["python", "-m", "grader", "problems"]] * 2
    assert any(c[3] == "eval" for c in cmds) and any(c[3] == "report" for c in cmds)


@pytest.mark.docker
def test_the_walkthrough_runs_as_written(tmp_path, sandbox_image):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("PERFGRADE_PACKS", None)
    for cmd in walkthrough():
        assert cmd[0] == "python"
        out = subprocess.run([sys.executable, *cmd[1:]], cwd=tmp_path, env=env, capture_output=True, text=True,
                             timeout=600)
        assert out.returncode == 0, f"{shlex.join(cmd)} failed:\n{out.stdout[-2000:]}\n{out.stderr[-2000:]}"
        if cmd[3:5] == ["problems", "validate"]:
            assert "1/1 problems pass every check" in out.stdout and "3/3" in out.stdout
    assert (tmp_path / "packs" / "my-pack" / "_trusted" / "gemm_bytes.py").is_file()
    assert (tmp_path / "runs" / "first-try" / "manifest.json").is_file()
