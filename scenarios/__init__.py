"""The built-in scenarios, by name. Every runner looks them up here."""

from __future__ import annotations

from scenarios import billing, migration, refund, trip
from scenarios.base import Scenario, ScenarioDeps, ScenarioOptions, UnknownScenarioError

SCENARIOS: dict[str, Scenario] = {
    s.name: s for s in (billing.SCENARIO, migration.SCENARIO, refund.SCENARIO, trip.SCENARIO)
}


def get_scenario(name: str) -> Scenario:
    try:
        return SCENARIOS[name]
    except KeyError:
        raise UnknownScenarioError(
            f"unknown scenario {name!r}; choose one of: {', '.join(sorted(SCENARIOS))}"
        ) from None


__all__ = ["SCENARIOS", "Scenario", "ScenarioDeps", "ScenarioOptions", "UnknownScenarioError", "get_scenario"]
