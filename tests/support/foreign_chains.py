"""Workflows a foreign Temporal client registers under our workflow type, on a task queue of its own: whoever
reaches the frontend can do this. Started with a retry policy or a cron schedule, it makes a chain the *server*
continues (tests/ops/test_prune_chains.py)."""

from __future__ import annotations

from temporalio import workflow
from temporalio.exceptions import ApplicationError


@workflow.defn(name="AgentWorkflow")
class ForeignChain:
    @workflow.run
    async def run(self, fail_first: bool) -> str:
        if fail_first and workflow.info().attempt == 1:
            raise ApplicationError("the first attempt fails, so the server retries it")
        return "done"


@workflow.defn(name="AgentWorkflow")
class ForeignResult:
    """A stranger's `AgentWorkflow` that returns a list, not an `AgentResult`."""

    @workflow.run
    async def run(self, note: str) -> list[str]:
        return ["run_tool: REFUSED", note]
