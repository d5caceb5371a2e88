"""The prompt: spec, signature, output table and visible examples; never a hidden vector."""

from __future__ import annotations

import json
import subprocess
import sys

from grader.packs import vectors
from grader.packs.prompt import render_prompt


def test_prompt_contents(tiny_catalog):
    p = tiny_catalog.find("tiny-pack/sound")
    vs = vectors.load(p)
    text = render_prompt(p, vs.visible)
    assert p.spec.strip() in text
    assert "def double(x: int) -> dict:" in text
    assert "| `y` | integer | units | exact |" in text
    assert "| `half` | number | units | |got - expected| <= 1e-12 + 1e-09 * |expected| |" in text
    for v in vs.visible:
        assert f"double(x={v.args[0]})" in text and json.dumps(v.expected, separators=(", ", ": ")) in text
    for v in vs.hidden:
        assert f"double(x={v.args[0]})" not in text


def test_problems_show_prints_exactly_the_prompt(tiny_catalog):
    from support import TINY_PACK

    # the CLI runs in a subprocess and finds the pack (and its own trusted code) through PERFGRADE_PACKS
    import os

    env = dict(os.environ, PERFGRADE_PACKS=str(TINY_PACK))
    out = subprocess.run([sys.executable, "-m", "grader", "problems", "show", "tiny-pack/sound"],
                         capture_output=True, text=True, env=env, timeout=60)
    assert out.returncode == 0, out.stderr
    p = tiny_catalog.find("tiny-pack/sound")
    assert out.stdout == render_prompt(p, vectors.load(p).visible)


def test_cached_vectors_render_the_same_prompt(tiny_catalog):
    p = tiny_catalog.find("tiny-pack/sound")
    fresh = render_prompt(p, vectors.load(p).visible)  # generated and written to the cache
    cached = render_prompt(p, vectors.load(p).visible)  # read back from the cache
    assert fresh == cached
