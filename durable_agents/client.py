"""`AgentClient` and `RunHandle`: the one way to start, inspect, approve, cancel and wait for durable agent
runs. The command line, the demo, the bench and the chaos harness all go through here.

    agents = await AgentClient.connect()                   # from the settings (TEMPORAL_ADDRESS, ...)
    run = await agents.start("refund", "Refund order 4471")
    [waiting] = await run.pending()
    await run.approve(waiting.call_id, by="maria", arguments_hash=waiting.arguments_hash)
    result = await run.result()

Every failure a caller can act on is a typed error from `durable_agents.errors`, with a readable message.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Sequence
from datetime import datetime, timedelta
from typing import Any

from pydantic import BaseModel
from temporalio.client import (
    Client,
    WorkflowExecutionDescription,
    WorkflowExecutionStatus,
    WorkflowFailureError,
    WorkflowHandle,
    WorkflowHistory,
    WorkflowUpdateFailedError,
    WorkflowUpdateRPCTimeoutOrCancelledError,
)
from temporalio.common import WorkflowIDReusePolicy
from temporalio.exceptions import ActivityError, ApplicationError, ChildWorkflowError, WorkflowAlreadyStartedError
from temporalio.service import RPCError, RPCStatusCode

from activities.inputs import AgentResult
from agentic import Agent, Budget, Message, ModelSettings, Usage
from agentic.approvals import ApprovalPolicy, AuditEntry, Decision, PendingApproval
from agentic.saga import SagaPolicy
from agentic.signing import ApproverKey
from config.settings import Settings
from durable_agents.errors import (
    AmbiguousApproval,
    ApprovalRejected,
    NoPendingApproval,
    RunAlreadyExists,
    RunClosed,
    RunFailed,
    SearchAttributesMissing,
    TemporalUnavailable,
    UnknownAgent,
    UnknownRun,
    WorkerUnavailable,
)
from durable_agents.reported import is_agents_run, reported_pending
from workflows import search_attributes as sa
from workflows.agent import AgentWorkflow
from workflows.inputs import AgentInput, ApprovalsView, Progress, Timeouts

PENDING_QUERY = 'WorkflowType = "AgentWorkflow" AND ExecutionStatus = "Running" AND AgentPendingApprovals > 0'
QUERY_TIMEOUT = timedelta(seconds=5)
UPDATE_TIMEOUT = timedelta(seconds=10)


class DecisionOutcome(BaseModel):
    """What became of an approve/deny: applied now (`via="update"`, with its audit entry) or queued as a
    signal because no worker answered (`via="signal"`; applied when a worker picks the run up)."""

    run_id: str
    call_id: str
    tool: str
    arguments: dict[str, object] | str
    decision: str  # approved | declined | queued
    via: str  # update | signal
    entry: AuditEntry | None = None


class RunSummary(BaseModel):
    """One run as visibility lists it: no worker needed."""

    run_id: str
    agent: str | None
    status: str
    temporal_status: str
    started_at: datetime | None
    closed_at: datetime | None
    step: int | None
    tokens: int | None
    cost: float | None
    pending_approvals: int
    stop: str | None


class AgentClient:
    def __init__(self, client: Client, *, task_queue: str | None = None, settings: Settings | None = None) -> None:
        """`client` should be connected with `DurableAgentsPlugin` (pydantic payloads, the codec)."""
        self.settings = settings or Settings()
        self.client = client
        self.task_queue = task_queue or self.settings.task_queue

    @classmethod
    async def connect(
        cls, address: str | None = None, namespace: str | None = None, *, settings: Settings | None = None
    ) -> AgentClient:
        """Connect from the settings (TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, TLS, API key, codec keys)."""
        from durable_agents.connection import TemporalConnectError, connect

        settings = settings or Settings()
        overrides = {k: v for k, v in {"address": address, "namespace": namespace}.items() if v is not None}
        if overrides:
            settings = _replace(settings, **overrides)
        try:
            client = await connect(settings)
        except ValueError:  # the settings contradict themselves (TLS, keys): not a reachability problem
            raise
        except TemporalConnectError as exc:  # its message says where and why already
            raise TemporalUnavailable(str(exc)) from exc
        except Exception as exc:  # the SDK raises RuntimeError with a transport message
            raise TemporalUnavailable(
                f"cannot reach Temporal at {settings.address} (namespace {settings.namespace}): {exc}"
            ) from exc
        return cls(client, settings=settings)

    # -- runs -----------------------------------------------------------------------------------------

    async def start(
        self,
        agent: Agent | str,
        task: str | None = None,
        *,
        run_id: str | None = None,
        history: Sequence[Message] = (),
        consumed: Usage | None = None,
        budget: Budget | None = None,
        system: str | None = None,
        options: dict[str, Any] | BaseModel | None = None,
        model: str | None = None,
        model_settings: ModelSettings | None = None,
        approvals: ApprovalPolicy | None = None,
        saga: SagaPolicy | None = None,
        timeouts: Timeouts | None = None,
        **input_fields: Any,
    ) -> RunHandle:
        """Start a run of `agent` (an `Agent` the workers serve, or its name). `model` names a model the
        worker declares; `options` are the agent's per-run options. Raises RunAlreadyExists."""
        name = agent.name if isinstance(agent, Agent) else agent
        if not name:
            raise ValueError("a durable run needs a named agent: Agent(..., name='billing')")
        if isinstance(agent, Agent):
            agent.parse_options(options)  # bad options fail here, before anything is started
        raw_options = options.model_dump(mode="json", exclude_defaults=True) if isinstance(options, BaseModel) else {}
        input = AgentInput(
            agent=name,
            task=task,
            system=system,
            budget=budget,
            history=list(history),
            consumed=consumed or Usage(),
            options=raw_options or dict(options or {}),  # type: ignore[arg-type]
            model=model,
            model_settings=model_settings,
            approvals=approvals,
            saga=saga,
            timeouts=timeouts or Timeouts(),
            **input_fields,
        )
        shown_task = task or (agent.task if isinstance(agent, Agent) else None)
        return await self.start_input(input, run_id=run_id, description=_description(agent), shown_task=shown_task)

    async def start_input(
        self, input: AgentInput, *, run_id: str | None = None, description: str = "", shown_task: str | None = None
    ) -> RunHandle:
        """Start a run from a complete `AgentInput` (what `start` builds). `description` and `shown_task`
        only label the run in the Web UI (the worker's agent supplies the default task itself)."""
        run_id = run_id or f"{input.agent}-{uuid.uuid4().hex[:8]}"
        task = input.task or shown_task or ""
        try:
            handle = await self.client.start_workflow(
                AgentWorkflow.run,
                input,
                id=run_id,
                task_queue=self.task_queue,
                # A run id is forever: reusing one would make new tool calls collide with old idempotency keys.
                id_reuse_policy=WorkflowIDReusePolicy.REJECT_DUPLICATE,
                static_summary=f"{input.agent}: {task}" if task else input.agent,
                static_details=f"agent **{input.agent}**" + (f" — {description}" if description else ""),
                # What the run's first publish would write, written with the start: an event and a visibility
                # write fewer per run, and the run knows it need not write an empty approvals memo (issue 20).
                search_attributes=sa.at_start(input.agent, input.consumed) if input.search_attributes else None,
            )
        except WorkflowAlreadyStartedError:
            raise RunAlreadyExists(f"a run with id {run_id!r} already exists; run ids are never reused") from None
        except RPCError as exc:
            raise _rpc_error(exc, f"cannot start run {run_id!r}") from exc
        return RunHandle(self, handle)

    def handle(self, run_id: str) -> RunHandle:
        """A handle without checking that the run exists (see `get`)."""
        return RunHandle(self, self.client.get_workflow_handle(run_id, result_type=AgentResult))

    async def get(self, run_id: str) -> RunHandle:
        """A handle to an existing run; raises UnknownRun."""
        handle = self.handle(run_id)
        await handle.describe()
        return handle

    async def list(self, *, status: str | None = None, agent: str | None = None, limit: int = 100) -> list[RunSummary]:
        """Runs from visibility, newest first, optionally by our status (`AgentStatus`) and agent name."""
        clauses = ['WorkflowType = "AgentWorkflow"']
        if status:
            clauses.append(f"AgentStatus = {_quoted(status)}")
        if agent:
            clauses.append(f"AgentName = {_quoted(agent)}")
        found: list[RunSummary] = []
        try:
            async for execution in self.client.list_workflows(" AND ".join(clauses), limit=limit):
                found.append(_summary(execution))
        except RPCError as exc:
            raise _rpc_error(exc, "cannot list runs") from exc
        return found

    async def pending(self, *, root: str | None = None) -> list[PendingApproval]:
        """Every approval waiting, across the agents' runs on this client's task queue: visibility finds the
        runs that wait, and each one's calls are as the run itself reports them (`durable_agents.reported`;
        with no worker up, as its workflow last published them). A delegated run's approvals name their root
        run and the path to it; `root` keeps one tree's."""
        query = f"{PENDING_QUERY} AND TaskQueue = {_quoted(self.task_queue)}"
        try:
            waiting = [(e.id, e.run_id) async for e in self.client.list_workflows(query)]
            reported = await asyncio.gather(*(reported_pending(self.client, run_id, run) for run_id, run in waiting))
        except RPCError as exc:
            raise _rpc_error(exc, "cannot list pending approvals") from exc
        found = [p for each in reported for p in each]
        return sorted((p for p in found if root is None or p.root_run_id == root), key=lambda p: p.deadline)

    def run_url(self, run_id: str) -> str:
        return self.settings.run_url(run_id)


