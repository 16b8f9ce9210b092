"""How many steps a run will probably take, for `{step, total, label}` progress and percent complete.

Estimates only: the loop does not know its future. A run that outgrows its estimate raises the total;
a finished run is 100%.
"""

from __future__ import annotations

from collections.abc import Callable

from scenarios import ScenarioOptions

_TRIP_STEPS = {"none": 7, "flight": 2, "hotel": 5, "car": 8}  # loop actions + compensations

ESTIMATES: dict[str, Callable[[ScenarioOptions], int]] = {
    "billing": lambda o: 3,
    "refund": lambda o: 3,
    "migration": lambda o: 2 * o.records + 1,
    "trip": lambda o: _TRIP_STEPS[o.fail_at],
}


def planned_total(scenario: str, options: ScenarioOptions) -> int | None:
    estimate = ESTIMATES.get(scenario)
    return estimate(options) if estimate else None


def percent(done: int, total: int | None, finished: bool) -> float | None:
    if finished:
        return 100.0
    if not total:
        return None
    return round(min(99.0, 100.0 * done / total), 1)
