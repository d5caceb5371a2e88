"""Declared changes: switches, exact edits and unified diffs, and the errors that name a stale one."""

from __future__ import annotations

import difflib

import pytest

from grader.packs.changes import ChangeError, apply_change, apply_patch, apply_replacements, apply_switches

SOLUTION = '''FLAGS: dict = {}  # mistake switches


def count(a, b):
    if FLAGS.get("floor"):
        return a // b
    return -(-a // b)


def total(xs):
    return sum(count(x, 4) for x in xs)
'''


class Edit:
    def __init__(self, old, new):
        self.old, self.new = old, new


def test_switches_fill_the_one_flags_line_and_keep_its_comment():
    out = apply_switches(SOLUTION, {"floor": True})
    assert out.splitlines()[0] == "FLAGS: dict = {'floor': True}  # mistake switches"
    ns: dict = {}
    exec(out, ns)
    assert ns["count"](7, 2) == 3
    assert apply_switches("FLAGS = {}\nx = FLAGS.get('a')\n", {"a": 1}).startswith("FLAGS: dict = {'a': 1}")


def test_a_switch_the_solution_never_reads_is_an_error():
    with pytest.raises(ChangeError, match="never reads switch\\(es\\) flor"):
        apply_switches(SOLUTION, {"flor": True})
    with pytest.raises(ChangeError, match="exactly one line"):
        apply_switches(SOLUTION.replace("FLAGS: dict = {}", "FLAGS: dict = {'x': 1}"), {"floor": True})
    with pytest.raises(ChangeError, match="found 2"):
        apply_switches(SOLUTION + "FLAGS = {}\n", {"floor": True})


def test_exact_edits_apply_in_order_and_must_be_unique():
    out = apply_replacements(SOLUTION, [Edit("count(x, 4)", "count(x, 8)"), Edit("count(x, 8)", "count(x, 2)")])
    assert "count(x, 2)" in out and "count(x, 4)" not in out
    with pytest.raises(ChangeError, match="replace\\[0\\].*occurs 0 times"):
        apply_replacements(SOLUTION, [Edit("count(x, 5)", "")])
    with pytest.raises(ChangeError, match="replace\\[1\\].*occurs 3 times"):
        apply_replacements(SOLUTION, [Edit("# mistake switches", ""), Edit("return", "yield")])


def _diff(a: str, b: str) -> str:
    return "".join(difflib.unified_diff(a.splitlines(keepends=True), b.splitlines(keepends=True), "a", "b"))


def test_a_unified_diff_applies_exactly_even_when_the_hunk_moved():
    variant = SOLUTION.replace("return -(-a // b)", "return -(-a // b) + 1")
    patch = _diff(SOLUTION, variant)
    assert apply_patch(SOLUTION, patch) == variant
    moved = "import math\n\n" + SOLUTION  # lines shifted above the hunk: it still applies, exactly once
    assert apply_patch(moved, patch) == "import math\n\n" + variant
    with pytest.raises(ChangeError, match="hunk 1 .* matches 0 places"):
        apply_patch(SOLUTION.replace("return -(-a // b)", "return -(-a // (b))"), patch)
    with pytest.raises(ChangeError, match="no hunks"):
        apply_patch(SOLUTION, "--- a\n+++ b\n")


def test_exactly_one_kind_of_change():
    with pytest.raises(ChangeError, match="exactly one"):
        apply_change(SOLUTION, switches={"floor": True}, patch="@@ -1 +1 @@\n")
    with pytest.raises(ChangeError, match="exactly one"):
        apply_change(SOLUTION)
