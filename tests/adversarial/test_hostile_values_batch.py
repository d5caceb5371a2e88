"""A candidate that writes its batch mates' records on the host channel must not decide their verdicts.

The container's stdout is the channel the host reads; PID 1 (docker-init) holds it and runs as the
candidate's user, so a candidate can open /proc/1/fd/1 and write records there; the worker, a fork
of the supervisor, has the whole request (every job's id and cases) on its stack. The forgers of
``corpus.BATCH_FORGERS`` are correct for themselves and, on their first call, write a complete,
well-formed stream for every later job of the request, then the end record, which the host takes
as the end of the container's answer. Batch mode promises that each of the forger's batch mates gets
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


# The forger's own verdict depends on a race it runs itself: its worker reports "load" to the
# supervisor, which relays it to the channel, while the forger writes its forged case records
# straight onto the channel from its first call. When the forged cases get there before the relayed
# load, the host sees cases without a load (a protocol violation of the forger's own job: crashed);
# otherwise its own answers are right (pass). Either is its own doing. What must never vary is the
# verdict of everyone who shared the container with it.
FORGER_ALONE = {"pass", "crashed"}


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
