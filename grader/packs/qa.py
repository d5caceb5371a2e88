"""Q&A items: concrete instances of a problem whose numbers the model answers directly.

Every problem with a ``[qa]`` table yields items without per-problem code:

* **value items** (``q0``, ``q1``, ...): one instance drawn from the problem's own Q&A seed (never
  a code-mode hidden input: an instance that coincides with one is redrawn), with the question of
  what the function would return for it. The expected answer is the reference's output.
* **mapping items** (``q0``, ``q1``, ...; search problems, ``[scoring]``): drawn as value items;
  the question is one mapping of the instance, judged on the host by the problem's evaluator and
  scored against the instance's best known (the reference search's ``best``, computed on the host
  with the items and never shown: docs/mapper.md).
* **choice items** (``c<j>.<i>``): for each declared ``[[qa.choices]]`` question, instances whose
  reference answer singles out one option (which candidate mapping moves the fewest words, which
  tensor dominates, which candidate is invalid). Tied instances are skipped. At most four options
  are shown, labelled A to D; the distractors and their order are drawn from the item's seed and
  the correct option goes to the letter that has been the answer least often so far, so over
  the items of a question no letter is favoured.

Items are deterministic in the Q&A seed, the choice seed (``[qa] choice_seed``, default: the
problem id), the reference and the count: editing an unrelated file of the problem never
reshuffles them. The prompt shows the spec, the pack's preamble, the input domain ("Inputs
satisfy") and the visible examples, exactly as in code mode, then the instance and the answer format.

An instance seed (see :mod:`.vectors`) draws fresh instances from a seed derived from it and the
Q&A seed, never one of that seed's hidden inputs nor one of the release's, and folds itself into
the options' shuffle and into the letter the balancing starts from, so neither the instances
nor the sequence of correct letters carries over from the release.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .problems import ChoiceSpec, FieldSpec, Problem
from .prompt import call_text, domain_lines, example_lines
from ..settings import cache_dir
from .vectors import Vector, built_once, generate, hidden_inputs, load, write_atomic

QA_PROMPT_VERSION = 2  # 2: the "Inputs satisfy" section, as in code prompts
LETTERS = "ABCD"
MAX_OPTIONS = len(LETTERS)
ANSWER_FIELD = FieldSpec(name="answer", type="enum", choices=list(LETTERS), description="the letter of the option")


@dataclass(frozen=True)
class QAItem:
    id: str
    kind: str  # "value", "choice" or "mapping" (a search problem: one mapping proposed in the reply)
    args: list[Any]
    expected: dict[str, Any]
    fields: tuple[FieldSpec, ...]
    question: str = ""
    options: tuple[str, ...] = ()  # choice items: option texts, in displayed order (A, B, ...)

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "kind": self.kind, "question": self.question, "options": list(self.options)}


def _rng(*parts: object) -> random.Random:
    digest = hashlib.sha256("\0".join(str(p) for p in parts).encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


def _kwargs(problem: Problem, v: Vector) -> dict[str, Any]:
    return {p.name: a for p, a in zip(problem.data.signature.params, v.args)}


def _candidates(problem: Problem, c: ChoiceSpec, v: Vector) -> list[tuple[str, Any]] | None:
    """(option text, value) for every eligible option of one instance, or None if not applicable."""
    exp = v.expected
    if c.keys is not None:
        return [(f"`{k}`", exp[k]) for k in c.keys]
    assert c.field is not None
    values = exp[c.field]
    if c.among is None:  # the keys of a map output
        return [(f"`{k}`", x) for k, x in values.items()]
    among = _kwargs(problem, v)[c.among]
    if not isinstance(among, list) or not isinstance(values, list) or len(among) != len(values):
        return None
    keep = exp[c.valid] if c.valid else [True] * len(among)
    return [(f"{c.among}[{i}] = {json.dumps(a, separators=(', ', ': '))}", x)
            for i, (a, x, ok) in enumerate(zip(among, values, keep)) if ok]


def _answer(c: ChoiceSpec, cands: list[tuple[str, Any]]) -> int | None:
    """Index of the single option the question singles out, or None when tied / none."""
    if c.kind == "flag":
        hits = [i for i, (_, x) in enumerate(cands) if x is c.want]
        return hits[0] if len(hits) == 1 and len(cands) >= 2 else None
    if len(cands) < 2 or not all(isinstance(x, (int, float)) and not isinstance(x, bool) for _, x in cands):
        return None
    best = min(x for _, x in cands) if c.kind == "min" else max(x for _, x in cands)
    hits = [i for i, (_, x) in enumerate(cands) if x == best]
    return hits[0] if len(hits) == 1 else None


def _choice_item(problem: Problem, j: int, i: int, c: ChoiceSpec, v: Vector, used: list[int],
                 instance_seed: int | None = None) -> QAItem | None:
    cands = _candidates(problem, c, v)
    if not cands:
        return None
    ans = _answer(c, cands)
    if ans is None:
        return None
    spec = problem.data.qa
    choice_seed = spec.choice_seed if spec and spec.choice_seed else problem.id
    fresh = () if instance_seed is None else ("instance-seed", instance_seed)
    r = _rng("qa-choice", choice_seed, *fresh, j, i)
    others = [k for k in range(len(cands)) if k != ans]
    r.shuffle(others)
    shown = others[: MAX_OPTIONS - 1]
    n = len(shown) + 1
    # the correct option goes where it has been least often so far: every letter is the answer
    # about equally often over the items of a question; ties go round the letters from a start
    # that an instance seed moves (the release starts at A)
    start = 0 if instance_seed is None else _rng("qa-letters", choice_seed, *fresh, j).randrange(MAX_OPTIONS)
    pos = min(range(n), key=lambda k: (used[k], (k - i - start) % n))
    used[pos] += 1
    order = shown[:pos] + [ans] + shown[pos:]
    return QAItem(id=f"c{j}.{i}", kind="choice", args=v.args, expected={"answer": LETTERS[pos]},
                  fields=(ANSWER_FIELD.model_copy(update={"choices": list(LETTERS[:n])}),),
                  question=c.question, options=tuple(cands[k][0] for k in order))


QA_CACHE_FORMAT = 1


def _search_pool(problem: Problem, exclude: set[str], count: int, instance_seed: int | None) -> list[Vector]:
    """A search problem's Q&A instances with their best known (the reference search, run on the
    host), cached like the hidden vectors under the content hash, the instance seed, the count and
    the excluded inputs; a damaged entry is recomputed."""
    key = hashlib.sha256("\0".join([problem.content_hash, str(instance_seed), str(count), *sorted(exclude)])
                         .encode()).hexdigest()[:32]
    path = cache_dir() / "qa" / f"{key}.json"

    def cached() -> list[Vector] | None:
        try:
            data = json.loads(path.read_text())
            if data.get("format") == QA_CACHE_FORMAT and data.get("problem_hash") == problem.content_hash:
                return [Vector(**v) for v in data["items"]]
        except (ValueError, KeyError, TypeError, OSError, AttributeError):
            pass
        return None

    def search() -> list[Vector]:
        pool = list(generate(problem, "qa", exclude=exclude, count=count, instance_seed=instance_seed))
        write_atomic(path, json.dumps({"format": QA_CACHE_FORMAT, "problem": problem.qualified_id,
                                       "problem_hash": problem.content_hash, "instance_seed": instance_seed,
                                       "items": [v.__dict__ for v in pool]}, separators=(",", ":"), allow_nan=False))
        return pool

    return built_once(path, cached, search)


def qa_items(problem: Problem, hidden: Sequence[Vector], count: int = 5, *,
             instance_seed: int | None = None) -> tuple[QAItem, ...]:
    """The Q&A items of a problem: ``count`` value items and ``count`` items per choice question.

    ``hidden``: the code-mode hidden vectors of the same instance seed (no item is one of them);
    ``instance_seed``: None for the release's items, else fresh ones drawn from that seed.
    """
    spec = problem.data.qa
    if spec is None:
        return ()
    exclude = hidden_inputs(tuple(hidden))
    if instance_seed is not None:  # nor one of the release's hidden inputs: those stay unseen for good
        exclude |= hidden_inputs(load(problem).hidden)
    pool_size = count * (8 if spec.choices else 1)
    if problem.data.scoring is not None:  # each instance's best known is a whole search: cached
        pool = _search_pool(problem, exclude, pool_size, instance_seed)
    else:
        pool = list(generate(problem, "qa", exclude=exclude, count=pool_size, instance_seed=instance_seed))
    kind = "mapping" if problem.data.scoring is not None else "value"
    items = [QAItem(id=v.id, kind=kind, args=v.args, expected=v.expected, fields=tuple(problem.data.outputs))
             for v in pool[:count]]
    # the release's pool is fixed (the validator proves it is enough); a fresh seed's pool grows,
    # up to four times, until every choice question has its count, where ties left it short
    limit = pool_size if instance_seed is None else 4 * pool_size
    for j, c in enumerate(spec.choices):
        made = 0
        used = [0] * MAX_OPTIONS
        k = 0
        while made < count:
            if k == len(pool):
                if len(pool) >= limit:
                    break
                pool += generate(problem, "qa", exclude=exclude, count=pool_size, instance_seed=instance_seed,
                                 start=len(pool))
            item = _choice_item(problem, j, made, c, pool[k], used, instance_seed)
            k += 1
            if item is not None:
                items.append(item)
                made += 1
    return tuple(items)


# ------------------------------------------------------------------------------------------
# the prompt
# ------------------------------------------------------------------------------------------

_VALUE_FORMAT = """\
Work it out however you like (no code is run: you answer the numbers yourself). End your reply
with the answer as one JSON object holding exactly the keys listed above, in a ```json fenced
block; if you write several JSON blocks, the last one counts. Integers must be written as
integers (48, not 48.0)."""

_CHOICE_FORMAT = """\
Work it out however you like (no code is run). End your reply with your choice as a JSON object
`{{"answer": "<letter>"}}` (one of {letters}) in a ```json fenced block; if you write several
JSON blocks, the last one counts."""


_MAPPING_FORMAT = """\
Work it out however you like (no code is run: you search and cost the mappings yourself). End your
reply with ONE mapping for this instance, in the format's `mapping` form, as one JSON object in a
```json fenced block:

```json
{{"levels": [{{"temporal": [["M", 4], ["K", 2]], "spatial_x": [], "spatial_y": []}}, ...]}}
```

one entry per architecture level, innermost first, only the keys `temporal`, `spatial_x` and
`spatial_y` (and an optional `name`), each loop a `[dimension, factor]` pair with an integer
factor (4, not 4.0). Strict JSON: no comments, no NaN, no duplicate keys, at most {max_bytes}
bytes. If you write several JSON blocks, the last one counts. The grader checks the mapping and
computes its {objective} on its side; the score is the best known {objective} divided by yours
(0 when the mapping is invalid or missing), and the answer counts as solved within
{tolerance:.1%} of the best known."""


_ANSWER_FORMAT = """\
Work it out however you like (no code is run: you search and cost the answers yourself). End your
reply with ONE answer for this instance, {answer}, as one JSON object in a ```json fenced block.
Strict JSON: no comments, no NaN, no duplicate keys, integers written as integers (4, not 4.0), at
most {max_bytes} bytes. If you write several JSON blocks, the last one counts. The grader checks
the answer and computes its {objective} on its side; the score is the best known {objective}
divided by yours (0 when the answer is invalid or missing), and the answer counts as solved
within {tolerance:.1%} of the best known."""


def render_qa_prompt(problem: Problem, item: QAItem, visible: Sequence[Vector]) -> str:
    """The exact text a model sees for one Q&A item."""
    sig = problem.data.signature
    lines = [f"# {problem.title}", ""]
    if problem.pack.preamble:
        lines += [problem.pack.preamble.strip(), ""]
    lines += [problem.spec.strip(), "", "## What is asked", "",
              f"The specification above describes a function `{sig.python()}`. Here it is not written: "
              "you answer for one concrete input yourself.", ""]
    sc = problem.data.scoring
    if item.kind == "mapping":
        assert sc is not None
        what = sc.answer or "a mapping"
        lines[-2] = (f"The specification above describes a function `{sig.python()}` that returns {what}. Here "
                     f"it is not written: you propose one {'answer' if sc.answer else 'mapping'} for one concrete "
                     "instance yourself.")
    elif item.kind == "value":
        lines += ["It returns a dict with exactly these keys:", "",
                  "| key | type | unit | how it is compared |", "|---|---|---|---|"]
        for f in item.fields:
            lines.append(f"| `{f.name}` | {f.parsed.describe()} | {f.unit or '-'} | {f.comparison()} |")
    lines += domain_lines(problem)
    lines += example_lines(problem, visible)
    lines += ["## The instance", "", "```python", call_text(problem, item.args), "```", ""]
    if item.kind == "mapping":
        assert sc is not None
        if sc.answer:  # an answer of the problem's own form: its spec defines it
            lines += [f"Which answer for this instance has the least {sc.objective_name}?", "", "## Answer format", "",
                      _ANSWER_FORMAT.format(answer=sc.answer, max_bytes=sc.max_bytes, objective=sc.objective_name,
                                            tolerance=sc.tolerance)]
        else:
            lines += [f"Which mapping of this instance has the least {sc.objective_name}?", "", "## Answer format", "",
                      _MAPPING_FORMAT.format(max_bytes=sc.max_bytes, objective=sc.objective_name, tolerance=sc.tolerance)]
    elif item.kind == "value":
        lines += ["What does it return for this input?", "", "## Answer format", "", _VALUE_FORMAT]
    else:
        lines += [f"**{item.question}**", ""]
        for letter, text in zip(LETTERS, item.options):
            lines.append(f"- {letter}: {text}")
        lines += ["", "## Answer format", "", _CHOICE_FORMAT.format(letters=", ".join(LETTERS[: len(item.options)]))]
    return "\n".join(lines).rstrip() + "\n"
