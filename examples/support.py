"""`support` hands a refund to `billing-desk`: an agent delegating to another (`Agent.as_tool`).

The support agent opens a ticket, then calls its `billing` tool with a task in words; a run of the
billing desk's agent answers it — on Temporal a child workflow, linked from the support run in the Web
UI. The refund needs a human's approval: it appears among the support run's pending approvals (with the
path support → billing-desk) and is approved there. The billing desk's whole budget is reserved out of the
support run's, and what it spends is charged back to it. Cancel the support run and the refund is
reversed first, then the ticket closed.
"""

from __future__ import annotations

from collections.abc import Sequence

from agentic import Agent, Budget, FakeModel, Message, Registry, ToolContext, tool, tool_call
from examples.effects import record_effect, reference, tool_results, undoing
from examples.options import DemoOptions

ORDER = "4471"


@tool(
    description="Refund a payment to the customer.",
    order_id="The order id.",
    amount_cents="The amount, in cents.",
    mutating=True,
    requires_confirmation=True,
    compensation=undoing("reverse_refund"),
)
def refund_payment(order_id: str, amount_cents: int, ctx: ToolContext) -> str:
    ref = reference(ctx.idempotency_key, "rf")
    return record_effect(
        ctx, "refund_payment", {"order_id": order_id, "amount_cents": amount_cents}, f"refunded {order_id}, ref {ref}"
    )


def billing_reply(messages: Sequence[Message]) -> object:
    results = tool_results(messages)
    if not results:
        return tool_call("refund_payment", {"order_id": ORDER, "amount_cents": 2500})
    if results[-1].startswith("refunded"):
        return f"Refunded order {ORDER} ($25.00): {results[-1]}."
    return f"The refund of order {ORDER} was not made: {results[-1]}"


billing_desk = Agent(
    FakeModel([billing_reply] * 3, name="billing-desk-script"),
    Registry([refund_payment]),
    system="You are the billing desk. Refund what you are asked to, once; refunds need a human's approval.",
    budget=Budget(max_steps=4),
    name="billing-desk",
    description="Refunds payments (each needs a human's approval); other agents hand it refunds.",
    task=f"Refund order {ORDER}: $25.00.",
    options=DemoOptions,
    estimate=lambda options: 3,
)


@tool(
    description="Open a support ticket.",
    customer="The customer.",
    mutating=True,
    compensation=undoing("close_ticket"),
)
def open_ticket(customer: str, ctx: ToolContext) -> str:
    ref = reference(ctx.idempotency_key, "tk")
    return record_effect(ctx, "open_ticket", {"customer": customer}, f"ticket {ref} opened for {customer}")


def support_reply(messages: Sequence[Message]) -> object:
    results = tool_results(messages)
    if not results:
        return tool_call("open_ticket", {"customer": "ada@example.com"})
    if len(results) == 1:
        return tool_call("billing", {"task": f"Refund order {ORDER}: $25.00, it arrived damaged."})
    return f"Ticket opened; the billing desk says: {results[-1]}"


agent = Agent(
    FakeModel([support_reply] * 3, name="support-script"),
    Registry(
        [
            open_ticket,
            billing_desk.as_tool(
                "billing", "Hand a refund to the billing desk's agent; it answers with what it did.", max_steps=3
            ),
        ]
    ),
    system="You are customer support. Refunds are the billing desk's: hand them over.",
    budget=Budget(max_steps=8),
    name="support",
    description="Opens a ticket and hands the refund to the billing desk's agent (delegation, a child workflow).",
    task=f"Ada's order {ORDER} arrived damaged; she wants her $25 back.",
    options=DemoOptions,
    estimate=lambda options: 8,
)

agents = [agent, billing_desk]
