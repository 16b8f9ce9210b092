"""How long an activity worked on a step, measured inside it: the time a run publishes its progress by
(duragent/_workflows/visibility.py). Not the workflow's clock, which also counts the wait for a worker slot, a retry's
backoff and the result's way back: under load those are most of a fast step's time."""

from __future__ import annotations

import time
from collections.abc import Awaitable
from typing import TypeVar

from duragent._activities.inputs import Worked

Step = TypeVar("Step", bound=Worked)


async def timed(work: Awaitable[Step]) -> Step:
    """`work`'s result, with the milliseconds from this call to its end (a failed attempt reports none)."""
    started = time.monotonic()
    step = await work
    return step.model_copy(update={"worked_ms": round((time.monotonic() - started) * 1000)})
