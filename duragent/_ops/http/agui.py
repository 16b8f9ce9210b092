"""AG-UI (the Agent User Interaction protocol, 1.0): any AG-UI client drives a durable conversation.

    POST /agui/{agent}   RunAgentInput -> text/event-stream of AG-UI events                      approver

The thread is the conversation (`threadId` = conversation id). An AG-UI run is the client's view of one turn:
the user's last message is sent (`ConversationHandle.send`), then the turn's live events (its run's Workflow
Stream, agentic/live.py) become RUN_STARTED, STATE_SNAPSHOT, STEP_*, TEXT_MESSAGE_*, TOOL_CALL_* as they
happen, and RUN_FINISHED with the turn's answer. A gated tool ends the AG-UI run with an `interrupt` outcome
(id = the call, reason `tool_approval`, its arguments and their hash); the next run's `resume` entry is the
approver's decision — `POST /runs/{turn}/approvals/{call}` under the caller's token identity, with its checks and
its audit entry — and the turn's events go on from there. An `approver` token may send and decide; a `viewer`'s
POST is refused (403) like every change. The turn is durable whoever watches: a client that goes away, or a
worker that dies mid-stream, changes nothing of it.

A model call retried mid-stream (its worker died) says so on the live stream; here that becomes a
MESSAGES_SNAPSHOT without the partial message, then the retry's text as a new message: the client's view ends
with the answer once. The event types and their encoding are `ag-ui-protocol`'s.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator
from typing import Any

from ag_ui.core import (
    AssistantMessage,
    FunctionCall,
    Interrupt,
    Message,
    MessagesSnapshotEvent,
    ResumeEntry,
    RunAgentInput,
    RunErrorEvent,
    RunFinishedEvent,
    RunFinishedInterruptOutcome,
    RunFinishedSuccessOutcome,
    RunStartedEvent,
    StateSnapshotEvent,
    StepFinishedEvent,
    StepStartedEvent,
    TextMessageContentEvent,
    TextMessageEndEvent,
    TextMessageStartEvent,
    ToolCall,
    ToolCallArgsEvent,
    ToolCallEndEvent,
    ToolCallResultEvent,
    ToolCallStartEvent,
    ToolMessage,
)
from ag_ui.core.events import BaseEvent
from ag_ui.encoder import EventEncoder
from fastapi import Depends, FastAPI
from pydantic import ValidationError
from starlette.requests import Request
from starlette.responses import Response

from agentic import live
from duragent._conversation_live import Position, conversation_events
from duragent._errors import MessageRefused
from duragent._ops.http.auth import HttpAuth, Principal
from duragent._ops.http.conversations import Conversations
from duragent._ops.http.engine import Engine
from duragent._ops.http.errors import ApiError, InvalidRequest
from duragent._ops.http.limits import field_errors, require_json
from duragent._ops.http.streams import SlotStream, StreamSlots
from duragent._ops.http.views import DecisionRequest
from duragent._workflows.turns import turn_run_id

TOOL_APPROVAL = "tool_approval"
# What an interrupt's answer is: `{"approved": bool, "argumentsHash": the hash shown, "reason": why}`.
DECISION_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "approved": {"type": "boolean"},
        "argumentsHash": {"type": "string", "description": "The argumentsHash of the interrupt: what was reviewed."},
        "reason": {"type": "string"},
    },
    "required": ["approved"],
}


def add_agui(app: FastAPI, engine: Engine, conversations: Conversations, auth: HttpAuth, slots: StreamSlots) -> None:
    approver = Depends(auth.require("approver"))
    json_only = Depends(require_json)

    @app.post("/agui/{agent}", summary="An AG-UI run: one turn of the conversation `threadId` (text/event-stream)")
    async def agui(agent: str, request: Request, who: Principal = approver, _: None = json_only) -> Response:
        try:
            input = RunAgentInput.model_validate_json(await request.body())
        except ValidationError as exc:
            raise InvalidRequest(field_errors(list(exc.errors()))["error"]) from None
        served = conversations.served.get(agent)
        if served is None:
            raise InvalidRequest(f"unknown agent {agent!r}; served: {', '.join(sorted(conversations.served))}", "agent")
        try:
            conv = conversations.agents.conversation(served, input.thread_id)
        except ValueError as exc:
            raise InvalidRequest(str(exc), "threadId") from None
        give_back = slots.take(who)  # a stream like any other: the caller's share (duragent/_ops/http/streams.py)
        run = AguiRun(input, conv, engine, who)
        return SlotStream(
            run.events(),
            give_back,
            media_type=EventEncoder().get_content_type(),
            headers={"cache-control": "no-cache", "x-accel-buffering": "no"},
        )


class AguiRun:
    """One AG-UI run: what it sends in, and its turn's live events translated as they come."""

    def __init__(self, input: RunAgentInput, conv: Any, engine: Engine, who: Principal) -> None:
        self.input, self.conv, self.engine, self.who = input, conv, engine, who
        self.encoder = EventEncoder()
        self.messages: list[Message] = list(input.messages)  # the client's view, as this run leaves it
        self.open: dict[int, str] = {}  # model step -> the id of its text message being written
        self.parents: dict[int, str] = {}  # model step -> the assistant message its tool calls belong to
        self.text: dict[int, str] = {}
        self.calls: set[str] = set()  # tool calls started on the client
        self.step: str | None = None  # the AG-UI step open: a client checks each one finished is the one started
        self.state: dict[str, Any] = {"conversation": input.thread_id, "status": "running"}

    async def events(self) -> AsyncIterator[str]:
        yield self._encode(RunStartedEvent(thread_id=self.input.thread_id, run_id=self.input.run_id))
        try:
            if self.input.resume is not None:
                turn, after_call = await self._resume(self.input.resume)
            else:
                turn, after_call = await self._send(), None
            self.state["turn"] = turn
            yield self._encode(StateSnapshotEvent(snapshot=dict(self.state)))
            async for event in self._turn(turn, after_call):
                yield event
        except (ApiError, MessageRefused) as exc:
            yield self._encode(RunErrorEvent(message=str(exc), code=type(exc).__name__))
        except Exception as exc:  # the stream ends with a reason rather than a cut connection
            yield self._encode(RunErrorEvent(message=f"{type(exc).__name__}: {exc}", code="InternalError"))

    async def _send(self) -> int:
        user = next((m for m in reversed(self.input.messages) if m.role == "user"), None)
        text = user.content if user is not None and isinstance(user.content, str) else None
        if not text:
            raise InvalidRequest("no user message to send: the last user message of `messages` is what is sent")
        return int(await self.conv.send(text, wait=False))

    async def _resume(self, entries: list[ResumeEntry]) -> tuple[int, str]:
        """Each answer decided as the caller (the approver the server authenticated), through the runs API's
        decision path: its checks, its audit. The turn goes on after the (last) interrupt answered."""
        if not entries:
            raise InvalidRequest("`resume` answers no interrupt: send the interrupts' answers, or a message", "resume")
        turn, call = 0, ""
        for entry in entries:
            run_id, _, call = entry.interrupt_id.rpartition("/")
            prefix = f"{self.input.thread_id}~turn-"
            if not run_id.startswith(prefix) or not run_id.removeprefix(prefix).isdigit():
                raise InvalidRequest(f"interrupt {entry.interrupt_id!r} is not one of this thread's", "resume")
            turn = int(run_id.removeprefix(prefix))
            if turn_run_id(self.input.thread_id, turn) != run_id:
                raise InvalidRequest(f"interrupt {entry.interrupt_id!r} is not one of this thread's", "resume")
            payload = entry.payload if isinstance(entry.payload, dict) else {}
            approve = entry.status == "resolved" and payload.get("approved") is True
            reason = payload.get("reason") if isinstance(payload.get("reason"), str) else ""
            if entry.status == "cancelled":
                reason = reason or "cancelled by the AG-UI client"
            hash = payload.get("argumentsHash")
            if approve and not isinstance(hash, str):
                raise InvalidRequest("to approve, resume with payload.argumentsHash: the hash of the arguments shown")
            try:
                decision = DecisionRequest(approve=approve, reason=reason[:2000], arguments_hash=hash)
            except ValidationError as exc:
                raise InvalidRequest(field_errors(list(exc.errors()))["error"], "resume") from None
            await self.engine.decide(run_id, call, decision, self.who)
        return turn, call

    async def _turn(self, turn: int, after_call: str | None) -> AsyncIterator[str]:
        """The turn's events from its start (or, resuming, from the approval that was answered) to its end or
        its next approval."""
        skipping = after_call is not None
        events = conversation_events(self.conv, Position(turn=turn, started=True), until_closed=False)
        try:
            async for _, event in events:
                if skipping:  # shown by the run before this one; this run starts after the answered approval
                    skipping = not (isinstance(event, live.ApprovalRequested) and event.call_id == after_call)
                    if isinstance(event, live.StepFinished):
                        self._forget(event.step)
                    continue
                for translated in self._translate(turn, event):
                    yield self._encode(translated)
                if isinstance(event, live.ApprovalRequested | live.TurnFinished):
                    return
        finally:
            await events.aclose()

    def _translate(self, turn: int, event: live.LiveEvent) -> list[BaseEvent]:
        run_id = turn_run_id(self.input.thread_id, turn)
        out: list[BaseEvent] = []
        if isinstance(event, live.StepStarted):
            out += self._step_ended()
            self.step = f"{event.kind} {event.step}" + (f" {event.call_id}" if event.call_id else "")
            out.append(StepStartedEvent(step_name=self.step))
        elif isinstance(event, live.StepRestarted):
            out += self._restarted(event.step)
        elif isinstance(event, live.TextDelta):
            out += self._text(run_id, event.step, event.text)
        elif isinstance(event, live.ToolCallStarted):
            out += self._call_started(run_id, event.step, event.call_id, event.name)
        elif isinstance(event, live.ToolCallArguments):
            out.append(ToolCallArgsEvent(tool_call_id=f"{run_id}/{event.call_id}", delta=event.delta))
            self._add_arguments(f"{run_id}/{event.call_id}", event.delta)
        elif isinstance(event, live.StepFinished):
            out += self._step_finished(run_id, event)
        elif isinstance(event, live.ToolCallFinished):
            message_id = f"{run_id}/{event.call_id}/result"
            call_id = f"{run_id}/{event.call_id}"
            self.messages.append(ToolMessage(id=message_id, tool_call_id=call_id, content=event.content))
            out.append(ToolCallResultEvent(message_id=message_id, tool_call_id=call_id, content=event.content))
            out += self._step_ended()
        elif isinstance(event, live.ApprovalRequested):
            out += self._interrupt(run_id, event)
        elif isinstance(event, live.ApprovalDecided | live.ApprovalExpired):
            self.state["status"] = "running"
            out.append(StateSnapshotEvent(snapshot=dict(self.state)))
        elif isinstance(event, live.TurnFinished):
            out += self._step_ended()
            self.state["status"] = event.status
            out.append(StateSnapshotEvent(snapshot=dict(self.state)))
            out.append(
                RunFinishedEvent(
                    thread_id=self.input.thread_id,
                    run_id=self.input.run_id,
                    result={"answer": event.answer, "status": event.status, "turn": turn},
                    outcome=RunFinishedSuccessOutcome(),
                )
            )
        return out

    # -- text ---------------------------------------------------------------------------------------------

    def _text(self, run_id: str, step: int, text: str) -> list[BaseEvent]:
        out: list[BaseEvent] = []
        if step not in self.open:
            message_id = self.open[step] = f"{run_id}/{step}/{uuid.uuid4().hex[:6]}"
            self.messages.append(AssistantMessage(id=message_id, content=""))
            out.append(TextMessageStartEvent(message_id=message_id, role="assistant"))
        self.text[step] = self.text.get(step, "") + text
        self._set_content(self.open[step], self.text[step])
        out.append(TextMessageContentEvent(message_id=self.open[step], delta=text))
        return out

    def _restarted(self, step: int) -> list[BaseEvent]:
        """The step's model call starts again: its partial message leaves the client's view (a snapshot of the
        messages without it), and the retry writes a new one."""
        message_id = self.open.pop(step, None)
        self.text.pop(step, None)
        if message_id is None:
            return []
        self.messages = [m for m in self.messages if m.id != message_id]
        return [TextMessageEndEvent(message_id=message_id), MessagesSnapshotEvent(messages=list(self.messages))]

    def _step_finished(self, run_id: str, event: live.StepFinished) -> list[BaseEvent]:
        out: list[BaseEvent] = []
        if event.kind == "model":
            written = self.text.get(event.step, "")
            if event.text and written != event.text:
                if written and event.text.startswith(written):  # deltas missed at the end: the rest
                    out += self._text(run_id, event.step, event.text.removeprefix(written))
                elif not written:  # a step that did not stream: its text whole
                    out += self._text(run_id, event.step, event.text)
                else:  # what was shown is not what was said: the client's view set right
                    self.text[event.step] = event.text
                    self._set_content(self.open[event.step], event.text)
                    out.append(MessagesSnapshotEvent(messages=list(self.messages)))
            if event.step in self.open:
                out.append(TextMessageEndEvent(message_id=self.open[event.step]))
            for call in event.tool_calls:
                call_id = f"{run_id}/{call.call_id}"
                arguments = call.arguments if isinstance(call.arguments, str) else json.dumps(call.arguments)
                if call_id not in self.calls:
                    out += self._call_started(run_id, event.step, call.call_id, call.name)
                    out.append(ToolCallArgsEvent(tool_call_id=call_id, delta=arguments))
                    self._add_arguments(call_id, arguments)
                out.append(ToolCallEndEvent(tool_call_id=call_id))
            self._forget(event.step)
        return out + self._step_ended()

    def _step_ended(self) -> list[BaseEvent]:
        ended, self.step = self.step, None
        return [StepFinishedEvent(step_name=ended)] if ended is not None else []

    def _forget(self, step: int) -> None:
        self.open.pop(step, None)
        self.parents.pop(step, None)
        self.text.pop(step, None)

    def _set_content(self, message_id: str, text: str) -> None:
        for i, message in enumerate(self.messages):
            if message.id == message_id and isinstance(message, AssistantMessage):
                self.messages[i] = message.model_copy(update={"content": text})

    # -- tool calls ---------------------------------------------------------------------------------------

    def _call_started(self, run_id: str, step: int, call_id: str, name: str) -> list[BaseEvent]:
        full = f"{run_id}/{call_id}"
        self.calls.add(full)
        parent = self.open.get(step) or self.parents.get(step)
        if parent is None:  # calls without text: their message exists in the client's view, never as text
            parent = self.parents[step] = f"{run_id}/{step}/{uuid.uuid4().hex[:6]}"
            self.messages.append(AssistantMessage(id=parent))
        call = ToolCall(id=full, function=FunctionCall(name=name, arguments=""))
        for i, message in enumerate(self.messages):
            if message.id == parent and isinstance(message, AssistantMessage):
                self.messages[i] = message.model_copy(update={"tool_calls": [*(message.tool_calls or []), call]})
        return [ToolCallStartEvent(tool_call_id=full, tool_call_name=name, parent_message_id=parent)]

    def _add_arguments(self, call_id: str, delta: str) -> None:
        for i, message in enumerate(self.messages):
            if isinstance(message, AssistantMessage) and message.tool_calls:
                calls = [
                    c.model_copy(
                        update={"function": FunctionCall(name=c.function.name, arguments=c.function.arguments + delta)}
                    )
                    if c.id == call_id
                    else c
                    for c in message.tool_calls
                ]
                self.messages[i] = message.model_copy(update={"tool_calls": calls})

    def _interrupt(self, run_id: str, event: live.ApprovalRequested) -> list[BaseEvent]:
        """The AG-UI run ends here, waiting for the approval; the turn itself waits (durably) until its deadline."""
        self.state["status"] = "awaiting_approval"
        arguments = (
            json.dumps(event.arguments, sort_keys=True) if isinstance(event.arguments, dict) else event.arguments
        )
        interrupt = Interrupt(
            id=f"{run_id}/{event.call_id}",
            reason=TOOL_APPROVAL,
            message=f"Approve {event.tool}({arguments})?",
            tool_call_id=f"{run_id}/{event.call_id}",
            response_schema=DECISION_SCHEMA,
            expires_at=event.deadline.isoformat(),
            metadata={"tool": event.tool, "arguments": event.arguments, "argumentsHash": event.arguments_hash},
        )
        return [
            *self._step_ended(),
            StateSnapshotEvent(snapshot=dict(self.state)),
            RunFinishedEvent(
                thread_id=self.input.thread_id,
                run_id=self.input.run_id,
                outcome=RunFinishedInterruptOutcome(interrupts=[interrupt]),
            ),
        ]

    def _encode(self, event: BaseEvent) -> str:
        return self.encoder.encode(event)


def _with_arguments(call: ToolCall, delta: str) -> ToolCall:
    function = FunctionCall(name=call.function.name, arguments=call.function.arguments + delta)
    return call.model_copy(update={"function": function})
