"""The grader as a reward: one number per completion, graded like ``eval`` grades.

    with Rewarder() as r:                                    # the local Docker engine
        out = r.score("perf-core/f1-conv-layer-accounting", completions)
        out.rewards                                          # [1.0, 0.0, ...]
        out.verdicts                                         # ["pass", "wrong_answer", ...]

    Rewarder(engine="ray", ray_address="head:6379")           # gradings as Ray tasks on a cluster

A completion is a string or chat messages (a list of ``{"role", "content"}`` dicts, or one such
dict): the assistant messages' text is graded. The code is extracted exactly as in ``eval``
(no code is a ``no_code`` verdict), run in the sandbox on the problem's hidden vectors and scored
on the host: 1.0 for ``pass`` and 0.0 otherwise; with ``partial=True`` the share of hidden
vectors passed, or for a search problem (docs/mapper.md) its score: the mean over the hidden
instances of best known / objective of the returned mapping. An ``infra_error`` (the engine failed, retried and gave up) is not the model's
fault: its reward is ``infra_reward`` (0.0 unless set; None to leave it out of a trainer's sum)
and its verdict says so.

Gradings run in batch mode by default (up to ``batch`` completions of one problem per fresh
container, each in its own fresh process; docs/performance.md has the trade-off), with as many
batches in flight as the engine has slots. ``batch=1`` gives every completion its own container.

``mode="code"``: the model writes the function. ``mode="qa"``: the model answers one Q&A item
directly (``problems export --mode qa`` writes those prompts); the problem key is then
``pack/id:item`` (e.g. ``perf-core/f4-gemm-dram-traffic:q0``), the answer is the last strict JSON
object in a fenced block, compared on the host with no sandbox: 1.0 for ``correct``; with
``partial=True``, the share of the item's fields answered correctly (a search problem's item: the
proposed mapping's score against the best known). Modes are looked up in
:attr:`Rewarder.modes` (mode name -> a method grading groups of completion texts, one group per
problem key).

``instance_seed=S`` grades against the instances of seed S (``eval --instance-seed S``): fresh
hidden vectors in code mode, fresh Q&A items in Q&A mode (``problems export --instance-seed S``
writes their prompts). The default, None, is the release's instances.
"""

from __future__ import annotations

import os
import threading
import uuid
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Union

from sandbox import Limits

from ..errors import ConfigError
from ..grading.execution import GradingEngine, LocalEngine, open_sandbox, problem_limits, safe_workers
from ..grading.extract import extract_code
from ..grading.scoring import Grade, Verdict, no_code_grade
from ..packs import vectors
from ..packs.problems import Catalog, Problem
from ..packs.vectors import parse_instance_seed

Message = Mapping[str, Any]
Completion = Union[str, Message, Sequence[Message]]

DEFAULT_BATCH = 16


