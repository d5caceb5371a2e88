"""The strict channel parser and the protocol assembler (pure: no Docker)."""

from __future__ import annotations

import json

import pytest

from sandbox.channel import ChannelAssembler, ChannelError, parse_strict
from sandbox.models import Case, Job


@pytest.mark.parametrize("text, why", [
    ('{"a": NaN}', "non-finite"),
    ('{"a": Infinity}', "non-finite"),
    ('{"a": -Infinity}', "non-finite"),
    ('{"a": 1e999}', "infinity"),
    ('{"a": -1e400}', "infinity"),
    ('{"a": 1, "a": 2}', "duplicate key"),
    ("[" * 100 + "]" * 100, "nested"),
    ("[" * 100000 + "]" * 100000, "nested"),
    ('{"a": ' + "9" * 5000 + "}", "not valid JSON"),
    ("{'a': 1}", "not valid JSON"),
    (b"\xff\xfe{}", "not valid JSON"),
    ("cos(1)", "not valid JSON"),
])
def test_strict_parser_refuses(text, why):
    with pytest.raises(ChannelError, match=why):
        parse_strict(text if isinstance(text, bytes) else text.encode())


def test_strict_parser_size_cap():
    with pytest.raises(ChannelError, match="cap"):
        parse_strict(b'"' + b"x" * 100 + b'"', max_bytes=50)


def test_strict_parser_accepts_plain_json():
    assert parse_strict(b'{"a": [1, 2.5, "x", true, null], "b": {"c": -0.0}}') == {
        "a": [1, 2.5, "x", True, None], "b": {"c": -0.0}}


def _job(n=2):
    return Job(id="j", source="", entry_point="f", cases=[Case(id=f"c{i}", args=[]) for i in range(n)])


def _feed(asm, *recs):
    for r in recs:
        asm.feed_line(json.dumps(r).encode() if not isinstance(r, bytes) else r)


START = {"t": "start", "job": "j"}
LOAD = {"t": "load", "job": "j", "ok": True, "cpu_s": 0.1, "wall_s": 0.1}
END_JOB = {"t": "job_end", "job": "j", "output_bytes": 0, "output_head": "", "output_tail": "", "max_rss_kb": 1}


def test_assembler_happy_path():
    asm = ChannelAssembler([_job()])
    _feed(asm, START, LOAD, {"t": "case", "job": "j", "id": "c0", "ok": True, "value": 1},
          {"t": "case", "job": "j", "id": "c1", "ok": False, "error": {"type": "KeyError", "message": "x"}},
          END_JOB, {"t": "end"})
    assert asm.ended and asm.protocol_error is None
    (r,) = asm.results()
    assert r.completed and r.cases[0].value == 1 and r.cases[1].error.type == "KeyError"


@pytest.mark.parametrize("records, fragment", [
    ([START, LOAD, {"t": "case", "job": "j", "id": "c0", "ok": True, "value": 1},
      {"t": "case", "job": "j", "id": "c0", "ok": True, "value": 1}], "duplicate case id"),
    ([START, LOAD, {"t": "case", "job": "j", "id": "c9", "ok": True, "value": 1}], "unexpected case id"),
    ([START, {"t": "case", "job": "j", "id": "c0", "ok": True, "value": 1}], "without a successful load"),
    ([START, LOAD, {"t": "case", "job": "j", "id": "c0", "ok": True}], "without a value"),
    ([START, START], "duplicate start"),
    ([START, LOAD, END_JOB], "before every case"),
    ([{"t": "end"}], "before every job"),
    ([START, LOAD, {"t": "bogus", "job": "j"}], "unknown record type"),
    ([START, {"t": "load", "job": "other", "ok": True}], "for job"),
    ([START, b'{"t":"load","job":"j","ok":true,"ok":false}'], "duplicate key"),
    ([START, b"PASS 10/10 tests passed"], "not valid JSON"),
])
def test_assembler_protocol_violations(records, fragment):
    asm = ChannelAssembler([_job()])
    _feed(asm, *records)
    assert asm.protocol_error is not None and fragment in asm.protocol_error
    (r,) = asm.results()
    assert r.stop is not None and r.stop.reason == "protocol"


def test_results_after_early_end_name_the_pending_case():
    asm = ChannelAssembler([_job()])
    _feed(asm, START, LOAD, {"t": "case", "job": "j", "id": "c0", "ok": True, "value": 1})
    (r,) = asm.results()
    assert r.stop.reason == "harness" and r.stop.case == "c1"
