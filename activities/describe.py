"""The first thing a run does: ask the worker for its agent's spec — a local activity, so the answer is
recorded in history (one marker, no extra round trip to the server) and a replay or a continuation uses
that record, never whatever the agent's code says at replay time.

It is also where a run that cannot work fails at once: an agent this worker does not serve, a model it
does not declare, options the agent's options model rejects.
"""

from __future__ import annotations

from temporalio import activity

from activities.inputs import DescribeInput
from activities.served import ServedAgents
from agentic.spec import AgentSpec


class DescribeActivities:
    def __init__(self, served: ServedAgents) -> None:
        self.served = served

    @activity.defn(name="describe_agent")
    async def describe_agent(self, input: DescribeInput) -> AgentSpec:
        served = self.served.get(input.agent)
        model = self.served.model(served, input.model)
        options = self.served.options(served, input.options)
        spec = served.agent.spec(options, model=input.model or model.name)
        return spec.model_copy(update={"approver_keys": self.served.approver_keys})
