"""The prompt a model sees, rendered from spec.md, the signature and the visible examples.

This is the only function that builds problem text for a model; ``problems show`` prints
exactly what it returns. Hidden vectors never reach it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from sandbox.models import Limits

from .problems import Problem
from .vectors import Vector

PROMPT_VERSION = 3

_INSTRUCTIONS = """\
Write one self-contained Python 3.11 module that defines `{entry}` with exactly this signature.
Use only the standard library and numpy. Do not read files, use the network or print anything
that matters: only the returned value is graded. It is called once per test input, with the
arguments positionally in the order above. {limits}
Return a plain dict with exactly the keys listed, holding plain Python values (int, float, str,
bool, list, dict; numpy scalars are accepted). Integers must be Python integers, not floats.
Answer with the complete module in a single ```python fenced code block."""


_MAPPING_INSTRUCTIONS = """\
Write one self-contained Python 3.11 module that defines `{entry}` with exactly this signature.
Use only the standard library and numpy. Do not read files, use the network or print anything
that matters: only the returned value is graded. It is called once per hidden instance, with the
arguments positionally in the order above. {limits}
Return {what} as a plain dict (str keys; {loops}Python integers, not
floats or booleans). Answer with the complete module in a single ```python fenced code block."""


_FORMAT_MAPPING = "a mapping (a dict, the format's `mapping`)"  # a search problem's answer unless [scoring] answer says


def _json(value: object) -> str:
    return json.dumps(value, separators=(", ", ": "))


def call_text(problem: Problem, args: Sequence[object]) -> str:
    """``entry(name=value, ...)`` for one input, as prompts show it."""
    sig = problem.data.signature
    return f"{sig.entry_point}(" + ", ".join(f"{p.name}={_json(a)}" for p, a in zip(sig.params, args)) + ")"


def example_lines(problem: Problem, visible: Sequence[Vector]) -> list[str]:
    """The "Examples" section: each visible input and what the function returns for it (for a
    search problem: the best mapping known for that visible instance, and its objective)."""
    if not visible:
        return []
    sc = problem.data.scoring
    if sc is not None:
        lines = ["", "## Examples", ""]
        for n, v in enumerate(visible, 1):
            best = v.expected["best"]
            lines += [f"Example {n} (a shown instance, never a hidden one):", "", "```python",
                      call_text(problem, v.args), f"# the best mapping known ({sc.objective_name} {best:.10g}; it scores 1)",
                      v.expected["mapping"], "```", ""]
        return lines
    lines = ["", "## Examples", ""]
    for n, v in enumerate(visible, 1):
        expected = {f.name: v.expected[f.name] for f in problem.data.outputs}
        lines += [f"Example {n}:", "", "```python", call_text(problem, v.args), "# returns", _json(expected), "```", ""]
    return lines


def domain_lines(problem: Problem) -> list[str]:
    """The "Inputs satisfy" section: every [[domain]] rule, its sentence and its expression."""
    rules = problem.data.domain
    if not rules:
        return []
    notes = "`a.b` means `a[\"b\"]`"
    if any("prod(" in r.rule for r in rules):
        notes += " and `prod` is `math.prod`"
    lines = ["", "## Inputs satisfy", "",
             f"Every test input, hidden or shown, satisfies these rules (each a Python expression over the "
             f"parameters, where {notes}):", ""]
    lines += [f"- {r.says.strip().rstrip('.')}: `{r.rule.strip()}`" for r in rules]
    return lines


def render_prompt(problem: Problem, visible: Sequence[Vector]) -> str:
    sig = problem.data.signature
    lines = [f"# {problem.title}", ""]
    if problem.pack.preamble:
        lines += [problem.pack.preamble.strip(), ""]
    lines += [problem.spec.strip(), "", "## Function to write", "", "```python",
             sig.python(), "```", ""]
    lines.append("Parameters:")
    for p in sig.params:
        lines.append(f"- `{p.name}` ({p.type}): {p.description}")
    sc = problem.data.scoring
    if sc is not None:
        what, it = (sc.answer, "it") if sc.answer else (_FORMAT_MAPPING, "the mapping")
        lines += ["", f"Return {what}. The grader checks it and computes its "
                  f"{sc.objective_name} on its side; its score is the best known {sc.objective_name} divided by yours (0 when "
                  f"{it} is invalid), and an instance counts as solved within {sc.tolerance:.1%} of the best "
                  "known."]
    else:
        lines += ["", "Return a dict with exactly these keys:", "",
                  "| key | type | unit | how it is compared |", "|---|---|---|---|"]
        for f in problem.data.outputs:
            unit = f.unit or "-"
            lines.append(f"| `{f.name}` | {f.parsed.describe()} | {unit} | {f.comparison()} |")
    lines += domain_lines(problem)
    lines += example_lines(problem, visible)
    if sc is None:
        text = _INSTRUCTIONS.format(entry=sig.entry_point, limits=limits_sentence(problem))
    else:  # the format's mapping names its loops; another answer is described by its spec
        text = _MAPPING_INSTRUCTIONS.format(entry=sig.entry_point, limits=limits_sentence(problem),
                                            what="it" if sc.answer else "the mapping",
                                            loops="" if sc.answer else "lists of [str, int] loops; ")
    lines += ["## Answer format", "", text]
    return "\n".join(lines).rstrip() + "\n"


def limits_sentence(problem: Problem) -> str:
    """What every call may use, and how large the hidden inputs get: rules a solver must know."""
    lim = problem.sandbox_limits(Limits())
    text = (f"Each call may use {lim.case_cpu_s:g} s of CPU time and {lim.memory_mb} MB of memory (loading the "
            f"module: {lim.load_cpu_s:g} s); a call that runs out of time fails the test.")
    if problem.data.generator.real is not None:
        text += (" The hidden test inputs include real layer and accelerator sizes, far larger than the examples "
                 "(millions of MACs and more).")
    return text
