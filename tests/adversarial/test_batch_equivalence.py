"""Batch mode gives every hostile candidate the verdict per-sample mode gives it.

The corpus runs in batches (several candidates per container, each in its own process), with the
candidates that take their container down mixed among the others: nobody's verdict may depend on
who shared the container.
"""

from __future__ import annotations

import pytest

from corpus import CORPUS, CORRECT, LIMITS
from grader.packs import vectors
from grader.grading.execution import grade_batch, grade_source

pytestmark = pytest.mark.docker

BATCH = 6


def test_corpus_verdicts_are_the_same_in_batch_mode(tiny_catalog, handle):
    problem = tiny_catalog.find("tiny-pack/sound")
    hidden = vectors.load(problem).hidden
    # a correct candidate after every hostile one: a batch mate's mess must not reach it
    items = []
    for h in CORPUS:
        items.append((h.name, h.source))
        items.append((f"{h.name}--after", CORRECT))
    batched: dict[str, str] = {}
    for k in range(0, len(items), BATCH):
        chunk = items[k:k + BATCH]
        for (name, _), (g, notes) in zip(chunk, grade_batch(handle, problem, chunk, hidden, LIMITS)):
            assert not notes, notes
            batched[name] = g.verdict.value
    for h in CORPUS:
        single, _ = grade_source(handle, problem, h.source, hidden, LIMITS, job_id=h.name)
        assert batched[h.name] == single.verdict.value, h.name
        assert batched[f"{h.name}--after"] == "pass", f"the candidate after {h.name} did not pass"
