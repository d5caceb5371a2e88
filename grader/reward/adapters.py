"""The reward as the plain Python functions trainers call (docs/reward.md shows them in use).

* TRL's ``GRPOTrainer(reward_funcs=[trl_reward_func])``: TRL calls
  ``reward_func(prompts=..., completions=..., completion_ids=..., **columns)`` with every other
  dataset column as a keyword holding one value per completion; ours reads ``problem`` (the
  column ``python -m grader problems export`` writes). Completions are strings or, for a
  conversational dataset, lists of messages. A conversational prompt that ends with an assistant
  message (a prefilled start of the answer, which TRL continues) is graded as that start followed
  by the completion: the whole assistant turn. Returns one float per completion; each verdict
  goes to TRL's completions table as the column ``perfgrade_verdict`` (through TRL's
  ``log_extra``), so a 0.0 there says why.
* verl's custom reward function: ``verl_compute_score(data_source, solution_str, ground_truth,
  extra_info=None)`` for the naive reward manager (one completion per call) and
  ``verl_compute_score_batch(data_sources, solution_strs, ground_truths, extra_infos)`` for the
  batch reward manager (all of a step's completions at once: far faster, batch mode). The
  problem id is the ``ground_truth`` (``reward_model.ground_truth`` in the exported rows; it
  names the problem, the hidden values stay with the grader), else ``extra_info["problem"]``.

The functions share one :class:`Rewarder` per process, made on first use from the environment:
``PERFGRADE_REWARD_ENGINE`` (``local``, default, or ``ray``), ``RAY_ADDRESS``,
``PERFGRADE_REWARD_BATCH`` (default 16), ``PERFGRADE_REWARD_PARTIAL`` (``1`` for the share of
hidden vectors passed), ``PERFGRADE_REWARD_INSTANCE_SEED`` (the instance seed graded against;
default: the release's) and ``PERFGRADE_PACKS`` (extra packs). :func:`make_trl_reward_func`
binds a Rewarder of your own instead.

Rows written by ``problems export`` record their instance seed (the ``instance_seed`` column,
and in ``extra_info``); a row whose seed is not the Rewarder's is refused with a ConfigError,
since its Q&A prompt asked about other instances than the ones it would be graded against.
Rows without the field (older exports) are taken as they come.

This module uses absolute imports on purpose: verl loads a custom reward function from a file
path (``custom_reward_function.path``), outside of any package.
"""

from __future__ import annotations

import atexit
import os
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from grader.errors import ConfigError
from grader.packs.vectors import seed_words
from grader.reward.core import DEFAULT_BATCH, Completion, RewardBatch, Rewarder, completion_text

_DEFAULT: Rewarder | None = None
_DEFAULT_ENV: tuple[str | None, ...] = ()
_DEFAULT_LOCK = threading.Lock()
# the settings the shared Rewarder is made from: when one of them changes, the next call makes a
# new one (a trainer that sets PERFGRADE_PACKS after a first reward is graded with its packs)
_ENV_KEYS = ("PERFGRADE_REWARD_ENGINE", "PERFGRADE_REWARD_BATCH", "PERFGRADE_REWARD_PARTIAL",
             "PERFGRADE_REWARD_INSTANCE_SEED", "PERFGRADE_PACKS", "RAY_ADDRESS")


def default_rewarder() -> Rewarder:
    """The process's shared Rewarder, made on first use from the environment, and made again
    when the environment it was made from has changed."""
    global _DEFAULT, _DEFAULT_ENV
    env = tuple(os.environ.get(k) for k in _ENV_KEYS)
    with _DEFAULT_LOCK:
        if _DEFAULT is not None and env != _DEFAULT_ENV:
            _DEFAULT.close()
            _DEFAULT = None
        if _DEFAULT is None:
            _DEFAULT_ENV = env
            engine = os.environ.get("PERFGRADE_REWARD_ENGINE", "local")
            batch = int(os.environ.get("PERFGRADE_REWARD_BATCH", DEFAULT_BATCH))
            partial = os.environ.get("PERFGRADE_REWARD_PARTIAL", "") in ("1", "true", "yes")
            seed = os.environ.get("PERFGRADE_REWARD_INSTANCE_SEED") or None
            _DEFAULT = Rewarder(engine=engine, batch=batch, partial=partial, instance_seed=seed)
            atexit.register(close_default_rewarder)
        return _DEFAULT


def close_default_rewarder() -> None:
    global _DEFAULT
    with _DEFAULT_LOCK:
        if _DEFAULT is not None:
            _DEFAULT.close()
            _DEFAULT = None


def score(problem: str, completions: Sequence[Completion], *, mode: str = "code",
          partial: bool | None = None) -> RewardBatch:
    """Rewards and verdicts for completions of one problem, with the shared Rewarder."""
    return default_rewarder().score(problem, completions, mode=mode, partial=partial)


def check_instance_seeds(rewarder: Rewarder, seeds: Sequence[Any]) -> None:
    """Refuse rows drawn from another instance seed than the one ``rewarder`` grades against."""
    other = sorted({seed_words(s) for s in seeds if s != rewarder.instance_seed})
    if other:
        raise ConfigError(f"the rows were exported for {' and '.join(other)}, but the rewarder grades "
                          f"{seed_words(rewarder.instance_seed)}: make it with Rewarder(instance_seed=...) (or "
                          "PERFGRADE_REWARD_INSTANCE_SEED) as the rows were exported (problems export --instance-seed)")


