"""Images with masks and boxes, histograms and tables built the wandb way."""

import numpy as np
from _impl import result, wandb

run = wandb.init(project="compat")
mask = np.zeros((8, 8), dtype=np.uint8)
mask[2:4, 2:6] = 3
boxes = {
    "pred": {
        "box_data": [
            {
                "position": {"minX": 0.1, "maxX": 0.5, "minY": 0.2, "maxY": 0.6},
                "class_id": 3,
                "box_caption": "cat",
                "scores": {"conf": 0.9},
            }
        ],
        "class_labels": {3: "cat"},
    }
}
img = wandb.Image(
    np.full((8, 8, 3), 128.0),
    masks={"pred": {"mask_data": mask, "class_labels": {0: "bg", 3: "cat"}}},
    boxes=boxes,
)
hist = wandb.Histogram(sequence=[1.0, 2.0, 2.5, 4.0], num_bins=3)
table = wandb.Table(columns=["id"], data=[[1], [2], [3]])
table.add_column("label", ["a", "b", "c"])
wandb.log({"img": img, "hist": hist, "table": table})
seen = {
    "histogram": [int(c) for c in hist.histogram],
    "bins": [float(b) for b in hist.bins],
    "column": list(table.get_column("label")),
    "column_np": table.get_column("id", convert_to="numpy").tolist(),
}
run.finish()
result(**seen, run_dir=getattr(run, "dir", None))
