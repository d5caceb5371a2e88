"""A candidate that writes its batch mates' records on the host channel must not decide their verdicts.

The container's stdout is the channel the host reads; PID 1 (docker-init) holds it. The forgers of
``corpus.BATCH_FORGERS`` are correct for themselves and, on their first call, try to write a
complete, well-formed stream for every later job of the request, then the end record. They cannot:
the worker is a fresh interpreter under its own uid, holding its own job only, and /proc/1/fd/1 is
root's (SECURITY.md, guarantee 4). Batch mode promises that each of the forger's batch mates gets
the verdict it gets alone ("nobody's verdict may depend on who shared the container").
"""

from __future__ import annotations

import pytest

from corpus import BATCH_FORGERS, F5, LIMITS, WRONG_F5, solution
from test_hostile_values import grader_module, problem, vector_set

pytestmark = pytest.mark.docker


def _verdicts(handle, items: list[tuple[str, str]]) -> dict[str, str]:
    execution = grader_module("execution")
    hidden = vector_set(F5).hidden
    graded = execution.grade_batch(handle, problem(F5), items, hidden, LIMITS)
    return {name: g.verdict.value for (name, _), (g, _) in zip(items, graded)}


# The forger's first call raises PermissionError when it opens the channel: a runtime error of its
# own, the same alone and batched. What must never vary is the verdict of everyone who shared the
# container with it.
FORGER_ALONE = {"runtime_error"}


@pytest.mark.parametrize("forger", sorted(BATCH_FORGERS))
def test_a_batch_mate_cannot_write_my_records(forger, handle):
    mates = [("wrong-mate", WRONG_F5), ("correct-mate", solution(F5))]
    alone = {}
    for name, source in [(forger, BATCH_FORGERS[forger]), *mates]:
        alone.update(_verdicts(handle, [(name, source)]))
    # the mates are a wrong answer and a pass when graded alone
    assert alone[forger] in FORGER_ALONE, alone
    assert {k: alone[k] for k in ("wrong-mate", "correct-mate")} == {"wrong-mate": "wrong_answer",
                                                                      "correct-mate": "pass"}, alone

    for _ in range(2):
        batched = _verdicts(handle, [(forger, BATCH_FORGERS[forger]), *mates])
        assert batched[forger] in FORGER_ALONE, batched
        mates_batched = {k: v for k, v in batched.items() if k != forger}
        mates_alone = {k: v for k, v in alone.items() if k != forger}
        assert mates_batched == mates_alone, f"batched with {forger}: {batched}, alone: {alone}"