# ------------------------------------------------------------------------------------------
# TRL
# ------------------------------------------------------------------------------------------

def make_trl_reward_func(rewarder: Rewarder | None = None, *, partial: bool | None = None,
                         problem_key: str = "problem", name: str = "perfgrade") -> Callable[..., list[float | None]]:
    """A reward function for TRL's GRPOTrainer bound to ``rewarder`` (default: the shared one).

    The dataset needs a column ``problem_key`` naming each row's problem; an ``instance_seed``
    column (``problems export`` writes one) must hold the rewarder's seed. TRL logs the
    function's ``__name__`` (``rewards/<name>/mean``, and the column ``<name>`` of its
    completions table) and, beside it, the verdicts as the column ``<name>_verdict``.
    """

    def reward_func(completions: Sequence[Completion], prompts: Sequence[Any] | None = None,
                    log_extra: Callable[[str, list], None] | None = None, **kwargs: Any) -> list[float | None]:
        problems = kwargs.get(problem_key)
        if problems is None:
            raise ConfigError(f"the dataset has no {problem_key!r} column naming each row's problem "
                              "(python -m grader problems export writes one)")
        if isinstance(problems, str):
            problems = [problems] * len(completions)
        if len(problems) != len(completions):
            raise ConfigError(f"{len(completions)} completions but {len(problems)} values of {problem_key!r}")
        if prompts is not None and len(prompts) == len(completions):
            completions = [_with_prefill(p, c) for p, c in zip(prompts, completions)]
        r = rewarder or default_rewarder()
        if "instance_seed" in kwargs:
            seeds = kwargs["instance_seed"]
            check_instance_seeds(r, seeds if isinstance(seeds, (list, tuple)) else [seeds])
        out = r.score_many(list(zip(problems, completions)), mode="auto", partial=partial)
        if callable(log_extra):
            log_extra(f"{name}_verdict", list(out.verdicts))
        return out.rewards

    reward_func.__name__ = reward_func.__qualname__ = name
    reward_func.__doc__ = ("TRL reward function: one reward per completion, graded by perfgrade "
                           "(GRPOTrainer(reward_funcs=[...]))")
    return reward_func


def _with_prefill(prompt: Any, completion: Completion) -> Completion:
    """The whole assistant turn: a prompt's final assistant message (a prefilled start that the
    trainer continued) followed by the completion; the completion alone otherwise."""
    if isinstance(prompt, Sequence) and not isinstance(prompt, str) and prompt:
        last = prompt[-1]
        if isinstance(last, Mapping) and last.get("role") == "assistant":
            return completion_text(last) + completion_text(completion)
    return completion


# TRL reward function with the shared Rewarder: ``GRPOTrainer(reward_funcs=[trl_reward_func])``;
# TRL logs it by its name, ``perfgrade`` (``rewards/perfgrade/mean``).
trl_reward_func = make_trl_reward_func()


# ------------------------------------------------------------------------------------------
# verl
# ------------------------------------------------------------------------------------------

def _verl_seeds(rewarder: Rewarder, extra_infos: Sequence[Any]) -> None:
    seeds = [info["instance_seed"] for info in extra_infos if isinstance(info, Mapping) and "instance_seed" in info]
    check_instance_seeds(rewarder, seeds)


def _verl_problem(ground_truth: Any, extra_info: Any) -> str:
    if isinstance(ground_truth, str) and ground_truth:
        return ground_truth
    if isinstance(extra_info, Mapping) and isinstance(extra_info.get("problem"), str):
        return extra_info["problem"]
    raise ConfigError("cannot tell the problem: set reward_model.ground_truth (or extra_info.problem) to the "
                      "problem id, as python -m grader problems export does")


def verl_compute_score(data_source: str, solution_str: str, ground_truth: Any, extra_info: Any = None,
                       *, partial: bool | None = None, **kwargs: Any) -> float:
    """verl custom reward function (naive reward manager): the reward of one completion."""
    r = default_rewarder()
    _verl_seeds(r, [extra_info])
    out = r.score_many([(_verl_problem(ground_truth, extra_info), solution_str)], mode="auto", partial=partial)
    return float(out.rewards[0] or 0.0)


def verl_compute_score_batch(data_sources: Sequence[str], solution_strs: Sequence[str], ground_truths: Sequence[Any],
                             extra_infos: Sequence[Any] | None = None, *, partial: bool | None = None,
                             **kwargs: Any) -> list[float]:
    """verl custom reward function for the batch reward manager: every completion of a step at once."""
    infos = list(extra_infos) if extra_infos is not None else [None] * len(solution_strs)
    pairs = [(_verl_problem(gt, info), s) for gt, info, s in zip(ground_truths, infos, solution_strs)]
    r = default_rewarder()
    _verl_seeds(r, infos)
    out = r.score_many(pairs, mode="auto", partial=partial)
    return [float(r or 0.0) for r in out.rewards]
