"""pydantic-ai's `TemporalAgent` (`pydantic_ai.durable_exec.temporal`) running the peers' script.

    python -m bench.peers.pydantic_stack      # its worker: TEMPORAL_ADDRESS, TEMPORAL_TASK_QUEUE, PEERS_PROVIDER

An ordinary pydantic-ai `Agent` with a scripted `FunctionModel` and one tool, made durable by `TemporalAgent`:
every model request and every tool call is an activity, as in ours. The tool's idempotency key is
`RunContext.tool_call_id`: the id the model gave the call, which the model activity's recorded result holds,
so a retry of the tool's activity (a new worker's included) gets the same one. Without it, a tool has
nothing stable to hand its provider, and a retry after a crash mid-call makes the effect again. (`TemporalAgent`
is deprecated in this version for the `TemporalDurability` capability; it is the wrapper the issue names and
schedules the same activities.)
"""

from __future__ import annotations

import asyncio
import warnings
from datetime import timedelta

from pydantic_ai import Agent, RunContext
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.usage import UsageLimits
from temporalio import activity, workflow
from temporalio.common import RetryPolicy
from temporalio.workflow import ActivityConfig

with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # TemporalAgent's deprecation: named once in the docstring above
    from pydantic_ai.durable_exec.temporal import PydanticAIPlugin, PydanticAIWorkflow, TemporalAgent

with workflow.unsafe.imports_passed_through():
    from bench.peers.script import Provider, answer, next_call, pause_if_asked

NAME = "peers_pydantic"
WORKFLOW = "PeersPydanticWorkflow"
# As the bench runs ours: a dead worker's call is noticed by its heartbeat timeout (2 s) and retried soon after.
ACTIVITY_CONFIG = ActivityConfig(
    start_to_close_timeout=timedelta(seconds=60),
    heartbeat_timeout=timedelta(seconds=2),
    retry_policy=RetryPolicy(initial_interval=timedelta(seconds=0.25), maximum_attempts=8),
)


def script(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    parts = [part for message in messages if isinstance(message, ModelRequest) for part in message.parts]
    task = next(str(part.content) for part in parts if part.part_kind == "user-prompt")
    arguments = next_call(task, sum(isinstance(part, ToolReturnPart) for part in parts))
    if arguments is None:
        return ModelResponse(parts=[TextPart(answer(task))])
    return ModelResponse(parts=[ToolCallPart("step", arguments)])


def step(ctx: RunContext[None], i: int, pause: bool = False) -> str:
    """Make step i's effect."""
    run = activity.info().workflow_id
    Provider().apply(ctx.tool_call_id or "", stack="pydantic-ai", run=run, i=i)
    pause_if_asked(pause, activity.info().attempt, activity.heartbeat)
    return f"step {i} done"


agent = Agent(FunctionModel(script), name=NAME, tools=[step], output_type=str)
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    temporal_agent = TemporalAgent(agent, activity_config=ACTIVITY_CONFIG)


@workflow.defn(name=WORKFLOW)
class PeersPydanticWorkflow(PydanticAIWorkflow):
    __pydantic_ai_agents__ = [temporal_agent]

    @workflow.run
    async def run(self, task: str) -> str:
        # pydantic-ai stops a run at 50 model requests by default; the script's length is the bench's to choose.
        result = await temporal_agent.run(task, usage_limits=UsageLimits(request_limit=None))
        return result.output


async def main() -> None:
    from bench.peers.worker_main import serve

    await serve([PydanticAIPlugin()], workflows=[PeersPydanticWorkflow], activities=[], name="pydantic-ai")


if __name__ == "__main__":
    asyncio.run(main())
