"""A conversation's live events on the time-skipping server: each turn's streamed text, tool calls and approval
between turn_started and turn_finished, in turn order, resumed after any id."""

from __future__ import annotations

import asyncio
import uuid

import pytest

from agentic.live import (
    ApprovalRequested,
    LiveEvent,
    TextDelta,
    ToolCallFinished,
    Transcript,
    TurnFinished,
    TurnStarted,
)
from duragent import AgentClient
from duragent._conversation_live import Position, conversation_events
from tests.conftest import new_worker
from tests.support.conversation_agents import CHAT


@pytest.mark.long
async def test_turns_stream_in_order_with_the_approval_and_resume_after_any_id(skipping_env, ledger, task_queue):
    agents = AgentClient(skipping_env.client, task_queue=task_queue)
    async with new_worker(skipping_env.client, task_queue, ledger, agents=[CHAT]):
        conv = agents.conversation(CHAT, f"conv-{uuid.uuid4().hex[:10]}")
        await conv.send("hello there")
        await conv.send("pay s-9", wait=False)
        seen: list[tuple[str, LiveEvent]] = []

        async def follow() -> None:
            async for id, event in conversation_events(conv, until_closed=False):
                seen.append((id, event))
                if isinstance(event, ApprovalRequested):
                    await conv.approve(event.call_id, by="maria", arguments_hash=event.arguments_hash)

        await asyncio.wait_for(follow(), 60)
        # A subscriber that left after any event reads the rest, and only the rest.
        for cut in (1, len(seen) // 2, len(seen) - 2):
            rest = [item async for item in conversation_events(conv, Position.after(seen[cut][0]), until_closed=False)]
            assert [id for id, _ in rest] == [id for id, _ in seen[cut + 1 :]], cut

    events = [event for _, event in seen]
    starts = [e for e in events if isinstance(e, TurnStarted)]
    ends = [e for e in events if isinstance(e, TurnFinished)]
    assert [e.turn for e in starts] == [1, 2] and [e.turn for e in ends] == [1, 2]
    assert ends[0].answer == "You said 'hello there' (turn 1, 2 messages)"
    assert ends[1].answer == "Done: paid s-9 (turn 2)"
    first_turn = events[: events.index(ends[0])]
    deltas = [e for e in first_turn if isinstance(e, TextDelta)]
    assert len(deltas) >= 2 and "".join(d.text for d in deltas) == ends[0].answer  # streamed, by default
    assert any(isinstance(e, ToolCallFinished) and e.name == "pay" and e.status == "ok" for e in events)
    view = Transcript()
    for event in events[events.index(starts[1]) :]:
        view.add(event)
    assert view.answer == "Done: paid s-9 (turn 2)"
    assert [id for id, _ in seen][:1] == ["1:-1"] and seen[-1][0] == "2:end"
