"""The agents the deploy test's workers serve (tests/ops/test_deploy.py): the demo `refund` agent, which waits for
a human's approval at once, and `t-hold-then-refund`, which first holds in a tool until the test releases it
(a file appears), then waits for the same approval — so a run can be mid-step while a new build becomes
current, and reach its approval wait after. An agents module, served with `--agents tests.support.deploy_agents`."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from agentic import Agent, Budget, FakeModel, Message, Registry, ToolContext, tool, tool_call
from examples import make_deps
from examples.effects import tool_results
from examples.options import DemoOptions
from examples.refund import agent as refund
from examples.refund import refund_order


@tool(description="Hold until released.", path="The file whose appearance releases the hold.")
def hold(path: str, ctx: ToolContext) -> str:
    while not Path(path).exists():
        ctx.sleep(0.1)  # heartbeats, and stays cancellable
    return "released"


def _hold_then_refund(messages: Sequence[Message]) -> object:
    done = tool_results(messages)
    if not done:
        task = next(m.content for m in messages if m.role == "user")
        return tool_call("hold", {"path": task.removeprefix("hold on ")})
    if len(done) == 1:
        return tool_call("refund", {"order_id": "4471"})
    return "Refunded order 4471." if done[-1].startswith("refunded") else "Nothing was refunded."


HOLD_THEN_REFUND = Agent(
    FakeModel([_hold_then_refund] * 3, name="hold-then-refund-script"),
    Registry([hold, refund_order]),
    system="Hold, then refund.",
    budget=Budget(max_steps=3),
    name="t-hold-then-refund",
    description="Holds in a tool until released, then refunds order 4471 once a human approves.",
    task="hold on /nonexistent",
    options=DemoOptions,
)

agents = [refund, HOLD_THEN_REFUND]

__all__ = ["agents", "make_deps"]
