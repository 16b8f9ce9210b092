"""The in-process conversation: each turn one `Agent.run` on the transcript so far (`history=`), consumption
carried, the same refusals as the durable one."""

from __future__ import annotations

import pytest

from agentic import Agent, Budget, FakeModel, Registry, Stop
from agentic.conversation import ConversationLimits, MessageRefused
from tests.support.conversation_agents import reply


def chat_agent(budget: Budget | None = None) -> Agent:
    return Agent(FakeModel.replying(reply), Registry(), system="Be brief.", budget=budget or Budget(max_steps=4))


def test_turns_see_the_conversation_so_far_and_consumption_is_carried():
    chat = chat_agent().conversation()
    first = chat.send("hello")
    second = chat.send("again")
    assert first.output == "You said 'hello' (turn 1, 2 messages)"
    assert second.output == "You said 'again' (turn 2, 4 messages)"  # system + hello + answer + again
    assert chat.turns == 2
    assert [m.role for m in chat.messages] == ["user", "assistant", "user", "assistant"]
    assert chat.usage == first.usage.plus(second.usage)


def test_the_conversations_budget_caps_each_turn_and_then_refuses_the_next():
    chat = chat_agent().conversation(Budget(max_steps=1))
    assert chat.send("one").stop is Stop.ANSWERED
    with pytest.raises(MessageRefused) as spent:
        chat.send("two")
    assert spent.value.kind == "OverBudget"
    assert chat.turns == 1


@pytest.mark.parametrize(
    ("text", "expect_turn", "kind"),
    [("  ", None, "EmptyMessage"), ("x" * 101, None, "MessageTooLong"), ("hi", 5, "StaleTurn")],
)
def test_each_refusal_names_its_kind_and_changes_nothing(text, expect_turn, kind):
    chat = chat_agent().conversation()
    chat.limits = ConversationLimits(max_message_bytes=100)
    with pytest.raises(MessageRefused) as refused:
        chat.send(text, expect_turn=expect_turn)
    assert refused.value.kind == kind
    assert (chat.turns, chat.messages) == (0, [])


def test_a_closed_conversation_refuses_messages():
    chat = chat_agent().conversation()
    chat.close()
    with pytest.raises(MessageRefused) as closed:
        chat.send("hi")
    assert closed.value.kind == "ConversationClosed"
