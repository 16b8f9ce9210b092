"""Temporal workflow code, deterministic: `AgentWorkflow` (an agent run), its delegated child runs, its
terminal-state notifier (`WebhookWorkflow`), and what it publishes to visibility. Programs import the face,
`duragent` (and `duragent.workflow` inside their own workflows), not this package."""