class RunHandle:
    """One run. Cheap to make; every method is one or a few calls to the server."""

    def __init__(self, agents: AgentClient, handle: WorkflowHandle[Any, AgentResult]) -> None:
        self.agents = agents
        self.workflow = handle
        self.run_id = handle.id

    @property
    def url(self) -> str:
        """The run in the Temporal Web UI."""
        return self.agents.run_url(self.run_id)

    async def describe(self) -> WorkflowExecutionDescription:
        try:
            return await self.workflow.describe()
        except RPCError as exc:
            if exc.status == RPCStatusCode.NOT_FOUND:
                namespace = self.agents.client.namespace
                raise UnknownRun(f"no run with id {self.run_id!r} in namespace {namespace}") from None
            raise _rpc_error(exc, f"cannot look up run {self.run_id!r}") from exc

    async def is_running(self) -> bool:
        return (await self.describe()).status == WorkflowExecutionStatus.RUNNING

    async def ensure_open(self) -> None:
        """RunClosed (saying how it ended) unless the run is still open."""
        description = await self.describe()
        if description.status != WorkflowExecutionStatus.RUNNING:
            raise _closed(self.run_id, description)

    # -- looking -------------------------------------------------------------------------------------

    async def progress(self) -> Progress:
        """Live progress (the `progress` query) while the run is open; from its result once it closed.
        Raises WorkerUnavailable when the run is open and no worker answers."""
        description = await self.describe()
        if description.status == WorkflowExecutionStatus.RUNNING:
            try:
                progress = await self.workflow.query(AgentWorkflow.progress, rpc_timeout=QUERY_TIMEOUT)
                return with_retries(progress, description)
            except RPCError as exc:
                raise WorkerUnavailable(
                    f"run {self.run_id} is running but no worker answered its progress query ({exc.message}); "
                    f"is a worker running on task queue {self.agents.task_queue!r}?"
                ) from exc
        if description.status == WorkflowExecutionStatus.COMPLETED:
            return final_progress(await self.result())
        return _ended_progress(self.run_id, description, await self._failure())

    async def pending(self) -> list[PendingApproval]:
        """The approvals this run waits for, and those of the runs it delegated to, at any depth (each names
        its run, root and path): as each run reports them (`durable_agents.reported`; with no worker up, as
        its workflow last published them), its delegated runs found in the server's list of its open
        children. Nothing, for a run that is not an agents' run on this client's task queue."""
        return await self._tree_pending(await self.describe())

    async def _tree_pending(self, description: WorkflowExecutionDescription) -> list[PendingApproval]:
        found: list[PendingApproval] = []
        if is_agents_run(description, self.agents.task_queue):
            found = await reported_pending(self.agents.client, description.id, description.run_id)
        children = [
            child.workflow_id
            for child in description.raw_description.pending_children
            if child.workflow_type_name == "AgentWorkflow"
        ]
        for below in await asyncio.gather(*(self._child_pending(child) for child in children)):
            found += below
        return found

    async def _child_pending(self, run_id: str) -> list[PendingApproval]:
        try:
            description = await self.agents.client.get_workflow_handle(run_id).describe()
        except RPCError as exc:
            if exc.status == RPCStatusCode.NOT_FOUND:
                return []  # it closed (and was removed) since its parent was described
            raise _rpc_error(exc, f"cannot look up run {run_id!r}") from exc
        return await self._tree_pending(description)

    async def wait_for_approval(self, timeout: float = 60.0, interval: float = 0.2) -> list[PendingApproval]:
        """The approvals this run (or a run it delegated to) waits for, once there is at least one (polling
        what the runs report). RunClosed if the run ends first; TimeoutError after `timeout` seconds."""
        deadline = asyncio.get_running_loop().time() + timeout
        while True:
            description = await self.describe()
            waiting = await self._tree_pending(description)
            if waiting:
                return waiting
            if description.status != WorkflowExecutionStatus.RUNNING:
                raise _closed(self.run_id, description)
            if asyncio.get_running_loop().time() > deadline:
                raise TimeoutError(f"run {self.run_id} asked for no approval within {timeout:g} s")
            await asyncio.sleep(interval)

    async def approvals(self) -> ApprovalsView:
        """What waits and the audit trail (the `approvals` query; from the result once the run closed)."""
        if await self.is_running():
            try:
                return await self.workflow.query(AgentWorkflow.approvals, rpc_timeout=QUERY_TIMEOUT)
            except RPCError as exc:
                raise WorkerUnavailable(f"no worker answered run {self.run_id}'s approvals query") from exc
        result = await self.result()
        return ApprovalsView(pending=[], audit=result.audit)

    async def result(self) -> AgentResult:
        """Wait for the run to close; its result, or RunFailed (UnknownAgent) with the cause."""
        try:
            return await self.workflow.result()
        except WorkflowFailureError as exc:
            raise _run_failed(self.run_id, exc) from None
        except RPCError as exc:
            if exc.status == RPCStatusCode.NOT_FOUND:
                raise UnknownRun(f"no run with id {self.run_id!r}") from None
            raise _rpc_error(exc, f"cannot wait for run {self.run_id!r}") from exc

    async def watch(self, interval: float = 0.5) -> AsyncIterator[Progress]:
        """Progress on every change, until the run closes; the last one comes from the result. While no
        worker answers, the last known progress is repeated with `worker_answered=False`."""
        last: Progress | None = None
        result = asyncio.ensure_future(self.result())
        try:
            while not result.done():
                try:
                    current = await self.workflow.query(AgentWorkflow.progress, rpc_timeout=QUERY_TIMEOUT)
                    current = with_retries(current, await self.workflow.describe())
                except RPCError as exc:
                    if result.done():
                        break
                    if exc.status == RPCStatusCode.UNAVAILABLE:  # the server, not a worker, is missing
                        raise TemporalUnavailable(f"the Temporal server did not answer ({exc.message})") from None
                    current = _no_worker(last, self.run_id, exc.message)
                if current != last:
                    last = current
                    yield current
                await asyncio.wait({result}, timeout=max(interval, 0.05))
            final = final_progress(await result, last)
            if final != last:
                yield final
        finally:
            result.cancel()

    # -- acting --------------------------------------------------------------------------------------

    async def approve(
        self,
        call_id: str | None = None,
        *,
        by: str,
        reason: str | None = None,
        arguments_hash: str | None = None,
        wait: timedelta = UPDATE_TIMEOUT,
        key: ApproverKey | None = None,
    ) -> DecisionOutcome:
        return await self.decide(True, call_id, by=by, reason=reason, arguments_hash=arguments_hash, wait=wait, key=key)

    async def deny(
        self,
        call_id: str | None = None,
        *,
        by: str,
        reason: str | None = None,
        arguments_hash: str | None = None,
        wait: timedelta = UPDATE_TIMEOUT,
        key: ApproverKey | None = None,
    ) -> DecisionOutcome:
        return await self.decide(
            False, call_id, by=by, reason=reason, arguments_hash=arguments_hash, wait=wait, key=key
        )

    async def decide(
        self,
        approve: bool,
        call_id: str | None = None,
        *,
        by: str,
        reason: str | None = None,
        arguments_hash: str | None = None,
        wait: timedelta = UPDATE_TIMEOUT,
        key: ApproverKey | None = None,
    ) -> DecisionOutcome:
        """Approve or deny one pending call. `arguments_hash` is the hash of the arguments the approver saw
        (`PendingApproval.arguments_hash`); when omitted, the hash of the call as the run shows it now.

        The call may be one a run this run delegated to waits for (any depth): `call_id` is then that call's
        id, or its `address` (`run_id/call_id`) when several runs of the tree have the same one. The decision
        goes to the run that waits, whose own rules (deadline, hash, signatures) judge it.

        Sent as an update, answered at once (ApprovalRejected with the reason); when no worker answers within
        `wait`, sent as a signal that the run applies when a worker picks it up (`via="signal"`). With `key`
        (the approver's private key), the decision is signed: required where workers configure approver keys."""
        if not by.strip():
            raise ValueError("an approver name is required (it goes into the audit trail)")
        description = await self.describe()
        if description.status != WorkflowExecutionStatus.RUNNING:
            raise _closed(self.run_id, description)
        target = choose(await self._tree_pending(description), self.run_id, call_id)
        if target.run_id != self.run_id:  # routed by its path: the run that waits receives the decision
            waiting = self.agents.handle(target.run_id)
            return await waiting.decide(
                approve, target.call_id, by=by, reason=reason, arguments_hash=arguments_hash, wait=wait, key=key
            )
        # On exactly the request the run shows (its execution and deadline, where it binds signatures to them).
        decision = Decision.answering(target, approve, by, reason or "", client=self.agents.client.identity)
        if arguments_hash is not None:
            decision = decision.model_copy(update={"arguments_hash": arguments_hash})
        if key is not None:
            decision = decision.signed(self.run_id, key)
        outcome = DecisionOutcome(
            run_id=self.run_id,
            call_id=target.call_id,
            tool=target.tool,
            arguments=target.arguments,
            decision="approved" if approve else "declined",
            via="update",
        )
        try:
            entry = await self.workflow.execute_update(AgentWorkflow.decide, decision, rpc_timeout=wait)
            return outcome.model_copy(update={"entry": entry, "decision": entry.event})
        except WorkflowUpdateFailedError as exc:
            raise _refused(exc) from None
        except (WorkflowUpdateRPCTimeoutOrCancelledError, RPCError):
            pass  # no worker answered now: fall back to the signal, which the server keeps
        description = await self.describe()
        if description.status != WorkflowExecutionStatus.RUNNING:
            raise _closed(self.run_id, description)
        if queued := await self._queued_decision(target.call_id):
            verb = "approve" if queued.approve else "deny"
            raise ApprovalRejected(
                f"another decision for call {target.call_id} is already queued ({verb} by {queued.approver}); "
                "no worker has applied it yet. Nothing was sent: the first decision wins when a worker picks "
                "the run up"
            )
        try:
            await self.workflow.signal(AgentWorkflow.decision, decision)
        except RPCError as exc:
            if exc.status == RPCStatusCode.NOT_FOUND:
                raise _closed(self.run_id, await self.describe()) from None
            raise _rpc_error(exc, f"cannot send the decision to run {self.run_id}") from exc
        return outcome.model_copy(update={"decision": "queued", "via": "signal"})

    async def _queued_decision(self, call_id: str) -> Decision | None:
        """A `decision` signal for `call_id` that the run received after its last completed workflow task:
        sent while no worker was up, and not yet seen by the workflow. Its payload is decoded with the
        client's data converter (and so through the codec, when payloads are encrypted)."""
        history = await self.workflow.fetch_history()
        waiting: list[Any] = []
        handed = 0  # signals received before the current workflow task started: that task sees them
        for event in history.events:
            if event.HasField("workflow_task_started_event_attributes"):
                handed = len(waiting)
            elif event.HasField("workflow_task_completed_event_attributes"):
                waiting, handed = waiting[handed:], 0  # the workflow has applied those
            elif event.HasField("workflow_execution_signaled_event_attributes"):
                signal = event.workflow_execution_signaled_event_attributes
                if signal.signal_name == "decision":
                    waiting.append(signal.input.payloads)
        converter = self.agents.client.data_converter
        for payloads in waiting:
            [earlier] = await converter.decode(payloads, [Decision])
            if earlier.call_id == call_id:
                return earlier
        return None

    async def cancel(self, reason: str | None = None) -> None:
        """A Temporal cancellation: the run stops and its completed effects are compensated. RunClosed if
        the run has already ended."""
        description = await self.describe()
        if description.status != WorkflowExecutionStatus.RUNNING:
            raise _closed(self.run_id, description)
        try:
            await self.workflow.cancel(reason=reason or "cancelled")
        except RPCError as exc:
            raise _rpc_error(exc, f"cannot cancel run {self.run_id}") from exc

    async def histories(self) -> list[WorkflowHistory]:
        """The run's event histories, oldest first: one per run of its continue-as-new chain."""
        description = await self.describe()
        client = self.agents.client
        run_id, found = description.raw_description.workflow_execution_info.first_run_id, []
        while run_id:
            history = await client.get_workflow_handle(self.run_id, run_id=run_id).fetch_history()
            found.append(history)
            last = history.events[-1]
            continued = last.HasField("workflow_execution_continued_as_new_event_attributes")
            run_id = last.workflow_execution_continued_as_new_event_attributes.new_execution_run_id if continued else ""
        return found

    async def _failure(self) -> str | None:
        try:
            await self.workflow.result()
        except WorkflowFailureError as exc:
            return str(_run_failed(self.run_id, exc))
        except RPCError:
            return None
        return None


