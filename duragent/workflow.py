"""An agent as one step of your own workflow: call these inside your `@workflow.run`, on a worker that serves
the agent (`Worker(..., workflows=[YourWorkflow], plugins=[DurableAgentsPlugin(agents=[...], deps=...)])`):

    from duragent.workflow import run_agent

    @workflow.defn
    class OrderRefund:
        @workflow.run
        async def run(self, order_id: str) -> str:
            order = await workflow.execute_activity(look_up_order, order_id, ...)
            refund = await run_agent("orders", f"The customer of order {order_id} asks for a refund.")
            if refund.stop is not Stop.ANSWERED:
                return f"not refunded: {refund.stop.value}"
            await workflow.execute_activity(notify_customer, ...)
            return refund.output

The agent runs as a child `AgentWorkflow` — the same run a client starts: its approvals wait durably (days,
across worker restarts) and are listed by `AgentClient.pending()`, the inbox and `duragent pending`; its tool
calls carry idempotency keys under its own run id; its budget holds; a run that ends abandoned (a declined or
expired approval with `on_decline`/`on_expire="abandon"`, a budget exhausted) undoes its effects, newest
first, before it returns; and on a worker with the workers' keys (`AGENT_WORKER_KEYS`) the child's start and
everything it schedules is sealed.

The child's id is derived from yours: `{your workflow id}~{agent}-{n}`, `n` counting the agent steps of your
run (a run continued as new adds its predecessor's run id), unless you pass `id=`. The start is recorded in your
history, so a replay or a new worker never starts it again, and `REJECT_DUPLICATE` refuses a second run under
that id, open or closed. Cancelling your workflow cancels the agent's run and waits until it has undone its
effects; ending yours otherwise (terminated, timed out) asks it to cancel.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from temporalio import workflow
from temporalio.common import WorkflowIDReusePolicy
from temporalio.exceptions import ApplicationError, WorkflowAlreadyStartedError

with workflow.unsafe.imports_passed_through():
    from pydantic import BaseModel

    from agentic import Agent, Budget, ModelSettings
    from agentic.approvals import ApprovalPolicy
    from agentic.delegation import SEPARATOR
    from agentic.saga import SagaPolicy
    from duragent._activities.inputs import AgentResult
    from duragent._workflows.inputs import AgentInput
    from duragent._workflows.names import WORKFLOW_TYPE

__all__ = ["run_agent", "start_agent"]

# Where a workflow instance counts its agent steps: on the instance, so a replay (a new instance) counts afresh.
_COUNTER = "_duragent_agent_steps"
SUMMARY_LIMIT = 160  # characters of the task shown in the Web UI's summary of the agent's run


async def start_agent(
    agent: Agent | str,
    task: str | None = None,
    *,
    budget: Budget | None = None,
    approvals: ApprovalPolicy | None = None,
    saga: SagaPolicy | None = None,
    options: Mapping[str, Any] | BaseModel | None = None,
    model: str | None = None,
    model_settings: ModelSettings | None = None,
    system: str | None = None,
    id: str | None = None,
    task_queue: str | None = None,
    search_attributes: bool = True,
) -> workflow.ChildWorkflowHandle[Any, AgentResult]:
    """Start a run of `agent` (an `Agent` the workers serve, or its name) as a child of the calling workflow,
    and return its handle once started: `await handle` is its `AgentResult`; `handle.id` its run id (what
    `AgentClient.get`, `duragent status` and the approvals take). Call it from workflow code only.

    `task` overrides the agent's default task; `budget`, `approvals`, `saga`, `system`, `model` (a model the
    worker declares, by name) and `model_settings` override the agent's own; `options` are its per-run
    options (validated by the worker that serves it). `id`: the child's run id (default: derived from the
    calling run's id and a count of its agent steps). `task_queue`: where the agent is served (default: the
    calling workflow's). `search_attributes=False`: the run publishes none (cheaper; then `pending()` and the
    inbox do not find it: `RunHandle.pending()` of your workflow's id still does, through the server's list of
    its children). Raises `ApplicationError` (type `AgentStepIdTaken`) if a run already has that id.
    """
    name = agent.name if isinstance(agent, Agent) else agent
    if not name:
        raise ValueError("a durable run needs a named agent: Agent(..., name='billing')")
    raw_options = options.model_dump(mode="json", exclude_defaults=True) if isinstance(options, BaseModel) else options
    input = AgentInput(
        agent=name,
        task=task,
        system=system,
        budget=budget,
        options=dict(raw_options or {}),
        model=model,
        model_settings=model_settings,
        approvals=approvals,
        saga=saga,
        search_attributes=search_attributes,
    )
    child_id = id or _next_child_id(name)
    info = workflow.info()
    try:
        return await workflow.start_child_workflow(
            WORKFLOW_TYPE,
            input,
            id=child_id,
            task_queue=task_queue,
            result_type=AgentResult,
            # A run id is forever: reusing one would make new tool calls collide with old idempotency keys.
            id_reuse_policy=WorkflowIDReusePolicy.REJECT_DUPLICATE,
            # Cancelling the calling workflow cancels the agent's run and waits until it has undone its effects.
            cancellation_type=workflow.ChildWorkflowCancellationType.WAIT_CANCELLATION_COMPLETED,
            # A caller terminated or timed out still leaves no agent running: it is asked to stop and undo.
            parent_close_policy=workflow.ParentClosePolicy.REQUEST_CANCEL,
            static_summary=_shortened(f"{name}: {task}" if task else name),
            static_details=f"agent **{name}**, a step of {info.workflow_type} {info.workflow_id}",
        )
    except WorkflowAlreadyStartedError:
        raise ApplicationError(
            f"agent step {name!r} of {info.workflow_id} cannot start: run id {child_id!r} is taken (a run is never "
            "started twice under one id); pass another id=",
            type="AgentStepIdTaken",
            non_retryable=True,
        ) from None


async def run_agent(
    agent: Agent | str,
    task: str | None = None,
    *,
    budget: Budget | None = None,
    approvals: ApprovalPolicy | None = None,
    saga: SagaPolicy | None = None,
    options: Mapping[str, Any] | BaseModel | None = None,
    model: str | None = None,
    model_settings: ModelSettings | None = None,
    system: str | None = None,
    id: str | None = None,
    task_queue: str | None = None,
    search_attributes: bool = True,
) -> AgentResult:
    """Run `agent` as one step of the calling workflow and return its `AgentResult` when it ends: answered, or
    abandoned and undone (`result.stop`, `result.status`, `result.compensations`). Waits as long as the run
    does — an approval may take days. Arguments: those of `start_agent`. Call it from workflow code only.

    A run that fails (its compensation kept failing, the worker does not serve the agent, its options are
    invalid) raises `temporalio.exceptions.ChildWorkflowError`, whose cause says why.
    """
    handle = await start_agent(
        agent,
        task,
        budget=budget,
        approvals=approvals,
        saga=saga,
        options=options,
        model=model,
        model_settings=model_settings,
        system=system,
        id=id,
        task_queue=task_queue,
        search_attributes=search_attributes,
    )
    return await handle


def _next_child_id(agent: str) -> str:
    """`{workflow id}~{agent}-{n}` for this run's n-th agent step; the same on every replay of it."""
    instance = workflow.instance()
    count = getattr(instance, _COUNTER, 0) + 1
    setattr(instance, _COUNTER, count)
    info = workflow.info()
    # A run continued as new counts from 1 again: its predecessor's run id keeps its ids apart from those used.
    chain = f"{SEPARATOR}{info.continued_run_id.replace('-', '')[:12]}" if info.continued_run_id else ""
    return f"{info.workflow_id}{chain}{SEPARATOR}{agent}-{count}"


def _shortened(text: str) -> str:
    return text if len(text) <= SUMMARY_LIMIT else text[: SUMMARY_LIMIT - 1] + "…"
