"""The command line: help for every command, one-line errors for user mistakes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
COMMANDS = [[], ["eval"], ["report"], ["audit"], ["compare"], ["problems"], ["problems", "list"], ["problems", "show"],
            ["problems", "validate"], ["problems", "coverage"], ["problems", "new"], ["problems", "fingerprint"], ["problems", "schema"], ["sandbox"], ["sandbox", "build"],
            ["sandbox", "doctor"], ["sandbox", "sweep"]]


def grader(*args, **kw):
    return subprocess.run([sys.executable, "-m", "grader", *args], capture_output=True, text=True, cwd=ROOT,
                          timeout=120, **kw)


@pytest.mark.parametrize("cmd", COMMANDS, ids=lambda c: " ".join(c) or "main")
def test_every_command_has_help(cmd):
    out = grader(*cmd, "--help")
    assert out.returncode == 0 and "usage:" in out.stdout
    assert len(out.stdout.splitlines()) >= 5


def test_main_help_lists_the_commands():
    out = grader("--help").stdout
    for c in ("eval", "report", "audit", "compare", "problems", "sandbox"):
        assert f"\n    {c}" in out


@pytest.mark.parametrize("args, fragment", [
    (["problems", "show", "no-such-problem"], "no problem 'no-such-problem'"),
    (["report", "/nonexistent/run"], "no such run directory"),
    (["report", "tests"], "is not a run directory"),
    (["audit", "tests"], "is not a run directory"),
    (["eval", "--completions", "/nonexistent.jsonl"], "no such completions file"),
    (["eval", "--k", "0,x"], "--k"),
    (["problems", "list", "--pack-path", "/nonexistent"], "no such pack directory"),
    (["problems", "new", "Bad Name"], "expected PACK/ID"),
    (["problems", "coverage", "--pack-path", "tests/data/packs/tiny-pack", "tiny-pack"], "declares a [sampler]"),
])
def test_user_mistakes_are_one_clear_line(args, fragment):
    out = grader(*args)
    assert out.returncode == 2, out.stderr
    assert "Traceback" not in out.stderr
    errors = [l for l in out.stderr.splitlines() if l.startswith("error:")]
    assert len(errors) == 1 and fragment in errors[0], out.stderr


def test_problems_list_json_is_one_array_of_records():
    import json

    out = grader("problems", "list", "--json")
    assert out.returncode == 0
    rows = json.loads(out.stdout)
    assert rows and all(set(r) == {"id", "pack", "tier", "family", "difficulty", "title"} for r in rows)
    assert any(r["id"] == "perf-core/f1-conv-layer-accounting" and r["tier"] == "guided" for r in rows)


def test_problems_new_scaffolds_a_self_contained_pack_that_validates(tmp_path):
    out = grader("problems", "new", "my-pack/f99-example", "--root", str(tmp_path))
    assert out.returncode == 0, out.stderr
    pack = tmp_path / "my-pack"
    assert {p.name for p in (pack / "f99-example").iterdir()} == {"problem.toml", "spec.md", "solution.py"}
    assert {p.name for p in (pack / "_trusted").iterdir()} == {"__init__.py", "f99_example.py"}
    out = grader("problems", "list", "--pack-path", str(pack), "--json")
    assert out.returncode == 0 and "my-pack/f99-example" in out.stdout
    out = grader("problems", "validate", "my-pack", "--pack-path", str(pack), "--static")
    assert out.returncode == 0, out.stdout
    # a second problem in the same pack: its reference module is found without registering it
    out = grader("problems", "new", "my-pack/second-one", "--root", str(tmp_path))
    assert out.returncode == 0, out.stderr
    assert (pack / "_trusted" / "second_one.py").is_file()
    out = grader("problems", "list", "--pack-path", str(pack), "--json")
    assert out.returncode == 0 and "my-pack/second-one" in out.stdout
    out = grader("problems", "new", "my-pack/second-one", "--root", str(tmp_path))
    assert out.returncode == 2 and "already exists" in out.stderr


def test_piped_output_is_plain_text():
    out = grader("problems", "list")
    assert out.returncode == 0 and "perf-core" in out.stdout
    assert "\x1b[" not in out.stdout
    help_out = grader("eval", "--help")
    assert "\x1b[" not in help_out.stdout
