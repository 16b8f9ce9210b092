"""Lesson 000 (durable execution: checkpoints and resumption), every code example as users run it.

The lesson's code is kept verbatim at module level; its module-level state (LEDGER, EFFECTS, APPROVALS)
is emptied before every test so that the tests are independent of each other and of their order.
"""

from __future__ import annotations

import pytest

from agentic import Agent, Budget, FakeModel, Message, Registry, Stop, ToolCall, tool, tool_call


def rehydrate(rows: list[dict]) -> list[Message]:
    return [
        Message(
            role=row["role"],
            content=row.get("content", ""),
            tool_calls=tuple(
                ToolCall(id=c["id"], name=c["name"], arguments=c["arguments"]) for c in row.get("tool_calls", ())
            ),
            tool_call_id=row.get("tool_call_id"),
        )
        for row in rows
    ]


LEDGER: dict[str, str] = {}
EFFECTS: list[str] = []


@tool(
    description="Charge an invoice. Idempotent on the key.",
    invoice="The invoice id.",
    key="A caller-supplied idempotency key.",
    mutating=True,
)
def charge(invoice: str, key: str) -> str:
    if key in LEDGER:
        return f"already charged {invoice}, ref {LEDGER[key]}"
    LEDGER[key] = f"ref-{len(LEDGER) + 1}"
    EFFECTS.append(key)
    return f"charged {invoice}, ref {LEDGER[key]}"


billing = Registry([charge])


def billing_reply(msgs):
    if not any(m.role == "tool" for m in msgs):
        return tool_call("charge", {"invoice": "inv-9", "key": "inv-9:attempt-1"})
    return "Invoice inv-9 is settled."


APPROVALS: dict[str, bool] = {}


@tool(description="Refund an order.", order_id="The order id.", mutating=True, requires_confirmation=True)
def refund(order_id: str) -> str:
    return f"refunded {order_id}"


gated = Registry([refund], confirm=lambda n, a: APPROVALS.get(f"{n}:{a['order_id']}", False))


@pytest.fixture(autouse=True)
def _fresh_lesson_state():
    LEDGER.clear()
    EFFECTS.clear()
    APPROVALS.clear()
    yield
    LEDGER.clear()
    EFFECTS.clear()
    APPROVALS.clear()


def crash_after_the_charge():
    first = Agent(FakeModel([billing_reply]), billing, system="Settle invoices.", budget=Budget(max_steps=1)).run(
        "Settle invoice inv-9"
    )
    checkpoint = {
        "task": "Settle invoice inv-9",
        "messages": [m.to_dict() for m in first.messages],
        "step_index": first.step_count,
        "input_tokens": first.input_tokens,
        "output_tokens": first.output_tokens,
        "cost": first.cost,
    }
    return first, checkpoint


def resume(checkpoint):
    history = [m for m in rehydrate(checkpoint["messages"]) if m.role != "system"]
    return Agent(
        FakeModel([billing_reply, billing_reply]), billing, system="Settle invoices.", budget=Budget(max_steps=4)
    ).run("Continue. Do not repeat completed work.", history=history)


def test_the_crash_stops_on_the_step_budget_after_exactly_one_charge() -> None:
    first, _ = crash_after_the_charge()
    assert first.stop == Stop.STEP_BUDGET
    assert first.output is None
    assert EFFECTS == ["inv-9:attempt-1"]
    assert first.trajectory() == ["charge"]


def test_the_checkpoint_holds_the_four_roles_and_the_consumption() -> None:
    first, checkpoint = crash_after_the_charge()
    assert [m["role"] for m in checkpoint["messages"]] == ["system", "user", "assistant", "tool"]
    assert checkpoint["step_index"] == 1
    assert checkpoint["input_tokens"] > 0
    assert checkpoint["output_tokens"] > 0
    assert checkpoint["cost"] > 0
    assert checkpoint["cost"] == first.cost


def test_rehydrate_restores_the_transcript_exactly() -> None:
    first, checkpoint = crash_after_the_charge()
    restored = rehydrate(checkpoint["messages"])
    assert restored == first.messages
    assistant, tool_message = restored[2], restored[3]
    assert assistant.tool_calls[0].name == "charge"
    assert assistant.tool_calls[0].arguments == {"invoice": "inv-9", "key": "inv-9:attempt-1"}
    assert tool_message.tool_call_id == assistant.tool_calls[0].id


def test_resume_answers_without_repeating_the_charge() -> None:
    _, checkpoint = crash_after_the_charge()
    resumed = resume(checkpoint)
    assert resumed.stop == Stop.ANSWERED
    assert resumed.output == "Invoice inv-9 is settled."
    assert resumed.trajectory() == []
    assert EFFECTS == ["inv-9:attempt-1"]


def test_resume_replays_history_between_the_system_message_and_the_new_task() -> None:
    _, checkpoint = crash_after_the_charge()
    resumed = resume(checkpoint)
    roles = [m.role for m in resumed.messages]
    assert roles == ["system", "user", "assistant", "tool", "user", "assistant"]
    assert roles.count("system") == 1
    assert resumed.messages[1].content == "Settle invoice inv-9"
    assert resumed.messages[4].content == "Continue. Do not repeat completed work."


def test_exercise_a_resumed_model_that_recharges_has_no_second_effect() -> None:
    _, checkpoint = crash_after_the_charge()
    resume(checkpoint)
    history = [m for m in rehydrate(checkpoint["messages"]) if m.role != "system"]
    retry = Agent(
        FakeModel([tool_call("charge", {"invoice": "inv-9", "key": "inv-9:attempt-1"}), "Invoice inv-9 is settled."]),
        billing,
        system="Settle invoices.",
        budget=Budget(max_steps=4),
    ).run("Continue. Do not repeat completed work.", history=history)
    # The identical call in history is not a repeat (the guard is per run): the tool did execute...
    assert retry.stop == Stop.ANSWERED
    assert retry.trajectory() == ["charge"]
    assert any(m.role == "tool" and m.content.startswith("already charged inv-9") for m in retry.messages)
    # ...and the side effect count did not move, across all three runs.
    assert len(EFFECTS) == 1
    assert len(LEDGER) == 1


def test_fact_store_example() -> None:
    from agentic.memory import Fact, FactStore

    facts = FactStore()
    facts.write(Fact(key="preferred_courier", value="BlueDart", source="ticket T-1"))
    restored = FactStore.load(facts.dump())
    assert restored.get("preferred_courier").value == "BlueDart"
    assert restored.get("preferred_courier").source == "ticket T-1"


def test_refund_gate_blocks_until_approved_then_runs_on_resume() -> None:
    pending = Agent(
        FakeModel([tool_call("refund", {"order_id": "4471"}), "I need approval first."]),
        gated,
        budget=Budget(max_steps=3),
    ).run("Refund order 4471")
    assert pending.blocked_tools() == ["refund"]
    assert pending.trajectory() == []
    assert any(m.role == "tool" and m.content == "Error: the user declined this action." for m in pending.messages)

    APPROVALS["refund:4471"] = True
    after = Agent(
        FakeModel([tool_call("refund", {"order_id": "4471"}), "Refunded 4471."]), gated, budget=Budget(max_steps=3)
    ).run("Continue. The refund is approved.", history=[m for m in pending.messages if m.role != "system"])
    assert after.trajectory() == ["refund"]
    assert after.blocked_tools() == []
    assert after.output == "Refunded 4471."
    assert any(m.role == "tool" and m.content == "refunded 4471" for m in after.messages)
