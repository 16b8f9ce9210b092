"""`ConversationHandle`: one durable conversation, from any process, knowing only its id.

    conv = agents.conversation(agent, "user-42")     # no call to the server yet
    turn = await conv.send("Refund order A-1")        # starts the conversation if it does not exist; the answer
    n = await conv.send("and A-2?", wait=False)       # the turn's number, at once
    page = await conv.history(offset=0, limit=50)
    [waiting] = await conv.pending(); await conv.approve(waiting.call_id, by="maria", ...)
    await conv.close()

`send` is one update-with-start (`WithStartWorkflowOperation`, `USE_EXISTING`): a stateless HTTP handler never
asks whether the conversation exists. The conversation's settings (budget, options...) are those of the send
that started it; later sends' are ignored.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

from pydantic import BaseModel, Field
from temporalio.client import (
    WithStartWorkflowOperation,
    WorkflowExecutionStatus,
    WorkflowFailureError,
    WorkflowHandle,
    WorkflowUpdateFailedError,
    WorkflowUpdateRPCTimeoutOrCancelledError,
)
from temporalio.common import (
    SearchAttributePair,
    TypedSearchAttributes,
    WorkflowIDConflictPolicy,
    WorkflowIDReusePolicy,
)
from temporalio.exceptions import ApplicationError, WorkflowAlreadyStartedError
from temporalio.service import RPCError, RPCStatusCode

from agentic import Message
from agentic.approvals import PendingApproval
from duragent._activities.inputs import AgentResult
from duragent._errors import (
    AgentClientError,
    MessageRefused,
    RunFailed,
    UnknownRun,
    WorkerUnavailable,
    from_rpc,
    run_failed,
)
from duragent._stores.transcripts import EMPTY, Transcripts
from duragent._workflows import search_attributes as sa
from duragent._workflows.conversation import ConversationWorkflow
from duragent._workflows.conversation_inputs import ConversationInput, ConversationView, SendMessage, TurnResult
from duragent._workflows.turns import turn_run_id

if TYPE_CHECKING:
    from temporalio.client import Client


class Agents(Protocol):
    """What a conversation handle needs of `AgentClient` (which makes them)."""

    client: Client
    task_queue: str

    def handle(self, run_id: str) -> Any: ...


# How long a waiter pauses before asking again when the conversation answered "handing over": the new run starts
# with the old one's last workflow task, so asking at once could only reach the old run again.
HANDOVER_PAUSE = 0.1


class HistoryPage(BaseModel):
    """A page of a conversation's transcript (its system message included), oldest first."""

    conversation_id: str
    offset: int
    total: int
    messages: list[Message] = Field(default_factory=list)


