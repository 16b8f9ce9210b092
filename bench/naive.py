"""The naive durable agent `bench history` measures ours against: the whole transcript in workflow state,
handed to every model call — as public Temporal agent integrations do — so each model call's input, and the
history, grows with the transcript (quadratic in the number of calls). Not the engine's way: `AgentWorkflow`
keeps its transcript by reference (duragent/_workflows/transcript.py).

The same loop (`AgentLoop`) and agent; only the transcript travels differently. No approvals, saga,
search attributes or continue-as-new: nothing that would make its history differ for another reason.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

from pydantic import BaseModel, Field
from temporalio import activity, workflow
from temporalio.common import RetryPolicy

from agentic import Agent, AgentLoop, CallModel, Finish, Message, ModelReply, ToolCall, ToolContext, ToolResult
from agentic.loop import idempotency_key, initial_messages
from agentic.models.base import ask
from agentic.spec import AgentSpec

ONCE = RetryPolicy(maximum_attempts=1)


class NaiveInput(BaseModel):
    spec: AgentSpec = Field(description="The agent's spec (its `Agent.spec(options)`): budget, tools, prompt, task.")
    options: dict[str, Any] = Field(default_factory=dict)


class NaiveModelCall(BaseModel):
    messages: list[Message]  # the whole transcript, every call
    call_index: int


class NaiveToolCall(BaseModel):
    call: ToolCall
    options: dict[str, Any] = Field(default_factory=dict)


class NaiveActivities:
    """Named as ours are (`call_model`, `run_tool`), on a task queue of their own, so one history reader counts
    both workflows' model calls."""

    def __init__(self, agent: Agent) -> None:
        self.agent = agent

    @activity.defn(name="call_model")
    async def call_model(self, input: NaiveModelCall) -> ModelReply:
        schemas = self.agent.schemas()
        return await asyncio.to_thread(ask, self.agent.model, input.messages, schemas, call_index=input.call_index)

    @activity.defn(name="run_tool")
    async def run_tool(self, input: NaiveToolCall) -> ToolResult:
        run_id, call_id = activity.info().workflow_id, input.call.identity
        context = ToolContext(
            run_id=run_id,
            call_id=call_id,
            idempotency_key=idempotency_key(run_id, call_id),
            deps=self.agent.deps,
            options=self.agent.parse_options(input.options),
        )
        return await asyncio.to_thread(self.agent.registry.dispatch, input.call, context)


@workflow.defn(name="NaiveAgentWorkflow", sandboxed=False)
class NaiveAgentWorkflow:
    @workflow.run
    async def run(self, input: NaiveInput) -> int:
        """The model calls made."""
        spec = input.spec
        loop = AgentLoop(spec.budget, spec.tools)
        messages = initial_messages(spec.system, spec.task or "")
        while not isinstance(step := loop.next_step(), Finish):
            if isinstance(step, CallModel):
                reply = await workflow.execute_activity_method(
                    NaiveActivities.call_model,
                    NaiveModelCall(messages=messages, call_index=step.call_index),
                    start_to_close_timeout=timedelta(seconds=60),
                    retry_policy=ONCE,
                )
                messages += loop.model_replied(reply)
            else:
                result = await workflow.execute_activity_method(
                    NaiveActivities.run_tool,
                    NaiveToolCall(call=step.call, options=input.options),
                    start_to_close_timeout=timedelta(seconds=60),
                    retry_policy=ONCE,
                )
                messages += loop.tool_finished(result)
        return loop.state.calls_made
