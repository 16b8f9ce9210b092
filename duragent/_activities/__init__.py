"""Temporal activities: the model call, the tool call, the transcript store, delegation, the webhook delivery.
Programs import the face, `duragent`, not this package."""
