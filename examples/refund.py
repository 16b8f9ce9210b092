"""`refund`: a gated tool — refunding order 4471 needs a human's approval first."""

from __future__ import annotations

from collections.abc import Sequence

from agentic import Agent, Budget, FakeModel, Message, Registry, ToolContext, tool, tool_call
from examples.effects import record_effect, reference, tool_results
from examples.options import DemoOptions


@tool(
    description="Refund an order.", name="refund", order_id="The order id.", mutating=True, requires_confirmation=True
)
def refund_order(order_id: str, ctx: ToolContext) -> str:
    return record_effect(
        ctx, "refund", {"order_id": order_id}, f"refunded {order_id}, ref {reference(ctx.idempotency_key, 'rf')}"
    )


def refund_reply(messages: Sequence[Message]) -> object:
    results = tool_results(messages)
    if not results:
        return tool_call("refund", {"order_id": "4471"})
    last = results[-1]
    if last.startswith("refunded"):
        return "Refunded order 4471."
    if "expired" in last:
        return "The approval for refunding order 4471 expired; nothing was refunded. It needs a new approval."
    return "The refund of order 4471 was declined; nothing was refunded."


agent = Agent(
    FakeModel([refund_reply] * 3, name="refund-script"),
    Registry([refund_order]),
    system="Handle refunds. Refunds need a human's approval.",
    budget=Budget(max_steps=3),
    name="refund",
    description="Refund order 4471 — waits for a human approval.",
    task="Refund order 4471",
    options=DemoOptions,
    estimate=lambda options: 3,
)
