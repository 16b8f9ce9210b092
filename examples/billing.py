"""`billing`: the simplest agent — charge invoice inv-9 with a caller-supplied key, then answer."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated

from pydantic import StringConstraints

from agentic import Agent, Budget, FakeModel, Message, Registry, ToolContext, tool, tool_call
from examples.effects import record_effect, reference
from examples.options import DemoOptions

# An invoice id and an idempotency key as a billing provider takes them: short tokens, checked before the
# charge. The bounds are in the tool's JSON schema, so they also reach a local model's grammar (the model
# server constrains the arguments to the schema): unbounded, SmolLM2 wrote a sentence into `key` until it ran
# out of tokens, on a build of llama.cpp whose arithmetic differs from the one before (2026-12-04).
InvoiceId = Annotated[str, StringConstraints(min_length=1, max_length=32)]
IdempotencyKey = Annotated[str, StringConstraints(min_length=1, max_length=40)]


@tool(
    description="Charge an invoice. Idempotent on the key.",
    invoice="The invoice id.",
    key="A caller-supplied idempotency key.",
    mutating=True,
)
def charge(invoice: InvoiceId, key: IdempotencyKey, ctx: ToolContext) -> str:
    # The caller's key, scoped to the run: a model that re-requests the charge later in the same run
    # (e.g. after a resume) with the same key gets the first charge back, not a second one.
    ledger_key = f"{ctx.run_id}:charge:{key}"
    return record_effect(
        ctx,
        "charge",
        {"invoice": invoice, "key": key},
        f"charged {invoice}, ref {reference(ledger_key, 'ch')}",
        key=ledger_key,
    )


def billing_reply(messages: Sequence[Message]) -> object:
    if not any(m.role == "tool" for m in messages):
        return tool_call("charge", {"invoice": "inv-9", "key": "inv-9:attempt-1"})
    return "Invoice inv-9 is settled."


agent = Agent(
    FakeModel([billing_reply, billing_reply, billing_reply], name="billing-script"),
    Registry([charge]),
    system="Settle invoices.",
    budget=Budget(max_steps=4),
    name="billing",
    description="Charge invoice inv-9 once, then answer.",
    task="Settle invoice inv-9",
    options=DemoOptions,
    estimate=lambda options: 3,
)
