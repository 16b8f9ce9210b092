"""The peers' way to write a durable conversation, for `python -m bench conversations`: the message history carried
in the user's own workflow, as pydantic-ai's Temporal docs (a `TemporalAgent` run inside the user's workflow, its
`message_history` kept by that workflow) and the OpenAI Agents samples (`customer_service`: an update per user message,
`Runner.run` on the workflow's `input_items`) show it.

One workflow per conversation holds `list[ChatMessage]`; each message is an update whose handler runs the turn itself:
every model call an activity given the WHOLE history so far, every tool call an activity. Public temporalio only (no
peer library and nothing of ours), so it measures the pattern, not a library: the history a model activity carries is
what any of them must send to the model each call. No continue-as-new (neither pydantic-ai's Temporal agent nor the
samples carry the whole conversation across one), so whether it finishes is Temporal's limits' call: 50 MB or 51,200
events of history, 2 MB per payload (the dev server's defaults, as a production server's).

The scripted model does what `bench-chat` does: 3 no-op tool calls per message, then an answer.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from datetime import timedelta

from temporalio import activity, workflow
from temporalio.common import RetryPolicy

TOOL_CALLS = 3
SEND_UPDATE = "send"
WORKFLOW_NAME = "CarriedHistoryChat"


@dataclass
class ToolCallPart:
    id: str
    name: str
    arguments: dict[str, int] = field(default_factory=dict)


@dataclass
class ChatMessage:
    role: str  # system, user, assistant, tool
    content: str = ""
    tool_calls: list[ToolCallPart] = field(default_factory=list)
    tool_call_id: str | None = None


@activity.defn(name="peer_model_request")
async def model_request(history: list[ChatMessage]) -> ChatMessage:
    """A model call: given the whole history (what a provider needs each call), the next assistant message."""
    last_user = max(i for i, m in enumerate(history) if m.role == "user")
    done = sum(1 for m in history[last_user:] if m.role == "tool")
    if done < TOOL_CALLS:
        call = ToolCallPart(id=f"call-{last_user}-{done + 1}", name="noop", arguments={"i": done + 1})
        return ChatMessage(role="assistant", tool_calls=[call])
    users = sum(1 for m in history if m.role == "user")
    return ChatMessage(role="assistant", content=f"Answered message {users} after {done} calls.")


@activity.defn(name="peer_noop")
async def noop(i: int) -> str:
    return f"ok {i} of {TOOL_CALLS}"


@workflow.defn(name=WORKFLOW_NAME)
class CarriedHistoryChat:
    def __init__(self) -> None:
        self.history = [ChatMessage(role="system", content="Call noop three times per message, then answer.")]
        self.lock = asyncio.Lock()
        self.closed = False

    @workflow.run
    async def run(self) -> int:
        await workflow.wait_condition(lambda: self.closed)
        await workflow.wait_condition(workflow.all_handlers_finished)
        return len(self.history)

    @workflow.update(name=SEND_UPDATE)
    async def send(self, text: str) -> str:
        async with self.lock:
            self.history.append(ChatMessage(role="user", content=text))
            while True:
                reply = await workflow.execute_activity(
                    model_request,
                    self.history,
                    start_to_close_timeout=timedelta(seconds=60),
                    retry_policy=RetryPolicy(maximum_attempts=3),
                )
                self.history.append(reply)
                if not reply.tool_calls:
                    return reply.content
                for call in reply.tool_calls:
                    result = await workflow.execute_activity(
                        noop,
                        call.arguments["i"],
                        start_to_close_timeout=timedelta(seconds=60),
                        retry_policy=RetryPolicy(maximum_attempts=3),
                    )
                    self.history.append(ChatMessage(role="tool", content=result, tool_call_id=call.id))

    @workflow.signal
    def close(self) -> None:
        self.closed = True
