"""wandb's docs, "Download files": every file of a run, and one by name."""

import json
import os

import wandb

api = wandb.Api()
entity, project, run_id = os.environ["ENTITY"], os.environ["PROJECT"], os.environ["RUN_ID"]
run = api.run(f"{entity}/{project}/{run_id}")

names = []
for file in run.files():
    file.download(root="downloads", exist_ok=True)
    names.append(file.name)
for file in run.files():  # again: the files are there, exist_ok keeps them
    file.download(root="downloads", exist_ok=True)
run.file("notes.txt").download(root="downloads", replace=True)
try:
    run.file("notes.txt").download(root="downloads")
    refused = False
except ValueError:
    refused = True

contents = {}
for n in sorted(names):
    with open(os.path.join("downloads", n), "rb") as fh:
        contents[n] = fh.read().hex()
seen = {
    "names": sorted(names),
    "bytes": contents,
    "refused_existing": refused,
}
print("RESULT " + json.dumps(seen))