def completion_text(completion: Completion) -> str:
    """The text to grade: a string as it is; of chat messages, the assistant messages' content."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, Mapping):
        completion = [completion]
    if not isinstance(completion, Sequence):
        raise ConfigError(f"a completion must be a string or chat messages, not {type(completion).__name__}")
    parts = []
    for m in completion:
        if not isinstance(m, Mapping):
            raise ConfigError(f"a chat message must be a dict with 'content', not {type(m).__name__}")
        if m.get("role", "assistant") == "assistant":
            parts.append(_content_text(m.get("content")))
    return "\n".join(parts)


def _content_text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, Sequence):  # multi-part content: [{"type": "text", "text": ...}, ...]
        return "".join(p.get("text", "") for p in content if isinstance(p, Mapping) and p.get("type", "text") == "text")
    return str(content)


@dataclass(frozen=True)
class RewardBatch:
    """Rewards and verdicts, in the order of the completions given."""

    rewards: list[float | None]
    verdicts: list[str]
    grades: list[Grade]
    problems: list[str]

    def __len__(self) -> int:
        return len(self.rewards)


class Rewarder:
    """Scores completions of the packs' problems; holds a grading engine until :meth:`close`
    (made on the first code-mode grading: Q&A items need none).

    ``engine``: ``"local"`` (this machine's Docker engine), ``"ray"`` (a Ray cluster:
    ``ray_address``, else the connection this process has, else $RAY_ADDRESS, else a one-node
    cluster here) or a :class:`GradingEngine` already made (not closed by this object).
    ``workers``: local gradings in parallel (default twice the CPUs, at most 8, lowered to fit
    the memory limits in half the host). ``pack_paths``: packs besides the built-in ones.
    ``instance_seed``: the seed of the instances graded against (None or ``"release"``: the
    release's; an integer: fresh hidden vectors and Q&A items, as ``eval --instance-seed``).
    """

    def __init__(self, *, engine: str | GradingEngine = "local", ray_address: str | None = None,
                 batch: int = DEFAULT_BATCH, workers: int | None = None, partial: bool = False,
                 infra_reward: float | None = 0.0, pack_paths: Sequence[str | Path] | None = None,
                 catalog: Catalog | None = None, base_limits: Limits | None = None,
                 instance_seed: int | str | None = None) -> None:
        self.instance_seed = parse_instance_seed(instance_seed)
        if batch < 1:
            raise ConfigError(f"batch must be >= 1 (got {batch})")
        if isinstance(engine, str) and engine not in ("local", "ray"):
            raise ConfigError(f"engine {engine!r}: expected 'local' or 'ray'")
        self.batch = batch
        self.partial = partial
        self.infra_reward = infra_reward
        self.base_limits = base_limits or Limits()
        if catalog is None:
            from ..packs.problems import default_pack_roots

            extra = [Path(p) for p in pack_paths or ()]
            catalog = Catalog(extra + [r for r in default_pack_roots() if r not in extra]) if extra else Catalog()
        self.catalog = catalog
        # mode -> grades groups of completions, one group per problem, in order
        self.modes: dict[str, Callable[[list[tuple[Problem, list[str]]]], list[list[Grade]]]] = {
            "code": self._grade_code, "qa": self._grade_qa}
        self._problems: dict[str, Problem] = {}
        self._hidden: dict[str, tuple] = {}
        self._qa: dict[tuple[str, int], dict] = {}  # (problem, items per kind) -> its Q&A items by id
        self._lock = threading.Lock()
        self.run_id = f"reward-{uuid.uuid4().hex[:10]}"
        self._memory_mb = max((p.sandbox_limits(self.base_limits).memory_mb for p in catalog.problems()),
                              default=self.base_limits.memory_mb)
        self._engine_spec, self._ray_address, self._workers = engine, ray_address, workers
        self._owns_engine = not isinstance(engine, GradingEngine)
        self._engine: GradingEngine | None = None if self._owns_engine else engine  # type: ignore[assignment]
        self._pool: ThreadPoolExecutor | None = None
        self._engine_lock = threading.Lock()

    @property
    def engine(self) -> GradingEngine:
        """The grading engine, made on first use: Q&A rewards never need one, so a trainer that
        scores only Q&A items runs without Docker or a cluster."""
        with self._engine_lock:
            if self._engine is None:
                if self._engine_spec == "ray":
                    from ..grading.ray_engine import RayEngine

                    self._engine = RayEngine(self._ray_address, run_id=self.run_id, memory_mb=self._memory_mb)
                else:
                    from sandbox.engine import connect, sweep

                    sweep(connect(), orphans_only=True)  # containers of a trainer that was killed
                    slots, _ = safe_workers(self._workers or min(8, 2 * (os.cpu_count() or 1)), self._memory_mb)
                    self._engine = LocalEngine(open_sandbox(self.run_id), slots=slots)
            return self._engine

    def _executor(self) -> ThreadPoolExecutor:
        engine = self.engine
        with self._engine_lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(max_workers=max(1, engine.slots), thread_name_prefix="reward")
            return self._pool

    # -- the API -----------------------------------------------------------------------------
    def score(self, problem: str, completions: Sequence[Completion], *, mode: str = "code",
              partial: bool | None = None) -> RewardBatch:
        """Rewards for completions of one problem (``pack/id`` or a unique bare id)."""
        return self.score_many([(problem, c) for c in completions], mode=mode, partial=partial)

    def score_many(self, pairs: Sequence[tuple[str, Completion]], *, mode: str = "code",
                   partial: bool | None = None) -> RewardBatch:
        """Rewards for (problem, completion) pairs of any problems, in their order.

        ``mode="auto"`` tells each pair's mode by its key: ``pack/id:item`` is a Q&A item, ``pack/id``
        a code-mode problem (problem ids never hold a colon), so one batch may mix both."""
        if mode == "auto":
            return self._score_auto(pairs, partial)
        grade_groups = self.modes.get(mode)
        if grade_groups is None:
            raise ConfigError(f"mode {mode!r} is not supported: expected one of {', '.join(sorted(self.modes))}")
        partial = self.partial if partial is None else partial
        texts = [completion_text(c) for _, c in pairs]
        keys = [self._split_key(pid, mode) for pid, _ in pairs]
        problems = [self.problem(pid) for pid, _ in keys]
        groups: dict[tuple[str, str], list[int]] = {}
        for i, (p, (_, item)) in enumerate(zip(problems, keys)):
            groups.setdefault((p.qualified_id, item), []).append(i)
        graded = grade_groups([(problems[idx[0]], [texts[i] for i in idx]) if mode == "code" else
                               (problems[idx[0]], keys[idx[0]][1], [texts[i] for i in idx])
                               for idx in groups.values()])
        grades: list[Grade | None] = [None] * len(pairs)
        for idx, got in zip(groups.values(), graded):
            for i, g in zip(idx, got):
                grades[i] = g
        done = [g for g in grades if g is not None]
        assert len(done) == len(pairs)
        names = [p.qualified_id + (f":{item}" if item else "") for p, (_, item) in zip(problems, keys)]
        return RewardBatch(rewards=[self.reward(g, partial) for g in done], verdicts=[g.verdict.value for g in done],
                           grades=done, problems=names)

    def _score_auto(self, pairs: Sequence[tuple[str, Completion]], partial: bool | None) -> RewardBatch:
        by_mode: dict[str, list[int]] = {}
        for i, (key, _) in enumerate(pairs):
            by_mode.setdefault("qa" if ":" in key else "code", []).append(i)
        rewards: list[float | None] = [None] * len(pairs)
        verdicts: list[str] = [""] * len(pairs)
        grades: list[Grade | None] = [None] * len(pairs)
        names: list[str] = [""] * len(pairs)
        for mode, idx in by_mode.items():
            part = self.score_many([pairs[i] for i in idx], mode=mode, partial=partial)
            for j, i in enumerate(idx):
                rewards[i], verdicts[i], grades[i], names[i] = (part.rewards[j], part.verdicts[j], part.grades[j],
                                                                part.problems[j])
        return RewardBatch(rewards=rewards, verdicts=verdicts, grades=[g for g in grades if g is not None],
                           problems=names)

    @staticmethod
    def _split_key(ident: str, mode: str) -> tuple[str, str]:
        """(problem id, Q&A item) from a problem key: ``pack/id`` in code mode, ``pack/id:item`` in qa."""
        if mode != "qa":
            return ident, ""
        pid, sep, item = ident.rpartition(":")
        if not sep or not pid or not item:
            raise ConfigError(f"{ident!r}: a Q&A completion is keyed pack/id:item (e.g. perf-core/f1-...:q0)")
        return pid, item

    def reward(self, g: Grade, partial: bool = False) -> float | None:
        if g.verdict is Verdict.INFRA_ERROR:
            return self.infra_reward
        if partial and g.score is not None:
            return g.score  # a search problem: the mean score over its instances is the dense reward
        if g.passed:
            return 1.0
        if partial and g.fields and g.vectors_total == 1 and g.verdict is not Verdict.NO_ANSWER:
            return sum(not f.failed for f in g.fields.values()) / len(g.fields)  # a Q&A answer: fields right
        if partial and g.vectors_total:
            return g.vectors_passed / g.vectors_total
        return 0.0

    def problem(self, ident: str) -> Problem:
        with self._lock:
            p = self._problems.get(ident)
        if p is None:
            p = self.catalog.find(ident)
            with self._lock:
                self._problems[ident] = p
        return p

    def hidden(self, problem: Problem) -> tuple:
        pid = problem.qualified_id
        with self._lock:
            h = self._hidden.get(pid)
        if h is None:
            h = vectors.load(problem, instance_seed=self.instance_seed).hidden
            with self._lock:
                self._hidden[pid] = h
        return h

    # -- modes -------------------------------------------------------------------------------
    def _grade_code(self, groups: list[tuple[Problem, list[str]]]) -> list[list[Grade]]:
        """Code mode: extract each completion's code and grade it in the sandbox, in batches of one
        problem; every batch of every group is in flight at once, up to the engine's slots."""
        out: list[list[Grade | None]] = []
        chunks: list[tuple[int, Problem, list[tuple[int, str]]]] = []
        for g_index, (problem, texts) in enumerate(groups):
            n_hidden = len(self.hidden(problem))
            row: list[Grade | None] = [None] * len(texts)
            with_code: list[tuple[int, str]] = []
            for i, text in enumerate(texts):
                ex = extract_code(text, problem.entry_point)
                if ex.code is None:
                    row[i] = no_code_grade(ex.reason, n_hidden)
                else:
                    with_code.append((i, ex.code))
            out.append(row)
            chunks += [(g_index, problem, with_code[k:k + self.batch]) for k in range(0, len(with_code), self.batch)]

        def run(problem: Problem, chunk: list[tuple[int, str]]) -> list[Grade]:
            limits = problem_limits(problem, self.base_limits)
            graded = self.engine.grade(problem, [(f"c{i}", code) for i, code in chunk], self.hidden(problem), limits)
            return [g for g, _ in graded]

        if len(chunks) == 1:
            results = [run(chunks[0][1], chunks[0][2])]
        else:
            pool = self._executor()
            results = [f.result() for f in [pool.submit(run, p, c) for _, p, c in chunks]]
        for (g_index, _, chunk), graded in zip(chunks, results):
            for (i, _), g in zip(chunk, graded):
                out[g_index][i] = g
        assert all(g is not None for row in out for g in row)
        return out  # type: ignore[return-value]

    def _grade_qa(self, groups: list[tuple[Problem, str, list[str]]]) -> list[list[Grade]]:
        """Q&A mode: extract each answer and compare it with the item's expected answer on the host
        (a search problem's item: judge the proposed mapping and score it against the best known)."""
        from ..grading.qa import grade_qa
        from ..packs.qa import qa_items

        out = []
        for problem, item_id, texts in groups:
            if problem.data.qa is None:
                raise ConfigError(f"{problem.qualified_id} has no [qa] table: it has no Q&A items")
            index = int(item_id[1:].split(".")[-1]) if item_id[1:].replace(".", "").isdigit() else -1
            key = (problem.qualified_id, max(5, index + 1))
            with self._lock:
                items = self._qa.get(key)
            if items is None:  # drawn once per rewarder: a trainer asks for the same items every step
                items = {it.id: it for it in qa_items(problem, self.hidden(problem), key[1],
                                                      instance_seed=self.instance_seed)}
                with self._lock:
                    self._qa[key] = items
            if item_id not in items:
                raise ConfigError(f"{problem.qualified_id} has no Q&A item {item_id!r}")
            out.append([grade_qa(problem, items[item_id], t) for t in texts])
        return out

    # -- lifetime ----------------------------------------------------------------------------
    def close(self) -> None:
        with self._engine_lock:
            pool, engine = self._pool, self._engine
            self._pool = None
            if self._owns_engine:
                self._engine = None
        if pool is not None:
            pool.shutdown(wait=True)
        if self._owns_engine and engine is not None:
            engine.sweep()
            engine.close()

    def __enter__(self) -> "Rewarder":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
