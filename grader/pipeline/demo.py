"""The offline demo model: answers from each problem's bundled solution and wrong-on-purpose variants.

It exists so that ``eval`` works on a fresh machine with no model endpoint and shows a realistic
table. It is not a model and says so everywhere its results appear. Its behaviour is deterministic
in (problem, sample): each problem has a fixed skill that falls with difficulty, each run (sample
index) a mood that moves every problem a little, so pass rates vary from run to run as a real
model's do. Most misses are a variant (a plausible convention mistake); a few are prose without
code, a truncated answer or a crash at import.
"""

from __future__ import annotations

import hashlib
import random

from ..packs.problems import Problem

DEMO_MODEL = "demo-offline"
DEMO_NOTICE = "offline demo model: answers are the pack's bundled solutions and variants, not a real model"

_SKILL = {"easy": 0.8, "medium": 0.55, "hard": 0.3}


def _rng(*parts: object) -> random.Random:
    digest = hashlib.sha256("\0".join(str(p) for p in parts).encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


def demo_completion(problem: Problem, sample: int) -> str:
    base = _SKILL.get(problem.difficulty, 0.5)
    skill = min(0.95, max(0.05, base + _rng("skill", problem.qualified_id).uniform(-0.2, 0.2)))
    mood = _rng("mood", sample).uniform(-0.15, 0.15)
    r = _rng("answer", problem.qualified_id, sample)
    roll = r.random()
    solution = problem.solution_source or ""
    if roll < skill + mood and solution:
        return _wrap(solution, r, "Here is a solution that follows the specification.")
    rest = r.random()
    if rest < 0.05:
        return ("I would compute each quantity from the loop bounds, but the specification leaves the "
                "rounding rule open, so I will not commit to an implementation.")
    if rest < 0.09 and solution:
        cut = solution[: max(1, len(solution) * 2 // 3)]
        return _wrap(cut, r, "Here is my implementation (the answer was cut off).")
    variants = problem.variants
    if not variants:
        return _wrap("raise RuntimeError('not implemented')\n", r, "Placeholder.")
    v = variants[r.randrange(len(variants))]
    return _wrap(v.source, r, "Here is the implementation.")


def _wrap(code: str, r: random.Random, lead: str) -> str:
    tail = r.choice(["", "\n\nThe function returns every value as an integer where the spec asks for one.",
                     "\n\nComplexity is linear in the number of loops."])
    return f"{lead}\n\n```python\n{code.rstrip()}\n```{tail}\n"


# ------------------------------------------------------------------------------------------
# Q&A answers and revisions
# ------------------------------------------------------------------------------------------

_QA_SKILL = {"easy": 0.75, "medium": 0.5, "hard": 0.3}


def _perturb(value: object, r: random.Random) -> object:
    """A plausible wrong number: off by a factor or by one."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value * r.choice([2, 3]) if value else 1
    if isinstance(value, float):
        return value * r.choice([0.5, 2.0, 1.25]) if value else 1.0
    if isinstance(value, dict) and value:
        k = r.choice(sorted(value))
        return {**value, k: _perturb(value[k], r)}
    if isinstance(value, list) and value:
        i = r.randrange(len(value))
        return value[:i] + [_perturb(value[i], r)] + value[i + 1:]
    return value


def demo_qa_answer(problem: Problem, item: object, sample: int, right: bool | None = None) -> str:
    """A Q&A reply: reasoning, then the reference's answer or a deliberately wrong one."""
    import json

    item_id = getattr(item, "id")
    expected: dict = dict(getattr(item, "expected"))
    r = _rng("qa", problem.qualified_id, item_id, sample)
    if right is None:
        base = _QA_SKILL.get(problem.difficulty, 0.5)
        skill = min(0.95, max(0.05, base + _rng("qa-skill", problem.qualified_id).uniform(-0.2, 0.2)))
        right = r.random() < skill + _rng("mood", sample).uniform(-0.15, 0.15)
    if not right and r.random() < 0.08:
        return "Working through the loop nest by hand, the counts depend on the tile sizes; I cannot settle them."
    if getattr(item, "kind") == "mapping":
        answer = json.loads(expected["mapping"])
        if not right and "levels" not in answer:  # an answer of the problem's own form: one value off
            answer = _perturb(answer, r)
        elif not right:  # every loop at the outermost level: a valid mapping, far from the best
            factors = [loop for lv in answer["levels"] for key in ("temporal", "spatial_x", "spatial_y")
                       for loop in lv.get(key, [])]
            outer: dict = {}
            for dim, f in factors:
                outer[dim] = outer.get(dim, 1) * f
            answer = {"levels": [{"temporal": [], "spatial_x": [], "spatial_y": []} for _ in answer["levels"]]}
            answer["levels"][-1]["temporal"] = [[d, f] for d, f in outer.items() if f > 1]
        return ("I cost the candidate mappings of this instance and keep the cheapest.\n\n"
                f"```json\n{json.dumps(answer)}\n```\n")
    answer = expected
    if not right:
        if getattr(item, "kind") == "choice":
            letters = [c for c in (getattr(item, "fields")[0].choices or []) if c != expected["answer"]]
            answer = {"answer": r.choice(letters)} if letters else expected
        else:
            key = r.choice(sorted(expected))
            answer = {**expected, key: _perturb(expected[key], r)}
    return ("I apply the specification to this instance step by step and collect the results.\n\n"
            f"```json\n{json.dumps(answer)}\n```\n")


def demo_revision(problem: Problem, mode: str, item: object | None, sample: int, round_: int,
                  feedback: str, passed: bool) -> str:
    """The demo model's next round: some failing answers get fixed (more often with feedback from
    the examples than without), a few passing ones get broken. Deterministic in its arguments."""
    r = _rng("revise", problem.qualified_id, getattr(item, "id", ""), sample, round_, feedback)
    if passed:
        fixed = r.random() >= 0.1  # revise-all: one answer in ten gets broken
    else:
        fixed = r.random() < (0.45 if feedback == "examples" else 0.2)
    if mode == "qa":
        return demo_qa_answer(problem, item, sample, right=fixed)
    solution = problem.solution_source or ""
    if fixed and solution:
        return _wrap(solution, r, "Here is the revised solution.")
    variants = problem.variants
    if not variants:
        return _wrap("raise RuntimeError('not implemented')\n", r, "Placeholder.")
    return _wrap(variants[r.randrange(len(variants))].source, r, "Here is the revised implementation.")