# -- helpers shared by the methods above ------------------------------------------------------------


def choose(waiting: list[PendingApproval], run_id: str, call_id: str | None) -> PendingApproval:
    """The pending approval a decision is for: the named call (its id, or its `address` `run_id/call_id`
    among a delegation tree's), or the only one waiting."""
    if call_id is not None:
        named = [p for p in waiting if call_id in (p.call_id, p.address)]
        if len(named) == 1:
            return named[0]
        if not named:
            raise NoPendingApproval(f"run {run_id} has no pending approval for call {call_id!r}")
        waiting = named
    if not waiting:
        raise NoPendingApproval(f"run {run_id} has no pending approval")
    if len(waiting) > 1:
        ids = [p.call_id if p.run_id == run_id else p.address for p in waiting]
        raise AmbiguousApproval(f"run {run_id} has several pending approvals; choose one: {', '.join(ids)}", ids)
    return waiting[0]


def with_retries(progress: Progress, description: WorkflowExecutionDescription) -> Progress:
    """The workflow cannot see its activities' retries; the server can. A model call that failed and waits for
    its next attempt (the provider down, rate limits) shows as `waiting_model`, saying which attempt failed
    and why; any other activity being retried keeps its status and says so in the label."""
    if progress.status not in ("running", "compensating"):
        return progress
    for pending in description.raw_description.pending_activities:
        if pending.attempt <= 1 or not pending.HasField("last_failure"):
            continue
        failure = pending.last_failure.message.splitlines()[0][:200] if pending.last_failure.message else "failed"
        retry = f"attempt {pending.attempt - 1} failed ({failure}); retrying with backoff"
        if pending.activity_type.name == "call_model":
            return progress.model_copy(update={"status": "waiting_model", "label": f"{progress.label}: {retry}"})
        return progress.model_copy(update={"label": f"{progress.label}: {retry}"})
    return progress


