"""A pack as a ``verifiers`` (v1) environment, graded by the grader.

    vf-eval perfgrade-verifiers --model M --client.base-url URL --client.api-key-var VAR \\
        --env.taskset.pack perf-core --env.taskset.mode code -n 5 --no-push

verifiers finds an environment by its taskset id: ``perfgrade-verifiers`` imports the
``perfgrade_verifiers`` package, which re-exports the three classes of this module through its
``__all__``:

* :class:`PerfgradeTaskset` (``--env.taskset.*``: ``pack``, ``mode``, ``problems``, ``partial``,
  ``qa_chunk``). ``mode="code"``: one task per problem of the pack, its prompt exactly what
  ``eval`` sends (``problems show``); a finite taskset. ``mode="qa"``: an unbounded stream of Q&A
  items (``INFINITE``): round k yields, for each problem with a ``[qa]`` table in turn, its items
  of index k (``q<k>``, then ``c<j>.<k>`` for each choice question that has one), drawn from the
  problem's own Q&A seed with :func:`grader.packs.qa.qa_items`, in draws that double
  (``qa_chunk`` items, then twice as many, ...), each made once per process, so the draws cost
  about twice the items used and the stream never repeats an item. Items are deterministic in
  (problem content, draw size), and a task records both, so any process can rebuild its item.
  Bound it with ``-n`` or ``--select.include.idx``.
* The reward (``perfgrade``, a ``@vf.reward`` of each task) is the grader's: code is extracted
  and graded in the sandbox against the hidden vectors (:func:`grader.reward.default_rewarder`,
  so ``PERFGRADE_REWARD_ENGINE=ray`` grades on a cluster), a Q&A answer is compared with its
  item's answer on the host (:func:`grader.grading.qa.grade_qa`, with the item from the
  draw the stream made rather than ``Rewarder.score(mode="qa")``, which draws the items again
  for every call). Both map the verdict to a number with :meth:`Rewarder.reward`: 1.0 for a
  pass; ``partial`` gives the share of hidden vectors (or of the item's fields) right. The
  verdict and its reason go to ``trace.info["perfgrade"]``.
* :class:`PerfgradeHarness`, the taskset's default harness: one chat completion per task, sent
  from this process through the rollout's interception endpoint (so verifiers records the call,
  its usage and its sampling) -- no program to install, nothing to download.
* :class:`PerfgradeEnv`: the single-agent environment with the agent on the ``subprocess``
  runtime (the harness runs nothing in it), so a local run needs no sandbox service.

Nothing hidden enters a task: a task holds its prompt, the problem id, the item id and the chunk
size; expected values stay with the grader.
"""

from __future__ import annotations

import asyncio
import itertools
import threading
from collections.abc import Iterator
from typing import Literal

import httpx
import verifiers.v1 as vf
from pydantic import Field

from grader.errors import ConfigError
from grader.grading.qa import grade_qa
from grader.packs import vectors
from grader.packs.problems import Catalog, Problem
from grader.packs.prompt import render_prompt
from grader.packs.qa import QAItem, qa_items, render_qa_prompt
from grader.reward import default_rewarder

TASKSET_ID = "perfgrade-verifiers"
REQUEST_TIMEOUT_S = 900.0

__all__ = ["PerfgradeData", "PerfgradeTask", "PerfgradeConfig", "PerfgradeTaskset", "PerfgradeHarness",
           "PerfgradeHarnessConfig", "PerfgradeEnv", "PerfgradeEnvConfig", "TASKSET_ID"]


# ------------------------------------------------------------------------------------------
# problems and Q&A items, shared by the taskset and the reward of one process
# ------------------------------------------------------------------------------------------

class _Packs:
    """The catalog, and each problem's Q&A items per chunk size, drawn once per process."""

    def __init__(self) -> None:
        self._catalog: Catalog | None = None
        self._items: dict[tuple[str, str], tuple[int, dict[str, QAItem]]] = {}
        self._lock = threading.Lock()

    @property
    def catalog(self) -> Catalog:
        with self._lock:
            if self._catalog is None:
                self._catalog = Catalog()
            return self._catalog

    def problem(self, ident: str) -> Problem:
        return self.catalog.find(ident)

    def items(self, problem: Problem, count: int, *, exact: bool = False) -> dict[str, QAItem]:
        """The items of a draw of ``count``; unless ``exact``, those of a larger draw already made
        may answer (a larger draw holds every item of a smaller one, identical: item i depends
        only on the draws before it)."""
        key = (problem.qualified_id, problem.content_hash)
        with self._lock:
            held = self._items.get(key)
        if held is not None and (held[0] == count or (held[0] > count and not exact)):
            return held[1]
        got = {it.id: it for it in qa_items(problem, vectors.load(problem).hidden, count)}
        with self._lock:
            held = self._items.get(key)
            if held is None or held[0] < count:
                self._items[key] = (count, got)  # keep the largest draw only
        return got



