"""Awaiting blocking work inside an activity while heartbeating, so a dead worker is noticed within the
heartbeat timeout (not the start-to-close timeout) and a cancellation reaches the work."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import TypeVar

from temporalio import activity

T = TypeVar("T")
EVERY = 1.0  # seconds; the SDK throttles what it sends to 80 % of the heartbeat timeout


async def heartbeating(work: Awaitable[T], on_cancel: Callable[[], None] | None = None) -> T:
    """Await `work`, heartbeating. On cancellation, `on_cancel` asks the work to stop and, when given,
    this waits until it has: a tool's effect must not land after its compensation started."""
    task = asyncio.ensure_future(work)
    try:
        while True:
            done, _ = await asyncio.wait({task}, timeout=EVERY)
            if done:
                return task.result()
            activity.heartbeat()
    except asyncio.CancelledError:
        if on_cancel is not None:
            on_cancel()
            with contextlib.suppress(Exception):
                await asyncio.shield(task)
        raise
