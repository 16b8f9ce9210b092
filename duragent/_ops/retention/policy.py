"""How long a closed run is kept, and which runs are due: the retention policy, applied to Temporal runs.

Runs that answered or were cleanly undone — Temporal status Completed with our status `completed`,
`compensated` or `abandoned` — are kept 30 days; every other closed run (failed, `compensation_failed`,
terminated, timed out, cancelled) 90, for postmortems. Open runs are never due. `starter.py prune` archives and
deletes the due ones (duragent/_ops/retention/temporal.py); the namespace's own retention is set longer than the
longest policy
(`NAMESPACE_RETENTION`), so that it is the prune, not the server, that ends a run's life.

Due is decided per *run id* (the workflow id: what the ledger and the transcript store key rows by), from
visibility (`CloseTime`), and a run is left alone when anything else under that id, or above it, is still
wanted: another execution with the same id that is open or not yet due, or a parent or root run still open (it
may still compensate through its child, and through the child's own children: a delegation is undone as a unit).
A conversation's turns (runs `{conversation}~turn-{n}`) are kept until the conversation is due, and then go
together: each turn's transcript continues the one before it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from google.protobuf.duration_pb2 import Duration
from temporalio.api.namespace.v1 import NamespaceConfig
from temporalio.api.workflowservice.v1 import DescribeNamespaceRequest, UpdateNamespaceRequest
from temporalio.client import Client, WorkflowExecutionStatus

from duragent._workflows import search_attributes as sa
from duragent._workflows.names import WORKFLOW_TYPE

COMPLETED_DAYS = 30.0
FAILED_DAYS = 90.0
# The namespace keeps closed runs this long (the embedded dev server and the compose setup job set it): the
# longest policy plus ten days, so a prune that did not run for a week still finds every failed run.
NAMESPACE_RETENTION = timedelta(days=FAILED_DAYS + 10)

ANSWERED = ("completed", "compensated", "abandoned", "closed")  # ours kept the shorter time (closed: a conversation)


@dataclass(frozen=True)
class Policy:
    completed_days: float = COMPLETED_DAYS
    failed_days: float = FAILED_DAYS

    def __post_init__(self) -> None:
        if self.completed_days < 0 or self.failed_days < 0:
            raise ValueError("a retention is never negative")

    def days_for(self, temporal_status: str, status: str | None) -> float:
        """How long a run that ended so is kept. Anything not clearly answered or undone gets the longer time."""
        if temporal_status == "completed" and status in ANSWERED:
            return self.completed_days
        return self.failed_days

    @property
    def longest(self) -> float:
        return max(self.completed_days, self.failed_days)


async def keep_closed_runs(client: Client, retention: timedelta = NAMESPACE_RETENTION) -> timedelta:
    """Make the client's namespace keep closed runs at least `retention` (the dev server keeps them one day):
    `prune` then decides when a run goes. A longer retention already set is left as it is. Returns it."""
    described = await client.workflow_service.describe_namespace(DescribeNamespaceRequest(namespace=client.namespace))
    current = described.config.workflow_execution_retention_ttl.ToTimedelta()
    if current >= retention:
        return current
    ttl = Duration()
    ttl.FromTimedelta(retention)
    await client.workflow_service.update_namespace(
        UpdateNamespaceRequest(namespace=client.namespace, config=NamespaceConfig(workflow_execution_retention_ttl=ttl))
    )
    return retention


@dataclass(frozen=True)
class ClosedRun:
    """One closed execution, as visibility lists it."""

    run_id: str  # the workflow id
    execution: str  # Temporal's run id of this (the chain's last) execution
    agent: str | None
    status: str  # ours (`AgentStatus`), else Temporal's
    temporal_status: str
    started_at: datetime | None
    closed_at: datetime
    kept_days: float
    parent_id: str | None
    root_id: str | None = None  # the top of its delegation tree, when that is not its parent

    @property
    def due_at(self) -> datetime:
        return self.closed_at + timedelta(days=self.kept_days)

    def summary(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "agent": self.agent,
            "status": self.status,
            "temporal_status": self.temporal_status,
            "closed_at": self.closed_at.isoformat(),
            "kept_days": self.kept_days,
        }


@dataclass(frozen=True)
class Skipped:
    run_id: str
    why: str


async def find_due(
    client: Client, now: datetime, policy: Policy, task_queue: str | None = None
) -> tuple[list[ClosedRun], list[Skipped]]:
    """The closed runs due for pruning as of `now`, oldest first, and the due ones left alone (with why).
    With `task_queue`, only the runs on it: a workflow type is a name anybody may give their own workflow, the
    agents' queue is where only the agents' workers poll."""
    cut = now - timedelta(days=min(policy.completed_days, policy.failed_days))
    # ContinuedAsNew executions are links of a chain whose last execution decides; Running ones are never due.
    query = (
        f'WorkflowType = "{WORKFLOW_TYPE}" AND ExecutionStatus != "Running"'
        f' AND ExecutionStatus != "ContinuedAsNew" AND CloseTime < "{_rfc3339(cut)}"'
    )
    if task_queue is not None:
        if not _queryable(task_queue):
            raise ValueError(f"task queue {task_queue!r} cannot be put in a visibility query (a quote or backslash)")
        query += f' AND TaskQueue = "{task_queue}"'
    due: list[ClosedRun] = []
    async for execution in client.list_workflows(query):
        closed = closed_run(execution, policy)
        if closed is not None and closed.due_at <= now:
            due.append(closed)
    due.sort(key=lambda run: (run.closed_at, run.run_id))
    kept: list[ClosedRun] = []
    skipped: list[Skipped] = []
    for run in due:
        why = await _reason_to_keep(client, run, now, policy, due)
        if why is None:
            kept.append(run)
        else:
            skipped.append(Skipped(run.run_id, why))
    return kept, skipped


def closed_run(execution: Any, policy: Policy) -> ClosedRun | None:
    """A closed execution from visibility (`WorkflowExecution`); None while it is open."""
    if execution.close_time is None or execution.status in (None, WorkflowExecutionStatus.RUNNING):
        return None
    temporal_status = execution.status.name.lower()
    ours = execution.typed_search_attributes.get(sa.AGENT_STATUS)
    return ClosedRun(
        run_id=execution.id,
        execution=execution.run_id,
        agent=execution.typed_search_attributes.get(sa.AGENT_NAME),
        status=_shown_status(temporal_status, ours),
        temporal_status=temporal_status,
        started_at=execution.start_time,
        closed_at=execution.close_time,
        kept_days=policy.days_for(temporal_status, ours),
        parent_id=execution.parent_id or None,
        root_id=execution.root_id if execution.root_id not in (None, "", execution.id, execution.parent_id) else None,
    )


def _shown_status(temporal_status: str, ours: str | None) -> str:
    """Ours when the loop ended the run (it returned, or a compensation kept failing); Temporal's when it ended
    outside the loop (a failure, a termination), where ours would be the stale one it last published."""
    if temporal_status == "completed" or ours == "compensation_failed":
        return ours or temporal_status
    return temporal_status


async def _reason_to_keep(
    client: Client, run: ClosedRun, now: datetime, policy: Policy, due: list[ClosedRun]
) -> str | None:
    if not all(_queryable(named) for named in (run.run_id, run.parent_id or "", run.root_id or "")):
        return "its id cannot be put in a visibility query (a quote or backslash in it)"
    due_executions = {r.execution for r in due}
    async for execution in client.list_workflows(f'WorkflowId = "{run.run_id}"'):
        if execution.status == WorkflowExecutionStatus.RUNNING:
            return "another run with the same id is open"
        if execution.status == WorkflowExecutionStatus.CONTINUED_AS_NEW or execution.run_id in due_executions:
            continue
        other = closed_run(execution, policy)
        if other is not None and other.due_at > now:
            return f"another run with the same id is kept until {other.due_at.isoformat()}"
    if run.parent_id and run.run_id.startswith(f"{run.parent_id}~turn-"):
        # A conversation's turn: its transcript rows are the prefix of every later turn's transcript, so the
        # turns go together, once the conversation itself is due (it closes after its last turn).
        async for execution in client.list_workflows(f'WorkflowId = "{run.parent_id}"'):
            conversation = closed_run(execution, policy)
            if conversation is None and execution.status != WorkflowExecutionStatus.CONTINUED_AS_NEW:
                return f"its conversation {run.parent_id} is still open"
            if conversation is not None and conversation.due_at > now:
                return f"its conversation {run.parent_id} is kept until {conversation.due_at.isoformat()}"
    if run.parent_id:
        for role, ancestor in (("parent", run.parent_id), ("root", run.root_id)):
            open_ancestor = f'WorkflowId = "{ancestor}" AND ExecutionStatus = "Running"'
            if ancestor and (await client.count_workflows(open_ancestor)).count:
                return f"its {role} run {ancestor} is still open"
    return None


def _queryable(value: str) -> bool:
    return '"' not in value and "\\" not in value


def _rfc3339(at: datetime) -> str:
    return at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
