"""Crash injection for the kill tests: `BASELINE_CRASH_AT=<point>:<step>[,<point>:<step>...]` makes the
process SIGKILL itself at that point of that step — no cleanup, no flush, exactly like `kill -9`."""

from __future__ import annotations

import os
import signal

ENV = "BASELINE_CRASH_AT"
POINTS = ("before_intent", "after_effect", "after_complete")


class CrashHook:
    def __init__(self, spec: str | None = None) -> None:
        self.points: set[tuple[str, int]] = set()
        for item in filter(None, (part.strip() for part in (spec or "").split(","))):
            point, _, step = item.rpartition(":")
            if point not in POINTS or not step.isdigit():
                raise ValueError(f"{ENV}: expected <point>:<step> with point one of {POINTS}, got {item!r}")
            self.points.add((point, int(step)))

    @classmethod
    def from_env(cls) -> CrashHook:
        return cls(os.environ.get(ENV))

    def at(self, point: str, step: int) -> None:
        if (point, step) in self.points:
            os.kill(os.getpid(), signal.SIGKILL)
