"""WispCallback with a real transformers Trainer on a tiny randomly initialised GPT-2."""

from __future__ import annotations

import os
from typing import Any

import pytest

import wisp

from .integrations_support import require

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # nothing in these tests may download
require("transformers")
import torch  # noqa: E402
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments  # noqa: E402

from wisp.integrations.transformers import WispCallback  # noqa: E402

pytestmark = pytest.mark.timeout(120)


class Tokens(torch.utils.data.Dataset[dict[str, Any]]):
    def __init__(self, n: int) -> None:
        self.ids = torch.randint(0, 32, (n, 8), generator=torch.Generator().manual_seed(0))

    def __len__(self) -> int:
        return len(self.ids)

    def __getitem__(self, i: int) -> dict[str, Any]:
        return {"input_ids": self.ids[i], "labels": self.ids[i]}


def make_trainer(tmp_path: Any, callback: WispCallback) -> Trainer:
    torch.manual_seed(0)
    model = GPT2LMHeadModel(GPT2Config(vocab_size=32, n_positions=8, n_embd=8, n_layer=1, n_head=2))
    args = TrainingArguments(
        output_dir=str(tmp_path / "out"),
        max_steps=6,
        logging_steps=2,
        eval_strategy="steps",
        eval_steps=3,
        per_device_train_batch_size=2,
        per_device_eval_batch_size=4,
        learning_rate=1e-3,
        report_to=[],
        save_strategy="no",
        use_cpu=True,
        disable_tqdm=True,
    )
    return Trainer(
        model=model,
        args=args,
        train_dataset=Tokens(16),
        eval_dataset=Tokens(4),
        callbacks=[callback],
    )


def test_trainer_records_metrics_at_global_step_and_config(tmp_path: Any) -> None:
    """Training logs train/* every logging_steps and eval/* every eval_steps at the global step,
    the arguments and model config form the config, and the run finishes with the trainer."""
    cb = WispCallback(project="hf", name="tiny-gpt2")
    make_trainer(tmp_path, cb).train()

    run = cb.run
    assert run is not None and run.state == "finished"
    assert wisp.run is None
    data = wisp.open_run(run.dir)
    assert data.state == "finished" and data.project == "hf"
    assert data.config["learning_rate"] == 1e-3
    assert data.config["max_steps"] == 6
    assert data.config["n_embd"] == 8 and data.config["model_type"] == "gpt2"
    assert data.config["model/num_parameters"] > 0
    steps, losses = data.scalars("train/loss")
    assert steps == [2, 4, 6]
    assert all(v > 0 for v in losses)
    assert data.scalars("train/learning_rate")[0] == [2, 4, 6]
    eval_steps, eval_losses = data.scalars("eval/loss")
    assert eval_steps == [3, 6]
    assert all(v > 0 for v in eval_losses)
    assert data.summary["train/train_runtime"] > 0
    keys = list(data.keys())
    assert "train/train_runtime" not in keys


def test_callback_with_current_run_leaves_it_open(tmp_path: Any) -> None:
    """With a run already current, the callback records into it and does not finish it."""
    run = wisp.init(project="mine")
    cb = WispCallback()
    trainer = make_trainer(tmp_path, cb)
    trainer.train()
    assert cb.run is run and run.state == "running"
    metrics = trainer.evaluate()
    wisp.finish()
    data = wisp.open_run(run.dir)
    eval_steps, eval_losses = data.scalars("eval/loss")
    # step 6's row was closed at the end of training, so the later evaluation lands on the
    # next row and keeps the trainer's step in train/global_step
    assert eval_steps == [3, 6, 7]
    last = list(data.history(["eval/loss", "train/global_step"]))[-1]
    assert last["train/global_step"] == 6
    assert eval_losses[-1] == pytest.approx(metrics["eval_loss"])
