"""A pack's prompts as a training dataset: one JSON line per problem (and, with ``mode`` qa or
both, one per Q&A item, keyed ``pack/id:item``), nothing hidden in it.

Each row holds the prompt a model sees in ``eval`` (exactly what ``problems show`` prints), as chat
messages (``prompt``: TRL's conversational format and verl's ``prompt`` column) and as text
(``prompt_text``), and the problem's identity: ``problem`` (``pack/id``, the key the reward
functions grade by), ``pack``, ``family``, ``difficulty`` and the ``split``. For verl the row also
carries ``data_source``, ``ability``, ``reward_model`` (``{"style": "rule", "ground_truth":
<problem id>}``: the id names the problem; the hidden values stay with the grader) and
``extra_info``.

No hidden vector, and no expected output of one, is written: the visible examples are already in
the prompt, and a row is built from the prompt, the problem's metadata and hashes only.

``instance_seed`` (``problems export --instance-seed S``) draws the Q&A items from seed S (see
:mod:`.vectors`); a code-mode prompt is the same for every seed (its examples are the release's).
Every row records the seed (``instance_seed``, also in ``extra_info``; ``null`` for the release's
instances) so a reward grades each row against the instances its prompt came from: the reward
adapters refuse rows of another seed than their Rewarder's.

The split is a seeded hash of the problem id: ``test`` when sha256(seed, id) falls below
``test_share``, else ``train``. It depends on nothing but the id, the seed and the share, so a
problem keeps its side when other problems are added or removed.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator
from typing import Any

from . import vectors
from .problems import Problem
from .prompt import PROMPT_VERSION, render_prompt

EXPORT_FORMAT = 1
DEFAULT_TEST_SHARE = 0.2


def split_of(problem_id: str, seed: int = 0, test_share: float = DEFAULT_TEST_SHARE) -> str:
    """``train`` or ``test``, from a seeded hash of the problem id."""
    digest = hashlib.sha256(f"perfgrade-split\0{seed}\0{problem_id}".encode()).digest()
    u = int.from_bytes(digest[:8], "big") / 2**64
    return "test" if u < test_share else "train"


def export_row(problem: Problem, seed: int = 0, test_share: float = DEFAULT_TEST_SHARE, *,
               instance_seed: int | None = None) -> dict[str, Any]:
    vs = vectors.load(problem)  # the visible examples: the release's for every instance seed
    text = render_prompt(problem, vs.visible)
    pid = problem.qualified_id
    split = split_of(pid, seed, test_share)
    return {
        "problem": pid,
        "pack": problem.pack.name,
        "pack_version": problem.pack.version,
        "id": problem.id,
        "title": problem.title,
        "family": problem.family,
        "difficulty": problem.difficulty,
        "tier": problem.pack.data.tier,
        "split": split,
        "prompt": [{"role": "user", "content": text}],
        "prompt_text": text,
        "entry_point": problem.entry_point,
        "content_hash": problem.content_hash,
        "prompt_version": PROMPT_VERSION,
        "format": EXPORT_FORMAT,
        "data_source": f"perfgrade/{problem.pack.name}",
        "ability": "code",
        "reward_model": {"style": "rule", "ground_truth": pid},
        "extra_info": {"problem": pid, "split": split, "instance_seed": instance_seed},
        "instance_seed": instance_seed,
    }


def export_qa_rows(problem: Problem, count: int = 5, seed: int = 0,
                   test_share: float = DEFAULT_TEST_SHARE, *, instance_seed: int | None = None) -> list[dict[str, Any]]:
    """The problem's Q&A items, one row each, keyed ``pack/id:item`` (the key the Q&A reward grades
    by). The split is the problem's, so every item of a problem lands on the same side."""
    from .qa import QA_PROMPT_VERSION, qa_items, render_qa_prompt

    if problem.data.qa is None:
        return []
    vs = vectors.load(problem, instance_seed=instance_seed)
    pid = problem.qualified_id
    split = split_of(pid, seed, test_share)
    rows = []
    for it in qa_items(problem, vs.hidden, count, instance_seed=instance_seed):
        text = render_qa_prompt(problem, it, vs.visible)
        key = f"{pid}:{it.id}"
        rows.append({
            "problem": key, "pack": problem.pack.name, "pack_version": problem.pack.version, "id": problem.id,
            "item": it.id, "kind": it.kind, "title": problem.title, "family": problem.family,
            "difficulty": problem.difficulty, "tier": problem.pack.data.tier, "split": split,
            "prompt": [{"role": "user", "content": text}], "prompt_text": text, "mode": "qa",
            "content_hash": problem.content_hash, "prompt_version": QA_PROMPT_VERSION, "format": EXPORT_FORMAT,
            "data_source": f"perfgrade/{problem.pack.name}/qa", "ability": "reasoning",
            "reward_model": {"style": "rule", "ground_truth": key},
            "extra_info": {"problem": key, "split": split, "instance_seed": instance_seed},
            "instance_seed": instance_seed,
        })
    return rows


def export_rows(problems: Iterable[Problem], seed: int = 0, test_share: float = DEFAULT_TEST_SHARE,
                mode: str = "code", qa_count: int = 5, *, instance_seed: int | None = None) -> Iterator[dict[str, Any]]:
    for p in problems:
        if mode in ("code", "both"):
            yield export_row(p, seed, test_share, instance_seed=instance_seed)
        if mode in ("qa", "both"):
            yield from export_qa_rows(p, qa_count, seed, test_share, instance_seed=instance_seed)


def to_jsonl(rows: Iterable[dict[str, Any]]) -> str:
    return "".join(json.dumps(r, ensure_ascii=False, allow_nan=False) + "\n" for r in rows)
