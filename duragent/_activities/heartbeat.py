"""Awaiting blocking work inside an activity while heartbeating, so a dead worker is noticed within the
heartbeat timeout (not the start-to-close timeout) and a cancellation reaches the work."""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
from collections.abc import Awaitable, Callable
from typing import ParamSpec, TypeVar

from temporalio import activity

T = TypeVar("T")
P = ParamSpec("P")
EVERY = 1.0  # seconds; the SDK throttles what it sends to 80 % of the heartbeat timeout


def in_thread(function: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> asyncio.Future[T]:
    """`asyncio.to_thread` without the task around it: the call in the default executor, in a copy of this
    context (the activity's: `activity.info()` works there). Every model and tool call takes this hop, and
    a task is one more object and one more event-loop step per call (docs/benchmarks.md, per step)."""
    call = functools.partial(contextvars.copy_context().run, function, *args, **kwargs)
    return asyncio.get_running_loop().run_in_executor(None, call)


async def heartbeating(work: Awaitable[T], on_cancel: Callable[[], None] | None = None) -> T:
    """Await `work`, heartbeating every `EVERY` seconds. On cancellation, `on_cancel` asks the work to stop
    and, when given, this waits until it has: a tool's effect must not land after its compensation started."""
    task = asyncio.ensure_future(work)  # a future (`in_thread`) as it is; a coroutine as a task
    loop = asyncio.get_running_loop()

    def beat() -> None:
        nonlocal timer
        activity.heartbeat()
        timer = loop.call_later(EVERY, beat)

    # A timer, not a polling loop: a call done within a second (most are) costs one handle, set and cancelled.
    # The callback runs in a copy of this context, so `activity.heartbeat()` knows its activity.
    timer = loop.call_later(EVERY, beat)
    try:
        # Shielded: a cancellation of this activity must reach the work through `on_cancel`, and be waited
        # for, never cancel the future (which would not stop a thread, only stop waiting for it).
        return await asyncio.shield(task)
    except asyncio.CancelledError:
        if on_cancel is not None:
            on_cancel()
            with contextlib.suppress(Exception):
                await asyncio.shield(task)
        raise
    finally:
        timer.cancel()
