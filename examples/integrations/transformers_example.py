"""Hugging Face Trainer with wisp: `python examples/integrations/transformers_example.py`.

Needs `pip install torch==2.13.0 transformers accelerate`.  Uses a tiny randomly
initialised GPT-2, so nothing is downloaded.
"""

import torch
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments

import wisp
from wisp.integrations.transformers import WispCallback


class RandomTokens(torch.utils.data.Dataset):
    def __init__(self, n: int) -> None:
        self.ids = torch.randint(0, 64, (n, 16))

    def __len__(self) -> int:
        return len(self.ids)

    def __getitem__(self, i: int) -> dict:
        return {"input_ids": self.ids[i], "labels": self.ids[i]}


if __name__ == "__main__":
    model = GPT2LMHeadModel(
        GPT2Config(vocab_size=64, n_positions=16, n_embd=32, n_layer=2, n_head=2)
    )
    args = TrainingArguments(
        output_dir="hf_out",
        max_steps=20,
        logging_steps=5,
        eval_strategy="steps",
        eval_steps=10,
        per_device_train_batch_size=8,
        report_to=[],
        save_strategy="no",
        use_cpu=True,
    )
    callback = WispCallback(project="hf-demo")
    Trainer(
        model=model,
        args=args,
        train_dataset=RandomTokens(128),
        eval_dataset=RandomTokens(32),
        callbacks=[callback],
    ).train()
    run = wisp.open_run(callback.run.dir)
    print(run.state, run.scalars("train/loss"), run.scalars("eval/loss"))
