"""A run's live stream, workflow side: a Temporal Workflow Stream the run publishes its live events to
(`agentic.live`), and its model activities publish their deltas to, by signal.

What the workflow publishes costs no history: the stream's log is workflow state, rebuilt by replay, and read
by subscribers through the stream's update and query (`temporalio.contrib.workflow_streams`). Publishing
issues no command, so runs recorded before the stream existed replay unchanged.

The log goes with the run when it continues as new (`Handover.live`), so a subscriber resumes at its offset
on the new run, losing nothing — up to `LIVE_CARRY_BYTES` of the newest events: the handover travels in the
new run's input, under Temporal's 2 MB cap; a subscriber further behind than that restarts at the oldest
event kept. A run started without `stream` carries its offsets only: its events repeat what its transcript
holds, and carried they doubled the history of a long run (its handovers grew by ~24 KB per 20 tool calls).
"""

from __future__ import annotations

from temporalio.contrib.workflow_streams import WorkflowStream, WorkflowStreamState

from agentic.live import LIVE_TOPIC, LiveEvent

LIVE_CARRY_BYTES = 512 * 1024


class LiveLog:
    """Constructed in the workflow's `__init__` (the stream registers its handlers there, and checks so)."""

    def __init__(self, prior: WorkflowStreamState | None) -> None:
        self.stream = WorkflowStream(prior)
        self.topic = self.stream.topic(LIVE_TOPIC)

    def __call__(self, event: LiveEvent) -> None:
        self.topic.publish(event)

    def detach(self) -> None:
        """Release the subscribers waiting on this run (before it ends or hands over): they read what is left
        by query once it has ended, or follow it to its continuation."""
        self.stream.detach_pollers()

    def handover(self, carry_bytes: int = LIVE_CARRY_BYTES) -> WorkflowStreamState:
        """The stream's state for the next run: its offsets, and the newest events up to `carry_bytes`."""
        state = self.stream.get_state()
        kept, size = len(state.log), 0
        while kept > 0 and size + len(state.log[kept - 1].data) <= carry_bytes:
            kept -= 1
            size += len(state.log[kept].data)
        if kept:
            state.base_offset += kept
            state.log = state.log[kept:]
        return state
