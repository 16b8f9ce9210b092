"""What a run waits for, as the run itself reports it: the calls a person is shown and decides on.

Visibility only *finds* the runs that may wait. Whoever starts a workflow writes its memo and its search
attributes, so a decoy can list a harmless-looking call under a real run's name and the real call's hash, and
an approver would sign what they never saw. What is shown, and what a decision
carries, comes from the run:

- its `approvals` query, answered by the agents' workers from the run's state; or, with no worker up,
- the pending list its own workflow last published: a memo *upsert* in its history (back along its
  continue-as-new chain), which only the workflow's code issues — never the memo a client started it with.

Only an `AgentWorkflow` on the agents' task queue counts (a run elsewhere is answered by someone else's code),
an entry must name the run that reports it, and its hash is recomputed from the tool and arguments shown
(`PendingApproval.shown_hash`): a decision carries the hash of exactly what the approver saw.
"""

from __future__ import annotations

from datetime import timedelta

from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowExecutionDescription, WorkflowExecutionStatus, WorkflowQueryFailedError
from temporalio.service import RPCError

from agentic.approvals import PendingApproval
from duragent._workflows.agent import AgentWorkflow
from duragent._workflows.names import WORKFLOW_TYPE
from duragent._workflows.visibility import PENDING_APPROVALS


def is_agents_run(description: WorkflowExecutionDescription, task_queue: str) -> bool:
    """Whether the server reports this run as an open `AgentWorkflow` on the agents' task queue."""
    info = description.raw_description.workflow_execution_info
    running = description.status == WorkflowExecutionStatus.RUNNING
    return running and info.type.name == WORKFLOW_TYPE and info.task_queue == task_queue


# A worker answers the query in milliseconds. When none does within this, the run's history says the same
# thing (the workflow publishes its pending list whenever it changes), so waiting longer buys nothing.
QUERY_TIMEOUT = timedelta(seconds=1)


async def reported_pending(client: Client, workflow_id: str, run_id: str | None) -> list[PendingApproval]:
    """The approvals the open agents' run `workflow_id` waits for, as it reports them (the caller has checked,
    with the server, that it is one: `is_agents_run`, or a visibility query on type, status and queue)."""
    try:  # the run as it is now (it may have continued as new since `run_id` was read)
        view = await client.get_workflow_handle(workflow_id).query(AgentWorkflow.approvals, rpc_timeout=QUERY_TIMEOUT)
        pending = list(view.pending)
    except (RPCError, WorkflowQueryFailedError):  # no worker answered: what the run last published
        pending = await published_pending(client, workflow_id, run_id or "")
    return [shown(p) for p in pending if p.run_id == workflow_id]


async def decidable_pending(client: Client, workflow_id: str, run_id: str) -> list[PendingApproval]:
    """What a decision picks its call from: the pending list the run last published (its history), so that the
    decision sends the run one workflow task — the update — and no query before it; the query only for a run
    that published none (it asks nothing, or started before runs published their list).

    A query and an update for the same run, back to back, can wedge the worker in SDK core (temporalio 1.35)
    when its cache is full: both tasks wait in its full-cache buffer, the query taking longer than the client
    waits for it, and the buffered task core applies second may instantiate the run and produce an activation
    that core then drops ("Extra buffered run should not have produced an activation"); the run then holds a
    workflow task no one answers, and every later one times out (docs/benchmarks.md, "A worker wedged on one
    run")."""
    published = await published_pending(client, workflow_id, run_id)
    if published:
        return [shown(p) for p in published if p.run_id == workflow_id]
    return await reported_pending(client, workflow_id, run_id)


async def published_pending(client: Client, workflow_id: str, run_id: str) -> list[PendingApproval]:
    """The pending list the run's own workflow last upserted into its memo, looking back along its chain."""
    while run_id:
        history = await client.get_workflow_handle(workflow_id, run_id=run_id).fetch_history()
        latest = None
        for event in history.events:
            if event.event_type == EventType.EVENT_TYPE_WORKFLOW_PROPERTIES_MODIFIED:
                upserted = event.workflow_properties_modified_event_attributes.upserted_memo.fields
                if PENDING_APPROVALS in upserted:
                    latest = upserted[PENDING_APPROVALS]
        if latest is not None:
            [rows] = await client.data_converter.decode([latest], [list])
            return [PendingApproval.model_validate(row) for row in rows or []]
        started = history.events[0].workflow_execution_started_event_attributes if history.events else None
        run_id = started.continued_execution_run_id if started is not None else ""
    return []


def shown(pending: PendingApproval) -> PendingApproval:
    """`pending` as shown: in its tree, with the hash of exactly its tool and arguments."""
    return pending.in_tree().model_copy(update={"arguments_hash": pending.shown_hash})
