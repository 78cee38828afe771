"""Transformers' Trainer(report_to=["wandb"]), unmodified, through `import wandb` = wisp."""

import json
import os
import sys

import torch
import wandb
from transformers import BertConfig, BertForSequenceClassification, Trainer, TrainingArguments
from transformers.integrations.integration_utils import rewrite_logs

out = sys.argv[1]
assert wandb.__name__ == "wisp.wandb_compat", wandb


class Data(torch.utils.data.Dataset):
    def __init__(self, n: int) -> None:
        g = torch.Generator().manual_seed(n)
        self.ids = torch.randint(0, 30, (n, 6), generator=g)

    def __len__(self) -> int:
        return len(self.ids)

    def __getitem__(self, i):
        return {"input_ids": self.ids[i], "labels": int(self.ids[i].sum() % 2)}


torch.manual_seed(0)
config = BertConfig(
    vocab_size=30,
    hidden_size=16,
    num_hidden_layers=1,
    num_attention_heads=2,
    intermediate_size=16,
    max_position_embeddings=16,
    num_labels=2,
    id2label={0: "even", 1: "odd"},
    label2id={"even": 0, "odd": 1},
)
model = BertForSequenceClassification(config)
args = TrainingArguments(
    output_dir=out + "/hf",
    run_name=out + "/hf",
    report_to=["wandb"],
    logging_steps=2,
    max_steps=8,
    per_device_train_batch_size=4,
    eval_strategy="steps",
    eval_steps=4,
    save_strategy="steps" if os.environ.get("WANDB_LOG_MODEL") == "checkpoint" else "no",
    save_steps=4,
    use_cpu=True,
    disable_tqdm=True,
    learning_rate=1e-3,
)
trainer = Trainer(model=model, args=args, train_dataset=Data(32), eval_dataset=Data(8))
print("training starts", flush=True)
trainer.train()
run_dir, run_id = wandb.run.dir, wandb.run.id
trainer.save_model(out + "/final")  # the bytes WANDB_LOG_MODEL=end logged from a temp folder
wandb.finish()
single = {
    "train_runtime",
    "train_samples_per_second",
    "train_steps_per_second",
    "train_loss",
    "total_flos",
}
expected, summary = [], {}
for entry in trainer.state.log_history:
    entry = dict(entry)
    step = entry.pop("step")  # added by the Trainer to its own record, not logged
    for key, value in entry.items():
        if key in single:
            summary[key] = value
    rows = rewrite_logs({k: v for k, v in entry.items() if k not in single})
    expected += [[k, step, v] for k, v in rows.items()]
with open(out + "/result.json", "w") as f:
    json.dump({"run_dir": run_dir, "run_id": run_id, "expected": expected, "summary": summary}, f)
