"""`AgentSet`'s deps: one object for all agents, or a mapping by agent name whose every key names a served
agent (a typo is refused when the runner is built, naming the key and the agents served)."""

from __future__ import annotations

import pytest

from agentic import Agent, FakeModel, Registry
from agentic.agent_set import AgentSet


def agent(name: str) -> Agent:
    return Agent(FakeModel(["Done."]), Registry([]), name=name)


def test_a_typo_in_a_deps_key_is_refused_naming_it_and_the_served_agents() -> None:
    with pytest.raises(ValueError) as refused:
        AgentSet([agent("refunds"), agent("billing")], {"refundz": object()}, where="on task queue 'shop'")
    assert str(refused.value) == (
        "deps names no served agent: 'refundz' (served on task queue 'shop': billing, refunds); a mapping given "
        "as deps is by agent name: to give every agent the same dict, wrap it in an object"
    )


def test_some_agent_names_and_some_not_is_refused_too() -> None:
    with pytest.raises(ValueError, match=r"deps names no served agent: 'http' \(served: refunds\)"):
        AgentSet([agent("refunds")], {"refunds": object(), "http": object()})


def test_deps_by_name_reach_their_agent_and_one_object_reaches_all() -> None:
    services, shared = object(), object()
    by_name = AgentSet([agent("refunds"), agent("billing")], {"refunds": services})
    assert by_name.get("refunds").deps is services
    assert by_name.get("billing").deps is None  # missing from the mapping: the agent's own (none)
    one = AgentSet([agent("refunds"), agent("billing")], shared)
    assert one.get("refunds").deps is shared and one.get("billing").deps is shared
