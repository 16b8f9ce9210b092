"""A conversation's live events: each turn's run's live stream in turn order, between `turn_started` and
`turn_finished`, with ids a subscriber resumes after.

A turn is a run of its own (`{conversation}~turn-{n}`), whose Workflow Stream holds its events; the conversation
holds none, so its history does not grow with what its turns write. An id is `{turn}:{offset}` for an event of
turn n's run, `{turn}:-1` for its `turn_started` and `{turn}:end` for its `turn_finished`: resuming after any of
them misses nothing and repeats nothing, across the conversation's and its turns' continues-as-new.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import timedelta

from temporalio.service import RPCError, RPCStatusCode

from agentic.live import LiveEvent, TurnFinished, TurnStarted
from duragent._conversations import ConversationHandle
from duragent._live import live_events
from duragent._workflows.turns import turn_run_id

# How often a follower that has read every turn asks the conversation whether another began (a query: nothing
# in history), and whether a queued turn's run has started.
LOOK_EVERY = timedelta(milliseconds=250)

_ID = re.compile(r"^(\d{1,9}):(-1|\d{1,18}|end)$")


@dataclass(frozen=True)
class Position:
    """Where a subscriber is: in `turn`, after the turn's run's event `offset` (None: none of them yet), its
    `turn_started` sent or not; `ended`: its `turn_finished` too."""

    turn: int = 1
    offset: int | None = None
    started: bool = False
    ended: bool = False

    @classmethod
    def after(cls, last_id: str | None) -> Position:
        """The position after the event with id `last_id` (None: from the start). ValueError if it is no id."""
        if last_id is None:
            return cls()
        match = _ID.match(last_id.strip())
        if match is None or int(match.group(1)) < 1:
            raise ValueError(f"not a conversation event id (TURN:OFFSET, TURN:-1 or TURN:end): {last_id!r}")
        turn, rest = int(match.group(1)), match.group(2)
        if rest == "end":
            return cls(turn=turn + 1)
        return cls(turn=turn, offset=None if rest == "-1" else int(rest), started=True)


async def conversation_events(
    conv: ConversationHandle, after: Position | None = None, *, until_closed: bool = True
) -> AsyncIterator[tuple[str, LiveEvent]]:
    """`(id, event)` of the conversation from `after`, turn by turn; waits for the next message after the last
    turn (`until_closed`: until the conversation closes; else ends after the turns there are now)."""
    client = conv.agents.client
    position = after or Position()
    while True:
        view = await conv.describe()
        turn = position.turn
        if turn > view.turns:
            if view.status == "closed" or not until_closed:
                return
            await asyncio.sleep(LOOK_EVERY.total_seconds())
            continue
        if not position.started:
            yield f"{turn}:-1", TurnStarted(turn=turn)
        run_id = turn_run_id(conv.conversation_id, turn)
        if await _started(conv, run_id, turn):
            async for offset, event in live_events(client, run_id, position.offset):
                yield f"{turn}:{offset}", event
        result = await conv.wait(turn)
        yield f"{turn}:end", TurnFinished(turn=turn, status=result.status, answer=result.output)
        position = Position(turn=turn + 1)


async def turn_events(conv: ConversationHandle, turn: int) -> AsyncIterator[tuple[str, LiveEvent]]:
    """One turn's events (what `duragent chat` prints while the turn runs)."""
    async for id, event in conversation_events(conv, Position(turn=turn, started=True), until_closed=False):
        if isinstance(event, TurnFinished):
            return
        yield id, event


async def _started(conv: ConversationHandle, run_id: str, turn: int) -> bool:
    """Whether the turn has a run (waiting while it is queued); False for a turn that ended without one."""
    handle = conv.agents.client.get_workflow_handle(run_id)
    while True:
        try:
            description = await handle.describe()
        except RPCError as exc:
            if exc.status != RPCStatusCode.NOT_FOUND:
                raise
        else:
            # Only the conversation's own child is its turn: a stranger's run under that id is never followed.
            return description.parent_id == conv.conversation_id
        if (await conv.describe()).answered >= turn:
            return False  # refused (its budget spent): answered without a run
        await asyncio.sleep(LOOK_EVERY.total_seconds())
