"""Self-revision: what the model is told between two rounds of one sample.

After round r is graded, a sample that has not passed (every sample, with ``--revise-all``) goes
back to the model as a continued conversation: the prompt, its previous answer, and one of

* ``none``: a fixed request to review and improve the answer, with no external signal
  (:data:`NO_FEEDBACK_CODE` / :data:`NO_FEEDBACK_QA`, the same text every time);
* ``examples``: in code mode, the result of running its code on the prompt's **visible** examples
  only (which example failed, the exception, the field-by-field expected vs got, a timeout); in Q&A
  mode, where no code runs, the prompt's examples restated (inputs and correct outputs) with the
  request to check the method against them. Neither ever says anything about a hidden vector, nor
  whether the graded answer was right.

Everything here is pure text built from the visible examples and the candidate's own results.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from ..grading.scoring import Grade, Verdict
from ..packs.problems import Problem
from ..packs.vectors import Vector

FEEDBACK_MODES = ("none", "examples")

NO_FEEDBACK_CODE = (
    "Review your previous answer carefully against the specification and improve it if you find a "
    "mistake. Answer again with the complete module in a single ```python fenced code block."
)
NO_FEEDBACK_QA = (
    "Review your previous answer carefully against the specification and improve it if you find a "
    "mistake. End your reply again with the answer as one JSON object in a ```json fenced block."
)


def _j(value: Any, limit: int = 400) -> str:
    text = json.dumps(value, separators=(", ", ": "))
    return text if len(text) <= limit else text[: limit - 3] + "..."


def example_names(visible: Sequence[Vector]) -> dict[str, str]:
    """Vector id -> the name the prompt gives it (Example 1, Example 2, ...)."""
    return {v.id: f"Example {n}" for n, v in enumerate(visible, 1)}


def code_examples_feedback(problem: Problem, visible: Sequence[Vector], g: Grade) -> str:
    """What running the code on the prompt's examples showed, in words."""
    names = example_names(visible)
    lines = [f"Your code was run on the {len(visible)} example(s) of the prompt (and nothing else)."]
    if g.verdict is Verdict.PASS:
        lines.append("It reproduces every example. Check it against the specification for the cases the examples "
                     "do not cover, and improve it if you find a mistake.")
    elif g.verdict in (Verdict.WRONG_ANSWER, Verdict.WRONG_TYPE, Verdict.RUNTIME_ERROR):
        failed = set(g.failed_vectors)
        for vid, name in names.items():
            if vid not in failed:
                lines.append(f"- {name}: correct.")
        for f in g.failures:
            name = names.get(f.vector, f.vector)
            if f.kind == "runtime_error":
                lines.append(f"- {name}: raised {f.error_type}: {f.error_message[:300]}")
                continue
            parts = []
            for d in f.diffs[:8]:
                if d.kind == "missing":
                    parts.append(f"`{d.path}` is missing (expected {_j(d.expected)})")
                elif d.kind == "extra":
                    parts.append(f"`{d.path}` is not an output key")
                elif d.kind == "type":
                    parts.append(f"`{d.path or 'result'}`: {d.note or 'wrong type'} (expected {_j(d.expected)}, "
                                 f"got {_j(d.got)})")
                else:
                    parts.append(f"`{d.path}`: expected {_j(d.expected)}, got {_j(d.got)}")
            lines.append(f"- {name}: wrong. " + "; ".join(parts))
        lines.append("Fix the code so that it follows the specification.")
    elif g.verdict is Verdict.TIMEOUT:
        lines.append(f"It ran out of time ({g.reason}). The examples are small: make the computation follow the "
                     "specification without stepping through every element or iteration.")
    elif g.verdict is Verdict.MEMORY_LIMIT:
        lines.append(f"It ran out of memory ({g.reason}).")
    elif g.verdict in (Verdict.LOAD_ERROR, Verdict.MISSING_ENTRY):
        lines.append(f"It could not be loaded: {g.reason}")
    elif g.verdict is Verdict.NO_CODE:
        lines.append("No Python code was found in your answer.")
    else:
        lines.append(f"It did not finish normally: {g.verdict.value} ({g.reason}).")
    lines.append("Answer again with the complete module in a single ```python fenced code block.")
    return "\n".join(lines)


def qa_examples_feedback(problem: Problem, visible: Sequence[Vector]) -> str:
    sig = problem.data.signature
    lines = ["No code runs in this task; the only signal allowed is the prompt's own examples. Check that your "
             "method reproduces each of them before you answer again:"]
    sc = problem.data.scoring
    for n, v in enumerate(visible, 1):
        call = ", ".join(f"{p.name}={_j(a, 2000)}" for p, a in zip(sig.params, v.args))
        if sc is not None:  # a search problem: the example's best known mapping and its objective
            lines.append(f"- Example {n}: for `{sig.entry_point}({call})` the best mapping known is "
                         f"`{v.expected['mapping']}` ({sc.objective_name} {v.expected['best']:.10g})")
            continue
        expected = {f.name: v.expected[f.name] for f in problem.data.outputs}
        lines.append(f"- Example {n}: `{sig.entry_point}({call})` returns `{_j(expected, 2000)}`")
    what = "your mapping" if sc is not None else "the answer"
    lines.append(f"Then end your reply again with {what} as one JSON object in a ```json fenced block.")
    return "\n".join(lines)


def conversation(prompt: str, turns: Sequence[tuple[str, str]]) -> list[dict[str, str]] | str:
    """The request of the next round: the prompt, then each earlier (answer, feedback) pair."""
    if not turns:
        return prompt
    messages = [{"role": "user", "content": prompt}]
    for answer, feedback in turns:
        messages.append({"role": "assistant", "content": answer})
        messages.append({"role": "user", "content": feedback})
    return messages
