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

from support import TINY_PACK

from fakes.model_server import FakeModelServer
from grader.cli import main
from grader.errors import ConfigError
from grader.packs import vectors
from grader.packs.problems import Catalog, load_pack
from grader.packs.prompt import render_prompt
from grader.packs.qa import LETTERS, qa_items, render_qa_prompt
from grader.packs.vectors import derive_seed, parse_instance_seed

ROOT = Path(__file__).resolve().parents[2]
PERF_CORE = ROOT / "problems" / "perf-core"
PERF_MODEL = ROOT / "problems" / "perf-model"
TINY = ["--pack-path", str(TINY_PACK), "--pack", "tiny-pack"]


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


def test_problems_show_prints_a_seeds_qa_prompt_and_the_same_code_prompt(tiny_catalog, capsys):
    p = tiny_catalog.find("tiny-pack/sound")
    show = ["problems", "show", "tiny-pack/sound", "--pack-path", str(TINY_PACK)]
    assert main(show) == 0
    code = capsys.readouterr().out
    assert main([*show, "--instance-seed", "7"]) == 0 and capsys.readouterr().out == code
    assert main([*show, "--qa", "q1", "--instance-seed", "7"]) == 0
    item = qa_items(p, vectors.load(p, instance_seed=7).hidden, 5, instance_seed=7)[1]
    assert capsys.readouterr().out == render_qa_prompt(p, item, vectors.load(p).visible)
    assert main([*show, "--qa", "--instance-seed", "seven"]) == 2
    assert "non-negative integer or 'release'" in capsys.readouterr().err


# ------------------------------------------------------------------------------------------
# runs: manifest, resume, report, leaderboard, compare
# ------------------------------------------------------------------------------------------

def _right_answer(prompt: str, body: dict) -> str:
    x = _instance(prompt)
    return f"```json\n{json.dumps({'y': 2 * x, 'half': x / 2})}\n```"


def _qa_eval(tmp_path, name: str, *extra: str, answers=_right_answer) -> tuple[int, list[int]]:
    with FakeModelServer(answers) as srv:
        rc = main(["eval", "--mode", "qa", *TINY, "--problem", "sound", "--qa-items", "3", "--samples", "2",
                   "--model", "fake", "--base-url", srv.base_url, "--api-key-env", "NONE", "--no-cache",
                   "--runs-dir", str(tmp_path), "--name", name, "--quiet", *extra])
        asked = [_instance(r["messages"][-1]["content"]) for r in srv.requests]
    return rc, asked


