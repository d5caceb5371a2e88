"""A malformed completions file gets one clear error naming the file and line."""

from __future__ import annotations

import json

import pytest

from grader.pipeline.completions_file import load_completions
from grader.errors import CompletionsFileError

GOOD = {"problem": "tiny-pack/sound", "sample": 0, "text": "```python\ndef double(x): return {}\n```"}


@pytest.mark.parametrize("lines, fragment", [
    ([b"not json"], ":1: not valid JSON"),
    ([b"\xff\xfe\x00\x01"], ":1: not UTF-8"),
    ([json.dumps([1, 2]).encode()], ":1: expected a JSON object"),
    ([json.dumps({"sample": 0, "text": "x"}).encode()], ":1: missing field 'problem'"),
    ([json.dumps({**GOOD, "sample": "0"}).encode()], ":1: field 'sample' must be int"),
    ([json.dumps({**GOOD, "sample": True}).encode()], ":1: field 'sample' must be int"),
    ([json.dumps({**GOOD, "sample": -1}).encode()], ":1: sample must be >= 0"),
    ([json.dumps({**GOOD, "text": None}).encode()], ":1: field 'text' must be str"),
    ([json.dumps({**GOOD, "problem": "tiny-pack/nope"}).encode()], ":1: pack 'tiny-pack' has no problem 'nope'"),
    ([json.dumps(GOOD).encode(), b"", json.dumps(GOOD).encode()], ":3: a second completion"),
    ([b"", b"  "], "no completions in the file"),
])
def test_malformed_files(tmp_path, tiny_catalog, lines, fragment):
    path = tmp_path / "c.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    with pytest.raises(CompletionsFileError) as ei:
        load_completions(path, tiny_catalog)
    assert fragment in str(ei.value) and str(path) in str(ei.value)


def test_good_file_and_bare_ids(tmp_path, tiny_catalog):
    path = tmp_path / "c.jsonl"
    rows = [GOOD, {"problem": "weak-variant", "sample": 3, "text": "hi", "model": "m"}]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = load_completions(path, tiny_catalog)
    assert set(out) == {("tiny-pack/sound", "code", "", 0, 0), ("tiny-pack/weak-variant", "code", "", 3, 0)}
    assert out[("tiny-pack/weak-variant", "code", "", 3, 0)].meta == {"model": "m"}
