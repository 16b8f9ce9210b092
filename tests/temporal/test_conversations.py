"""Durable conversations on the time-skipping server: turns of the one loop, each a run on the transcript so far;
messages by update-with-start, validated, queued in order; budgets per turn and per conversation."""

from __future__ import annotations

import asyncio
import uuid

import pytest

from agentic import Budget, Stop
from duragent import AgentClient
from duragent._errors import MessageRefused
from duragent._workflows.turns import turn_run_id
from tests.conftest import TEST_AGENTS, new_worker, transcripts_next_to
from tests.support.conversation_agents import CHAT

AGENTS = [*TEST_AGENTS, CHAT]


def conversation_id() -> str:
    return f"conv-{uuid.uuid4().hex[:10]}"


async def test_three_turns_with_an_approval_mid_turn(skipping_env, ledger, task_queue):
    agents = AgentClient(skipping_env.client, task_queue=task_queue)
    async with new_worker(skipping_env.client, task_queue, ledger, agents=AGENTS):
        conv = agents.conversation(CHAT, conversation_id())
        first = await conv.send("hello")
        assert (first.turn, first.status, first.stop) == (1, "completed", Stop.ANSWERED)
        assert first.output == "You said 'hello' (turn 1, 2 messages)"

        second = await conv.send("pay s-9", wait=False)
        assert second == 2
        [waiting] = await eventually_pending(conv)
        assert (waiting.tool, waiting.run_id) == ("pay", turn_run_id(conv.conversation_id, 2))
        await conv.approve(waiting.call_id, by="maria", arguments_hash=waiting.arguments_hash)
        answered = await conv.wait(2)
        assert answered.output == "Done: paid s-9 (turn 2)"

        third = await conv.send("bye", expect_turn=3)
        # The third turn saw the whole conversation: system, 3 user messages, the tool round trip, the answers.
        assert third.output == "You said 'bye' (turn 3, 8 messages)"
        assert third.consumed.steps == first.usage.steps + answered.usage.steps + third.usage.steps

        page = await conv.history(transcripts=transcripts_next_to(ledger))
        assert [m.role for m in page.messages] == [
            "system",
            "user",
            "assistant",
            "user",
            "assistant",
            "tool",
            "assistant",
            "user",
            "assistant",
        ]
        assert page.total == 9
        view = await conv.describe()
        assert (view.status, view.turns, view.answered, view.consumed) == ("open", 3, 3, third.consumed)
    assert [e.key for e in ledger.effects(turn_run_id(conv.conversation_id, 2))] == [
        f"{turn_run_id(conv.conversation_id, 2)}:1.1"  # the turn's own run id: unique across the conversation
    ]


async def eventually_pending(conv):
    for _ in range(200):
        waiting = await conv.pending()
        if waiting:
            return waiting
        await asyncio.sleep(0.05)
    raise AssertionError("no approval pending")


async def test_each_refusal_is_one_clear_error(skipping_env, ledger, task_queue):
    agents = AgentClient(skipping_env.client, task_queue=task_queue)
    async with new_worker(skipping_env.client, task_queue, ledger, agents=AGENTS):
        conv = agents.conversation(CHAT, conversation_id(), budget=Budget(max_steps=2))
        with pytest.raises(MessageRefused) as empty:
            await conv.send("   ")
        assert empty.value.kind == "EmptyMessage"
        with pytest.raises(MessageRefused) as long:
            await conv.send("x" * 40_000)
        assert long.value.kind == "MessageTooLong"
        await conv.send("one")
        with pytest.raises(MessageRefused) as stale:
            await conv.send("meant as the first", expect_turn=1)
        assert stale.value.kind == "StaleTurn"
        assert "next turn is 2" in str(stale.value)
        await conv.send("two")  # the second step: the conversation's budget is spent
        with pytest.raises(MessageRefused) as spent:
            await conv.send("three")
        assert spent.value.kind == "OverBudget"
        await conv.close()
        with pytest.raises(MessageRefused) as closed:
            await conv.send("after close")
        assert closed.value.kind == "ConversationClosed"
        assert (await conv.describe()).turns == 2
