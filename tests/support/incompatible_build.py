"""`python -m tests.support.incompatible_build [worker.py's options]`: `python worker.py`, serving a build whose
`AgentWorkflow` starts a timer before anything else — a change to the workflow's commands that cannot replay a
history today's code wrote (the first command differs: a non-determinism error), made without
`workflow.patched`. The deploy test's build v2 (tests/ops/test_deploy.py); the product has no such knob.
"""

from __future__ import annotations

import sys
from datetime import timedelta

from pydantic import ValidationError
from temporalio import workflow
from temporalio.common import VersioningBehavior

import duragent._worker
from duragent._activities.inputs import AgentResult
from duragent._ops.cli.boundary import exit_now
from duragent._workflows.inputs import AgentInput
from duragent._workflows.versioned import PinnedAgentWorkflow, UpgradingWebhookWorkflow

# What the deploy test finds in a run's history to know this build ran it.
TIMER_SUMMARY = "build v2: a timer first"


@workflow.defn(
    name="AgentWorkflow",
    failure_exception_types=[ValidationError],
    sandboxed=False,
    versioning_behavior=VersioningBehavior.PINNED,
)
class TimerFirstAgentWorkflow(PinnedAgentWorkflow):
    @workflow.run
    async def run(self, input: AgentInput) -> AgentResult:
        await workflow.sleep(timedelta(milliseconds=1), summary=TIMER_SUMMARY)
        return await super().run(input)


def main(argv: list[str]) -> int:
    # build_worker registers these on a versioned worker: this build's AgentWorkflow in place of today's.
    duragent._worker.VERSIONED_WORKFLOWS = [TimerFirstAgentWorkflow, UpgradingWebhookWorkflow]
    import worker  # the real program, from the repository root (the working directory)

    return worker.main(argv)


if __name__ == "__main__":
    exit_now(main(sys.argv[1:]))
