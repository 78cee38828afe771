"""Train a tiny numpy model and log it with wisp (the `make demo` script).

A two-layer MLP learns a noisy spiral on the CPU in a few seconds: no GPU, no
downloads.  Three runs with different learning rates are logged to ``./wisp``
with scalars, a weight histogram over steps, images of the predictions (the decision
surface and patches of it) and a table of validation predictions with inline images.
A first run logs the data set as a ``dataset`` artifact; each training run uses it and
logs its weights as a ``model`` artifact (``checkpoint``), so the dashboard shows the
lineage data -> runs -> checkpoints.

    python examples/train.py                 # three runs
    python examples/train.py --steps 2000 --runs 1 --sleep 0.01   # one slow, "live" run
"""

from __future__ import annotations

import argparse
import math
from typing import Any

import numpy as np

import wisp


def spiral(n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Two interleaved spirals with noise: points (n, 2) and labels (n,)."""
    t = rng.uniform(0.25, 2.0 * math.pi, n)
    y = rng.integers(0, 2, n)
    r = t / (2.0 * math.pi)
    ang = t + np.pi * y
    x = np.stack([r * np.cos(ang), r * np.sin(ang)], axis=1) + rng.normal(0, 0.03, (n, 2))
    return x.astype(np.float64), y.astype(np.float64)


def surface_rgb(grid_pred: np.ndarray) -> np.ndarray:
    """The decision surface as an RGB image (blue = class 0, red = class 1)."""
    pixels = (np.clip(grid_pred, 0, 1) * 255).astype(np.uint8)
    return np.stack([pixels, 64 + pixels // 2, 255 - pixels], -1)


def media_values(
    w1: np.ndarray, grid_pred: np.ndarray, xs: np.ndarray, ys: np.ndarray, probs: np.ndarray
) -> dict[str, Any]:
    """A weight histogram, images of the predictions and a table of predictions."""
    surface = surface_rgb(grid_pred)
    # one small patch of that surface around each of a few validation points
    cells = np.clip(((xs[:12] + 1) / 2 * 31).round().astype(int), 0, 31)
    padded = np.pad(surface, ((4, 4), (4, 4), (0, 0)), mode="edge")
    patches = [padded[r : r + 8, c : c + 8] for c, r in cells]
    table = wisp.Table(columns=["x0", "x1", "label", "p", "correct", "surface"])
    for (x0, x1), label, p, patch in zip(xs[:12], ys[:12], probs[:12], patches, strict=True):
        correct = bool((p > 0.5) == (label > 0.5))
        table.add_data(float(x0), float(x1), int(label), float(p), correct, wisp.Image(patch))
    return {
        "weights/w1": wisp.Histogram(w1.ravel(), num_bins=48),
        "predictions/surface": wisp.Image(surface, caption="decision surface"),
        "predictions/patches": [wisp.Image(pt) for pt in patches[:4]],
        "predictions/table": table,
    }


def final_media(
    surfaces: list[np.ndarray], xv: np.ndarray, yv: np.ndarray, pv: np.ndarray, acc: float
) -> dict[str, Any]:
    """One of each other media kind: audio, video, HTML, a point cloud and wisp.plot charts."""
    t = np.arange(8000) / 8000
    tone = 0.3 * np.sin(2 * np.pi * (220 + 440 * acc) * t) * np.exp(-3 * t)
    points = np.column_stack([xv, pv - 0.5, 255 * pv, 64 + 128 * yv, 255 * (1 - pv)])
    out: dict[str, Any] = {
        "media/tone": wisp.Audio(tone.astype(np.float32), sample_rate=8000, caption="val acc"),
        "media/report": wisp.Html(f"<h3>spiral MLP</h3><p>validation accuracy {acc:.3f}</p>"),
        "media/val_points": wisp.Object3D(points, caption="x0, x1, p - 0.5"),
        "plots/confusion": wisp.plot.confusion_matrix(
            preds=(pv > 0.5).astype(int), y_true=yv.astype(int), class_names=["inner", "outer"]
        ),
        "plots/roc": wisp.plot.roc_curve(yv.astype(int), pv, labels=["inner", "outer"]),
        "plots/pr": wisp.plot.pr_curve(yv.astype(int), pv, labels=["inner", "outer"]),
    }
    try:  # H.264 with PyAV (pip install 'wisp-tracker[video]'), else a GIF with Pillow
        frames = np.stack(surfaces).transpose(0, 3, 1, 2)  # (T, C, H, W)
        out["media/surface_video"] = wisp.Video(frames, fps=4, caption="decision surface")
    except ImportError as exc:
        print(f"skipping the video: {exc}")
    return out


def log_dataset(project: str) -> None:
    """A run that writes the spiral data set and logs it as the ``spiral-data`` artifact."""
    import tempfile

    run = wisp.init(project=project, name="prepare-data", job_type="data", tags=["demo"])
    rng = np.random.default_rng(1234)
    data = wisp.Artifact(
        "spiral-data", type="dataset", description="two noisy spirals", metadata={"train": 2000}
    )
    with tempfile.TemporaryDirectory() as d:
        for split, n in (("train", 2000), ("val", 500)):
            x, y = spiral(n, rng)
            np.save(f"{d}/{split}_x.npy", x)
            np.save(f"{d}/{split}_y.npy", y)
        data.add_dir(d)  # secured now: the folder may go away at once
    run.log_artifact(data, aliases=["v1-data"])
    run.finish()


def train(lr: float, hidden: int, steps: int, seed: int, sleep: float, project: str) -> None:
    rng = np.random.default_rng(seed)
    run = wisp.init(
        project=project,
        name=f"mlp-lr{lr:g}-h{hidden}",
        config={"lr": lr, "hidden": hidden, "steps": steps, "seed": seed, "optim": {"name": "sgd"}},
        tags=["demo", "baseline" if lr == 0.5 else "sweep"],
        group="spiral-mlp",
    )
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:  # lineage: this run consumed the data set
        d = run.use_artifact("spiral-data:latest").download(tmp)
        x, y = np.load(f"{d}/train_x.npy"), np.load(f"{d}/train_y.npy")
        xv, yv = np.load(f"{d}/val_x.npy"), np.load(f"{d}/val_y.npy")
    w1 = rng.normal(0, 1, (2, hidden))
    b1 = np.zeros(hidden)
    w2 = rng.normal(0, 1 / math.sqrt(hidden), (hidden, 1))
    b2 = np.zeros(1)
    g = np.linspace(-1, 1, 32)
    grid = np.stack(np.meshgrid(g, g), -1).reshape(-1, 2)
    wisp.define_metric("val/*", step_metric="epoch")
    batch = 128
    surfaces: list[np.ndarray] = []
    for step in range(steps):
        idx = rng.integers(0, len(x), batch)
        xb, yb = x[idx], y[idx, None]
        hid = np.tanh(xb @ w1 + b1)
        p = 1 / (1 + np.exp(-(hid @ w2 + b2)))
        loss = float(-np.mean(yb * np.log(p + 1e-9) + (1 - yb) * np.log(1 - p + 1e-9)))
        dz = (p - yb) / batch
        gw2 = hid.T @ dz
        dh = (dz @ w2.T) * (1 - hid**2)
        gw1 = xb.T @ dh
        cur_lr = lr * 0.5 * (1 + math.cos(math.pi * step / steps))
        w2 -= cur_lr * gw2
        b2 -= cur_lr * dz.sum(0)
        w1 -= cur_lr * gw1
        b1 -= cur_lr * dh.sum(0)
        row: dict[str, Any] = {
            "train/loss": loss,
            "train/acc": float(np.mean((p > 0.5) == (yb > 0.5))),
            "train/lr": cur_lr,
            "train/grad_norm": float(np.sqrt((gw1**2).sum() + (gw2**2).sum())),
        }
        if step % 100 == 99 or step == steps - 1:
            pv = 1 / (1 + np.exp(-(np.tanh(xv @ w1 + b1) @ w2 + b2)))[:, 0]
            row["val/loss"] = float(
                -np.mean(yv * np.log(pv + 1e-9) + (1 - yv) * np.log(1 - pv + 1e-9))
            )
            row["val/acc"] = float(np.mean((pv > 0.5) == (yv > 0.5)))
            row["epoch"] = step // 100
            gp = 1 / (1 + np.exp(-(np.tanh(grid @ w1 + b1) @ w2 + b2)))[:, 0].reshape(32, 32)
            row.update(media_values(w1, gp, xv, yv, pv))
            surfaces.append(surface_rgb(gp))
            if step == steps - 1:
                row.update(final_media(surfaces, xv, yv, pv, row["val/acc"]))
            if step % 500 == 499:
                print(f"{run.name} step {step + 1}: val/acc {row['val/acc']:.3f}", flush=True)
        wisp.log(row, step=step)
        if sleep:
            import time

            time.sleep(sleep)
    run.summary["best_val_acc"] = float(np.max(row.get("val/acc", 0.0)))
    ckpt = wisp.Artifact("checkpoint", type="model", metadata={"lr": lr, "hidden": hidden})
    with ckpt.new_file("weights.npz", mode="wb") as f:
        np.savez(f, w1=w1, b1=b1, w2=w2, b2=b2)
    run.log_artifact(ckpt, aliases=[f"lr{lr:g}".replace(".", "_")])
    run.finish()


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--project", default="spiral")
    ap.add_argument("--steps", type=int, default=1500)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--sleep", type=float, default=0.0, help="seconds to wait per step")
    args = ap.parse_args(argv)
    log_dataset(args.project)
    for i, lr in enumerate([0.5, 1.0, 0.1, 2.0, 0.05][: args.runs]):
        train(lr, 16 + 8 * i, args.steps, i, args.sleep, args.project)


if __name__ == "__main__":
    main()
