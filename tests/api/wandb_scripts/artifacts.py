"""wandb's docs, "Artifacts" in the public API: fetch by alias, versions, collections,
what a run logged and used; Lightning's WandbLogger.download_artifact."""

import json
import os

import wandb

api = wandb.Api()
entity, project = os.environ["ENTITY"], os.environ["PROJECT"]
producer, consumer = os.environ["PRODUCER"], os.environ["CONSUMER"]

artifact = api.artifact(f"{entity}/{project}/model:best")
root = artifact.download(root="best")
files = {}
for f in sorted(os.listdir(root)):
    with open(os.path.join(root, f), "rb") as fh:
        files[f] = fh.read().hex()
versions = [a.version for a in api.artifacts(type_name="model", name=f"{entity}/{project}/model")]
collections = [
    (c.name, c.type) for c in api.artifact_collections(project_name=project, type_name="model")
]
logged = [a.version for a in api.run(f"{entity}/{project}/{producer}").logged_artifacts()]
used = [a.version for a in api.run(f"{entity}/{project}/{consumer}").used_artifacts()]

from lightning.pytorch.loggers import WandbLogger  # noqa: E402 - as a Lightning user would

lt = WandbLogger.download_artifact(f"{entity}/{project}/model:v0", save_dir="lightning")
seen = {
    "best_version": artifact.version,
    "files": files,
    "versions": sorted(versions),
    "collections": collections,
    "logged": sorted(logged),
    "used": used,
    "lightning_files": sorted(os.listdir(lt)),
}
print("RESULT " + json.dumps(seen))
