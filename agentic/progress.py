"""Percent complete, for `{step, total, label}` progress.

The total is the agent's own estimate (`Agent.estimate`: model calls + tool calls + compensations): the
loop does not know its future. A run that outgrows its estimate raises the total; a finished run is 100%.
"""

from __future__ import annotations


def percent(done: int, total: int | None, finished: bool) -> float | None:
    if finished:
        return 100.0
    if not total:
        return None
    return round(min(99.0, 100.0 * done / total), 1)