def final_progress(result: AgentResult, last: Progress | None = None) -> Progress:
    """A closed run's progress, from its result (the last poll's `max_steps` kept)."""
    stop = result.stop.value
    return Progress(
        run_id=result.run_id,
        agent=result.agent,
        status=result.status,
        step=result.step_count,
        max_steps=last.max_steps if last else None,
        label=f"finished: {stop}" if result.status == "completed" else f"{result.status}: {stop}",
        input_tokens=result.input_tokens,
        output_tokens=result.output_tokens,
        cost=result.cost,
        trajectory=result.trajectory(),
        stop=stop,
        compensations_done=len([c for c in result.compensations if c.status == "compensated"]),
        compensations_remaining=[s.call.name for s in result.compensations_remaining],
    )


def _no_worker(last: Progress | None, run_id: str, why: str) -> Progress:
    label = f"waiting for a worker: none answered the progress query ({why})"
    if last is not None:
        return last.model_copy(update={"worker_answered": False, "label": label})
    return Progress(
        run_id=run_id,
        agent="",
        status="running",
        step=0,
        max_steps=None,
        label=label,
        input_tokens=0,
        output_tokens=0,
        cost=0.0,
        trajectory=[],
        worker_answered=False,
    )


def _ended_progress(run_id: str, description: WorkflowExecutionDescription, error: str | None) -> Progress:
    """A run that did not complete normally (failed, terminated, timed out): what visibility says."""
    attributes = description.typed_search_attributes
    ended = description.status.name.lower() if description.status else "unknown"
    status = attributes.get(sa.AGENT_STATUS)
    tokens = attributes.get(sa.AGENT_TOKENS) or 0
    return Progress(
        run_id=run_id,
        agent=attributes.get(sa.AGENT_NAME) or "",
        status="compensation_failed" if status == "compensation_failed" else ended,  # type: ignore[arg-type]
        step=attributes.get(sa.AGENT_STEP) or 0,
        max_steps=None,
        label=f"ended: {ended}" + (f" — {error}" if error else ""),
        input_tokens=tokens,
        output_tokens=0,
        cost=attributes.get(sa.AGENT_COST) or 0.0,
        trajectory=[],
        stop=attributes.get(sa.AGENT_STOP) or None,
        error=error,
    )


