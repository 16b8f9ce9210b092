"""The built-in scenarios, by name. Every runner looks them up here."""

from __future__ import annotations

from scenarios import billing, migration, refund, trip
from scenarios.base import Scenario, ScenarioDeps, ScenarioOptions, UnknownScenarioError

SCENARIOS: dict[str, Scenario] = {
    s.name: s for s in (billing.SCENARIO, migration.SCENARIO, refund.SCENARIO, trip.SCENARIO)
}


def register_scenario(scenario: Scenario, *, replace: bool = False) -> Scenario:
    """Add an agent of your own. Register it in the worker process (and in the starter, which validates
    names) before starting runs of it; its tools reach the worker's services through `ToolContext.deps`."""
    if scenario.name in SCENARIOS and not replace:
        raise ValueError(f"a scenario named {scenario.name!r} is already registered")
    SCENARIOS[scenario.name] = scenario
    return scenario


def get_scenario(name: str) -> Scenario:
    try:
        return SCENARIOS[name]
    except KeyError:
        raise UnknownScenarioError(
            f"unknown scenario {name!r}; choose one of: {', '.join(sorted(SCENARIOS))}"
        ) from None


__all__ = [
    "SCENARIOS",
    "Scenario",
    "ScenarioDeps",
    "ScenarioOptions",
    "UnknownScenarioError",
    "get_scenario",
    "register_scenario",
]
