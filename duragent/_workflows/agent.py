"""`AgentWorkflow`: the agent loop made durable. Every model call and every tool call is an activity;
the transcript, the consumption, pending approvals and the saga log are workflow state, rebuilt by
replay after any crash.

The workflow only executes what `AgentLoop` decides (and what `agentic.approvals` / `agentic.saga`
rule); it owns no agent rule of its own.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta

from temporalio import workflow
from temporalio.common import RawValue
from temporalio.exceptions import (
    ActivityError,
    ApplicationError,
    ChildWorkflowError,
    FailureError,
    is_cancelled_exception,
)

with workflow.unsafe.imports_passed_through():
    from pydantic import ValidationError

    from agentic import (
        AgentLoop,
        Budget,
        CallModel,
        Finish,
        LoopState,
        ModelSettings,
        RunTool,
        Stop,
        ToolResult,
        ToolSchema,
        ToolStatus,
        live,
    )
    from agentic.agent import effective_settings
    from agentic.approvals import ApprovalBook, ApprovalPolicy, AuditEntry, Decision, Outcome
    from agentic.delegation import (
        child_delegation,
        child_run_id,
        invalid_task_text,
        refused_text,
        reply_text,
        reserve,
        task_of,
    )
    from agentic.loop import idempotency_key, initial_messages, step_of, trajectory
    from agentic.mcp.toolset import schemas_document, schemas_of
    from agentic.messages import Message, ToolCall
    from agentic.saga import (
        CompensationPlan,
        CompensationRecord,
        CompensationStep,
        SagaPolicy,
        abandons,
        compensation_plan,
        delegated,
        undo_plan,
    )
    from agentic.spec import AgentSpec
    from duragent._activities.describe import DescribeActivities
    from duragent._activities.inputs import (
        AgentResult,
        CompensationInput,
        ContinueAsNewPolicy,
        DescribedAgent,
        DescribeInput,
        MCPListInput,
        ModelCallInput,
        RunStatus,
        ToolCallInput,
    )
    from duragent._activities.mcp import MCPActivities
    from duragent._activities.model import ModelActivities
    from duragent._activities.tools import ToolActivities
    from duragent._activities.transcripts import NOT_IN_THIS_STORE
    from duragent._stores.transcripts import ref_of
    from duragent._workflows.decisions import DECISION_BOUNDS_PATCH, read_decision
    from duragent._workflows.delegation import failed_child, run_child
    from duragent._workflows.inputs import AgentInput, ApprovalsView, Handover, Progress
    from duragent._workflows.live import LIVE_CARRY_BYTES, LiveLog
    from duragent._workflows.names import APPROVALS_QUERY, DECIDE_UPDATE, DECISION_SIGNAL, PROGRESS_QUERY, WORKFLOW_TYPE
    from duragent._workflows.policies import DESCRIBE_RETRY, MCP_LIST_RETRY, MODEL_RETRY, TOOL_RETRY, compensation_retry
    from duragent._workflows.transcript import WorkflowTranscript
    from duragent._workflows.turns import continued_transcript
    from duragent._workflows.visibility import Publisher
    from duragent._workflows.webhook import announce


# Runs that started before the approval gate was checked end to end replay without the
# handover and delegation checks and without execution-bound signatures.
GATE_PATCH = "gate-end-to-end"

# Runs started with `continue_as_new` in their input (before it was the worker's `EngineOptions`) replay handing
# over where their input said; any other run hands over where its worker's recorded options say.
ENGINE_PATCH = "engine-options"


# Bad input (a field that does not validate; an agent, model or options the worker rejects) fails the
# workflow at once instead of failing workflow tasks that Temporal would retry forever.
# Unsandboxed: the sandbox re-imports this module for every run (compiling it from source where no bytecode
# is cached, as under PYTHONDONTWRITEBYTECODE=1 in our image) and proxies every call, which cost 40 % of the
# worker's Python CPU per run (docs/benchmarks.md). Only our own code runs here (agents' code runs
# in activities); tests/temporal/test_replay.py replays recorded and fresh histories inside the sandbox instead, so a
# non-deterministic call added to this code still fails a test.
@workflow.defn(name=WORKFLOW_TYPE, failure_exception_types=[ValidationError], sandboxed=False)
class AgentWorkflow:
    @workflow.init
    def __init__(self, input: AgentInput) -> None:
        self.input = input
        carry = input.carry
        # Until the agent's spec is known (the first thing `run` asks for), the loop has no tools and an
        # unlimited budget: queries answered that early show a run that has not started a step.
        self.spec: AgentSpec | None = carry.spec if carry else None
        self.loop = AgentLoop(Budget(), {}, LoopState(consumed=input.consumed))
        self.transcript = WorkflowTranscript()
        self.book = ApprovalBook()
        self.continued = 0
        if carry is not None:  # a continuation: everything comes from the run that handed over
            self.transcript, self.book, self.continued = carry.transcript, carry.book, carry.continued
        self.compensations: list[CompensationRecord] = []
        self.remaining: list[CompensationStep] = []
        self.not_compensable: list[str] = []
        self.mcp_schemas: list[ToolSchema] = []
        self.mcp_schemas_ref: str | None = None
        self.status: RunStatus = "running"
        self.label = "starting"
        self.handover_at = ContinueAsNewPolicy()  # the worker's, once the spec is recorded (`_start`)
        self.publish = Publisher(input.search_attributes)
        # What the people watching see as it happens (duragent/_workflows/live.py): no history of its own.
        self.live = LiveLog(carry.live if carry is not None else None)

    @property
    def run_id(self) -> str:
        return workflow.info().workflow_id

    @workflow.run
    async def run(self, input: AgentInput) -> AgentResult:
        try:
            result = await self._run()
        except (FailureError, ValidationError, asyncio.CancelledError) as exc:
            # The run fails (or is cancelled outside the loop): its webhook hears of it, then it ends so.
            status = "cancelled" if isinstance(exc, asyncio.CancelledError) else "failed"
            if isinstance(exc, ApplicationError) and exc.type == "CompensationFailed":
                status = "compensation_failed"
            self.live(live.Finished(status=status, stop=self._why_stopped(status)))
            self.live.detach()
            await announce(input.webhook, self.run_id, status, self._why_stopped(status), error=str(exc) or None)
            raise
        await announce(input.webhook, self.run_id, result.status, result.stop.value, result.output)
        return result

    def _why_stopped(self, status: str) -> str | None:
        stop = self.loop.state.stop
        return "cancelled" if status == "cancelled" else (stop.value if stop else None)

    async def _run(self) -> AgentResult:
        self._publish_status("running", "starting")
        await self._start()
        try:
            await self._drive()
        except (asyncio.CancelledError, ActivityError) as exc:
            if not is_cancelled_exception(exc):
                raise
            # A Temporal cancellation abandons the run; the compensations below still run in full.
            reason = workflow.cancellation_reason() or "cancelled"
            self.transcript.add(self.loop.stop_with(Stop.CANCELLED, reason))
        stop = self.loop.state.stop
        assert stop is not None
        if abandons(stop):
            await self._compensate()
        else:
            self._publish_status("completed", f"finished: {stop.value}")
        if stop is Stop.ANSWERED and self.loop.state.output is not None:
            self.live(live.Answer(text=self.loop.state.output, stop=stop.value))
        self.live(live.Finished(status=self.status, stop=stop.value))
        # Handlers may still be writing the audit trail; let them finish before the run closes.
        await self._handlers_finished()
        return self._result()

    async def _handlers_finished(self) -> None:
        """Wait for the decisions being handled; the live stream's subscribers are released first (they would
        otherwise wait for news that never comes, and the run with them)."""
        self.live.detach()
        await workflow.wait_condition(workflow.all_handlers_finished)

    async def _start(self) -> None:
        """Ask the worker for the agent's spec (recorded in history) and build the loop from it."""
        input = self.input
        info = workflow.info()
        if input.carry is not None and info.continued_run_id is None:
            # `carry` is trusted whole (the spec, approvals decided, the approver keys): only a run handing over
            # to its own continuation may set it, never a client starting a run.
            raise ApplicationError(
                f"run {self.run_id} cannot start: `carry` is set only by a run continuing as new",
                type="RunRejected",
                non_retryable=True,
            )
        # Runs started before these checks existed replay without them (docs/operations.md, "Trust model").
        checked = (input.carry is not None or input.delegation is not None) and workflow.patched(GATE_PATCH)
        if checked and (why := _origin_refusal(input, info)) is not None:
            raise ApplicationError(f"run {self.run_id} cannot start: {why}", type="RunRejected", non_retryable=True)
        if self.spec is None or (checked and input.carry is not None):
            try:
                # A continuation asks again (the spec, its tool flags, the approver keys come from the worker,
                # never from `carry`), and the worker checks with the server that the run before it continued.
                spec = await workflow.execute_local_activity_method(
                    DescribeActivities.describe_agent,
                    DescribeInput(
                        agent=input.agent,
                        model=input.model,
                        options=input.options,
                        continued_from=info.continued_run_id if input.carry is not None else None,
                    ),
                    start_to_close_timeout=timedelta(seconds=30),
                    retry_policy=DESCRIBE_RETRY,
                    summary=f"describe agent {input.agent}",
                )
                if input.carry is not None:  # the MCP tools the run listed when it started stay its tools
                    spec = _with_mcp_tools_of(spec, input.carry.spec)
                    self.book.use_keys(spec.approver_keys, info.first_execution_run_id)
                self.spec = await self._list_mcp_tools(spec) if spec.mcp_servers and input.carry is None else spec
            except ActivityError as exc:
                # The run cannot work on these workers (unknown agent or model, invalid options, an MCP server
                # unreachable or misconfigured, a handover the server does not vouch for): say why.
                raise ApplicationError(
                    f"run {self.run_id} cannot start: {_cause(exc)}", type="RunRejected", non_retryable=True
                ) from exc
        spec = self.spec
        self.handover_at = _handover_policy(input, spec)
        if isinstance(spec, DescribedAgent):  # the rule its progress is published by, as the record names it
            self.publish.rule = "work" if spec.progress_by_work else "time" if spec.progress_by_time else None
        # The MCP tools the model is offered: the recorded ones, as one document in the transcript store.
        self.mcp_schemas = schemas_of(spec.tools)
        self.mcp_schemas_ref = ref_of(schemas_document(self.mcp_schemas)) if self.mcp_schemas else None
        carry = input.carry
        self.loop = AgentLoop(
            input.budget or spec.budget,
            spec.tools,
            carry.loop if carry else self.loop.state,
            role=spec.role(),
            team=spec.team,  # the agents it may be handed to, as the worker described them when the run started
        )
        if carry is None:
            # Whose signature makes a decision count comes from the worker's record, never from the input.
            self.book.run_id, self.book.approver_keys = self.run_id, dict(spec.approver_keys)
            if spec.approver_keys and workflow.patched(GATE_PATCH):
                # A signature counts for this execution only (and the request it answers): a new run that
                # reuses this id cannot be handed one from this run's history.
                self.book.use_keys(spec.approver_keys, info.first_execution_run_id)
            if input.delegation is not None:  # its approvals name the tree they belong to
                self.book.path = input.delegation.lineage(self.run_id)
            system = spec.system if input.system is None else input.system
            task = input.task or spec.task
            if task is None:
                raise ApplicationError(
                    f"agent {spec.name} has no default task: start the run with one", type="RunRejected"
                )
            if input.history_ref is not None:  # a conversation's turn: its transcript so far, by reference
                self.transcript = continued_transcript(self.run_id, info, input.history_ref)
                self.transcript.add([Message(role="user", content=task)])
            else:
                self.transcript.add(initial_messages(system, task, input.history))

    async def _list_mcp_tools(self, spec: AgentSpec) -> AgentSpec:
        """The agent's MCP tools as its servers list them now, recorded in history with the spec (and carried
        across continue-as-new with it): the run keeps this tool set to its end."""
        listing = await workflow.execute_activity_method(
            MCPActivities.list_mcp_tools,
            MCPListInput(run_id=self.run_id, agent=spec.name),
            start_to_close_timeout=timedelta(seconds=120),
            heartbeat_timeout=timedelta(seconds=self.input.timeouts.heartbeat_seconds),
            retry_policy=MCP_LIST_RETRY,
            summary=f"list MCP tools: {', '.join(spec.mcp_servers)}",
        )
        return spec.model_copy(update={"tools": {**spec.tools, **listing.tools}})

    @property
    def approval_policy(self) -> ApprovalPolicy:
        return self.input.approvals or (self.spec.approvals if self.spec else ApprovalPolicy())

    @property
    def saga_policy(self) -> SagaPolicy:
        return self.input.saga or (self.spec.saga if self.spec else SagaPolicy())

    async def _drive(self) -> None:
        while True:
            if workflow.cancellation_reason() is not None:
                # A cancel that arrived as an activity was completing is delivered as that activity's
                # result, not as an exception: without this check the run would carry on regardless.
                raise asyncio.CancelledError()
            await self._continue_as_new_if_due()
            step = self.loop.next_step()
            if isinstance(step, Finish):
                return
            if isinstance(step, CallModel):
                await self._call_model(step)
            elif isinstance(step, RunTool):
                await self._run_tool(step)

    # -- queries, signals, updates --------------------------------------------------------------

    @workflow.query(
        name=PROGRESS_QUERY,
        description="Live progress: status, step, label, tokens, cost, trajectory, pending approvals.",
    )
    def progress(self) -> Progress:
        state = self.loop.state
        return Progress(
            run_id=self.run_id,
            agent=self.input.agent,
            status=self.status,
            step=state.consumed.steps,
            max_steps=self.loop.budget.max_steps,
            label=self.label,
            input_tokens=state.consumed.input_tokens,
            output_tokens=state.consumed.output_tokens,
            cost=state.consumed.cost,
            trajectory=trajectory(state.records),
            stop=state.stop.value if state.stop else None,
            pending_approvals=list(self.book.pending.values()),
            total=self.spec.estimated_actions if self.spec else None,
            compensations_done=len([c for c in self.compensations if c.status == "compensated"]),
            compensations_remaining=[s.call.name for s in self.remaining],
        )

    @workflow.query(
        name=APPROVALS_QUERY,
        description="Approvals waiting, and the audit trail of every decision, rejection and expiry.",
    )
    def approvals(self) -> ApprovalsView:
        book = self.book
        return ApprovalsView(pending=list(book.pending.values()), audit=book.audit, uncounted=book.uncounted)

    @workflow.signal(name=DECISION_SIGNAL, description="A human's approve/deny for a pending call (with its hash).")
    def decision(self, payload: RawValue) -> None:
        """A human's decision (a `Decision`). One that does not fit (wrong hash, unknown or decided call, too
        late) changes nothing and is recorded in the audit trail as rejected, with why. The payload is read
        here rather than by the SDK, so one that cannot be read at all is audited too instead of dropped
        with only a worker log line."""
        try:
            decision = read_decision(payload.payload)  # every field bounded
        except Exception as exc:
            self.book.unreadable(workflow.now(), f"{type(exc).__name__}: {exc}")
            self._publish_status(self.status, self.label)
            return
        self._decide(decision)

    @workflow.update(name=DECIDE_UPDATE, description="The same decision, answered synchronously; rejections raised.")
    def decide(self, decision: Decision) -> AuditEntry:
        """The same decision, answered synchronously. A rejection is raised to the caller by the validator
        (and so, by Temporal's design, leaves no trace in history)."""
        return self._decide(decision)

    @decide.validator
    def _validate_decision(self, decision: Decision) -> None:
        why = self.book.rejection(decision, workflow.now(), self._queued_calls())
        if why is not None:
            # What was refused and why, as the caller reads it (Temporal's CLI too): not a ValueError, which
            # reads as a retryable bug. The reason alone travels as the details (`ApprovalRejected.reason`).
            pending = self.book.pending.get(decision.call_id)
            call = f"call {decision.call_id}" + (f" ({pending.tool})" if pending else "")
            verb = "approve" if decision.approve else "deny"
            raise ApplicationError(
                f"decision refused: {verb} {call}: {why}", why, type="DecisionRejected", non_retryable=True
            )

    def _decide(self, decision: Decision) -> AuditEntry:
        entry = self.book.decide(decision, workflow.now(), self._queued_calls())
        if entry.event in ("approved", "declined"):
            self.live(
                live.ApprovalDecided(
                    call_id=entry.call_id, outcome=entry.event, approver=entry.approver, reason=entry.reason
                )
            )
        self._publish_status(self.status, self.label)
        return entry

    def _queued_calls(self) -> list[str]:
        return [call.identity for call in self.loop.state.queue]

    # -- steps ------------------------------------------------------------------------------------

    @property
    def active_agent(self) -> str:
        """The agent whose turn it is: the run's own, or the one it was handed to."""
        return self.loop.state.agent or self.input.agent

    def _model_call_input(self, step: CallModel) -> ModelCallInput:
        if self.loop.state.agent is None:
            return ModelCallInput(
                run_id=self.run_id,
                agent=self.input.agent,
                transcript=self.transcript.part(),
                call_index=step.call_index,
                step=step.step,
                model=self.input.model,
                settings=self._model_settings,
                tools_ref=self.mcp_schemas_ref,
                stream=self.input.stream,
            )
        # Handed over: that agent's own model, settings and system prompt, as recorded when the run started.
        role = self.loop.role
        return ModelCallInput(
            run_id=self.run_id,
            agent=role.name,
            transcript=self.transcript.part(),
            call_index=step.call_index,
            step=step.step,
            settings=role.model_settings,
            system=role.system,
            stream=self.input.stream,
        )

    async def _call_model(self, step: CallModel) -> None:
        self._publish_status("running", f"model call {step.step}")
        self.live(live.StepStarted(step=step.step, kind="model", label=self.label))
        timeouts = self.input.timeouts
        try:
            reply = await workflow.execute_activity_method(
                ModelActivities.call_model,
                self._model_call_input(step),
                start_to_close_timeout=timedelta(seconds=timeouts.model_seconds),
                heartbeat_timeout=timedelta(seconds=timeouts.heartbeat_seconds),
                retry_policy=MODEL_RETRY,
                summary=self.label,
            )
        except ActivityError as exc:
            if is_cancelled_exception(exc):
                raise
            # Retrying cannot fix it (or retries ran out): fail the run visibly instead of looping.
            raise ApplicationError(
                f"{self.label} failed: {_cause(exc)}", type="ModelCallFailed", non_retryable=True
            ) from exc
        self.publish.add_work(reply.worked_ms)
        self.transcript.advance(reply.head, self.loop.model_replied(reply.reply))
        message = reply.reply.message
        queued = {call.id: call.identity for call in self.loop.state.queue}
        self.live(
            live.StepFinished(
                step=step.step,
                kind="model",
                text=message.content,
                tool_calls=[
                    live.ToolCallView(call_id=queued.get(c.id, c.id), name=c.name, arguments=c.arguments)
                    for c in message.tool_calls
                ],
            )
        )

    async def _run_tool(self, step: RunTool) -> None:
        call = step.call
        decision = None
        if step.needs_approval:
            outcome, waited = await self._await_approval(step)
            if outcome is not Outcome.APPROVED:
                self._refuse(call, outcome, waited)
                return
            decision = self.book.decisions.get(call.identity)  # the tool activity checks it again, at the effect
        if step.spec is not None and step.spec.delegate is not None:
            await self._delegate(step)
            return
        self._publish_status("running", call.describe())
        self.live(
            live.StepStarted(step=step_of(call.identity) or 0, kind="tool", label=self.label, call_id=call.identity)
        )
        timeouts = self.input.timeouts
        tool_timeout = step.spec.timeout if step.spec and step.spec.timeout else timeouts.tool_seconds
        try:
            done = await workflow.execute_activity_method(
                ToolActivities.run_tool,
                ToolCallInput(
                    run_id=self.run_id,
                    agent=self.active_agent,
                    call=call,
                    idempotency_key=idempotency_key(self.run_id, call.identity),
                    transcript=self.transcript.part(),
                    decision=decision,
                    options=self._options,
                    tool=step.spec if step.spec is not None and step.spec.mcp is not None else None,
                ),
                start_to_close_timeout=timedelta(seconds=tool_timeout + timeouts.heartbeat_seconds),
                heartbeat_timeout=timedelta(seconds=timeouts.heartbeat_seconds),
                retry_policy=TOOL_RETRY,
                # On cancellation, wait until the tool has really stopped: an effect must not land
                # after its compensation ran.
                cancellation_type=workflow.ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
                summary=self.label,
            )
        except (asyncio.CancelledError, ActivityError) as exc:
            if is_cancelled_exception(exc):
                # The run is being cancelled: the call stopped, and whether its effect landed is
                # unknown — the saga plans its undo, which checks the ledger first.
                self.transcript.add(self._tool_finished(ToolResult.cancelled(call)))
                raise
            if _failure_type(exc) == NOT_IN_THIS_STORE:
                # This worker cannot read the run's transcript: no retry, no model can fix that.
                raise ApplicationError(
                    f"{self.label} failed: {_cause(exc)}", type="ToolCallFailed", non_retryable=True
                ) from exc
            # Out of retries: the model hears about it, as it would from the in-process agent.
            failed = ToolResult.of(call, ToolStatus.ERROR, f"Error: {call.name} kept failing: {_cause(exc)}")
            self.transcript.add(self._tool_finished(failed))
            return
        self.publish.add_work(done.worked_ms)
        self.transcript.advance(done.head, self._tool_finished(done.result))
        self.loop.state.slim_records()  # the output lives in the transcript store, not in state

    async def _await_approval(self, step: RunTool) -> tuple[Outcome, float]:
        call = step.call
        declared = step.spec.approval_timeout if step.spec else None
        timeout = self.approval_policy.timeout_for(call.name, declared)
        pending = self.book.request(self.run_id, call, workflow.now(), timeout)
        self.live(
            live.ApprovalRequested(
                call_id=pending.call_id,
                tool=pending.tool,
                arguments=pending.arguments,
                arguments_hash=pending.arguments_hash,
                deadline=pending.deadline,
            )
        )
        self._publish_status(
            "awaiting_approval", f"awaiting approval of {call.describe()} until {pending.deadline:%Y-%m-%d %H:%M} UTC"
        )
        # A wait can last days: hand over first if due, the pending request (and its deadline) included.
        await self._continue_as_new_if_due(before_wait=True)
        if call.identity not in self.book.outcomes:
            # A durable timer: the deadline holds across worker restarts, and is not reset by them.
            remaining = max((pending.deadline - workflow.now()).total_seconds(), 0.0)
            try:
                await workflow.wait_condition(
                    lambda: call.identity in self.book.outcomes,
                    timeout=remaining,
                    timeout_summary=f"approval deadline for {call.name}",
                )
            except TimeoutError:
                self.book.expire(call.identity)
                self.live(live.ApprovalExpired(call_id=call.identity))
        self._publish_status("running", self.label)
        return self.book.outcomes[call.identity], timeout

    # -- delegation ---------------------------------------------------------------------------------

    async def _delegate(self, step: RunTool) -> None:
        """Another agent answers this call, as a child workflow with a reservation out of this run's budget;
        its consumption is charged here when it ends (the loop adds it)."""
        call, spec = step.call, step.spec
        assert spec is not None and spec.delegate is not None
        ref = spec.delegate
        task = task_of(call)
        if task is None:
            self._answer(ToolResult.of(call, ToolStatus.INVALID_ARGUMENTS, invalid_task_text(call.name)))
            return
        reservation = reserve(self.loop.budget, self.loop.state.consumed, ref.limit)
        if isinstance(reservation, str):
            self._answer(ToolResult.of(call, ToolStatus.ERROR, refused_text(call.name, reservation)))
            return
        child_id = child_run_id(self.run_id, call.identity)
        self._publish_status("running", f"delegated to {ref.agent}: run {child_id}")
        self.live(live.Delegation(call_id=call.identity, agent=ref.agent, child_run_id=child_id, status="started"))
        child = AgentInput(
            agent=ref.agent,
            task=task,
            budget=reservation,
            options=dict(ref.options),
            timeouts=self.input.timeouts,
            search_attributes=self.input.search_attributes,
            delegation=child_delegation(self.input.delegation, self.run_id, call),
        )
        try:
            result = await run_child(child_id, child, self.run_id, call)
        except asyncio.CancelledError:
            # Cancelled while the child was being started: the cancellation reaches it too.
            self._answer(ToolResult.cancelled(call))
            raise
        except (ChildWorkflowError, ActivityError) as exc:
            # The child failed (its compensation kept failing, it could not start...): the model is told,
            # and what it consumed before failing is still charged.
            self._answer(failed_child(call, child_id, ref.agent, exc))
            return
        outcome = delegated(child_id, ref.agent, result.stop, result.usage, result.undo)
        self.live(
            live.Delegation(call_id=call.identity, agent=ref.agent, child_run_id=child_id, status=result.stop.value)
        )
        self._answer(
            ToolResult.delegated(call, outcome, reply_text(call.name, result.stop, result.output, result.stop_detail))
        )
        self._publish_status("running", f"{ref.agent} ended ({result.stop.value}): run {child_id}", charged=True)

    def _tool_finished(self, result: ToolResult) -> list[Message]:
        """The loop told of a call's result; the people watching too."""
        queue = self.loop.state.queue
        call_id = queue[0].identity if queue and queue[0].id == result.call_id else result.call_id
        messages = self.loop.tool_finished(result)
        status = result.status.value if isinstance(result.status, ToolStatus) else str(result.status)
        content = result.content[:2000]
        self.live(live.ToolCallFinished(call_id=call_id, name=result.name, status=status, content=content))
        return messages

    def _answer(self, result: ToolResult) -> None:
        self.transcript.add(self._tool_finished(result))

    def _refuse(self, call: ToolCall, outcome: Outcome, waited: float) -> None:
        policy = self.approval_policy
        if outcome is Outcome.DECLINED:
            reason = next((e.reason for e in reversed(self.book.audit) if e.call_id == call.identity), "")
            self.transcript.add(self._tool_finished(ToolResult.declined(call, reason or None)))
            if policy.on_decline == "abandon":
                self.transcript.add(self.loop.stop_with(Stop.APPROVAL_DECLINED, f"{call.name} was declined"))
        else:
            self.transcript.add(self._tool_finished(ToolResult.expired(call, waited)))
            if policy.on_expire == "abandon":
                self.transcript.add(self.loop.stop_with(Stop.APPROVAL_EXPIRED, f"approval for {call.name} expired"))

    # -- long runs ----------------------------------------------------------------------------------

    @property
    def _model_settings(self) -> ModelSettings | None:
        """The agent's recorded model settings with the run's explicit overrides."""
        return effective_settings(self.spec.model_settings if self.spec else None, self.input.model_settings)

    @property
    def _options(self) -> dict[str, object]:
        """The run's options as the worker validated them (defaults left out)."""
        return self.spec.options if self.spec else {}

    async def _continue_as_new_if_due(self, *, before_wait: bool = False) -> None:
        """Hand over to a new run when the history grows long — or, before a wait for a human, when the
        deployment has a new current build (Worker Versioning): the wait, which can last weeks, is then spent on
        the new build instead of holding the old one. The new run starts on the current build either way."""
        info = workflow.info()
        policy = self.handover_at
        due = (
            info.is_continue_as_new_suggested()
            or info.get_current_history_length() >= policy.max_history_events
            or info.get_current_history_size() >= policy.max_history_bytes
            # Recorded in the task's history event, so replay sees the same answer; always false unversioned.
            or (before_wait and info.is_target_worker_deployment_version_changed())
        )
        if not due:
            return
        # Handlers still running would be cut off by the handover; let them finish writing the book.
        await self._handlers_finished()
        assert self.spec is not None
        # The audit trail travels in the handover, under Temporal's 2 MB cap on the new run's input: rejected
        # entries go cut short and capped, also those a version before the bounds audited whole.
        book = self.book.bounded() if workflow.patched(DECISION_BOUNDS_PATCH) else self.book
        carry = Handover(
            spec=self.spec,
            loop=self.loop.state,
            transcript=self.transcript,
            book=book,
            continued=self.continued + 1,
            live=self.live.handover(LIVE_CARRY_BYTES if self.input.stream else 0),
        )
        # On a versioned worker (duragent/_versioning.py) the new run starts on the deployment's current
        # build, not on this run's (AUTO_UPGRADE for its first task; pinned there after). It replays nothing of this
        # run: the new build needs only to accept this input (AgentInput and Handover: fields added with defaults,
        # none removed or retyped — and a rollback drops fields the older build does not know). The server refuses
        # the option from an unversioned worker, so it is set only on a versioned one.
        build = info.get_current_deployment_version()
        workflow.continue_as_new(
            self.input.model_copy(update={"carry": carry, "history": []}),
            initial_versioning_behavior=(
                workflow.ContinueAsNewVersioningBehavior.AUTO_UPGRADE if build and build.deployment_name else None
            ),
        )

    # -- saga -------------------------------------------------------------------------------------

    async def _compensate(self) -> None:
        plan = compensation_plan(self.run_id, self.loop.state.records, self.loop.own.tools, self.loop.team)
        self.not_compensable = plan.not_compensable
        if not plan.steps:
            self._publish_status("abandoned", f"abandoned ({self._why()}); nothing to undo")
            return
        self.remaining = list(plan.steps)
        while self.remaining:
            step = self.remaining[0]
            self._publish_status(
                "compensating", f"undo {step.call.describe()}" + (f" of {step.run_id}" if step.run_id else "")
            )
            self.live(live.Compensation(tool=step.call.name, status="started", detail=self.label))
            try:
                result = await workflow.execute_activity_method(
                    ToolActivities.compensate,
                    CompensationInput(
                        run_id=step.run_id or self.run_id,
                        agent=step.agent or self.input.agent,
                        step=step,
                        options=step.options if step.agent else self._options,
                    ),
                    start_to_close_timeout=timedelta(
                        seconds=self.input.timeouts.tool_seconds + self.input.timeouts.heartbeat_seconds
                    ),
                    heartbeat_timeout=timedelta(seconds=self.input.timeouts.heartbeat_seconds),
                    retry_policy=compensation_retry(self.saga_policy),
                    summary=self.label,
                )
            except ActivityError as exc:
                self.compensations.append(_record(step, "failed", _cause(exc)))
                self._publish_status("compensation_failed", f"could not undo {step.call.name}")
                self.live(live.Compensation(tool=step.call.name, status="failed", detail=_cause(exc)[:2000]))
                await self._handlers_finished()
                raise ApplicationError(
                    f"compensation of {step.call.name} kept failing ({_cause(exc)}); "
                    f"not undone: {[s.call.name for s in self.remaining]}",
                    self._result(),
                    type="CompensationFailed",
                    non_retryable=True,
                ) from exc
            self.compensations.append(_record(step, "compensated", result.content))
            self.live(live.Compensation(tool=step.call.name, status="compensated"))
            self.remaining.pop(0)
        undone = ", ".join(c.tool for c in self.compensations)
        self._publish_status("compensated", f"abandoned ({self._why()}); undone, newest first: {undone}")

    def _why(self) -> str:
        state = self.loop.state
        stop = state.stop.value if state.stop else "running"
        return f"{stop}: {state.stop_detail}" if state.stop_detail else stop

    # -- reporting --------------------------------------------------------------------------------

    def _publish_status(self, status: RunStatus, label: str, *, charged: bool = False) -> None:
        self.status, self.label = status, label
        self.publish(status, self.input.agent, self.loop.state, self.book, label, charged=charged)

    def _result(self) -> AgentResult:
        state = self.loop.state
        assert state.stop is not None
        return AgentResult(
            run_id=self.run_id,
            agent=self.input.agent,
            status=self.status,
            messages=self.transcript.messages,
            transcript_ref=self.transcript.head,
            continued=self.continued,
            stop=state.stop,
            output=state.output,
            stop_detail=state.stop_detail,
            usage=state.consumed,
            records=state.records,
            handoffs=state.handoffs,
            checks=state.checks,
            compensations=self.compensations,
            not_compensable=self.not_compensable,
            compensations_remaining=self.remaining,
            audit=self.book.audit,
            undo=self._undo(),
        )

    def _undo(self) -> CompensationPlan | None:
        """A delegated run that answered: what undoing it would take, for its parent's saga."""
        state = self.loop.state
        if self.input.delegation is None or state.stop is not Stop.ANSWERED:
            return None
        return undo_plan(
            self.run_id, self.input.agent, self._options, state.records, self.loop.own.tools, self.loop.team
        )


