"""The OpenAI Agents SDK on Temporal (`temporalio.contrib.openai_agents`) running the peers' script.

    python -m bench.peers.openai_stack      # its worker: TEMPORAL_ADDRESS, TEMPORAL_TASK_QUEUE, PEERS_PROVIDER

An `agents.Agent` run by `Runner.run` inside a workflow; `OpenAIAgentsPlugin` turns each model call into an
activity (the model: its `TestModel`, scripted here from what the call is shown) and `activity_as_tool` makes
the tool an activity. The tool's idempotency key: `activity_as_tool` hands the activity only the call's
arguments, not the model's call id (which the SDK requires unique within a run, and a provider may number
per run or per reply), so the most stable identity there is is Temporal's own for the activity,
`workflow id:activity id`, the same on every retry of that activity, a new worker's included. Without it, a
retry after a crash mid-call makes the effect again.
"""

from __future__ import annotations

import asyncio
import json
from datetime import timedelta
from typing import Any

from agents import Agent, Runner, set_tracing_disabled
from temporalio import activity, workflow
from temporalio.common import RetryPolicy
from temporalio.contrib.openai_agents import ModelActivityParameters, OpenAIAgentsPlugin
from temporalio.contrib.openai_agents import workflow as agents_workflow
from temporalio.contrib.openai_agents.testing import ResponseBuilders, TestModel, TestModelProvider

with workflow.unsafe.imports_passed_through():
    from bench.peers.script import Provider, answer, next_call, pause_if_asked

NAME = "peers_openai"
WORKFLOW = "PeersOpenAIWorkflow"
HEARTBEAT = timedelta(seconds=2)  # as the bench runs ours: a dead worker's call is retried soon after
RETRY = RetryPolicy(initial_interval=timedelta(seconds=0.25), maximum_attempts=8)


class ScriptedModel(TestModel):
    """The SDK's test model, answering from what it is shown (its own `fn` is shown nothing)."""

    def __init__(self) -> None:
        super().__init__(lambda: ResponseBuilders.output_message(""))

    async def get_response(self, system_instructions: Any, input: Any, *args: Any, **kwargs: Any) -> Any:
        items = [{"role": "user", "content": input}] if isinstance(input, str) else list(input)
        task = next(str(item.get("content")) for item in items if item.get("role") == "user")
        arguments = next_call(task, sum(1 for item in items if item.get("type") == "function_call_output"))
        if arguments is None:
            return ResponseBuilders.output_message(answer(task))
        # A call id of its own (the builder's default, "call", repeated, is refused by the SDK: a completed id
        # reused for another invocation): the script's step number, as a provider numbering calls per run.
        return ResponseBuilders.tool_call(json.dumps(arguments), "step", call_id=f"call_{arguments['i']}")


@activity.defn(name="peers_openai_step")
def step(i: int, pause: bool = False) -> str:
    """Make step i's effect."""
    info = activity.info()
    Provider().apply(f"{info.workflow_id}:{info.activity_id}", stack="openai-agents", run=info.workflow_id, i=i)
    pause_if_asked(pause, info.attempt, activity.heartbeat)
    return f"step {i} done"


@workflow.defn(name=WORKFLOW)
class PeersOpenAIWorkflow:
    @workflow.run
    async def run(self, task: str) -> str:
        tool = agents_workflow.activity_as_tool(
            step, start_to_close_timeout=timedelta(seconds=60), heartbeat_timeout=HEARTBEAT, retry_policy=RETRY
        )
        agent = Agent(name=NAME, instructions="Call step once per step, then answer.", tools=[tool])
        result = await Runner.run(agent, input=task, max_turns=100_000)
        return str(result.final_output)


def plugin() -> OpenAIAgentsPlugin:
    parameters = ModelActivityParameters(
        start_to_close_timeout=timedelta(seconds=60), heartbeat_timeout=HEARTBEAT, retry_policy=RETRY
    )
    return OpenAIAgentsPlugin(model_params=parameters, model_provider=TestModelProvider(ScriptedModel()))


async def main() -> None:
    set_tracing_disabled(True)  # no OpenAI account to export traces to (it would say so on every run)
    from bench.peers.worker_main import serve

    await serve([plugin()], workflows=[PeersOpenAIWorkflow], activities=[step], name="openai-agents")


if __name__ == "__main__":
    asyncio.run(main())
