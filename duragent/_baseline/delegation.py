"""A delegation in the checkpoint runner: the child is a run of its own in the same store (its own steps,
lease, approvals and compensation walk), driven inline by the parent's process.

The parent writes its intent (with the child's run id, derived from its key for the call) before the child
starts; a resumed parent finds the child's row and resumes it, or reads how it ended — never a second child.
A child is never resumed on its own (`job recover` leaves it to its parent, `job resume` refuses it): it
answers to the run above it.
"""

from __future__ import annotations

import time

from agentic import Budget, ToolCall, ToolResult, ToolStatus
from agentic.agent_set import AgentSet
from agentic.budget import Stop
from agentic.delegation import Delegated, DelegateRef, Delegation, failed_text, reply_text
from agentic.saga import delegated, undo_plan
from duragent._baseline.errors import BadInput, LeaseHeld
from duragent._baseline.options import RunOptions
from duragent._baseline.store import RunRow, Store


def run_child(
    store: Store,
    agents: AgentSet,
    call: ToolCall,
    run_id: str,
    ref: DelegateRef,
    task: str,
    reservation: Budget,
    delegation: Delegation,
    parent: RunOptions,
) -> ToolResult:
    """Start, resume or read the child run `run_id`, and what the parent's model reads about it."""
    from duragent._baseline import jobs  # jobs drives runners; a runner drives its children through here

    row = store.run(run_id)
    try:
        if row is None:
            options = RunOptions(
                options=dict(ref.options),
                task=task,
                budget=reservation,
                delegation=delegation,
                lease_seconds=parent.lease_seconds,
                poll_seconds=parent.poll_seconds,
                retry_backoff_seconds=parent.retry_backoff_seconds,
            )
            row = jobs.start(store, agents, run_id, ref.agent, options)
        elif not row.terminal:
            row = _resume_when_free(store, agents, run_id, parent.lease_seconds, parent.poll_seconds)
    except BadInput as exc:
        return ToolResult.of(call, ToolStatus.ERROR, failed_text(call.name, str(exc)))
    return _result(store, agents, call, row, ref)


def _resume_when_free(store: Store, agents: AgentSet, run_id: str, lease_seconds: float, poll: float) -> RunRow:
    """The child of a parent whose worker died held its own lease, renewed by that worker until it died: it
    expires about when the parent's did. Wait for it, not longer than a lease."""
    from duragent._baseline import jobs

    deadline = time.monotonic() + 2 * lease_seconds
    while True:
        try:
            return jobs.resume(store, agents, run_id, by_parent=True)
        except LeaseHeld:
            if time.monotonic() > deadline:
                raise
            time.sleep(poll)


def _result(store: Store, agents: AgentSet, call: ToolCall, row: RunRow, ref: DelegateRef) -> ToolResult:
    stop = Stop(row.stop) if row.stop else Stop.TOOL_FAILED
    if row.status in ("failed", "compensation_failed", "dead_letter"):
        outcome = Delegated(run_id=row.run_id, agent=ref.agent, stop=stop, usage=row.consumed)
        failed = ToolResult.of(call, ToolStatus.ERROR, failed_text(call.name, row.error or row.status))
        return failed.model_copy(update={"delegation": outcome})
    undo = None
    if stop is Stop.ANSWERED:
        from duragent._baseline.runner import transcript  # the child's records, rebuilt from its steps

        child = transcript(store, agents, row.run_id)
        options = RunOptions.model_validate_json(row.options).options
        undo = undo_plan(row.run_id, ref.agent, options, child.loop.state.records, child.loop.specs)
    outcome = delegated(row.run_id, ref.agent, stop, row.consumed, undo)
    return ToolResult.delegated(call, outcome, reply_text(call.name, stop, row.output, row.stop_detail))
