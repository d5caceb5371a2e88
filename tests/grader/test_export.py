"""problems export: a pack's prompts as a training dataset, with nothing hidden in it."""

from __future__ import annotations

import json
from pathlib import Path

from support import TINY_PACK

from grader.cli import main
from grader.packs import vectors
from grader.packs.export import export_rows, split_of
from grader.packs.problems import Catalog
from grader.packs.prompt import render_prompt

ROOT = Path(__file__).resolve().parents[2]
PERF_CORE = ROOT / "problems" / "perf-core"
FIELDS = {"problem", "pack", "pack_version", "id", "title", "family", "difficulty", "tier", "split", "prompt",
          "prompt_text", "entry_point", "content_hash", "prompt_version", "format", "data_source", "ability",
          "reward_model", "extra_info", "instance_seed"}


def _compact(value) -> str:
    return json.dumps(value, separators=(", ", ": "))


def test_export_writes_one_row_per_problem_with_the_prompt_a_model_sees(tiny_registry, tmp_path, capsys):
    out = tmp_path / "tiny.jsonl"
    rc = main(["problems", "export", "tiny-pack", "--pack-path", str(TINY_PACK), "--out", str(out)])
    assert rc == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    catalog = Catalog([TINY_PACK])
    problems = catalog.problems("tiny-pack")
    assert [r["problem"] for r in rows] == [p.qualified_id for p in problems]
    for row, p in zip(rows, problems):
        assert set(row) == FIELDS
        text = render_prompt(p, vectors.load(p).visible)  # exactly what `problems show` prints
        assert row["prompt"] == [{"role": "user", "content": text}] and row["prompt_text"] == text
        assert (row["pack"], row["family"], row["difficulty"]) == ("tiny-pack", p.family, p.difficulty)
        assert row["split"] == split_of(p.qualified_id, 0, 0.2) and row["split"] in ("train", "test")
        assert row["reward_model"] == {"style": "rule", "ground_truth": p.qualified_id}
        assert row["extra_info"] == {"problem": p.qualified_id, "split": row["split"], "instance_seed": None}
        assert row["instance_seed"] is None  # the release's instances
    assert "wrote 3 prompts of tiny-pack" in capsys.readouterr().err


def test_no_hidden_vector_and_no_expected_output_of_one_is_exported():
    problems = Catalog([PERF_CORE]).problems("perf-core")
    text = "".join(json.dumps(r) for r in export_rows(problems))
    for p in problems:
        vs = vectors.load(p)
        for v in vs.visible:  # the visible examples are in the prompt...
            assert json.dumps(_compact(v.expected))[1:-1] in text, p.qualified_id
        for v in vs.hidden:  # ...the hidden ones, inputs or outputs, are not
            call = ", ".join(f"{a.name}={_compact(x)}" for a, x in zip(p.data.signature.params, v.args))
            assert json.dumps(call)[1:-1] not in text, f"{p.qualified_id} {v.id}: hidden input exported"
            assert json.dumps(_compact(v.expected))[1:-1] not in text, f"{p.qualified_id} {v.id}: expected output"


def test_the_split_is_a_seeded_hash_of_the_problem_id(tiny_registry, tmp_path):
    ids = [f"pack/p{i}" for i in range(400)]
    default = [split_of(i) for i in ids]
    assert default == [split_of(i, 0, 0.2) for i in ids]  # deterministic
    assert 0.12 < default.count("test") / len(ids) < 0.28
    assert default != [split_of(i, seed=7) for i in ids]  # the seed changes it
    assert {split_of(i, test_share=0.0) for i in ids} == {"train"}
    assert {split_of(i, test_share=1.0) for i in ids} == {"test"}
    # a problem keeps its side at a larger share once it is in the test split
    assert all(split_of(i, 3, 0.5) == "test" for i in ids if split_of(i, 3, 0.2) == "test")

    out = tmp_path / "all-test.jsonl"
    assert main(["problems", "export", "tiny-pack", "--pack-path", str(TINY_PACK), "--out", str(out),
                 "--split-seed", "5", "--test-share", "1"]) == 0
    assert {json.loads(line)["split"] for line in out.read_text().splitlines()} == {"test"}
    assert main(["problems", "export", "tiny-pack", "--pack-path", str(TINY_PACK), "--out", str(out),
                 "--test-share", "1.5"]) == 2


def test_qa_export_rows_are_keyed_by_item_and_hold_no_answer(tmp_path):
    import json

    from grader.cli import main
    from grader.packs import vectors
    from grader.packs.problems import Catalog
    from grader.packs.qa import qa_items

    out = tmp_path / "qa.jsonl"
    assert main(["problems", "export", "perf-core", "--out", str(out), "--mode", "both", "--qa-items", "2"]) == 0
    rows = [json.loads(l) for l in out.read_text().splitlines()]
    cat = Catalog()
    code_rows = [r for r in rows if r.get("mode") != "qa"]
    qa_rows = [r for r in rows if r.get("mode") == "qa"]
    assert len(code_rows) == len(cat.problems("perf-core"))
    for r in qa_rows:
        pid, item = r["problem"].rsplit(":", 1)
        p = cat.find(pid)
        it = {i.id: i for i in qa_items(p, vectors.load(p).hidden, 2)}[item]
        assert r["reward_model"]["ground_truth"] == r["problem"] and r["split"] == next(
            c["split"] for c in code_rows if c["problem"] == pid)
        if it.kind == "value":
            assert json.dumps(it.expected, separators=(", ", ": ")) not in r["prompt_text"]
