"""Agents with typed answers, checks and handoffs, for the tests that run them on all three runners. Their tools
make effects through the demo ledger under the call's key (each with an undo), so the ledger judges what was
done and undone. `build(deps)` makes them afresh (in-process runs get their deps from the agent; a worker gives
its own); `agents` are the ones a worker serves: `worker.py --agents tests.support.typed_agents`."""

from __future__ import annotations

import dataclasses
from typing import Any

from pydantic import BaseModel, Field

from agentic import Agent, FakeModel, Registry, ToolContext, tool, tool_call
from agentic.checks import Refuse, SendBack
from agentic.output import final_answer
from examples.effects import record_effect, undoing


class Refund(BaseModel):
    order: str
    amount_cents: int = Field(gt=0)
    reason: str


GOOD = Refund(order="A-1", amount_cents=1250, reason="damaged")


@tool(description="Look an order up.", order="The order id.")
def lookup(order: str) -> str:
    return f"order {order}: 12.50 EUR, damaged on arrival"


@tool(description="Open a ticket.", subject="What about.", mutating=True, compensation=undoing("close_ticket"))
def open_ticket(subject: str, ctx: ToolContext) -> str:
    return record_effect(ctx, "open_ticket", {"subject": subject}, f"ticket open: {subject}")


@tool(
    description="Refund an order.",
    order="The order id.",
    amount_cents="How much.",
    mutating=True,
    compensation=undoing("reverse_refund"),
)
def refund(order: str, amount_cents: int, ctx: ToolContext) -> str:
    return record_effect(ctx, "refund", {"order": order, "amount_cents": amount_cents}, f"refunded {amount_cents}")


def not_over_a_thousand(arguments: dict[str, Any]) -> Refuse | None:
    """Refunds over 10 EUR are a human's call: refused outright."""
    return Refuse("refunds over 1000 cents need a human") if arguments.get("amount_cents", 0) > 1000 else None


def whole_euros(arguments: dict[str, Any]) -> SendBack | None:
    return SendBack("refund whole euros (a multiple of 100 cents)") if arguments.get("amount_cents", 0) % 100 else None


def names_the_order(answer: str) -> SendBack | None:
    return None if "A-1" in answer else SendBack("say which order you mean")


def no_card_numbers(answer: Refund) -> Refuse | None:
    return Refuse("the answer quotes a card number") if "4111" in answer.reason else None


def build(deps: Any = None) -> list[Agent]:
    """The agents, each with `deps` (its tools' ledger in-process)."""
    bad_amount = {"order": "A-1", "amount_cents": -5, "reason": "damaged"}
    typed = Agent(
        FakeModel([tool_call("lookup", {"order": "A-1"}), final_answer(GOOD)]),
        Registry([lookup]),
        system="Decide refunds.",
        name="t-refund",
        output_type=Refund,
        deps=deps,
    )
    fussy = Agent(  # fails validation twice (a bad amount, then a missing field), right the third time
        FakeModel(
            [
                tool_call("final_answer", bad_amount),
                tool_call("final_answer", {"order": "A-1", "amount_cents": 1250}),
                final_answer(GOOD),
            ]
        ),
        name="t-fussy",
        output_type=Refund,
        deps=deps,
    )
    hopeless = Agent(
        FakeModel([tool_call("final_answer", bad_amount)] * 4), name="t-hopeless", output_type=Refund, deps=deps
    )
    billing = Agent(  # takes the run over: refunds, then answers typed
        FakeModel([tool_call("refund", {"order": "A-1", "amount_cents": 1000}), final_answer(GOOD)]),
        Registry([refund]),
        system="You are billing. Refund what the desk hands you.",
        description="refunds orders",
        name="h-billing",
        output_type=Refund,
        deps=deps,
    )
    desk = Agent(  # opens a ticket, then hands the run to billing
        FakeModel([tool_call("open_ticket", {"subject": "A-1 damaged"}), tool_call("transfer_to_h-billing")]),
        Registry([open_ticket]),
        system="You are the front desk.",
        name="h-desk",
        handoffs=[billing],
        deps=deps,
    )
    strict_billing = Agent(  # its second refund is refused by its check: the run stops, the saga undoes both agents'
        FakeModel(
            [
                tool_call("refund", {"order": "A-1", "amount_cents": 500}),
                tool_call("refund", {"order": "A-1", "amount_cents": 5000}),
                "refunded",
            ]
        ),
        Registry([refund]),
        name="g-billing",
        argument_checks={"refund": [not_over_a_thousand]},
        deps=deps,
    )
    strict_desk = Agent(
        FakeModel([tool_call("open_ticket", {"subject": "A-1"}), tool_call("transfer_to_g-billing")]),
        Registry([open_ticket]),
        name="g-desk",
        handoffs=[strict_billing],
        deps=deps,
    )
    careful = Agent(  # sent back twice: by an argument check, then by an output check; right the third time
        FakeModel(
            [
                tool_call("refund", {"order": "A-1", "amount_cents": 1250}),
                tool_call("refund", {"order": "A-1", "amount_cents": 1200}),
                "Refunded.",
                "Refunded 12 EUR for order A-1.",
            ]
        ),
        Registry([refund]),
        name="g-careful",
        argument_checks={"refund": [whole_euros]},
        output_checks=[names_the_order],
        deps=deps,
    )
    leaky = Agent(
        FakeModel([final_answer(Refund(order="A-1", amount_cents=100, reason="card 4111 1111 declined"))]),
        name="g-leaky",
        output_type=Refund,
        output_checks=[no_card_numbers],
        deps=deps,
    )
    by_name = Agent(  # hands over to billing by name: the worker's billing, described by the worker
        FakeModel([tool_call("transfer_to_h-billing")]), name="n-desk", handoffs=["h-billing"], deps=deps
    )
    gated_billing = Agent(  # its refund waits for a human's approval, in the run it was handed
        FakeModel([tool_call("gated_refund", {"order": "A-1", "amount_cents": 700}), "Refunded 7 EUR."]),
        Registry([dataclasses.replace(refund, name="gated_refund", requires_confirmation=True)]),
        name="a-billing",
    )
    gated_desk = Agent(FakeModel([tool_call("transfer_to_a-billing")]), name="a-desk", handoffs=[gated_billing])
    return [
        typed,
        fussy,
        hopeless,
        billing,
        desk,
        strict_billing,
        strict_desk,
        careful,
        leaky,
        by_name,
        gated_billing,
        gated_desk,
    ]


agents = build()


def named(name: str, among: list[Agent] | None = None) -> Agent:
    return next(a for a in among or agents if a.name == name)