def _closed(run_id: str, description: WorkflowExecutionDescription) -> RunClosed:
    ended = description.status.name.lower() if description.status else "closed"
    status = description.typed_search_attributes.get(sa.AGENT_STATUS) or ended
    return RunClosed(f"run {run_id} has already ended ({status}); nothing was changed", status)


def _run_failed(run_id: str, exc: WorkflowFailureError) -> RunFailed:
    """The run's own failure (e.g. `CompensationFailed`, `RunRejected`), not the deepest activity error
    under it; UnknownAgent when that is what rejected the run."""
    cause: BaseException | None = exc.cause
    while isinstance(cause, ActivityError | ChildWorkflowError) and cause.cause is not None:
        cause = cause.cause
    types: list[str] = []
    inner: BaseException | None = cause
    while inner is not None:
        if isinstance(inner, ApplicationError) and inner.type:
            types.append(inner.type)
        inner = getattr(inner, "cause", None)
    failure_type = types[0] if types else None
    message = f"run {run_id} failed: {cause or exc}"
    if failure_type == "CompensationFailed":  # its status, as `status`, the runs API and visibility say it
        message = f"run {run_id} ended compensation_failed: {cause}"
    if "UnknownAgent" in types:
        return UnknownAgent(message, "UnknownAgent")
    return RunFailed(message, failure_type)


