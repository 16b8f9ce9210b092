"""Ours: the peers' script as an agents module (`python worker.py --agents bench.peers.ours`).

`peers` runs the script; its `step` tool makes its effect at the provider under `ctx.idempotency_key`
(`run_id:step.position`, the same on every retry, replay and new worker). `peers-approval` is one gated call
(`requires_confirmation`): a human decides, by a deadline the run keeps on a durable timer.
"""

from __future__ import annotations

from collections.abc import Sequence

from agentic import Agent, Budget, FakeModel, Message, Registry, ToolContext, tool, tool_call
from bench.peers.script import Provider, answer, next_call, pause_if_asked

NAME = "peers"
APPROVAL = "peers-approval"


@tool(description="Make step i's effect.", i="The step number.", pause="Dawdle after the effect.", mutating=True)
def step(i: int, ctx: ToolContext, pause: bool = False) -> str:
    Provider().apply(ctx.idempotency_key, stack="ours", run=ctx.run_id, i=i)
    pause_if_asked(pause, ctx.attempt)  # the activity heartbeats on its own meanwhile
    return f"step {i} done"


@tool(description="Make an effect a human approves.", i="The step number.", mutating=True, requires_confirmation=True)
def approved_step(i: int, ctx: ToolContext) -> str:
    Provider().apply(ctx.idempotency_key, stack="ours", run=ctx.run_id, i=i)
    return f"step {i} done"


def script(messages: Sequence[Message]) -> object:
    task = next(m.content for m in messages if m.role == "user")
    arguments = next_call(task, sum(1 for m in messages if m.role == "tool"))
    return answer(task) if arguments is None else tool_call("step", arguments)


def approval_script(messages: Sequence[Message]) -> object:
    done = any(m.role == "tool" for m in messages)
    return "Approved and done." if done else tool_call("approved_step", {"i": 1})


agent = Agent(
    FakeModel.replying(script, name="peers-script"),
    Registry([step]),
    system="Call step once per step, then answer.",
    budget=Budget(max_steps=100_000),
    name=NAME,
    task="Run 2 steps.",
)
approval_agent = Agent(
    FakeModel.replying(approval_script, name="peers-approval-script"),
    Registry([approved_step]),
    name=APPROVAL,
    task="Make one approved step.",
)

agents = [agent, approval_agent]
