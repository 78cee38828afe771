"""The README's quick start as a script: log a few metrics offline and read them back."""

import wisp

run = wisp.init(project="quickstart", config={"lr": 0.01, "epochs": 3})
for epoch in range(run.config.epochs):
    for step in range(100):
        loss = 1.0 / (1 + step + 100 * epoch)
        wisp.log({"train/loss": loss, "epoch": epoch})
    wisp.log({"val/acc": 0.5 + 0.1 * epoch})
run.finish()

print(wisp.open_run(run.dir).summary)