def test_eval_asks_the_seeds_items_and_records_the_seed(tiny_catalog, tmp_path, capsys):
    p = tiny_catalog.find("tiny-pack/sound")
    rc, asked = _qa_eval(tmp_path, "s7", "--instance-seed", "7")
    assert rc == 0
    want = [i.args[0] for i in qa_items(p, vectors.load(p, instance_seed=7).hidden, 3, instance_seed=7)]
    assert sorted(asked) == sorted(want * 2)  # every fresh item, for each of the two samples
    release = [i.args[0] for i in qa_items(p, vectors.load(p).hidden, 3)]
    assert not set(asked) & set(release)
    manifest = json.loads((tmp_path / "s7" / "manifest.json").read_text())
    assert manifest["instance_seed"] == 7
    assert manifest["problems"][0]["vectors_digest"] == vectors.load(p, instance_seed=7).digest
    assert "instance seed 7" in capsys.readouterr().err

    assert main(["report", str(tmp_path / "s7"), "--json", "-"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["run"]["instance_seed"] == 7 and summary["qa"]["headline"]["accuracy"] == 1.0
    assert main(["report", str(tmp_path / "s7")]) == 0
    assert "instance seed 7" in capsys.readouterr().out

    rc, asked = _qa_eval(tmp_path, "release")
    assert rc == 0 and sorted(asked) == sorted(release * 2)
    assert json.loads((tmp_path / "release" / "manifest.json").read_text())["instance_seed"] is None
    assert main(["report", str(tmp_path / "release")]) == 0
    assert "instance seed release" in capsys.readouterr().out


def test_resume_refuses_another_seed_and_keeps_its_own(tmp_path, capsys):
    assert _qa_eval(tmp_path, "s7", "--instance-seed", "7")[0] == 0
    capsys.readouterr()
    for other in ("8", "release"):
        assert main(["eval", "--resume", str(tmp_path / "s7"), "--pack-path", str(TINY_PACK),
                     "--instance-seed", other, "--quiet"]) == 2
        err = capsys.readouterr().err
        assert "is graded on instance seed 7, not on" in err and "would mix instance seeds" in err
    # without the option (or with the same seed) the run resumes on its own seed: its vectors and
    # items are the ones it was graded on (a different draw would be refused), nothing is redone
    journal = tmp_path / "s7" / "journal.jsonl"
    done = sum(json.loads(line)["type"] == "completion" for line in journal.read_text().splitlines())
    for extra in ([], ["--instance-seed", "7"]):
        assert main(["eval", "--resume", str(tmp_path / "s7"), "--pack-path", str(TINY_PACK), "--quiet", *extra]) == 0
    assert sum(json.loads(line)["type"] == "completion" for line in journal.read_text().splitlines()) == done == 6


def test_a_run_written_before_instance_seeds_reads_as_the_release(tmp_path, capsys):
    assert _qa_eval(tmp_path, "old")[0] == 0
    path = tmp_path / "old" / "manifest.json"
    data = json.loads(path.read_text())
    del data["instance_seed"]
    path.write_text(json.dumps(data, indent=2))
    capsys.readouterr()
    assert main(["report", str(tmp_path / "old"), "--json", "-"]) == 0
    assert json.loads(capsys.readouterr().out)["run"]["instance_seed"] is None
    assert main(["eval", "--resume", str(tmp_path / "old"), "--pack-path", str(TINY_PACK), "--instance-seed", "3",
                 "--quiet"]) == 2
    assert "graded on the release's instances, not on instance seed 3" in capsys.readouterr().err
    # it sits on a board beside a new release run
    assert _qa_eval(tmp_path, "new")[0] == 0
    capsys.readouterr()
    assert main(["report", str(tmp_path / "old"), str(tmp_path / "new"), "--json", "-"]) == 0
    assert json.loads(capsys.readouterr().out)["instance_seed"] is None


def test_leaderboard_and_compare_never_mix_seeds(tmp_path, capsys):
    for name, extra in (("rel", []), ("s7", ["--instance-seed", "7"]), ("s7b", ["--instance-seed", "7"])):
        assert _qa_eval(tmp_path, name, *extra)[0] == 0
    capsys.readouterr()
    assert main(["report", str(tmp_path / "rel"), str(tmp_path / "s7"), str(tmp_path / "s7b")]) == 2
    err = capsys.readouterr().err
    assert "the release's instances: fake (rel); instance seed 7: fake (s7), fake (s7b)" in err
    assert "never mixes instance seeds" in err
    assert main(["report", str(tmp_path / "s7"), str(tmp_path / "s7b"), "--json", "-"]) == 0
    board = json.loads(capsys.readouterr().out)
    assert board["instance_seed"] == 7 and [r["instance_seed"] for r in board["runs"]] == [7, 7]
    assert main(["report", str(tmp_path / "s7"), str(tmp_path / "s7b")]) == 0
    assert "leaderboard (instance seed 7)" in capsys.readouterr().out

    assert main(["compare", str(tmp_path / "rel"), str(tmp_path / "s7"), "--mode", "qa"]) == 2
    err = capsys.readouterr().err
    assert "graded on different instances" in err and "rel: the release's instances; s7: instance seed 7" in err
    assert main(["compare", str(tmp_path / "s7"), str(tmp_path / "s7b"), "--mode", "qa", "--json"]) == 0
    c = json.loads(capsys.readouterr().out)
    assert c["instance_seed"] == 7 and c["shared_samples"] == 6 and c["diff"] == 0.0


# ------------------------------------------------------------------------------------------
# export and reward
# ------------------------------------------------------------------------------------------

def test_export_with_a_seed_writes_its_qa_items_and_records_it(tiny_catalog, tmp_path, capsys):
    out, rel = tmp_path / "seed.jsonl", tmp_path / "release.jsonl"
    assert main(["problems", "export", "tiny-pack", "--pack-path", str(TINY_PACK), "--out", str(out),
                 "--mode", "both", "--qa-items", "2", "--instance-seed", "7"]) == 0
    assert "instance seed 7" in capsys.readouterr().err
    assert main(["problems", "export", "tiny-pack", "--pack-path", str(TINY_PACK), "--out", str(rel),
                 "--mode", "both", "--qa-items", "2"]) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    old = {r["problem"]: r for r in map(json.loads, rel.read_text().splitlines())}
    assert {r["instance_seed"] for r in rows} == {7} and {r["extra_info"]["instance_seed"] for r in rows} == {7}
    assert {r["instance_seed"] for r in old.values()} == {None}
    text = out.read_text()
    for r in rows:
        if r.get("mode") != "qa":  # a code-mode prompt is the same for every seed
            assert r["prompt_text"] == old[r["problem"]]["prompt_text"]
            continue
        pid, item = r["problem"].rsplit(":", 1)
        p = tiny_catalog.find(pid)
        fresh = vectors.load(p, instance_seed=7)
        it = {i.id: i for i in qa_items(p, fresh.hidden, 2, instance_seed=7)}[item]
        assert r["prompt_text"] == render_qa_prompt(p, it, fresh.visible) != old[r["problem"]]["prompt_text"]
        assert json.dumps(it.expected, separators=(", ", ": ")) not in r["prompt_text"]
        assert _instance(r["prompt_text"]) == it.args[0]
    for p in tiny_catalog.problems("tiny-pack"):  # no fresh hidden input is exported
        for v in vectors.load(p, instance_seed=7).hidden:
            assert f"double(x={v.args[0]})\\n" not in text, (p.id, v.id)


def test_qa_rewards_grade_the_rewarders_seed_and_the_adapters_refuse_another(tiny_catalog):
    from grader.grading.execution import GradingEngine
    from grader.reward import Rewarder, make_trl_reward_func
    from grader.reward.adapters import _verl_seeds

    p = tiny_catalog.find("tiny-pack/sound")
    fresh = qa_items(p, vectors.load(p, instance_seed=7).hidden, 5, instance_seed=7)[0]
    release = qa_items(p, vectors.load(p).hidden, 5)[0]
    assert fresh.expected != release.expected

    def answer(item) -> str:
        return f"```json\n{json.dumps(item.expected)}\n```"

    key = f"{p.qualified_id}:{fresh.id}"
    with Rewarder(engine=GradingEngine(), catalog=tiny_catalog, instance_seed=7) as r7, \
            Rewarder(engine=GradingEngine(), catalog=tiny_catalog) as r0:
        assert r7.instance_seed == 7 and r0.instance_seed is None
        assert r7.score(key, [answer(fresh), answer(release)], mode="qa").verdicts == ["correct", "wrong_answer"]
        assert r0.score(key, [answer(fresh), answer(release)], mode="qa").verdicts == ["wrong_answer", "correct"]
        # TRL passes the dataset's columns: rows of the rewarder's seed are graded, others refused
        reward7 = make_trl_reward_func(r7)
        assert reward7(prompts=["p"] * 2, completions=[answer(fresh), answer(release)], problem=[key] * 2,
                       instance_seed=[7, 7]) == [1.0, 0.0]
        assert reward7(prompts=["p"], completions=[answer(fresh)], problem=[key]) == [1.0]  # an older export
        with pytest.raises(ConfigError, match="rows were exported for the release's instances, but the rewarder "
                                              "grades instance seed 7"):
            reward7(prompts=["p"], completions=[answer(fresh)], problem=[key], instance_seed=[None])
        with pytest.raises(ConfigError, match="exported for instance seed 7, but the rewarder grades the release's"):
            make_trl_reward_func(r0)(prompts=["p"], completions=["x"], problem=[key], instance_seed=[7])
        # verl: the seed travels in extra_info
        _verl_seeds(r7, [{"problem": key, "instance_seed": 7}, None, {"problem": key}])
        with pytest.raises(ConfigError, match="instance seed 3"):
            _verl_seeds(r7, [{"problem": key, "instance_seed": 3}])
    with pytest.raises(ConfigError, match="non-negative integer"):
        Rewarder(engine=GradingEngine(), catalog=tiny_catalog, instance_seed=-2)


# ------------------------------------------------------------------------------------------
# code mode through the real sandbox: a model that learned the release's hidden vectors
# ------------------------------------------------------------------------------------------

CORRECT = "def double(x):\n    return {'y': 2 * x, 'half': x / 2}\n"


def _memorizer(p) -> str:
    """Code that answers the release's hidden vectors from a table and anything else wrongly."""
    table = {v.args[0]: v.expected for v in vectors.load(p).hidden}
    return f"TABLE = {table!r}\n\ndef double(x):\n    return TABLE.get(x, {{'y': 0, 'half': 0.0}})\n"


def _fenced(code: str) -> str:
    return f"Here it is.\n\n```python\n{code}```\n"


@pytest.mark.docker
def test_a_private_seed_fails_code_that_memorized_the_release(tiny_catalog, tmp_path, capsys):
    p = tiny_catalog.find("tiny-pack/sound")
    completions = tmp_path / "c.jsonl"
    completions.write_text("".join(json.dumps({"problem": p.qualified_id, "sample": i, "text": _fenced(code)}) + "\n"
                                   for i, code in enumerate([_memorizer(p), CORRECT])))
    verdicts = {}
    for name, extra in (("release", []), ("s7", ["--instance-seed", "7"])):
        assert main(["eval", *TINY, "--completions", str(completions), "--workers", "2", "--runs-dir", str(tmp_path),
                     "--name", name, "--quiet", *extra]) == 0
        grades = [json.loads(line) for line in (tmp_path / name / "journal.jsonl").read_text().splitlines()]
        verdicts[name] = [g["grade"]["verdict"] for g in sorted((g for g in grades if g["type"] == "grade"),
                                                                 key=lambda g: g["sample"])]
    assert verdicts == {"release": ["pass", "pass"], "s7": ["wrong_answer", "pass"]}
    m7 = json.loads((tmp_path / "s7" / "manifest.json").read_text())
    assert m7["instance_seed"] == 7 and m7["problems"][0]["n_hidden"] == 50
    assert m7["problems"][0]["vectors_digest"] == vectors.load(p, instance_seed=7).digest != vectors.load(p).digest
    capsys.readouterr()
    assert main(["report", str(tmp_path / "s7")]) == 0
    assert "instance seed 7" in capsys.readouterr().out


@pytest.mark.docker
def test_rewards_with_a_seed_grade_its_hidden_vectors_and_verl_reads_it_from_the_environment(
        tiny_registry, tiny_catalog, monkeypatch):
    import importlib.util
    import sys

    from grader.reward import Rewarder

    p = tiny_catalog.find("tiny-pack/sound")
    fresh = vectors.load(p, instance_seed=7).hidden
    known = {v.args[0] for v in vectors.load(p).hidden}
    share = sum(v.args[0] in known for v in fresh) / len(fresh)  # fresh inputs the table happens to hold
    texts = [_fenced(_memorizer(p)), _fenced(CORRECT)]
    with Rewarder(catalog=tiny_catalog, workers=2, instance_seed=7) as r:
        out = r.score(p.qualified_id, texts, partial=True)
        assert out.verdicts == ["wrong_answer", "pass"]
        assert out.rewards == [pytest.approx(share), 1.0] and share < 0.2

    monkeypatch.setenv("PERFGRADE_PACKS", str(TINY_PACK))
    monkeypatch.setenv("PERFGRADE_REWARD_INSTANCE_SEED", "7")
    spec = importlib.util.spec_from_file_location("custom_module", ROOT / "grader" / "reward" / "adapters.py")
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "custom_module", module)
    spec.loader.exec_module(module)
    try:
        info = {"problem": p.qualified_id, "split": "train", "instance_seed": 7}
        assert module.verl_compute_score_batch(data_sources=["perfgrade/tiny-pack"] * 2, solution_strs=texts,
                                               ground_truths=[p.qualified_id] * 2, extra_infos=[info, info]) == [0.0, 1.0]
        with pytest.raises(ConfigError, match="exported for the release's instances"):
            module.verl_compute_score(data_source="perfgrade/tiny-pack", solution_str=texts[1],
                                      ground_truth=p.qualified_id, extra_info={**info, "instance_seed": None})
    finally:
        module.close_default_rewarder()
