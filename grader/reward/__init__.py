"""The grader as a reward for reinforcement learning (docs/reward.md).

    from grader.reward import Rewarder, score, trl_reward_func, verl_compute_score

This room stands on the pipeline's rooms (grading engines, packs) and below the CLI.
"""

from .adapters import (
    default_rewarder,
    make_trl_reward_func,
    score,
    trl_reward_func,
    verl_compute_score,
    verl_compute_score_batch,
)
from .core import RewardBatch, Rewarder, completion_text

__all__ = [
    "RewardBatch",
    "Rewarder",
    "completion_text",
    "default_rewarder",
    "make_trl_reward_func",
    "score",
    "trl_reward_func",
    "verl_compute_score",
    "verl_compute_score_batch",
]
