"""`GET /conversations/{id}/events`: a conversation's live events as server-sent events (viewer), each turn's
between `turn_started` and `turn_finished` (duragent/_conversation_live.py). The SSE id is `TURN:OFFSET`; a
client that reconnects with `Last-Event-ID` gets what follows it. The stream waits for the next message after
the last turn, until the conversation closes or the stream's lifetime ends (the client reconnects)."""

from __future__ import annotations

from collections.abc import AsyncIterator

from fastapi import Depends, FastAPI, Header, Query
from starlette.responses import Response

from duragent._conversation_live import Position, conversation_events
from duragent._ops.http.auth import HttpAuth, Principal
from duragent._ops.http.conversations import Conversations, _translated
from duragent._ops.http.engine import StreamEvent
from duragent._ops.http.errors import InvalidRequest
from duragent._ops.http.sse import with_keepalives
from duragent._ops.http.streams import RECONNECT_MS, SlotStream, StreamSlots


def add_conversation_events(
    app: FastAPI,
    conversations: Conversations,
    auth: HttpAuth,
    slots: StreamSlots,
    keepalive_seconds: float,
    lifetime: float,
) -> None:
    viewer = Depends(auth.require("viewer"))

    @app.get("/conversations/{conversation_id}/events")
    async def events(
        conversation_id: str,
        who: Principal = viewer,
        last_event_id: str | None = Header(None, max_length=40, description="TURN:OFFSET of the last event read."),
        after: str | None = Query(
            None,
            max_length=40,
            description="Where a new stream starts (TURN:end: after turn TURN); Last-Event-ID wins.",
        ),
    ) -> Response:
        try:
            position = Position.after(last_event_id if last_event_id is not None else after)
        except ValueError as exc:
            raise InvalidRequest(str(exc), "last-event-id") from None
        conv = conversations._handle(conversation_id)
        with _translated(conversation_id):
            await conv.describe()  # 404 for an unknown conversation, before the stream starts
        give_back = slots.take(who)
        return SlotStream(
            with_keepalives(_frames(conv, position), keepalive_seconds, lifetime, RECONNECT_MS),
            give_back,
            media_type="text/event-stream",
            headers={"cache-control": "no-cache", "x-accel-buffering": "no"},
        )


async def _frames(conv: object, after: Position) -> AsyncIterator[StreamEvent]:
    async for id, event in conversation_events(conv, after):  # type: ignore[arg-type]
        yield event.type, event.model_dump(mode="json", exclude={"type"}), id  # type: ignore[misc]
    yield "end", {"conversation_id": conv.conversation_id}  # type: ignore[attr-defined]
