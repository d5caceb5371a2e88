"""Pack loading: every malformed file gets one clear error naming the file and the field."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from grader.errors import PackError, ProblemNotFound
from grader.packs.problems import Catalog, PackFile, ProblemFile, load_pack, parse_type, write_schemas


def edit(path, pattern, replacement, count=1):
    text = path.read_text()
    new, n = re.subn(pattern, replacement, text, count=count, flags=re.MULTILINE)
    assert n, f"pattern {pattern!r} not found in {path}"
    path.write_text(new)


def load_error(pack_dir) -> PackError:
    with pytest.raises(PackError) as ei:
        load_pack(pack_dir)
    msg = str(ei.value)
    assert "\n" not in msg
    return ei.value


def test_the_tiny_pack_loads(tiny_catalog):
    probs = tiny_catalog.problems("tiny-pack")
    assert [p.id for p in probs] == ["broken-reference", "sound", "weak-variant"]
    p = tiny_catalog.find("tiny-pack/sound")
    assert p.entry_point == "double" and len(p.variants) == 3
    assert p.data.signature.python() == "def double(x: int) -> dict:"


REQUIRED = ["id", "title", "family", "difficulty", "version", "summary", "reference"]


@pytest.mark.parametrize("field", REQUIRED)
def test_each_required_field_missing(pack_copy, field):
    toml = pack_copy / "sound" / "problem.toml"
    edit(toml, rf"^{field} = .*\n", "")
    err = load_error(pack_copy)
    assert err.path.endswith("sound/problem.toml") and err.field == field and "missing" in str(err)


@pytest.mark.parametrize("pattern, field", [
    (r'^entry_point = "double"\n', "signature.entry_point"),
    (r'^\[\[signature.params\]\]\nname = "x"\ntype = "int"\ndescription = "an integer"\n', "signature.params"),
    (r'^name = "tiny_testing.x"\n', "generator.name"),
    (r'^hidden_seed = 11\n', "generator.hidden_seed"),
    (r'^hidden_count = 50\n', "generator.hidden_count"),
    (r'^visible_seed = 12\n', "generator.visible_seed"),
    (r'^description = "an integer"\n', "signature.params.0.description"),
    (r'^mistake = "triples x instead of doubling it"\n', "variants.0.mistake"),
])
def test_each_required_nested_field_missing(pack_copy, pattern, field):
    edit(pack_copy / "sound" / "problem.toml", pattern, "")
    err = load_error(pack_copy)
    assert err.field == field and "missing" in str(err), str(err)


@pytest.mark.parametrize("section", ["signature", "generator", "outputs"])
def test_each_required_section_missing(pack_copy, section):
    toml = pack_copy / "sound" / "problem.toml"
    text = toml.read_text()
    lines, keep, skip = text.splitlines(keepends=True), [], False
    for line in lines:
        if line.startswith("["):
            skip = line.strip("[]\n").startswith(section)
        if not skip:
            keep.append(line)
    toml.write_text("".join(keep))
    err = load_error(pack_copy)
    assert err.field == section and "missing" in str(err), str(err)


@pytest.mark.parametrize("pattern, replacement, field", [
    (r'^version = 1', 'version = "one"', "version"),
    (r'^difficulty = "easy"', 'difficulty = "trivial"', "difficulty"),
    (r'^hidden_count = 50', 'hidden_count = 5', "generator"),
    (r'^hidden_seed = 11', 'hidden_seed = 12', "generator"),
    (r'^type = "int"\nunit = "units"', 'type = "integer"\nunit = "units"', "outputs.0.type"),
    (r'^rtol = 1e-9\n', '', "outputs.1"),
    (r'^entry_point = "double"', 'entry_point = "not valid"', "signature.entry_point"),
    (r'^name = "x"', 'name = "x"\ncolour = "red"', "signature.params.0.colour"),
    (r'^summary = ', 'sumary = "typo"\nsummary = ', "sumary"),
    (r'^file = "variants/triple.py"', 'file = "triple.py"', "variants.0.file"),
    (r'^mistake = "triples x instead of doubling it"', 'mistake = 3', "variants.0.mistake"),
])
def test_mistyped_or_unknown_fields(pack_copy, pattern, replacement, field):
    edit(pack_copy / "sound" / "problem.toml", pattern, replacement)
    err = load_error(pack_copy)
    assert err.field == field, str(err)


def test_bad_toml(pack_copy):
    (pack_copy / "sound" / "problem.toml").write_text('id = "sound"\ntitle = "unterminated\n')
    err = load_error(pack_copy)
    assert "not valid TOML" in str(err) and "sound/problem.toml" in str(err)


def test_binary_junk(pack_copy):
    (pack_copy / "sound" / "problem.toml").write_bytes(b"\xff\xfe\x00junk")
    assert "sound/problem.toml" in str(load_error(pack_copy))


def test_missing_spec_undeclared_variant_and_missing_variant(pack_copy):
    (pack_copy / "sound" / "spec.md").unlink()
    assert "spec.md" in str(load_error(pack_copy))
    (pack_copy / "sound" / "spec.md").write_text("x")
    (pack_copy / "sound" / "variants" / "extra.py").write_text("")
    assert "not declared" in str(load_error(pack_copy))
    (pack_copy / "sound" / "variants" / "extra.py").unlink()
    (pack_copy / "sound" / "variants" / "triple.py").unlink()
    assert load_error(pack_copy).field == "variants.0.file"


def test_directory_without_problem_and_id_mismatch(pack_copy):
    (pack_copy / "stray").mkdir()
    assert "no problem.toml" in str(load_error(pack_copy))
    (pack_copy / "stray").rmdir()
    edit(pack_copy / "sound" / "problem.toml", r'^id = "sound"', 'id = "other"')
    assert load_error(pack_copy).field == "id"


def test_pack_file_errors(pack_copy):
    edit(pack_copy / "pack.toml", r'^version = "1.0.0"', 'version = "1.0"')
    assert load_error(pack_copy).field == "version"
    edit(pack_copy / "pack.toml", r'^version = "1.0"', 'version = "1.0.0"')
    edit(pack_copy / "pack.toml", r'^name = "tiny-pack"', 'name = "other"')
    assert load_error(pack_copy).field == "name"


def test_lookup_errors(tiny_catalog):
    with pytest.raises(ProblemNotFound, match="no problem 'nope'"):
        tiny_catalog.find("nope")
    with pytest.raises(ProblemNotFound, match="did you mean"):
        tiny_catalog.find("soun")
    with pytest.raises(ProblemNotFound, match="no pack named"):
        tiny_catalog.find("missing-pack/sound")
    with pytest.raises(PackError):
        Catalog([tiny_catalog.roots[0] / "does-not-exist"])


@pytest.mark.parametrize("text, ok", [("int", True), ("map[map[int]]", True), ("list[float]", True),
                                      ("set[str]", True), ("set[float]", False), ("dict[int]", False),
                                      ("list[", False)])
def test_type_grammar(text, ok):
    if ok:
        assert str(parse_type(text)) == text
    else:
        with pytest.raises(ValueError):
            parse_type(text)


def test_schema_export(tmp_path):
    paths = write_schemas(tmp_path)
    schemas = {p.name: json.loads(p.read_text()) for p in paths}
    prob = schemas["problem.schema.json"]
    assert prob["additionalProperties"] is False
    assert set(prob["required"]) >= {"id", "reference", "signature", "outputs", "generator"}
    assert schemas["pack.schema.json"]["properties"].keys() == PackFile.model_fields.keys()
    assert set(prob["properties"]) == set(ProblemFile.model_fields)


def test_published_schemas_are_current(tmp_path):
    from pathlib import Path

    root = Path(__file__).resolve().parents[2] / "problems"
    for p in write_schemas(tmp_path):
        assert (root / p.name).read_text() == p.read_text(), f"run `python -m grader problems schema` ({p.name})"


def test_one_character_spec_change_changes_the_hashes(pack_copy):
    before = load_pack(pack_copy)
    h_problem = {p.id: p.content_hash for p in before.problems}
    h_pack = before.content_hash
    spec = pack_copy / "sound" / "spec.md"
    spec.write_text(spec.read_text().replace("integer", "integer."))
    after = load_pack(pack_copy)
    h2 = {p.id: p.content_hash for p in after.problems}
    assert h2["sound"] != h_problem["sound"]
    assert h2["weak-variant"] == h_problem["weak-variant"]
    assert after.content_hash != h_pack


def test_reference_code_change_changes_the_hash(pack_copy):
    # the pack's own trusted code, edited on disk between two loads
    src = pack_copy / "_trusted" / "__init__.py"
    before = {q.id: q.content_hash for q in load_pack(pack_copy).problems}
    src.write_text(src.read_text().replace('return {"y": 2 * x, "half": x / 2}', 'return {"y": 2 * x, "half": x / 2.0}', 1))
    reloaded = load_pack(pack_copy)
    after = {q.id: q.content_hash for q in reloaded.problems}
    assert reloaded.trusted.references["tiny_testing.double"](3)["half"] == 1.5
    assert after["sound"] != before["sound"]