_PACKS = _Packs()


def item_index(item_id: str) -> int:
    """The index of a Q&A item: ``q7`` -> 7, ``c1.7`` -> 7."""
    return int(item_id[1:].rpartition(".")[2])


# ------------------------------------------------------------------------------------------
# the task
# ------------------------------------------------------------------------------------------

class PerfgradeData(vf.TaskData):
    problem: str
    """The problem, ``pack/id``."""
    mode: Literal["code", "qa"] = "code"
    item: str = ""
    """Q&A: the item id (``q3``, ``c0.3``)."""
    qa_count: int = 0
    """Q&A: the chunk size the item was drawn with (items are deterministic in it)."""
    partial: bool = False
    """Reward the share of hidden vectors (Q&A: of fields) right instead of all or nothing."""


class PerfgradeTask(vf.Task[PerfgradeData]):
    @property
    def key(self) -> str:
        d = self.data
        return f"{d.problem}:{d.item}" if d.item else d.problem

    @vf.reward
    async def perfgrade(self, trace: vf.Trace) -> float:
        """The grader's reward for the rollout's last reply."""
        verdict, reason, reward = await asyncio.to_thread(_grade, self.data, trace.last_reply)
        trace.info["perfgrade"] = {"problem": self.key, "mode": self.data.mode, "verdict": verdict, "reason": reason}
        return reward


def _grade(d: PerfgradeData, text: str) -> tuple[str, str, float]:
    rewarder = default_rewarder()
    if d.mode == "code":
        out = rewarder.score(d.problem, [text], partial=d.partial)
        g = out.grades[0]
        return g.verdict.value, g.reason, float(out.rewards[0] or 0.0)
    problem = _PACKS.problem(d.problem)
    item = _PACKS.items(problem, d.qa_count).get(d.item)
    if item is None:
        raise ConfigError(f"{d.problem} has no Q&A item {d.item!r} in a draw of {d.qa_count}")
    g = grade_qa(problem, item, text)
    return g.verdict.value, g.reason, float(rewarder.reward(g, d.partial) or 0.0)


# ------------------------------------------------------------------------------------------
# the taskset
# ------------------------------------------------------------------------------------------

class PerfgradeConfig(vf.TasksetConfig):
    pack: str = "perf-core"
    """The pack whose problems make the tasks."""
    mode: Literal["code", "qa"] = "code"
    """code: one task per problem (finite); qa: an unbounded stream of Q&A items."""
    problems: list[str] = Field(default_factory=list)
    """Only these problems (ids within the pack, or pack/id); default every problem."""
    partial: bool = False
    """Reward the share of hidden vectors (Q&A: of the item's fields) right."""
    qa_chunk: int = Field(8, ge=1)
    """Q&A: items drawn per problem at first; each later draw doubles."""


