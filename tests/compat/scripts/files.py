"""save(policy="end"), save now, log_code and restore, as a training script uses them."""

import os
import sys

from _impl import result, wandb

mode = sys.argv[1]
if mode == "train":
    with open("ckpt.txt", "w") as f:
        f.write("epoch 0")
    os.makedirs("src", exist_ok=True)
    with open("src/model.py", "w") as f:
        f.write("MODEL = 1\n")
    run = wandb.init(project="compat", id="trainrun")
    wandb.save("ckpt.txt", policy="end")
    wandb.save("src/model.py", base_path=".", policy="now")
    run.log_code(".", include_fn=lambda p: p.endswith("model.py"))
    with open("ckpt.txt", "w") as f:
        f.write("epoch 9")  # the end policy must store this
    run.finish()
    result(run_dir=run.dir)
else:
    run = wandb.init(project="compat")
    f = wandb.restore("ckpt.txt", run_path="team/compat/trainrun")
    text = f.read()
    f.close()
    run.finish()
    result(text=text, run_dir=run.dir)
