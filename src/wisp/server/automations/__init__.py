"""The automations engine: the background worker that watches runs and delivers webhooks."""