class PerfgradeTaskset(vf.Taskset[PerfgradeTask, PerfgradeConfig]):
    INFINITE = False  # mode qa makes an instance infinite (see __init__)

    def __init__(self, config: PerfgradeConfig) -> None:
        super().__init__(config)
        self.INFINITE = config.mode == "qa"

    def selected(self) -> list[Problem]:
        cat = _PACKS.catalog
        problems = cat.problems(self.config.pack)
        if self.config.problems:
            by_id = {p.qualified_id: p for p in problems}
            want = [i if "/" in i else f"{self.config.pack}/{i}" for i in self.config.problems]
            missing = [i for i in want if i not in by_id]
            if missing:
                raise ConfigError(f"pack {self.config.pack!r} has no problem {', '.join(missing)}")
            problems = [by_id[i] for i in want]
        return problems

    def load(self) -> Iterator[PerfgradeTask]:
        problems = self.selected()
        if self.config.mode == "code":
            return self._code_tasks(problems)
        with_qa = [p for p in problems if p.data.qa is not None]
        if not with_qa:
            raise ConfigError(f"no selected problem of pack {self.config.pack!r} has Q&A items ([qa] table)")
        return self._qa_stream(with_qa)

    def _code_tasks(self, problems: list[Problem]) -> Iterator[PerfgradeTask]:
        for p in problems:
            prompt = render_prompt(p, vectors.load(p).visible)
            yield PerfgradeTask(PerfgradeData(id=p.qualified_id, name=p.qualified_id, prompt=prompt,
                                              problem=p.qualified_id, partial=self.config.partial),
                                self.config.task)

    def chunk_for(self, index: int) -> int:
        """The draw that holds item ``index``: qa_chunk, doubled until it is larger than the index."""
        n = self.config.qa_chunk
        while n <= index:
            n *= 2
        return n

    def _qa_stream(self, problems: list[Problem]) -> Iterator[PerfgradeTask]:
        for k in itertools.count():
            count = self.chunk_for(k)
            for p in problems:
                items = _PACKS.items(p, count, exact=True)
                visible = vectors.load(p).visible
                for it in items.values():
                    if item_index(it.id) != k:
                        continue
                    key = f"{p.qualified_id}:{it.id}"
                    yield PerfgradeTask(PerfgradeData(
                        id=key, name=key, prompt=render_qa_prompt(p, it, visible), problem=p.qualified_id,
                        mode="qa", item=it.id, qa_count=count, partial=self.config.partial), self.config.task)


# ------------------------------------------------------------------------------------------
# the harness: one chat completion through the interception endpoint
# ------------------------------------------------------------------------------------------

class PerfgradeHarnessConfig(vf.HarnessConfig):
    pass


class PerfgradeHarness(vf.Harness[PerfgradeHarnessConfig]):
    """Sends the task's prompt as one chat completion request from this process.

    The request goes to the rollout's interception endpoint with its secret, as every harness's
    model calls must: verifiers relays it to the model with the run's model and sampling, and
    records the call on the trace. A failed request is a failed run of the harness."""

    APPENDS_SYSTEM_PROMPT = True
    SUPPORTS_RESUME = True
    EXECUTES_CODE = False
    NEEDS_CONTAINER = False

    async def launch(self, ctx: vf.ModelContext, trace: vf.Trace, runtime: vf.Runtime, endpoint: str, secret: str,
                     mcp_urls: dict[str, str], data: vf.TaskData) -> vf.ProgramResult:
        from verifiers.v1.dialects.chat import message_to_wire
        from verifiers.v1.errors import MODEL_TRANSPORT_ERROR_EXIT_CODE

        system, prompt = self.resolve_prompt(data)
        messages = [{"role": "system", "content": system}] if system else []
        if isinstance(prompt, str):
            messages.append({"role": "user", "content": prompt})
        else:
            messages += [message_to_wire(m) for m in prompt or []]
        body = {"model": ctx.model, "messages": messages}
        try:
            async with httpx.AsyncClient(timeout=httpx.Timeout(REQUEST_TIMEOUT_S, connect=10.0)) as client:
                r = await client.post(f"{endpoint.rstrip('/')}/chat/completions", json=body,
                                      headers={"Authorization": f"Bearer {secret}"})
        except httpx.TransportError as exc:
            return vf.ProgramResult(exit_code=MODEL_TRANSPORT_ERROR_EXIT_CODE, stdout="",
                                    stderr=f"{type(exc).__name__}: {exc}")
        if r.status_code != 200:
            return vf.ProgramResult(exit_code=1, stdout="", stderr=f"HTTP {r.status_code}: {r.text[-2000:]}")
        return vf.ProgramResult(exit_code=0, stdout="", stderr="")


# ------------------------------------------------------------------------------------------
# the environment: one agent, on the local subprocess runtime
# ------------------------------------------------------------------------------------------

class PerfgradeEnvConfig(vf.SingleAgentEnvConfig):
    agent: vf.AgentConfig = vf.AgentConfig(runtime=vf.SubprocessConfig())


class PerfgradeEnv(vf.Env[PerfgradeEnvConfig]):
    async def run(self, task: vf.Task, agents: vf.Agents) -> None:
        await agents.agent.run(task)
