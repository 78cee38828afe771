"""``wandb.integration``: framework callbacks (``keras``, ``sb3``), imported on use."""
