"""Hidden vectors: deterministic, cached on content, separate from the visible examples."""

from __future__ import annotations

import json

import pytest

from grader.packs import vectors
from grader.errors import ReferenceError_
from grader.packs.problems import load_pack


def test_deterministic_and_seeded_per_index(tiny_catalog):
    p = tiny_catalog.find("tiny-pack/sound")
    a = vectors.generate(p, "hidden")
    b = vectors.generate(p, "hidden")
    assert a == b and len(a) == 50
    assert all(v.expected == {"y": 2 * v.args[0], "half": v.args[0] / 2} for v in a)
    # the tiny generator draws from a small range: a visible draw collides with a hidden one
    # and is redrawn, so no hidden vector ever reaches the prompt
    raw_visible = vectors.generate(p, "visible")
    hidden_keys = {json.dumps(v.args) for v in a}
    assert not {json.dumps(v.args) for v in raw_visible}.isdisjoint(hidden_keys)
    vis = vectors.generate(p, "visible", exclude=vectors.hidden_inputs(a))
    assert [v.id for v in vis] == ["v0", "v1"]
    assert {json.dumps(v.args) for v in vis}.isdisjoint(hidden_keys)
    assert vectors.load(p).visible == vis


def test_cache_is_keyed_on_content(pack_copy, tmp_path, monkeypatch):
    monkeypatch.setenv("PERFGRADE_CACHE", str(tmp_path / "cache"))
    p = load_pack(pack_copy).problems[1]
    vs = vectors.load(p)
    files = list((tmp_path / "cache" / "vectors").glob("*.json"))
    assert [f.stem for f in files] == [p.content_hash]
    assert vectors.load(p).hidden == vs.hidden
    # a changed seed is a changed problem: new vectors under a new key
    toml = pack_copy / "sound" / "problem.toml"
    toml.write_text(toml.read_text().replace("hidden_seed = 11", "hidden_seed = 13"))
    p2 = [q for q in load_pack(pack_copy).problems if q.id == "sound"][0]
    vs2 = vectors.load(p2)
    assert vs2.hidden != vs.hidden and len(list((tmp_path / "cache" / "vectors").glob("*.json"))) == 2


def test_damaged_cache_entry_is_recomputed(tiny_catalog, tmp_path, monkeypatch):
    monkeypatch.setenv("PERFGRADE_CACHE", str(tmp_path / "c"))
    p = tiny_catalog.find("tiny-pack/sound")
    vs = vectors.load(p)
    path = tmp_path / "c" / "vectors" / f"{p.content_hash}.json"
    path.write_text("{broken")
    assert vectors.load(p).hidden == vs.hidden


def test_reference_errors_name_the_vector(tiny_catalog, monkeypatch):
    p = tiny_catalog.find("tiny-pack/sound")
    refs = p.trusted.references
    monkeypatch.setitem(refs, "tiny_testing.double", lambda x: {"y": 1 / 0})
    with pytest.raises(ReferenceError_, match="hidden vector h00: reference tiny_testing.double raised ZeroDivisionError"):
        vectors.generate(p, "hidden")
    monkeypatch.setitem(refs, "tiny_testing.double", lambda x: {"y": 2 * x})
    with pytest.raises(ReferenceError_, match="declares"):
        vectors.generate(p, "hidden")
    monkeypatch.setitem(refs, "tiny_testing.double", lambda x: {"y": 2.0 * x, "half": 0.0})
    with pytest.raises(ReferenceError_, match="output 'y' expected an integer"):
        vectors.generate(p, "hidden")
    monkeypatch.setitem(refs, "tiny_testing.double", lambda x: {"y": 2, "half": float("nan")})
    with pytest.raises(ReferenceError_, match="non-finite"):
        vectors.generate(p, "hidden")


BUILD_ONCE = """
import sys, time
from pathlib import Path
from grader.packs import vectors
from grader.packs.problems import load_pack
counter = Path(sys.argv[2])
made = vectors.generate_hidden
def slow(problem, **kw):
    with counter.open("a") as f:
        f.write("built\\n")
    time.sleep(1.5)  # long enough for the other process to ask for the same entry meanwhile
    return made(problem, **kw)
vectors.generate_hidden = slow
p = next(q for q in load_pack(Path(sys.argv[1])).problems if q.id == "sound")
print(vectors.load(p).hidden[0].args)
"""


def test_two_processes_build_one_cache_entry_once(tmp_path):
    """Processes sharing a cache (xdist workers, two evals, Ray workers on one machine) that want
    the same vectors at once build them once: the second waits for the first and reads its file."""
    import os
    import subprocess
    import sys

    from support import ROOT, TINY_PACK

    env = {**os.environ, "PERFGRADE_CACHE": str(tmp_path / "cache")}
    counter = tmp_path / "builds.txt"
    procs = [subprocess.Popen([sys.executable, "-c", BUILD_ONCE, str(TINY_PACK), str(counter)], cwd=ROOT, env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [err for _, err in outs]
    assert outs[0][0] == outs[1][0] and outs[0][0].strip()
    assert counter.read_text().splitlines() == ["built"]