def _origin_refusal(input: AgentInput, info: workflow.Info) -> str | None:
    """Why a run may not take what its input claims (a handover, a place in a delegation tree), by what the
    server reports about how it started; None when it may. A client can start a cron or retrying run whose
    second run has a predecessor: only the workflow's own continue-as-new hands over,
    and the describe activity checks that predecessor with the server."""
    if input.carry is not None and info.cron_schedule:
        return f"`carry` is handed over only by a run continuing as new, never to a cron run ({info.cron_schedule})"
    if input.carry is not None and info.attempt > 1:
        return f"`carry` is handed over only by a run continuing as new, never to a retry (attempt {info.attempt})"
    delegation = input.delegation
    claimed = delegation.path[-1] if delegation is not None and delegation.path else ""
    if delegation is not None and (info.parent is None or info.parent.workflow_id != claimed):
        started_by = f"run {info.parent.workflow_id}" if info.parent else "a client"
        return f"it claims run {claimed!r} delegated to it, but {started_by} started it"
    return None


def _handover_policy(input: AgentInput, spec: AgentSpec) -> ContinueAsNewPolicy:
    """When the run hands over: where its worker's engine options (recorded with the spec) say — or, replaying a
    run started with `continue_as_new` in its input, where that said (its history continued as new there)."""
    legacy = input.legacy_continue_as_new
    if legacy is not None and not workflow.patched(ENGINE_PATCH):
        return legacy
    return spec.engine.continue_as_new if isinstance(spec, DescribedAgent) else ContinueAsNewPolicy()


def _with_mcp_tools_of(spec: AgentSpec, carried: AgentSpec) -> AgentSpec:
    """The worker's spec, with the MCP tools the run listed when it started (checked handover: its record)."""
    listed = {name: tool for name, tool in carried.tools.items() if tool.mcp is not None}
    return spec.model_copy(update={"tools": {**spec.tools, **listed}}) if listed else spec


def _record(step: CompensationStep, status: str, result: str) -> CompensationRecord:
    return CompensationRecord(
        tool=step.call.name, original_key=step.original_key, key=step.key, status=status, result=result
    )


def _failure_type(exc: BaseException) -> str | None:
    """The type of the ApplicationError an activity failed with, if that is how it failed."""
    cause = exc.__cause__
    return cause.type if isinstance(cause, ApplicationError) else None


def _cause(exc: BaseException) -> str:
    while exc.__cause__ is not None:
        exc = exc.__cause__
    return str(exc) or type(exc).__name__
