"""The worker's `AgentSet`, as the activities see it: a lookup that cannot succeed (an agent or model this
worker does not serve, options that do not validate, a model whose extra this worker lacks) is raised as a
non-retryable `ApplicationError`, so the run fails at once with the message instead of retrying a task."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from pydantic import BaseModel
from temporalio.exceptions import ApplicationError

from agentic import Model
from agentic.agent import InvalidOptions
from agentic.agent_set import AgentSet, ServedAgent, UnknownAgent
from agentic.extras import MissingExtra
from agentic.models.catalog import UnknownModel

T = TypeVar("T")

# Each rejection travels as an ApplicationError of this type; the workflow's retry policies name them.
_TYPES: dict[type[Exception], str] = {
    UnknownAgent: "UnknownAgent",
    UnknownModel: "UnknownModel",
    InvalidOptions: "InvalidOptions",
    MissingExtra: "MissingExtra",  # e.g. an `openai:` model on a worker installed without the `openai` extra
}


def _final(lookup: Callable[[], T]) -> T:
    try:
        return lookup()
    except (UnknownAgent, UnknownModel, InvalidOptions, MissingExtra) as exc:
        raise ApplicationError(str(exc), type=_TYPES[type(exc)], non_retryable=True) from None


class ServedAgents:
    def __init__(self, agents: AgentSet) -> None:
        self.agents = agents
        self.approver_keys = agents.approver_keys

    def get(self, name: str) -> ServedAgent:
        if not self.agents.names:  # the plugin reached this worker from its client, with no agents to serve
            raise ApplicationError(
                f"unknown agent {name!r}: the worker {self.agents.where} serves no agents; give them to its "
                "plugin: Worker(..., plugins=[DurableAgentsPlugin(agents=[...], deps=...)])",
                type="UnknownAgent",
                non_retryable=True,
            )
        return _final(lambda: self.agents.get(name))

    def model(self, served: ServedAgent, name: str | None) -> Model:
        return _final(lambda: self.agents.model(served, name))

    def options(self, served: ServedAgent, raw: Mapping[str, Any] | None) -> BaseModel | None:
        return _final(lambda: self.agents.options(served, raw))