class ConversationHandle:
    """One conversation. Cheap to make; every method is one or a few calls to the server."""

    def __init__(self, agents: Agents, conversation_id: str, input: ConversationInput) -> None:
        # No '/' (a URL's path segment) and no '~' (its turns' run ids are `{id}~turn-{n}`: never another's).
        if not conversation_id or "/" in conversation_id or "~" in conversation_id or len(conversation_id) > 200:
            raise ValueError(f"conversation id {conversation_id!r}: 1-200 characters, no '/' or '~'")
        self.agents = agents
        self.conversation_id = conversation_id
        self.input = input
        self.workflow: WorkflowHandle[Any, ConversationView] = agents.client.get_workflow_handle(
            conversation_id, result_type=ConversationView
        )

    # -- messages ---------------------------------------------------------------------------------------

    async def send(
        self, text: str, *, wait: bool = True, expect_turn: int | None = None, model: str | None = None
    ) -> Any:
        """Send one message: the next turn. `wait` (default): its `TurnResult` once the turn ends; else its
        number at once. `model` switches the model for this turn: a name the workers' catalog declares (never an
        endpoint); None, the conversation's. Raises MessageRefused (`.kind`: EmptyMessage, MessageTooLong,
        ConversationClosed, StaleTurn, ConversationBusy, OverBudget, UnknownModel), nothing sent."""
        start = WithStartWorkflowOperation(
            ConversationWorkflow.run,
            self.input,
            id=self.conversation_id,
            task_queue=self.agents.task_queue,
            id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
            # A conversation id is forever, like a run id: its turns' run ids (and their idempotency keys) derive
            # from it, so a closed conversation is never started again under it.
            id_reuse_policy=WorkflowIDReusePolicy.REJECT_DUPLICATE,
            static_summary=f"conversation with {self.input.agent}",
            search_attributes=_at_start(self.input) if self.input.search_attributes else None,
        )
        try:
            turn: int = await self.agents.client.execute_update_with_start_workflow(
                ConversationWorkflow.send,
                # Its own id: a retry of this send (the SDK retries one the server aborted at a handover) gets
                # the turn the first attempt got, never a second one.
                SendMessage(text=text, expect_turn=expect_turn, message_id=uuid.uuid4().hex, model=model),
                start_workflow_operation=start,
            )
        except WorkflowUpdateFailedError as exc:
            raise _refused(exc) from None
        except WorkflowAlreadyStartedError:
            raise _closed_refusal(self.conversation_id) from None
        except RPCError as exc:
            if exc.status == RPCStatusCode.ALREADY_EXISTS:  # closed: its id is never started again
                raise _closed_refusal(self.conversation_id) from None
            raise from_rpc(exc, f"cannot send to conversation {self.conversation_id}") from exc
        return await self.wait(turn) if wait else turn

    async def wait(self, turn: int) -> TurnResult:
        """The answer of `turn`, once it has one (asking again while the conversation hands over)."""
        while True:
            try:
                # (The SDK's stubs take an async handler's coroutine for its result type.)
                result: TurnResult | None = await self.workflow.execute_update(
                    ConversationWorkflow.wait_turn,  # type: ignore[arg-type]
                    turn,
                )
            except WorkflowUpdateFailedError as exc:
                cause = exc.cause
                if isinstance(cause, ApplicationError) and cause.type == "TurnForgotten":
                    return await self.turn_from_its_run(turn)
                if isinstance(cause, ApplicationError) and cause.type == "UnknownTurn":
                    raise MessageRefused("UnknownTurn", cause.message) from None
                if await self._closed():
                    return await self._ended(turn)
                raise AgentClientError(f"conversation {self.conversation_id}: {cause or exc}") from exc
            except WorkflowUpdateRPCTimeoutOrCancelledError:
                continue  # a long wait (an approval): the update is still there; ask again
            except RPCError as exc:
                if exc.status == RPCStatusCode.NOT_FOUND and await self._closed():
                    return await self._ended(turn)
                raise from_rpc(exc, f"cannot wait for turn {turn} of conversation {self.conversation_id}") from exc
            if result is not None:
                return result
            await asyncio.sleep(HANDOVER_PAUSE)  # handing over: the next update reaches the new run

    async def _ended(self, turn: int) -> TurnResult:
        """A turn asked for once the conversation has ended: read from its run — or, when the conversation
        failed (an agent the workers do not serve, say), that failure."""
        try:
            await self.workflow.result()
        except WorkflowFailureError as exc:
            raise run_failed(self.conversation_id, exc) from None
        return await self.turn_from_its_run(turn)

    async def turn_from_its_run(self, turn: int) -> TurnResult:
        """A turn's answer read from its own run — after the server confirms this conversation started that run
        (a stranger may have started a run under that id: it is never taken as the turn's answer)."""
        run_id = turn_run_id(self.conversation_id, turn)
        handle = self.agents.client.get_workflow_handle(run_id, result_type=AgentResult)
        try:
            description = await handle.describe()
        except RPCError as exc:
            raise UnknownRun(f"turn {turn} of conversation {self.conversation_id} has no run ({exc.message})") from None
        if description.parent_id != self.conversation_id:
            raise RunFailed(f"run {run_id} was not started by conversation {self.conversation_id}", "TurnIdTaken")
        try:
            result = await handle.result()
        except WorkflowFailureError as exc:
            raise run_failed(run_id, exc) from None
        return TurnResult(
            conversation_id=self.conversation_id,
            turn=turn,
            status=result.status if result.status in ("completed", "abandoned", "compensated") else "completed",  # type: ignore[arg-type]
            run_id=run_id,
            stop=result.stop,
            output=result.output,
            stop_detail=result.stop_detail,
            usage=result.usage,
        )

    # -- looking ----------------------------------------------------------------------------------------

    async def describe(self) -> ConversationView:
        """Status, turns, consumption, the transcript's head and the running turn's pending approvals."""
        try:
            description = await self.workflow.describe()
        except RPCError as exc:
            if exc.status == RPCStatusCode.NOT_FOUND:
                raise UnknownRun(f"no conversation {self.conversation_id!r}") from None
            raise from_rpc(exc, f"cannot look up conversation {self.conversation_id}") from exc
        if description.status == WorkflowExecutionStatus.RUNNING:
            try:
                view = await self.workflow.query(ConversationWorkflow.view)
            except RPCError as exc:
                raise WorkerUnavailable(f"no worker answered conversation {self.conversation_id}'s query") from exc
        elif description.status == WorkflowExecutionStatus.COMPLETED:
            view = await self.workflow.result()
        else:
            ended = description.status.name.lower() if description.status else "closed"
            raise RunFailed(f"conversation {self.conversation_id} ended {ended}")
        if view.active_run_id:
            view.pending_approvals = await self.agents.handle(view.active_run_id).pending()
        return view

    async def history(self, offset: int = 0, limit: int = 50, *, transcripts: Transcripts | None = None) -> HistoryPage:
        """A page of the transcript, read from the transcript store (`transcripts`: default, the one the workers
        configured like this process use) at the head the conversation reports."""
        view = await self.describe()
        store = transcripts or _configured_transcripts(self.agents)
        stored = store.load(view.transcript.head) if view.transcript.head != EMPTY else []
        messages = [*stored, *store.expanded(view.transcript.unsaved)]
        return HistoryPage(
            conversation_id=self.conversation_id,
            offset=offset,
            total=len(messages),
            messages=messages[offset : offset + limit],
        )

    async def pending(self) -> list[PendingApproval]:
        """What the running turn waits for (and the runs it delegated to)."""
        return (await self.describe()).pending_approvals

    async def wait_for_approval(self, timeout: float = 60.0, interval: float = 0.2) -> list[PendingApproval]:
        """What the running turn waits for, once it waits for something (polling). TimeoutError after
        `timeout` seconds."""
        deadline = asyncio.get_running_loop().time() + timeout
        while not (waiting := await self.pending()):
            if asyncio.get_running_loop().time() > deadline:
                raise TimeoutError(f"conversation {self.conversation_id} asked for no approval within {timeout:g} s")
            await asyncio.sleep(interval)
        return waiting

    # -- acting -----------------------------------------------------------------------------------------

    async def decide(self, approve: bool, call_id: str | None = None, **kwargs: Any) -> Any:
        """Approve or deny a call the running turn waits for (`RunHandle.decide`'s rules and arguments)."""
        view = await self.describe()
        if view.active_run_id is None:
            from duragent._errors import NoPendingApproval

            raise NoPendingApproval(f"conversation {self.conversation_id} has no turn running")
        return await self.agents.handle(view.active_run_id).decide(approve, call_id, **kwargs)

    async def approve(self, call_id: str | None = None, **kwargs: Any) -> Any:
        return await self.decide(True, call_id, **kwargs)

    async def deny(self, call_id: str | None = None, **kwargs: Any) -> Any:
        return await self.decide(False, call_id, **kwargs)

    async def close(self, reason: str = "closed by the caller") -> ConversationView:
        """No more messages; those already queued are still answered, then the conversation ends. Closing one
        that has ended already changes nothing and says how it is."""
        try:
            return await self.workflow.execute_update(ConversationWorkflow.close, reason)
        except (WorkflowUpdateFailedError, RPCError) as exc:
            if await self._closed():
                return await self.describe()
            if isinstance(exc, RPCError):
                raise from_rpc(exc, f"cannot close conversation {self.conversation_id}") from exc
            raise AgentClientError(f"cannot close conversation {self.conversation_id}: {exc.cause or exc}") from None

    async def _closed(self) -> bool:
        try:
            return (await self.workflow.describe()).status != WorkflowExecutionStatus.RUNNING
        except RPCError:
            return False


def _refused(exc: WorkflowUpdateFailedError) -> AgentClientError:
    cause = exc.cause
    if isinstance(cause, ApplicationError) and cause.type:
        return MessageRefused(cause.type, cause.message)
    if isinstance(cause, WorkflowFailureError | ApplicationError):
        return RunFailed(f"the conversation failed: {cause}")
    return AgentClientError(str(cause or exc))


def _closed_refusal(conversation_id: str) -> MessageRefused:
    return MessageRefused("ConversationClosed", f"conversation {conversation_id} is closed; start a new one")


def _at_start(input: ConversationInput) -> TypedSearchAttributes:
    values: Sequence[tuple[Any, object]] = (
        (sa.AGENT_NAME, input.agent),
        (sa.AGENT_STATUS, "open"),
        (sa.AGENT_STEP, 0),
    )
    return TypedSearchAttributes([SearchAttributePair(key, value) for key, value in values])


def _configured_transcripts(agents: Agents) -> Transcripts:
    from duragent._config.settings import Settings
    from duragent._plugin import plugin_of
    from duragent._stores.configured import transcripts_for

    plugin = plugin_of(agents.client)
    return transcripts_for(plugin.settings if plugin is not None else Settings.from_env())
