"""`AgentSet`: the agents a runner serves, by name, with their dependencies and the models a run may choose.

A durable runner (a Temporal worker, a `job` process) holds one, built once from what it was given —
never a module-global — and resolves every run's agent, model and options through it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from agentic.agent import Agent
from agentic.errors import AgenticError
from agentic.models.base import Model
from agentic.models.catalog import ModelCatalog


class UnknownAgent(AgenticError, LookupError):
    """A run named an agent this runner does not serve: bad input, never worth retrying."""


@dataclass(frozen=True)
class ServedAgent:
    agent: Agent
    deps: Any


class AgentSet:
    """`deps` is one object for every agent, or a mapping by agent name; an agent missing from it gets its
    own `Agent.deps`. A mapping is always by agent name, so each of its keys must name a served agent: a
    typo is an error here, not `deps=None` in a tool (a dict meant for every agent goes in an object, or under
    each agent's name). `where` names the runner in error messages (e.g. "on task queue 'agents'")."""

    def __init__(
        self,
        agents: Iterable[Agent],
        deps: Any = None,
        models: ModelCatalog | None = None,
        *,
        where: str = "",
        approver_keys: Mapping[str, str] | None = None,
    ) -> None:
        self._agents: dict[str, ServedAgent] = {}
        per_agent = deps if isinstance(deps, Mapping) else None
        for agent in agents:
            if agent.name is None:
                raise ValueError("an agent served durably needs a name: Agent(..., name='billing')")
            if agent.name in self._agents:
                raise ValueError(f"two served agents are named {agent.name!r}")
            own = per_agent.get(agent.name) if per_agent is not None else deps
            self._agents[agent.name] = ServedAgent(agent, agent.deps if own is None else own)
        self.models = models or ModelCatalog()
        self.where = where
        if per_agent is not None:
            self._check_deps_keys(per_agent)
        self._check_delegates()
        self._check_handoffs()
        # Whose signature makes a decision count (agentic.signing): the runner's configuration, never a run's.
        self.approver_keys = dict(approver_keys or {})

    def _check_deps_keys(self, per_agent: Mapping[Any, Any]) -> None:
        unknown = sorted(repr(key) for key in per_agent if key not in self._agents)
        if unknown:
            where = f" {self.where}" if self.where else ""
            raise ValueError(
                f"deps names no served agent: {', '.join(unknown)} (served{where}: {', '.join(self.names) or 'none'}); "
                "a mapping given as deps is by agent name: to give every agent the same dict, wrap it in an object"
            )

    def _check_delegates(self) -> None:
        """Every agent an agent delegates to must be served here too: its runs are started on the same task
        queue (a child workflow, or inline), so a missing one is a configuration error, said at once."""
        for served in self._agents.values():
            for declared in served.agent.registry:
                ref = declared.delegate
                if ref is not None and ref.agent not in self._agents:
                    where = f" {self.where}" if self.where else ""
                    raise ValueError(
                        f"agent {served.agent.label!r} delegates to {ref.agent!r} (tool {declared.name!r}), which is "
                        f"not served{where}: serve it too (agents=[..., {ref.agent}])"
                    )

    def _check_handoffs(self) -> None:
        """Every agent an agent may hand a run to must be served here too (a run's worker describes it), and
        able to take one: said at once, like a missing delegate."""
        for served in self._agents.values():
            try:
                served.agent.team(self.agent)
            except UnknownAgent as exc:
                raise ValueError(f"agent {served.agent.label!r} hands off to an agent not served: {exc}") from None

    @property
    def names(self) -> list[str]:
        return sorted(self._agents)

    def get(self, name: str) -> ServedAgent:
        served = self._agents.get(name)
        if served is None:
            where = f" (not served {self.where})" if self.where else ""
            raise UnknownAgent(f"unknown agent {name!r}{where}; served: {', '.join(self.names) or 'none'}")
        return served

    def agent(self, name: str) -> Agent:
        """The served agent named so (UnknownAgent): how a run's handoffs by name are found."""
        return self.get(name).agent

    def model(self, served: ServedAgent, name: str | None) -> Model:
        """The agent's own model, or the one the run chose by name among those declared (UnknownModel)."""
        return self.models.resolve(name) if name else served.agent.model

    @staticmethod
    def options(served: ServedAgent, raw: Mapping[str, Any] | None) -> BaseModel | None:
        """The run's options as the agent's options model (InvalidOptions)."""
        return served.agent.parse_options(raw)
