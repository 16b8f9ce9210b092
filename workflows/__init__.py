"""Temporal workflow code, deterministic: `AgentWorkflow` (an agent run), its delegated child runs, its
terminal-state notifier (`WebhookWorkflow`), and what it publishes to visibility. Programs import the face,
`durable_agents`, not this package."""
