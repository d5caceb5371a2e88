"""Instance seeds: fresh hidden vectors and Q&A items drawn from a seed, the release's by default.

What must hold: a seed draws other instances than the release and the same ones every time;
no option is the release; the expected values are the reference's; the visible examples (and
so the code-mode prompt) never change, and no fresh hidden vector is one of them; the cache is
keyed on the seed; a run records its seed and nothing mixes runs of different seeds.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pytest

from grader.errors import ConfigError
from grader.packs import vectors
from grader.packs.problems import Catalog, load_pack
from grader.packs.prompt import render_prompt
from grader.packs.qa import LETTERS, qa_items, render_qa_prompt
from grader.packs.vectors import derive_seed, parse_instance_seed

ROOT = Path(__file__).resolve().parents[2]
PERF_CORE = ROOT / "problems" / "perf-core"
PERF_MODEL = ROOT / "problems" / "perf-model"


def _keys(vs) -> list[str]:
    return [json.dumps(v.args) for v in vs]


def _instance(prompt: str) -> int:
    """The x a Q&A prompt asks about (the examples before it show other calls)."""
    return int(re.search(r"## The instance.*?double\(x=(-?\d+)\)", prompt, re.S).group(1))


@pytest.fixture(scope="module")
def core():
    return Catalog([PERF_CORE])


# ------------------------------------------------------------------------------------------
# vectors
# ------------------------------------------------------------------------------------------

def test_vectors_differ_between_seeds_and_repeat_for_the_same_seed(tiny_catalog):
    p = tiny_catalog.find("tiny-pack/sound")
    release = vectors.load(p)
    a, b = vectors.load(p, instance_seed=1), vectors.load(p, instance_seed=2)
    assert release.instance_seed is None and a.instance_seed == 1
    assert len({tuple(_keys(release.hidden)), tuple(_keys(a.hidden)), tuple(_keys(b.hidden))}) == 3
    # the same seed draws the same vectors, cached or not; no seed is the release's
    assert vectors.load(p, instance_seed=1, use_cache=False) == a == vectors.load(p, instance_seed=1)
    assert vectors.load(p, use_cache=False) == release == vectors.load(p, instance_seed=parse_instance_seed("release"))
    assert a.digest != release.digest != b.digest
    # the ids, the count and the visible examples (the prompt) are the release's
    assert [v.id for v in a.hidden] == [v.id for v in release.hidden] and len(a.hidden) == 50
    assert a.visible == b.visible == release.visible
    assert render_prompt(p, a.visible) == render_prompt(p, release.visible)
    # the tiny generator draws from 2,000 integers: most fresh inputs are new ones
    assert len(set(_keys(a.hidden)) & set(_keys(release.hidden))) < 10


def test_expected_values_of_a_fresh_seed_are_the_references(tiny_catalog):
    p = tiny_catalog.find("tiny-pack/sound")
    fresh = vectors.load(p, instance_seed=9)
    assert all(v.expected == {"y": 2 * v.args[0], "half": v.args[0] / 2} for v in fresh.hidden)


def test_real_size_vectors_are_drawn_fresh_too_and_answered_by_the_reference():
    p = Catalog([PERF_MODEL]).find("perf-model/f11-systolic-ws-timeline")
    release, fresh = vectors.load(p), vectors.load(p, instance_seed=4242)
    real = [v for v in fresh.hidden if vectors.is_real(v)]
    assert real and len(real) == sum(vectors.is_real(v) for v in release.hidden)
    assert not set(_keys(fresh.hidden)) & set(_keys(release.hidden))
    for v in fresh.hidden:
        assert v.expected == p.reference_fn(*json.loads(json.dumps(v.args))), v.id


def test_no_fresh_hidden_vector_is_a_visible_example(tiny_catalog):
    p = tiny_catalog.find("tiny-pack/sound")
    shown = set(_keys(vectors.load(p).visible))
    # a seed whose plain draw hits a visible example (the tiny input space makes one likely)
    seed = next(s for s in range(1, 500) if shown & set(_keys(vectors.generate(p, "hidden", instance_seed=s))))
    raw = vectors.generate(p, "hidden", instance_seed=seed)
    fresh = vectors.load(p, instance_seed=seed)
    assert not shown & set(_keys(fresh.hidden))
    redrawn = [i for i, (x, y) in enumerate(zip(raw, fresh.hidden)) if x.args != y.args]
    assert redrawn and all(json.dumps(raw[i].args) in shown for i in redrawn)  # only those were redrawn
    assert all(v.expected == {"y": 2 * v.args[0], "half": v.args[0] / 2} for v in fresh.hidden)


def test_problems_and_kinds_draw_from_independent_streams(tiny_catalog):
    sound, weak = tiny_catalog.find("tiny-pack/sound"), tiny_catalog.find("tiny-pack/weak-variant")
    # the two tiny problems share their generator and seeds: the release gives them the same inputs
    assert _keys(vectors.load(sound).hidden) == _keys(vectors.load(weak).hidden)
    assert _keys(vectors.load(sound, instance_seed=3).hidden) != _keys(vectors.load(weak, instance_seed=3).hidden)
    derived = {derive_seed(3, p, kind, 11) for p in (sound, weak) for kind in ("hidden", "real", "qa")}
    assert len(derived) == 6
    assert derive_seed(None, sound, "hidden", 11) == 11
    with pytest.raises(ValueError, match="release's for every instance seed"):
        vectors.generate(sound, "visible", instance_seed=3)


@pytest.mark.parametrize("text, seed", [(None, None), ("release", None), ("Release", None), ("7", 7), (7, 7),
                                        ("0", 0), (" 31 ", 31)])
def test_instance_seeds_parse(text, seed):
    assert parse_instance_seed(text) == seed


@pytest.mark.parametrize("text", ["-1", -1, "x", "1.5", 1.5, True, ""])
def test_bad_instance_seeds_are_clear_errors(text):
    with pytest.raises(ConfigError, match="non-negative integer or 'release'"):
        parse_instance_seed(text)


def test_the_cache_is_keyed_on_content_and_seed(pack_copy, tmp_path, monkeypatch):
    monkeypatch.setenv("PERFGRADE_CACHE", str(tmp_path / "cache"))
    p = next(q for q in load_pack(pack_copy).problems if q.id == "sound")
    folder = tmp_path / "cache" / "vectors"
    release, one, two = vectors.load(p), vectors.load(p, instance_seed=1), vectors.load(p, instance_seed=2)
    assert sorted(f.name for f in folder.glob("*.json")) == sorted(
        [f"{p.content_hash}.json", f"{p.content_hash}-seed-1.json", f"{p.content_hash}-seed-2.json"])
    assert json.loads((folder / f"{p.content_hash}-seed-1.json").read_text())["instance_seed"] == 1
    # an entry is read back under its own seed only: seed 2's vectors filed under seed 1 are recomputed
    (folder / f"{p.content_hash}-seed-1.json").write_text((folder / f"{p.content_hash}-seed-2.json").read_text())
    assert vectors.load(p, instance_seed=1) == one != two
    # the cache is really read: a marked entry comes back as it is (a release entry written before
    # instance seeds existed has no seed field, and is the release's)
    path = folder / f"{p.content_hash}.json"
    data = json.loads(path.read_text())
    del data["instance_seed"]
    data["hidden"][0]["expected"]["y"] = 123456
    path.write_text(json.dumps(data))
    assert vectors.load(p).hidden[0].expected["y"] == 123456
    assert vectors.load(p, instance_seed=2) == two
    # a changed problem is a new key for every seed
    toml = pack_copy / "sound" / "problem.toml"
    toml.write_text(toml.read_text().replace("hidden_count = 50", "hidden_count = 51"))
    p2 = next(q for q in load_pack(pack_copy).problems if q.id == "sound")
    assert len(vectors.load(p2, instance_seed=1).hidden) == 51 and p2.content_hash != p.content_hash
    assert vectors.load(p2).hidden[0].expected["y"] != 123456 and release.hidden


# ------------------------------------------------------------------------------------------
# Q&A items
# ------------------------------------------------------------------------------------------

def test_qa_items_follow_the_seed(tiny_catalog):
    p = tiny_catalog.find("tiny-pack/sound")
    release = qa_items(p, vectors.load(p).hidden, 5)
    hidden7 = vectors.load(p, instance_seed=7).hidden
    seven = qa_items(p, hidden7, 5, instance_seed=7)
    assert [i.id for i in seven] == [i.id for i in release] == ["q0", "q1", "q2", "q3", "q4"]
    assert [i.args for i in seven] != [i.args for i in release]
    assert seven == qa_items(p, hidden7, 5, instance_seed=7)  # the same seed, the same items
    assert qa_items(p, vectors.load(p).hidden, 5, instance_seed=None) == release
    assert all(i.expected == {"y": 2 * i.args[0], "half": i.args[0] / 2} for i in seven)
    assert not set(json.dumps(i.args) for i in seven) & set(_keys(hidden7))  # never a hidden input of the seed
    visible = vectors.load(p).visible
    assert render_qa_prompt(p, seven[0], visible) != render_qa_prompt(p, release[0], visible)
    assert _instance(render_qa_prompt(p, seven[0], visible)) == seven[0].args[0]


def test_fresh_qa_items_never_show_a_hidden_input_of_the_release(tiny_catalog):
    p = tiny_catalog.find("tiny-pack/sound")
    secret = set(_keys(vectors.load(p).hidden))

    def plain_draw(s):  # the items' pool as it would be with only the seed's own hidden inputs excluded
        own = vectors.hidden_inputs(vectors.generate(p, "hidden", instance_seed=s))
        return vectors.generate(p, "qa", exclude=own, count=5, instance_seed=s)

    seed = next(s for s in range(1, 500) if secret & set(_keys(plain_draw(s))))
    items = qa_items(p, vectors.load(p, instance_seed=seed).hidden, 5, instance_seed=seed)
    assert not secret & {json.dumps(i.args) for i in items}


def test_choice_items_of_a_fresh_seed_are_answered_by_the_reference_and_balanced(core):
    p = core.find("perf-core/f16-tiling-traffic-ranking")
    release = [it for it in qa_items(p, vectors.load(p).hidden, 8) if it.kind == "choice"]
    fresh = [it for it in qa_items(p, vectors.load(p, instance_seed=5).hidden, 8, instance_seed=5)
             if it.kind == "choice"]
    assert len(fresh) == len(release) == 16 and [it.id for it in fresh] == [it.id for it in release]
    assert [it.args for it in fresh] != [it.args for it in release]
    for j in (0, 1):
        counts = Counter(it.expected["answer"] for it in fresh if it.id.startswith(f"c{j}."))
        assert max(counts.values()) - min(counts.values()) <= 2, counts
    for it in fresh:
        if not it.id.startswith("c0."):
            continue
        out = p.reference_fn(*json.loads(json.dumps(it.args)))
        best = min((i for i, ok in enumerate(out["valid"]) if ok), key=lambda i: out["traffic"][i])
        assert it.options[LETTERS.index(it.expected["answer"])].startswith(f"candidates[{best}] = ")


def test_the_sequence_of_correct_letters_moves_with_the_seed(core):
    """The release's first item of a question is always answered A (the balancing starts there);
    a fresh seed starts elsewhere, so item c0.0 is not A for every seed."""
    p = core.find("perf-core/f4-gemm-dram-traffic")
    first = {s: next(it for it in qa_items(p, vectors.load(p, instance_seed=s).hidden, 5, instance_seed=s)
                     if it.id == "c0.0").expected["answer"] for s in range(1, 9)}
    assert next(it for it in qa_items(p, vectors.load(p).hidden, 5) if it.id == "c0.0").expected["answer"] == "A"
    assert len(set(first.values())) > 1, first


def test_every_perf_core_problem_draws_fresh_instances(core):
    for p in core.problems():
        release, fresh = vectors.load(p), vectors.load(p, instance_seed=20261205)
        assert len(fresh.hidden) == len(release.hidden), p.qualified_id
        keys = _keys(fresh.hidden)
        assert len(set(keys)) == len(keys) and not set(keys) & set(_keys(fresh.visible)), p.qualified_id
        assert keys != _keys(release.hidden), p.qualified_id
        items = qa_items(p, fresh.hidden, 5, instance_seed=20261205)
        assert Counter(i.kind for i in items) == Counter(i.kind for i in qa_items(p, release.hidden, 5)), p.qualified_id
