"""A user's workflow importing `duragent.workflow` the plain way, with no `imports_passed_through` of its own: the
module keeps what it needs outside the sandbox itself. Two agent steps: the first id counted, the second given."""

from __future__ import annotations

from temporalio import workflow

from duragent.workflow import run_agent


@workflow.defn
class TwoSteps:
    @workflow.run
    async def run(self) -> list[str]:
        first = await run_agent("t-repeat", "Say it twice.")
        second = await run_agent("t-repeat", "Again.", id=f"chosen-{workflow.info().workflow_id}")
        return [first.run_id, second.run_id]
