"""[[domain]] rules: the expression language, its refusals, loading, the prompt and the validator's
"domain" and "reference range" checks (on tests/data/packs/domain-pack, broken on purpose)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from grader.errors import PackError
from grader.packs import domain
from grader.packs.domain import DomainEvalError, DomainSyntaxError, evaluate, parse_rule, violations

ROOT = Path(__file__).resolve().parents[2]
DOMAIN_PACK = ROOT / "tests" / "data" / "packs" / "domain-pack"


# ------------------------------------------------------------------------------------------
# parsing
# ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("text, names", [
    ("layer.filter_w <= layer.ifmap_w", {"layer"}),
    ("array.rows * array.cols >= 2", {"array"}),
    ("all(l.bandwidth > 0 for l in hw.levels)", {"hw"}),
    ('all(gemm[d] % prod(lv.temporal[d] for lv in levels) == 0 for d in ["M", "N", "K"])', {"gemm", "levels"}),
    ("sorted(x.dim for x in dataflow) == sorted(dims)", {"dataflow", "dims"}),
    ("all(k in dims and v >= 1 for k, v in sizes.items())", {"dims", "sizes"}),
    ("x is None or 1 <= x < 4", {"x"}),
    ("len([x for x in a[1:] if x % 2 == 1]) == n", {"a", "n"}),
])
def test_rules_parse_and_name_their_free_names(text, names):
    assert parse_rule(text).names == names


@pytest.mark.parametrize("text, why", [
    ('__import__("os")', "cannot call __import__"),
    ('__import__("os").system("true")', "cannot call .system()"),
    ('open("/etc/passwd")', "cannot call open"),
    ('eval("1")', "cannot call eval"),
    ('getattr(x, "y")', "cannot call getattr"),
    ("x.__class__", "'__class__' is not allowed"),
    ("x.__class__.__mro__", "is not allowed"),
    ("x._private", "is not allowed"),
    ("__builtins__", "not allowed"),
    ("lambda: 1", "Lambda"),
    ("(lambda: 1)()", "cannot call"),
    ("x.y(1)", "cannot call .y()"),
    ("x.keys(1)", "takes no arguments"),
    ("x ** 2", "Pow"),
    ("x << 2", "LShift"),
    ("~x", "Invert"),
    ("x if y else z", "IfExp"),
    ("{1: 2}", "Dict"),
    ("{1, 2}", "Set"),
    ("(1, 2)", "Tuple"),
    ("(x := 1)", "NamedExpr"),
    ('f"{x}"', "JoinedStr"),
    ('b"x" == x', "not allowed"),
    ("1j == x", "not allowed"),
    ("... == x", "not allowed"),
    ("x is 1", "only compare with None"),
    ("a[::2]", "no step"),
    ("[x for _ in y]", "binds a name"),
    ("[1 for x.y in z]", "binds a name"),
    ("sum(x, start=1)", "keyword"),
    ("all(*x)", "*arguments"),
    ("all", "is a function"),
    ("min() == 1", "needs an argument"),
    ("x <", "does not parse"),
    ("import os", "does not parse"),
    ("x = 1", "does not parse"),
    ("x; y", "does not parse"),
    ("", "empty"),
    ("x " * 2000, "longer than"),
])
def test_unsafe_or_unknown_syntax_is_refused(text, why):
    with pytest.raises(DomainSyntaxError) as ei:
        parse_rule(text)
    assert why in str(ei.value)


# ------------------------------------------------------------------------------------------
# evaluation
# ------------------------------------------------------------------------------------------

ENV = {
    "layer": {"ifmap_w": 8, "filter_w": 3, "name": "conv1", "pad": None},
    "hw": {"levels": [{"name": "L1", "bandwidth": 64, "tensors": {"I": 1, "W": 0}},
                      {"name": "DRAM", "bandwidth": 0, "tensors": {"I": 2, "W": 5}}]},
    "loops": [["M", 4], ["N", 2], ["M", 3]],
    "gemm": {"M": 12, "N": 2, "K": 1},
    "x": 5,
}


@pytest.mark.parametrize("text, expected", [
    ("layer.filter_w <= layer.ifmap_w", True),
    ('layer["filter_w"] > layer.ifmap_w', False),
    ("1 <= layer.filter_w < layer.ifmap_w <= 8", True),
    ("1 <= layer.filter_w < layer.ifmap_w < 8", False),
    ("layer.pad is None and layer.name is not None", True),
    ('layer.name == "conv1" and "conv" in layer.name and "pad" in layer', True),
    ("all(l.bandwidth > 0 for l in hw.levels)", False),
    ("all(l.bandwidth > 0 for l in hw.levels[:-1])", True),
    ('any(l.name == "DRAM" for l in hw.levels)', True),
    ("hw.levels[-1].tensors.W == 5 and hw.levels[0].tensors['W'] == 0", True),
    ("all(v >= 0 for l in hw.levels for v in l.tensors.values())", True),
    ('sorted(hw.levels[0].tensors) == ["I", "W"] and sorted(hw.levels[0].tensors.keys()) == ["I", "W"]', True),
    ("sum(v for l in hw.levels for k, v in l.tensors.items() if k == 'I') == 3", True),
    ('all(prod(b for e, b in loops if e == d) == gemm[d] for d in ["M", "N", "K"])', True),
    ("len(set(d for d, b in loops)) == len(loops)", False),
    ("min(b for d, b in loops) == 2 and max(2, x, 3) == 5 and abs(-x) == 5", True),
    ("x // 2 == 2 and x % 2 == 1 and x / 2 == 2.5 and -x + 10 == x and x - 1 == 4", True),
    ("all(i < len(loops) for i in range(len(loops)))", True),
    ("not all(l.bandwidth > 0 for l in hw.levels) or x > 100", True),
    ("[b for d, b in loops if d == 'M'] == [4, 3]", True),
    ("all(x > 0 for x in [])", True),
])
def test_evaluation_on_nested_dicts_and_lists(text, expected):
    assert evaluate(text, ENV) is expected


@pytest.mark.parametrize("text, why", [
    ("layer.stride >= 1", "no key 'stride'"),
    ("hw.levels[5].bandwidth > 0", "out of range"),
    ("x.y == 1", "has no keys"),
    ("layer.name + 1 == 2", "arithmetic needs numbers"),
    ("layer.name * 3 == 'x'", "arithmetic needs numbers"),
    ("loops + loops == []", "arithmetic needs numbers"),
    ("x // 0 == 1", "division by zero"),
    ("x % (x - 5) == 0", "division by zero"),
    ("layer.name < 3", "cannot order"),
    ("x + 1", "not True or False"),
    ("x and True", "'and' / 'or' need True or False"),
    ("not x", "'not' needs True or False"),
    ("all(l.bandwidth for l in hw.levels)", "needs True or False"),
    ("all(x for x in 5)", "cannot iterate"),
    ("len(range(10 ** 9)) > 0", "Pow"),
    ("len(range(1000000000)) > 0", "longer than"),
    ("y > 1", "unknown name"),
])
def test_evaluation_errors_say_why(text, why):
    try:
        rule = parse_rule(text)
    except DomainSyntaxError as exc:  # some of these are refused before any input is seen
        assert why in str(exc)
        return
    with pytest.raises(DomainEvalError) as ei:
        evaluate(rule, ENV)
    assert why in str(ei.value)


def test_evaluation_is_bounded(monkeypatch):
    monkeypatch.setattr(domain, "MAX_STEPS", 1000)
    with pytest.raises(DomainEvalError, match="steps"):
        evaluate("all(i >= 0 for i in range(100) for j in range(100))", {})


def test_violations_name_the_rule_and_say_why():
    rules = [SimpleNamespace(rule="x >= 1", says="x is positive"),
             SimpleNamespace(rule="x.y == 1", says="x has y"),
             SimpleNamespace(rule="x < 10", says="x is small")]
    got = violations(rules, {"x": 0})
    assert [v.index for v in got] == [0, 1]
    assert got[0].describe() == "breaks rule 1 `x >= 1` (x is positive)"
    assert got[1].error and got[1].describe().startswith("cannot evaluate rule 2 `x.y == 1`")
    assert violations(rules, {"x": 5})[0].index == 1


# ------------------------------------------------------------------------------------------
# loading
# ------------------------------------------------------------------------------------------

def _append(path: Path, text: str) -> None:
    body = path.read_text()
    path.write_text(body.replace("\n[generator]\n", "\n" + text + "\n[generator]\n", 1))


def test_an_absent_domain_loads_as_no_rules(tiny_catalog):
    assert all(p.data.domain == [] for p in tiny_catalog.problems("tiny-pack"))


def test_rules_load_from_problem_toml(pack_copy):
    from grader.packs.problems import load_pack

    _append(pack_copy / "sound" / "problem.toml",
            "[[domain]]\nrule = '-1000 <= x < 1000'\nsays = \"x is a small integer\"\n")
    (p,) = [q for q in load_pack(pack_copy).problems if q.id == "sound"]
    assert [(r.rule, r.says) for r in p.data.domain] == [("-1000 <= x < 1000", "x is a small integer")]


@pytest.mark.parametrize("rule, field, words", [
    ("x <", "domain.0.rule", ["does not parse", "'x <'"]),
    ('__import__("os")', "domain.0.rule", ["cannot call __import__"]),
    ("x.__class__ == 1", "domain.0.rule", ["__class__"]),
    ("layer.w >= 1", "domain.0.rule", ["layer", "not a parameter", "parameters: x"]),
])
def test_bad_rules_are_refused_at_load_time(pack_copy, rule, field, words):
    from grader.packs.problems import load_pack

    toml = pack_copy / "sound" / "problem.toml"
    _append(toml, f"[[domain]]\nrule = '{rule}'\nsays = \"a rule\"\n")
    with pytest.raises(PackError) as ei:
        load_pack(pack_copy)
    err = ei.value
    assert err.path.endswith("sound/problem.toml") and err.field == field, str(err)
    for w in words:
        assert w in str(err)


def test_a_rule_needs_its_sentence(pack_copy):
    from grader.packs.problems import load_pack

    _append(pack_copy / "sound" / "problem.toml", "[[domain]]\nrule = 'x >= 1'\n")
    with pytest.raises(PackError) as ei:
        load_pack(pack_copy)
    assert ei.value.field == "domain.0.says"


def test_signed_applies_to_integer_fields_only():
    from pydantic import ValidationError

    from grader.packs.problems import FieldSpec

    assert FieldSpec(name="delta", type="map[int]", signed=True).signed
    with pytest.raises(ValidationError, match="signed does not apply"):
        FieldSpec(name="f", type="float", rtol=1e-6, atol=1e-9, signed=True)


# ------------------------------------------------------------------------------------------
# the domain pack: prompt and validator
# ------------------------------------------------------------------------------------------

@pytest.fixture
def domain_catalog():
    from grader.packs.problems import Catalog

    return Catalog([DOMAIN_PACK])  # its references live in its own _trusted/ folder


def test_the_prompt_states_the_domain(domain_catalog, tiny_catalog):
    from grader.packs import vectors
    from grader.packs.prompt import render_prompt

    p = domain_catalog.find("domain-pack/sound")
    text = render_prompt(p, vectors.load(p).visible)
    assert "## Inputs satisfy" in text and "- x lies in [-10^6, 10^6): `-1000000 <= x < 1000000`" in text
    assert text.index("## Inputs satisfy") < text.index("## Examples")
    q = tiny_catalog.find("tiny-pack/sound")
    assert "Inputs satisfy" not in render_prompt(q, vectors.load(q).visible)


def _checks(catalog, pid):
    from grader.grading.validate import validate

    (report,) = validate([catalog.find(f"domain-pack/{pid}")], None)
    return {c.name: c for c in report.checks}


def test_validator_passes_inputs_inside_the_domain_and_signed_negatives(domain_catalog):
    checks = _checks(domain_catalog, "sound")
    assert checks["vectors"].ok and checks["domain"].ok and "satisfy the rule" in checks["domain"].detail
    assert checks["reference range"].ok, checks["reference range"].detail


def test_validator_flags_inputs_outside_the_domain_and_negative_counts(domain_catalog):
    checks = _checks(domain_catalog, "out-of-range")
    assert checks["vectors"].ok  # the reference answers every input: only the new checks catch it
    assert not checks["domain"].ok and "breaks rule 1 `x >= 1` (x is positive)" in checks["domain"].detail
    bad = checks["reference range"]
    assert not bad.ok and "is negative" in bad.detail
    assert "counts[0] = -" in bad.detail or "by_name['a'] = -" in bad.detail


def test_validator_flags_a_reference_that_divides_by_zero_or_is_not_finite(domain_catalog):
    checks = _checks(domain_catalog, "divides-by-zero")
    assert not checks["vectors"].ok
    assert not checks["domain"].ok and "breaks rule 1" in checks["domain"].detail
    bad = checks["reference range"]
    assert not bad.ok and "divides by zero" in bad.detail and "r = inf is not finite" in bad.detail


def test_validator_reports_infinity(domain_catalog, monkeypatch):
    monkeypatch.setitem(domain_catalog.pack("domain-pack").trusted.references, "domain_testing.ratio",
                        lambda a, b: {"q": a // max(b, 1), "r": float("inf") if b <= 1 else a / b})
    bad = _checks(domain_catalog, "divides-by-zero")["reference range"]
    assert not bad.ok and "r = inf is not finite" in bad.detail and "divides by zero" not in bad.detail
