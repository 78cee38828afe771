"""Ultralytics' wandb callback (ultralytics.utils.callbacks.wb), unmodified, driven the way
Ultralytics' BaseTrainer drives it over two epochs, with real detection metrics
(ultralytics' DetMetrics over synthetic predictions) behind its curve-logging path, a plot
image, and a small best.pt (no weights are downloaded)."""

import json
import os
import time
from collections import defaultdict
from pathlib import Path
from types import SimpleNamespace

os.environ.pop("PYTEST_CURRENT_TEST", None)  # Ultralytics turns its loggers off under pytest
os.environ["YOLO_CONFIG_DIR"] = os.getcwd()  # its settings file, not in the user's home

import numpy as np
import torch
import wandb
from PIL import Image
from ultralytics.utils.callbacks import wb as ul_wb
from ultralytics.utils.metrics import DetMetrics

assert ul_wb.wb is wandb and set(ul_wb.callbacks) == {
    "on_pretrain_routine_end",
    "on_train_epoch_end",
    "on_fit_epoch_end",
    "on_train_end",
}, ul_wb.wb
save = Path.cwd() / "train"
(save / "weights").mkdir(parents=True)

names = {0: "cat", 1: "dog"}
metrics = DetMetrics(names=names)
rng = np.random.default_rng(0)
for i in range(4):
    conf = rng.random(10)
    target_cls = rng.integers(0, 2, 12).astype(float)
    metrics.update_stats(
        {
            "tp": rng.random((10, 10)) < conf[:, None],  # confident boxes are right more often
            "conf": conf,
            "pred_cls": rng.integers(0, 2, 10).astype(float),
            "target_cls": target_cls,
            "target_img": np.unique(target_cls),
            "im_name": f"im{i}.jpg",
        }
    )
metrics.process()


class Trainer:
    """The attributes of ultralytics.engine.trainer.BaseTrainer the callback reads."""

    def __init__(self):
        self.args = SimpleNamespace(
            name="train", project="ul-proj", resume=False, save=True, plots=True,
            profile=False, imgsz=32, epochs=2, lr0=0.01, batch=4,
        )  # fmt: skip
        self.save_dir = save
        self.callbacks = defaultdict(list)
        for event, fn in ul_wb.callbacks.items():  # add_integration_callbacks
            self.callbacks[event].append(fn)
        self.model = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.ReLU())
        self.validator = SimpleNamespace(plots={}, metrics=metrics, speed={"inference": 1.25})
        self.plots = {}
        self.best = save / "weights" / "best.pt"
        self.loss_names = ("box_loss", "cls_loss", "dfl_loss")
        self.epoch = 0

    def add_callback(self, event, fn):
        self.callbacks[event].append(fn)

    def run_callbacks(self, event):
        for fn in self.callbacks.get(event, []):
            fn(self)

    def label_loss_items(self, loss_items=None, prefix="train"):  # DetectionTrainer's
        keys = [f"{prefix}/{x}" for x in self.loss_names]
        return dict(zip(keys, [round(float(x), 5) for x in loss_items], strict=True))


trainer = Trainer()
trainer.run_callbacks("on_pretrain_routine_end")
run_dir, run_id = wandb.run.dir, wandb.run.id
expected = []
for epoch in range(2):
    trainer.epoch = epoch
    trainer.tloss = torch.tensor([1.0, 0.5, 0.25]) / (epoch + 1)
    trainer.lr = {f"lr/pg{i}": 0.01 * 0.5**epoch for i in range(3)}
    trainer.run_callbacks("on_train_epoch_end")
    val_loss = trainer.label_loss_items(torch.tensor([0.9, 0.4, 0.2]) / (epoch + 1), "val")
    trainer.metrics = {**metrics.results_dict, **val_loss, **trainer.lr}
    if epoch == 1:
        plot = save / "results.png"
        Image.new("RGB", (8, 6), (200, 10, 10)).save(plot)
        trainer.plots[plot] = {"data": None, "timestamp": time.time()}
    trainer.run_callbacks("on_fit_epoch_end")
    expected.append(
        {**trainer.label_loss_items(trainer.tloss), **trainer.lr, **trainer.metrics,
         "epoch": epoch + 1}
    )  # fmt: skip
pr = save / "PR_curve.png"
Image.new("RGB", (10, 10), (0, 0, 200)).save(pr)
trainer.validator.plots[pr] = {"data": None, "timestamp": time.time()}
torch.save({"w": torch.arange(4.0)}, trainer.best)
trainer.run_callbacks("on_train_end")
assert wandb.run is None  # the callback's own on_train_end hook finished the run
trainer.run_callbacks("teardown")  # wb.finish(exit_code=1): nothing left to finish

curves = [
    {"name": n, "x": np.asarray(x).tolist(), "y": np.asarray(y).tolist(), "titles": [xt, yt]}
    for n, (x, y, xt, yt) in zip(metrics.curves, metrics.curves_results, strict=True)
]
print(
    "RESULT "
    + json.dumps(
        {
            "run_dir": run_dir,
            "run_id": run_id,
            "expected": expected,
            "params": sum(p.numel() for p in trainer.model.parameters()),
            "curves": curves,
            "names": list(names.values()),
            "best": str(trainer.best),
            "args": vars(trainer.args),
        }
    )
)
