"""Who is asking: the run the server reports as the one that scheduled an activity, never what its input says.

Anyone who can reach the Temporal frontend can run a workflow of their own, on a task queue of their own, that
schedules this worker's activities on the agents' task queue with inputs of their choosing. So an activity takes the
calling run's identity from `activity.info()` — the server's record of who scheduled it — and, where an effect
depends on it, asks the server about that run: only an `AgentWorkflow` on this worker's own task queue is driven by
this worker's workflow code (or its peers' on the same queue). A workflow type is only a name its author chose; a
task queue is where the server hands the run's workflow tasks, which only the agents' workers poll
(docs/operations.md, "Trust model").

Every refusal is a non-retryable `ApplicationError` of type `CallerRefused`, saying why: the caller's
history shows it, and nothing was done.
"""

from __future__ import annotations

from temporalio import activity
from temporalio.client import WorkflowExecutionDescription
from temporalio.exceptions import ApplicationError
from temporalio.service import RPCError, RPCStatusCode

AGENT_WORKFLOW = "AgentWorkflow"
REFUSED = "CallerRefused"
MAX_DEPTH = 32  # delegation levels walked up when checking that a run descends from the caller


def refused(why: str) -> ApplicationError:
    return ApplicationError(why, type=REFUSED, non_retryable=True)


def calling_run(claimed: str | None = None, *, workflow_type: str = AGENT_WORKFLOW) -> str:
    """The workflow id of the run that scheduled this activity, as the server reports it. Refuses a run of
    another workflow type, and an input that names another run (`claimed`)."""
    info = activity.info()
    if info.workflow_type != workflow_type:
        raise refused(
            f"{info.activity_type} serves {workflow_type} runs only; it was scheduled by {info.workflow_type} "
            f"{info.workflow_id!r}"
        )
    if claimed is not None and claimed != info.workflow_id:
        raise refused(
            f"the input names run {claimed!r}, but run {info.workflow_id!r} scheduled this {info.activity_type}; "
            "an activity acts only for the run that scheduled it"
        )
    return info.workflow_id


async def verified_agent_run(claimed: str | None = None) -> str:
    """The calling run's first execution id (stable across continue-as-new), once the server has confirmed
    the run is an `AgentWorkflow` on this worker's own task queue."""
    info = activity.info()
    calling_run(claimed)
    description = await describe(info.workflow_id, info.workflow_run_id)
    return agent_run_execution(description, info.workflow_id)


def agent_run_execution(description: WorkflowExecutionDescription, workflow_id: str) -> str:
    """The first execution id of the run `description` describes, or a refusal unless it is an
    `AgentWorkflow` on this worker's task queue."""
    execution = description.raw_description.workflow_execution_info
    task_queue = activity.info().task_queue
    if execution.type.name != AGENT_WORKFLOW or execution.task_queue != task_queue:
        raise refused(
            f"run {workflow_id!r} is a {execution.type.name} on task queue {execution.task_queue!r}, not an "
            f"{AGENT_WORKFLOW} on {task_queue!r}: this worker acts only for the agents' own runs"
        )
    return execution.first_run_id


async def descends_from(run_id: str, ancestor: str) -> None:
    """Refuses unless the server reports `run_id` as started, at any depth, by a run of `ancestor` (its
    delegated runs): a parent link is written by the server when a workflow starts a child, and no client can
    set it. (Run ids are never reused by the agents' clients, so a run of `ancestor` is this run's chain; a
    reset parent keeps its children.)"""
    current = run_id
    for _ in range(MAX_DEPTH):
        parent = (await describe(current)).raw_description.workflow_execution_info.parent_execution
        if parent.workflow_id == ancestor:
            return
        if not parent.workflow_id:
            break
        current = parent.workflow_id
    raise refused(f"run {run_id!r} was not started by run {ancestor!r} (nor by a run it delegated to)")


async def describe(workflow_id: str, run_id: str | None = None) -> WorkflowExecutionDescription:
    try:
        return await activity.client().get_workflow_handle(workflow_id, run_id=run_id).describe()
    except RPCError as exc:
        if exc.status == RPCStatusCode.NOT_FOUND:
            raise refused(f"the server knows no run {workflow_id!r}") from None
        raise  # the server is unreachable: worth retrying