def _refused(exc: WorkflowUpdateFailedError) -> ApprovalRejected:
    """The validator's refusal: its message says what was refused and why; its details, the reason alone."""
    cause = exc.cause
    if isinstance(cause, ApplicationError) and cause.type == "DecisionRejected" and cause.details:
        return ApprovalRejected(str(cause.details[0]), cause.message)
    return ApprovalRejected(str(cause) if cause else str(exc))


def _rpc_error(exc: RPCError, what: str) -> Exception:
    if exc.status == RPCStatusCode.INVALID_ARGUMENT and "search attribute" in exc.message.lower():
        return SearchAttributesMissing(
            f"{what}: the server does not know our search attributes ({exc.message}). Register them once per "
            "namespace (`python starter.py search-attributes`; `durable_agents.testing` does it for its servers), "
            "or start runs with `search_attributes=False` (their status, step and pending approvals are then "
            "not in visibility)"
        )
    if exc.status in (RPCStatusCode.UNAVAILABLE, RPCStatusCode.DEADLINE_EXCEEDED):
        return TemporalUnavailable(f"{what}: the Temporal server did not answer ({exc.message})")
    if exc.status == RPCStatusCode.NOT_FOUND:
        return UnknownRun(f"{what}: {exc.message}")
    return TemporalUnavailable(f"{what}: {exc.message}")


def _summary(execution: Any) -> RunSummary:
    attributes = execution.typed_search_attributes
    ended = execution.status.name.lower() if execution.status else "unknown"
    return RunSummary(
        run_id=execution.id,
        agent=attributes.get(sa.AGENT_NAME),
        status=attributes.get(sa.AGENT_STATUS) or ended,
        temporal_status=ended,
        started_at=execution.start_time,
        closed_at=execution.close_time,
        step=attributes.get(sa.AGENT_STEP),
        tokens=attributes.get(sa.AGENT_TOKENS),
        cost=attributes.get(sa.AGENT_COST),
        pending_approvals=attributes.get(sa.AGENT_PENDING_APPROVALS) or 0,
        stop=attributes.get(sa.AGENT_STOP) or None,
    )


def _quoted(value: str) -> str:
    """A visibility-query string literal; refuses quotes rather than escaping them."""
    if '"' in value or "\\" in value:
        raise ValueError(f"not a valid filter value: {value!r}")
    return f'"{value}"'


def _description(agent: Agent | str) -> str:
    return agent.description if isinstance(agent, Agent) else ""


def _replace(settings: Settings, **changes: Any) -> Settings:
    import dataclasses

    return dataclasses.replace(settings, **changes)
