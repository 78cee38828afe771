"""A wandb script moved to wisp by changing one line: `import wandb` -> `import wisp as wandb`.

Run it: `python examples/integrations/wandb_switch.py`, then `wisp ui` (or
`wisp.open_run(...)`) to see the run.  With `import wandb` it runs unchanged under wandb.
"""

import math
import os
import tempfile

import wisp as wandb

wandb.login()
run = wandb.init(
    project="switch-demo",
    config={"lr": 0.01, "epochs": 5},
    entity="my-team",  # on a server: the run is filed under my-team/switch-demo
)
wandb.define_metric("val/acc", summary="max")
for epoch in range(wandb.config.epochs):
    loss = math.exp(-epoch * wandb.config.lr * 50)
    wandb.log({"train/loss": loss, "val/acc": 1 - loss / 2, "epoch": epoch})
    if loss < 0.2:
        wandb.alert(
            title="converged", text=f"loss {loss:.3f} at epoch {epoch}", level=wandb.AlertLevel.INFO
        )

notes = os.path.join(tempfile.mkdtemp(), "notes.txt")
with open(notes, "w") as f:
    f.write("what I tried\n")
wandb.save(notes)
wandb.summary["final_loss"] = loss
wandb.finish()
