"""The first thing a run does: ask the worker for its agent's spec and the worker's engine options — a local
activity, so the answer is recorded in history (one marker, no extra round trip to the server) and a replay or
a continuation uses that record, never whatever the agent's code or the worker's configuration says at replay
time.

It is also where a run that cannot work fails at once: an agent this worker does not serve, a model it
does not declare, options the agent's options model rejects — and where a continuation proves it is one: the
run it names as its predecessor must be, by the server's account, an agents' run on this task queue that
continued as new (only the workflow's own code does that), never a run a client started with a forged
handover, nor a cron or retry run the server started from one.

Anyone may schedule it as a plain activity and read an agent's spec (its prompt, tools and flags, the
approvers' public keys): nothing in it grants anything.
"""

from __future__ import annotations

from temporalio import activity
from temporalio.client import WorkflowExecutionStatus

from duragent._activities.caller import agent_run_execution, describe, refused
from duragent._activities.inputs import DeclaredModels, DescribedAgent, DescribeInput, EngineOptions
from duragent._activities.served import ServedAgents


class DescribeActivities:
    def __init__(self, served: ServedAgents, engine: EngineOptions | None = None) -> None:
        self.served = served
        self.engine = engine or EngineOptions()

    @activity.defn(name="describe_agent")
    async def describe_agent(self, input: DescribeInput) -> DescribedAgent:
        if input.continued_from is not None:
            await _handed_over_by(input.continued_from)
        served = self.served.get(input.agent)
        model = self.served.model(served, input.model)
        options = self.served.options(served, input.options)
        # The agents it may hand the run to are this worker's too, by name: their specs come from here.
        spec = served.agent.spec(
            options, model=input.model or model.name, lookup=lambda name: self.served.get(name).agent
        )
        recorded = {
            "approver_keys": self.served.approver_keys,
            "engine": self.engine,
            "progress_by_time": True,
            "progress_by_work": True,
        }
        if input.with_models:
            names, prefixes = self.served.agents.models.declared()
            recorded["models"] = DeclaredModels(names=names, prefixes=prefixes)
        return DescribedAgent(**dict(spec) | recorded)


async def _handed_over_by(previous: str) -> None:
    """Refuses unless the calling run's predecessor `previous` is an agents' run that continued as new."""
    workflow_id = activity.info().workflow_id
    description = await describe(workflow_id, previous)
    agent_run_execution(description, workflow_id)
    if description.status != WorkflowExecutionStatus.CONTINUED_AS_NEW:
        ended = description.status.name.lower() if description.status else "unknown"
        raise refused(
            f"run {previous} of {workflow_id} ended {ended}; only a run that continued as new hands over `carry`"
        )
