"""The reward API on the local engine, and its adapters called exactly as TRL and verl call them.
(The same rewards on a Ray cluster: tests/ray/test_cluster.py; inside the real trainers, TRL's
GRPOTrainer and verl's loader and reward managers: tests/integrations/.)"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from support import TINY_PACK

ROOT = Path(__file__).resolve().parents[2]
ADAPTERS = ROOT / "grader" / "reward" / "adapters.py"

CORRECT = "def double(x):\n    return {'y': 2 * x, 'half': x / 2}\n"
WRONG = "def double(x):\n    return {'y': 3 * x, 'half': x / 2}\n"
CRASH = "def double(x):\n    raise ValueError('no idea')\n"
HALF = "def double(x):\n    return {'y': 2 * x if x >= 0 else 0, 'half': x / 2}\n"


def fenced(code: str) -> str:
    return f"Let me write it.\n\n```python\n{code}```\n"


def test_completion_text_reads_strings_and_chat_messages():
    from grader.reward import completion_text

    assert completion_text("plain") == "plain"
    assert completion_text({"role": "assistant", "content": "one"}) == "one"
    assert completion_text([{"role": "system", "content": "s"}, {"role": "user", "content": "u"},
                            {"role": "assistant", "content": "a"}, {"role": "assistant", "content": "b"}]) == "a\nb"
    assert completion_text([{"role": "assistant", "content": [{"type": "text", "text": "x"},
                                                              {"type": "image", "url": "-"}]}]) == "x"


def test_modes_and_clear_errors(tiny_catalog):
    from grader.errors import ConfigError
    from grader.grading.execution import GradingEngine
    from grader.reward import Rewarder
    from grader.reward.adapters import _verl_problem, make_trl_reward_func

    with pytest.raises(ConfigError, match="'local' or 'ray'"):
        Rewarder(engine="kubernetes", catalog=tiny_catalog)
    with Rewarder(engine=GradingEngine(), catalog=tiny_catalog) as r:  # an engine that never runs here
        with pytest.raises(ConfigError, match="mode 'essay' is not supported: expected one of code, qa"):
            r.score("tiny-pack/sound", ["42"], mode="essay")
        with pytest.raises(ConfigError, match="has no \\[qa\\] table"):
            r.score("tiny-pack/broken-reference:q0", ["42"], mode="qa")  # a problem without [qa]
        with pytest.raises(ConfigError, match="no 'problem' column"):
            make_trl_reward_func(r)(prompts=["p"], completions=["c"])
    with pytest.raises(ConfigError, match="ground_truth"):
        _verl_problem(None, {})
    assert _verl_problem(None, {"problem": "tiny-pack/sound"}) == "tiny-pack/sound"


@pytest.mark.docker
def test_local_rewards_match_the_verdicts_and_the_trainers_adapters_return_them(tiny_registry, tiny_catalog,
                                                                                monkeypatch):
    from grader.packs import vectors
    from grader.reward import Rewarder, make_trl_reward_func

    completions = [fenced(CORRECT), fenced(WRONG), fenced(CRASH), "I would rather not.",
                   [{"role": "assistant", "content": fenced(CORRECT)}], fenced(HALF)]
    hidden = vectors.load(tiny_catalog.find("tiny-pack/sound")).hidden
    half_share = sum(1 for v in hidden if v.args[0] >= 0) / len(hidden)
    with Rewarder(catalog=tiny_catalog, workers=2) as r:
        assert r.engine.name == "local" and r.batch == 16
        out = r.score("tiny-pack/sound", completions)
        assert out.verdicts == ["pass", "wrong_answer", "runtime_error", "no_code", "pass", "wrong_answer"]
        assert out.rewards == [1.0, 0.0, 0.0, 0.0, 1.0, 0.0] and len(out) == 6
        assert out.problems == ["tiny-pack/sound"] * 6 and out.grades[1].vectors_passed == 0
        partial = r.score("sound", completions, partial=True)  # a unique bare id works too
        assert partial.rewards[5] == pytest.approx(half_share) and 0 < half_share < 1
        assert partial.rewards[:4] == [1.0, 0.0, 0.0, 0.0]

        # TRL's GRPOTrainer: reward_func(prompts=, completions=, completion_ids=, trainer_state=, **columns),
        # here a standard (not conversational) dataset: prompts and completions are strings
        reward_func = make_trl_reward_func(r)
        assert reward_func.__name__ == "perfgrade"
        got = reward_func(prompts=["prompt"] * 4, completions=[fenced(CORRECT), fenced(WRONG), "no code", fenced(CORRECT)],
                          completion_ids=[[1]] * 4, trainer_state=None,
                          problem=["tiny-pack/sound", "tiny-pack/sound", "tiny-pack/sound", "tiny-pack/weak-variant"],
                          pack=["tiny-pack"] * 4, family=["T1"] * 4, difficulty=["easy"] * 4, split=["train"] * 4)
        assert got == [1.0, 0.0, 0.0, 1.0]

    # verl loads a custom reward function from a file path and calls it with keywords (plus reward_kwargs)
    monkeypatch.setenv("PERFGRADE_PACKS", str(TINY_PACK))
    monkeypatch.setenv("PERFGRADE_REWARD_ENGINE", "local")
    spec = importlib.util.spec_from_file_location("custom_module", ADAPTERS)
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "custom_module", module)
    spec.loader.exec_module(module)
    try:
        score = module.verl_compute_score(data_source="perfgrade/tiny-pack", solution_str=fenced(CORRECT),
                                          ground_truth="tiny-pack/sound", extra_info={"split": "train", "num_turns": None})
        assert score == 1.0 and isinstance(score, float)
        assert module.verl_compute_score(data_source="perfgrade/tiny-pack", solution_str=fenced(HALF),
                                         ground_truth="tiny-pack/sound", extra_info=None,
                                         partial=True) == pytest.approx(half_share)
        assert module.verl_compute_score_batch(data_sources=["perfgrade/tiny-pack"] * 3,
                                               solution_strs=[fenced(WRONG), fenced(CORRECT), "nothing"],
                                               ground_truths=[None, "tiny-pack/weak-variant", "tiny-pack/sound"],
                                               extra_infos=[{"problem": "tiny-pack/sound"}, {}, {}]) == [0.0, 1.0, 0.0]
    finally:
        module.close_default_rewarder()


def test_the_shared_rewarder_follows_the_environment_it_is_made_from(monkeypatch):
    """A process that graded once (an environment's reward, a first verl step) and then sets
    PERFGRADE_PACKS is graded with those packs: the shared Rewarder is made again."""
    from grader.reward import adapters

    monkeypatch.delenv("PERFGRADE_PACKS", raising=False)
    monkeypatch.setenv("PERFGRADE_REWARD_ENGINE", "local")
    try:
        first = adapters.default_rewarder()
        assert adapters.default_rewarder() is first  # unchanged environment: the same one
        assert "tiny-pack" not in first.catalog.packs
        monkeypatch.setenv("PERFGRADE_PACKS", str(TINY_PACK))
        second = adapters.default_rewarder()
        assert second is not first and "tiny-pack" in second.catalog.packs
        assert adapters.verl_compute_score(data_source="perfgrade/tiny-pack", solution_str=fenced(CORRECT),
                                           ground_truth="tiny-pack/sound", extra_info={}) == 1.0
    finally:
        adapters.close_default_rewarder()


# ------------------------------------------------------------------------------------------
# Q&A answers as rewards (no code runs)
# ------------------------------------------------------------------------------------------

def test_qa_answers_are_rewarded_on_the_host_and_mixed_batches_keep_their_order():
    import json

    from grader.packs import vectors
    from grader.packs.problems import Catalog
    from grader.packs.qa import qa_items
    from grader.reward import Rewarder

    cat = Catalog([ROOT / "problems" / "perf-core"])
    p = cat.find("perf-core/f4-gemm-dram-traffic")
    items = qa_items(p, vectors.load(p).hidden, 5)
    value = items[0]
    choice = next(it for it in items if it.kind == "choice")
    right = f"Reasoning.\n```json\n{json.dumps(value.expected)}\n```"
    one_off = {**value.expected, "I_reads": value.expected["I_reads"] + 1}
    wrong = f"```json\n{json.dumps(one_off)}\n```"
    letter = f'```json\n{{"answer": "{choice.expected["answer"]}"}}\n```'
    code = "```python\n" + (ROOT / "problems/perf-core/f4-gemm-dram-traffic/solution.py").read_text() + "```"
    with Rewarder(catalog=cat, batch=4) as r:
        out = r.score(f"{p.qualified_id}:{value.id}", [right, wrong, "no idea"], mode="qa", partial=True)
        assert out.verdicts == ["correct", "wrong_answer", "no_answer"]
        assert out.rewards == [1.0, 0.75, 0.0]  # 3 of 4 fields right
        mixed = r.score_many([(f"{p.qualified_id}:{choice.id}", letter), (p.qualified_id, code),
                              (f"{p.qualified_id}:{value.id}", wrong)], mode="auto")
        assert mixed.verdicts == ["correct", "pass", "wrong_answer"] and mixed.rewards == [1.0, 1.0, 0.0]
        with pytest.raises(Exception, match="keyed pack/id:item"):
            r.score(p.qualified_id, [right], mode="qa")


def test_a_rewarder_draws_a_problems_qa_items_once(monkeypatch):
    """A trainer asks for the same items every step: they are drawn on the first call only (drawing
    them runs the generator and the reference), and the cached items grade exactly as fresh ones."""
    import json

    from grader.packs import qa as qa_module
    from grader.packs import vectors
    from grader.packs.problems import Catalog
    from grader.reward import Rewarder

    cat = Catalog([ROOT / "problems" / "perf-core"])
    p = cat.find("perf-core/f4-gemm-dram-traffic")
    items = qa_module.qa_items(p, vectors.load(p).hidden, 5)
    calls = []
    real = qa_module.qa_items
    monkeypatch.setattr(qa_module, "qa_items", lambda *a, **k: calls.append(a[0].qualified_id) or real(*a, **k))
    with Rewarder(catalog=cat) as r:
        for it in items[:3]:
            right = f"```json\n{json.dumps(it.expected)}\n```"
            assert r.score(f"{p.qualified_id}:{it.id}", [right, "no idea"], mode="qa").verdicts == ["correct", "no_answer"]
    assert calls == [p.qualified_id]


def test_trl_adapter_grades_the_whole_assistant_turn_logs_verdicts_and_needs_no_engine_for_qa(monkeypatch):
    """TRL continues a prompt that ends with an assistant message and hands the reward function
    only the continuation: the grader grades prefill + continuation. The verdicts go to TRL's
    completions table through ``log_extra``. Q&A items never start a grading engine."""
    import sandbox.engine
    from grader.packs import vectors
    from grader.packs.problems import Catalog
    from grader.packs.qa import qa_items
    from grader.reward import Rewarder, make_trl_reward_func, trl_reward_func

    def no_engine(*args, **kwargs):
        raise AssertionError("a Q&A reward must not contact the Docker engine")

    monkeypatch.setattr(sandbox.engine, "connect", no_engine)
    cat = Catalog([ROOT / "problems" / "perf-core"])
    p = cat.find("perf-core/f4-gemm-dram-traffic")
    choice = next(it for it in qa_items(p, vectors.load(p).hidden, 5) if it.kind == "choice")
    right = choice.expected["answer"]
    wrong = next(x for x in "ABCD" if x != right)
    key = f"{p.qualified_id}:{choice.id}"
    prefill = '```json\n{"answer": "'
    prompt = [{"role": "user", "content": "which?"}, {"role": "assistant", "content": prefill}]
    logged: dict[str, list] = {}
    with Rewarder(catalog=cat) as r:
        func = make_trl_reward_func(r)
        got = func(prompts=[prompt, prompt, prompt, [{"role": "user", "content": "which?"}]],
                   completions=[[{"role": "assistant", "content": f'{right}"}}\n```'}],
                                [{"role": "assistant", "content": f'{wrong}"}}\n```'}],
                                [{"role": "assistant", "content": "no idea"}],
                                [{"role": "assistant", "content": f'```json\n{{"answer": "{right}"}}\n```'}]],
                   completion_ids=[[1]] * 4, problem=[key] * 4, trainer_state=None,
                   log_extra=lambda column, values: logged.setdefault(column, []).extend(values),
                   log_metric=lambda name, value: None)
        assert got == [1.0, 0.0, 0.0, 1.0]
        assert logged == {"perfgrade_verdict": ["correct", "wrong_answer", "no_answer", "correct"]}
        # without the prefill the continuation alone is no answer at all
        assert func(completions=[f'{right}"}}\n```'], problem=[key]) == [0.0]
    assert trl_reward_func.__name__ == "perfgrade"  # TRL logs rewards/perfgrade/mean
