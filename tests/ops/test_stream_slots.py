"""A stream's slot is given back however the stream ends: its events failing mid-stream (Temporal unreachable)
included — else four such streams would leave their principal 429 until the server restarts."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from duragent._ops.http.auth import Principal
from duragent._ops.http.errors import AtCapacity
from duragent._ops.http.streams import SlotStream, StreamSlots

OLGA = Principal("olga", "viewer")


async def _events_then_failure() -> AsyncIterator[str]:
    yield "event: progress\ndata: {}\n\n"
    raise RuntimeError("Temporal unreachable")


async def _stream_once(slots: StreamSlots) -> None:
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        await asyncio.sleep(3600)  # the client stays
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    response = SlotStream(_events_then_failure(), slots.take(OLGA), media_type="text/event-stream")
    scope = {"type": "http", "asgi": {"spec_version": "2.4"}, "method": "GET", "path": "/runs/r/events"}
    with pytest.raises(RuntimeError, match="Temporal unreachable"):
        await response(scope, receive, send)


def test_a_stream_whose_events_fail_gives_its_slot_back() -> None:
    slots = StreamSlots(per_principal=4)
    for _ in range(4):
        asyncio.run(_stream_once(slots))
    assert slots.held(OLGA) == 0
    slots.take(OLGA)  # and the principal may open another
    with pytest.raises(AtCapacity):
        for _ in range(4):
            slots.take(OLGA)
