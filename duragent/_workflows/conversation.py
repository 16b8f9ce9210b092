"""`ConversationWorkflow`: one durable conversation per user thread — turns of the ONE loop, not a second loop.

Each message is a `send` update (validated: `agentic.conversation.refusal`), queued in the order the server
accepted it, and answered by a turn: a child `AgentWorkflow` with the id `{conversation_id}~turn-{n}` that starts
from the conversation's transcript BY REFERENCE (`AgentInput.history_ref`) and adds the message. So a turn has
everything a run has — every model and tool call an activity, approvals with durable deadlines, saga,
delegation, memory, MCP, sealing, idempotency keys unique across the conversation (the turn's run id is in
them), continue-as-new mid-turn — and the conversation's own history grows by a bounded number of events per
turn, whatever the turn does.

`send` returns the turn's number at once (a short handler never holds up a continue-as-new); the answer is
fetched with `wait_turn`, which returns it when the turn ends, or None when the conversation is handing over
(the caller asks again and the new run answers). Continue-as-new happens between turns or while a turn runs:
the running turn's run is not a child that closes with this run (`ParentClosePolicy.ABANDON`); the new run
re-attaches to it through the `attach_turn` activity, which trusts only a run the server records as this
conversation's child.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.common import WorkflowIDReusePolicy
from temporalio.exceptions import ActivityError, ApplicationError, ChildWorkflowError, WorkflowAlreadyStartedError

with workflow.unsafe.imports_passed_through():
    from pydantic import ValidationError

    from agentic import Budget, Usage
    from agentic.conversation import over_budget, refusal, turn_budget
    from agentic.models.catalog import undeclared
    from duragent._activities.describe import DescribeActivities
    from duragent._activities.inputs import AgentResult, ContinueAsNewPolicy, DescribedAgent, DescribeInput
    from duragent._activities.turns import AttachTurnInput, TurnActivities
    from duragent._stores.transcripts import EMPTY
    from duragent._workflows import search_attributes as sa
    from duragent._workflows.conversation_inputs import (
        ActiveTurn,
        ConversationCarry,
        ConversationInput,
        ConversationStatus,
        ConversationView,
        QueuedMessage,
        SendMessage,
        TurnResult,
    )
    from duragent._workflows.inputs import AgentInput
    from duragent._workflows.names import (
        CLOSE_UPDATE,
        CONVERSATION_QUERY,
        CONVERSATION_WORKFLOW_TYPE,
        SEND_UPDATE,
        WAIT_TURN_UPDATE,
        WORKFLOW_TYPE,
    )
    from duragent._workflows.policies import DESCRIBE_RETRY, TURN_ATTACH_RETRY
    from duragent._workflows.turns import turn_run_id

# Message ids remembered (and carried across continue-as-new) to answer a message sent again with the turn it got:
# a send that reaches a run as it hands over is aborted by the server and retried by the client's RPC retries, on
# the new run, with the same id. Far more than the sends that can be in flight at once (the server allows 10 per
# workflow).
ACCEPTED_KEPT = 256

# A handover at a turn's end costs nothing; one while a turn runs costs an activity that waits for the turn (days,
# for an approval) in the new run. During a turn the history grows only by the messages and waits that arrive
# (the turn's own steps are in its run's history), so the conversation waits for the turn's end unless its history
# passes the marks by half as much again — or Temporal suggests it.
MID_TURN = 1.5

# Answers kept for `wait_turn` (and carried across continue-as-new): a caller that asks later for an older turn
# reads it from the turn's own run (the client does, after checking with the server that this conversation
# started it). Few, so the handover stays far under Temporal's 2 MB input cap whatever the answers' size.
RECENT_KEPT = 8


TurnHandle = workflow.ChildWorkflowHandle[Any, AgentResult]


@workflow.defn(name=CONVERSATION_WORKFLOW_TYPE, failure_exception_types=[ValidationError], sandboxed=False)
class ConversationWorkflow:
    @workflow.init
    def __init__(self, input: ConversationInput) -> None:
        self.input = input
        carry = input.carry or ConversationCarry()
        if input.carry is not None and _carry_refusal(workflow.info()) is not None:
            carry = ConversationCarry()  # refused in `run`; the handlers meanwhile see an empty conversation
        self.turns = carry.turns
        self.answered = carry.answered
        self.transcript = carry.transcript
        self.consumed = carry.consumed
        self.queue = list(carry.queue)
        self.active = carry.active
        self.recent = {r.turn: r for r in carry.recent}
        self.accepted = dict(carry.accepted)  # message id -> its turn: a message sent again is not queued again
        self.closing = carry.closing
        self.last_message_at = carry.last_message_at
        self.continued = carry.continued
        self.spec: DescribedAgent | None = None
        self.handing_over = False
        self.worked = False  # a turn ended in this run: only then may it hand over mid-turn (no handover loop)
        self.status: ConversationStatus = "closing" if self.closing else "open"
        self.published: dict[str, object] = {}

    @property
    def conversation_id(self) -> str:
        return workflow.info().workflow_id

    @workflow.run
    async def run(self, input: ConversationInput) -> ConversationView:
        if input.carry is not None and (why := _carry_refusal(workflow.info())) is not None:
            self.closing = why
            raise ApplicationError(
                f"conversation {self.conversation_id} cannot start: {why}", type="RunRejected", non_retryable=True
            )
        await self._describe()
        if self.last_message_at is None:
            self.last_message_at = workflow.now()
        self._publish()
        if self.active is not None:  # the turn that was running when the run before this one handed over
            await self._await_turn(self.active, None)
        while True:
            if self._handover_due():  # between turns, queued messages or not: they travel in the handover
                await self._hand_over()
            if self.queue:
                await self._run_turn(self.queue.pop(0))
                continue
            if self.closing is not None:
                break
            idle = timedelta(days=input.idle_days) - (workflow.now() - self.last_message_at)
            try:
                await workflow.wait_condition(
                    lambda: bool(self.queue) or self.closing is not None or self._handover_due(),
                    timeout=max(idle, timedelta(seconds=1)),
                    timeout_summary=f"close after {input.idle_days:g} days without a message",
                )
            except TimeoutError:
                self.closing = f"no message for {input.idle_days:g} days"
        self.status = "closed"
        self._publish()
        await workflow.wait_condition(workflow.all_handlers_finished)
        return self.view()

    async def _describe(self) -> None:
        """The agent's spec, as the worker knows it (recorded): its budget is each turn's default, its engine
        options say when to hand over. An agent the workers do not serve fails the conversation, saying so."""
        try:
            self.spec = await workflow.execute_local_activity_method(
                DescribeActivities.describe_agent,
                DescribeInput(
                    agent=self.input.agent, model=self.input.model, options=self.input.options, with_models=True
                ),
                start_to_close_timeout=timedelta(seconds=30),
                retry_policy=DESCRIBE_RETRY,
                summary=f"describe agent {self.input.agent}",
            )
        except ActivityError as exc:
            self.closing = f"cannot start: {_cause(exc)}"
            raise ApplicationError(
                f"conversation {self.conversation_id} cannot start: {_cause(exc)}",
                type="RunRejected",
                non_retryable=True,
            ) from exc

    # -- messages ---------------------------------------------------------------------------------------

    @workflow.update(name=SEND_UPDATE, description="A user message: queued as the next turn; returns its number.")
    def send(self, message: SendMessage) -> int:
        if message.message_id is not None and message.message_id in self.accepted:
            return self.accepted[message.message_id]
        self.turns += 1
        now = workflow.now()
        self.queue.append(QueuedMessage(turn=self.turns, text=message.text, sent_at=now, model=message.model))
        if message.message_id is not None:
            self.accepted[message.message_id] = self.turns
            for old in list(self.accepted)[:-ACCEPTED_KEPT]:
                del self.accepted[old]
        self.last_message_at = now
        self._publish()
        return self.turns

    @send.validator
    def _validate_send(self, message: SendMessage) -> None:
        if message.message_id is not None and message.message_id in self.accepted:
            return  # accepted before (a retry that crossed a handover): answered with the turn it got
        why = refusal(
            message.text,
            limits=self.input.limits,
            closed=self.closing,
            turns=self.turns,
            queued=len(self.queue),
            expect_turn=message.expect_turn,
            over_budget=over_budget(self.input.budget, self.consumed),
        )
        if why is not None:
            # Named, non-retryable, with the reason alone as its details: the client raises MessageRefused.
            raise ApplicationError(why.reason, why.kind, type=why.kind, non_retryable=True)
        if message.model is not None and (unknown := self._undeclared(message.model)) is not None:
            raise ApplicationError(unknown, "UnknownModel", type="UnknownModel", non_retryable=True)

    def _undeclared(self, model: str) -> str | None:
        """Why the worker cannot answer with `model` (None: it can, or it has not said yet). The models it declares
        come with its spec, at the start of each run: a message that arrives with the conversation's start is
        accepted before that, and its turn is refused instead, with the same reason (`_run_turn`)."""
        if self.spec is None or self.spec.models is None:
            return None
        return undeclared(model, self.spec.models.names, self.spec.models.prefixes)

    @workflow.update(
        name=WAIT_TURN_UPDATE, description="A turn's answer once it has one; None while the conversation hands over."
    )
    async def wait_turn(self, turn: int) -> TurnResult | None:
        await workflow.wait_condition(lambda: turn in self.recent or self.handing_over)
        return self.recent.get(turn)

    @wait_turn.validator
    def _validate_wait(self, turn: int) -> None:
        if turn < 1 or turn > self.turns:
            raise ApplicationError(
                f"conversation {self.conversation_id} has no turn {turn} (it has {self.turns})",
                type="UnknownTurn",
                non_retryable=True,
            )
        if turn <= self.answered and turn not in self.recent:
            raise ApplicationError(
                f"turn {turn} ended long ago; its run {turn_run_id(self.conversation_id, turn)} holds its answer",
                turn_run_id(self.conversation_id, turn),
                type="TurnForgotten",
                non_retryable=True,
            )

    @workflow.update(name=CLOSE_UPDATE, description="No more messages; the queued ones are still answered.")
    def close(self, reason: str) -> ConversationView:
        if self.closing is None:
            self.closing = reason or "closed"
            self.status = "closing"
            self._publish()
        return self.view()

    @workflow.query(name=CONVERSATION_QUERY, description="Status, turns, consumption, the transcript's head.")
    def view(self) -> ConversationView:
        return ConversationView(
            conversation_id=self.conversation_id,
            agent=self.input.agent,
            status=self.status,
            turns=self.turns,
            answered=self.answered,
            queued=[m.turn for m in self.queue],
            active_turn=self.active.turn if self.active else None,
            active_run_id=self.active.run_id if self.active else None,
            consumed=self.consumed,
            budget=self.input.budget,
            transcript=self.transcript,
            last_message_at=self.last_message_at,
            closed_reason=self.closing,
            continued=self.continued,
        )

    # -- turns ------------------------------------------------------------------------------------------

    async def _run_turn(self, message: QueuedMessage) -> None:
        assert self.spec is not None
        budget = turn_budget(self.input.budget, self.consumed, self.input.turn_budget or self.spec.budget)
        why = f"the conversation's budget is spent: {budget}" if isinstance(budget, str) else None
        if why is None and message.model is not None:
            why = self._undeclared(message.model)
        if why is not None or isinstance(budget, str):  # (the second only tells the type checker)
            self._ended(
                TurnResult(
                    conversation_id=self.conversation_id,
                    turn=message.turn,
                    status="refused",
                    stop_detail=why,
                    consumed=self.consumed,
                )
            )
            return
        run_id = turn_run_id(self.conversation_id, message.turn)
        active = ActiveTurn(turn=message.turn, text=message.text, run_id=run_id, started_at=workflow.now())
        self.active = active
        self._publish()
        turn = self._turn_input(message.text, budget, message.model)
        try:
            handle = await workflow.start_child_workflow(
                WORKFLOW_TYPE,
                turn,
                id=run_id,
                result_type=AgentResult,
                id_reuse_policy=WorkflowIDReusePolicy.REJECT_DUPLICATE,
                # The turn's run outlives a handover of this conversation (continue-as-new closes this run): the
                # new run re-attaches to it. Cancelling a conversation does not cancel its turn either (close it).
                parent_close_policy=workflow.ParentClosePolicy.ABANDON,
                static_summary=_shortened(f"{self.input.agent}: {message.text}"),
                static_details=f"turn {message.turn} of conversation **{self.conversation_id}**",
                search_attributes=sa.at_start(self.input.agent, Usage()) if self.input.search_attributes else None,
            )
        except WorkflowAlreadyStartedError:
            handle = None  # a replayed start, or an id someone else took: only this conversation's child is adopted
        await self._await_turn(active, handle)

    def _turn_input(self, text: str, budget: Budget, model: str | None = None) -> AgentInput:
        has_transcript = self.transcript.head != EMPTY or bool(self.transcript.unsaved)
        return AgentInput(
            agent=self.input.agent,
            task=text,
            budget=budget,
            history_ref=self.transcript if has_transcript else None,
            options=self.input.options,
            model=model or self.input.model,  # this message's model, else the conversation's
            timeouts=self.input.timeouts,
            search_attributes=self.input.search_attributes,
            stream=self.input.stream,
        )

    async def _await_turn(self, active: ActiveTurn, handle: TurnHandle | None) -> None:
        """Wait for the turn's run to end — handing over meanwhile when due (the run keeps running; the next run
        of this conversation re-attaches to it) — and take its answer."""
        waiting = asyncio.ensure_future(handle if handle is not None else self._attach(active.run_id))
        await workflow.wait_condition(lambda: waiting.done() or self._handover_due(MID_TURN))
        if not waiting.done():
            # Not cancelled: cancelling the wait would cancel the turn. This run simply ends (the turn's run goes on,
            # `ABANDON`), and the next run waits for it.
            await self._hand_over()
        try:
            result: AgentResult = waiting.result()
        except (ChildWorkflowError, ActivityError) as exc:
            self._ended(
                TurnResult(
                    conversation_id=self.conversation_id,
                    turn=active.turn,
                    status="failed",
                    run_id=active.run_id,
                    error=_cause(exc),
                    consumed=self.consumed,
                )
            )
            return
        # The conversation continues from where the turn's transcript ended (its stored head, unsaved tail).
        self.transcript = self.transcript.model_copy(
            update={"head": result.transcript_ref or EMPTY, "unsaved": list(result.messages)}
        )
        self.consumed = self.consumed.plus(result.usage)
        self._ended(
            TurnResult(
                conversation_id=self.conversation_id,
                turn=active.turn,
                status=result.status if result.status in _TURN_STATUSES else "completed",  # type: ignore[arg-type]
                run_id=active.run_id,
                stop=result.stop,
                output=result.output,
                stop_detail=result.stop_detail,
                usage=result.usage,
                consumed=self.consumed,
            )
        )

    async def _attach(self, run_id: str) -> AgentResult:
        return await workflow.execute_activity_method(
            TurnActivities.attach_turn,
            AttachTurnInput(run_id=run_id),
            start_to_close_timeout=timedelta(days=3650),  # a turn may wait days for an approval
            heartbeat_timeout=timedelta(seconds=self.input.timeouts.heartbeat_seconds),
            retry_policy=TURN_ATTACH_RETRY,
            summary=f"attach to {run_id}",
        )

    def _ended(self, result: TurnResult) -> None:
        self.active = None
        self.answered = max(self.answered, result.turn)
        self.recent[result.turn] = result
        for old in sorted(self.recent)[:-RECENT_KEPT]:
            del self.recent[old]
        self.worked = True
        self._publish()

    # -- continue-as-new ----------------------------------------------------------------------------------

    @property
    def _policy(self) -> ContinueAsNewPolicy:
        return self.spec.engine.continue_as_new if self.spec is not None else ContinueAsNewPolicy()

    def _handover_due(self, margin: float = 1.0) -> bool:
        """Whether to hand over now: Temporal suggests it, or the history is past `margin` times the worker's
        marks (`EngineOptions.continue_as_new`)."""
        if not self.worked:  # a run hands over only after it has done something: never in a loop
            return False
        info = workflow.info()
        policy = self._policy
        return (
            info.is_continue_as_new_suggested()
            or info.get_current_history_length() >= policy.max_history_events * margin
            or info.get_current_history_size() >= policy.max_history_bytes * margin
        )

    async def _hand_over(self) -> None:
        """Continue as new, carrying everything: the updates waiting for an answer return None first (their
        callers ask again, and the new run answers), and messages accepted meanwhile travel in the queue."""
        self.handing_over = True
        await workflow.wait_condition(workflow.all_handlers_finished)
        carry = ConversationCarry(
            turns=self.turns,
            answered=self.answered,
            transcript=self.transcript,
            consumed=self.consumed,
            queue=self.queue,
            active=self.active,
            recent=[self.recent[turn] for turn in sorted(self.recent)],
            accepted=self.accepted,
            closing=self.closing,
            last_message_at=self.last_message_at,
            continued=self.continued + 1,
        )
        workflow.continue_as_new(self.input.model_copy(update={"carry": carry}))

    # -- visibility ---------------------------------------------------------------------------------------

    def _publish(self) -> None:
        """Search attributes (agent, status, turns: the Web UI lists conversations by them) when they change."""
        wanted: dict[str, object] = {"status": self.status, "turns": self.turns}
        if wanted == self.published:
            return
        self.published = wanted
        workflow.set_current_details(
            f"**{self.status}** — {self.turns} turns, {self.answered} answered; "
            f"tokens {self.consumed.input_tokens}+{self.consumed.output_tokens}, cost ${self.consumed.cost:.6f}"
        )
        if not self.input.search_attributes:
            return
        current = workflow.info().typed_search_attributes
        updates = [
            key.value_set(value)  # type: ignore[attr-defined, arg-type]
            for key, value in (
                (sa.AGENT_NAME, self.input.agent),
                (sa.AGENT_STATUS, self.status),
                (sa.AGENT_STEP, self.turns),
            )
            if current.get(key) != value  # type: ignore[call-overload]
        ]
        if updates:
            workflow.upsert_search_attributes(updates)


def _carry_refusal(info: workflow.Info) -> str | None:
    """Why `carry` (trusted whole: it names the transcript every later turn reads) may not be taken: only the
    conversation's own continue-as-new hands it over, never a client's start, a cron run or a retry."""
    if info.continued_run_id is None:
        return "`carry` is set only by a conversation continuing as new"
    if info.cron_schedule or info.attempt > 1:
        return "`carry` is handed over only by a conversation continuing as new, never to a cron run or a retry"
    return None


_TURN_STATUSES = {"completed", "abandoned", "compensated", "compensation_failed"}


def _cause(exc: BaseException) -> str:
    while exc.__cause__ is not None:
        exc = exc.__cause__
    return str(exc) or type(exc).__name__


def _shortened(text: str, limit: int = 160) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
