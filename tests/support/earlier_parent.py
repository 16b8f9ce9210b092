"""An earlier execution under a parent's run id — what a reset leaves behind: it runs the child for call
`2.1` as its own child workflow, on the agents' task queue. The server's parent link then names the parent's
id, which is what lets the parent's later run attach to that child (duragent/_activities/delegation.py). (It waits for
the child: a parent that closes while its abandoned child runs leaves the time-skipping server unable to skip.)"""

from __future__ import annotations

from temporalio import workflow
from temporalio.common import WorkflowIDReusePolicy

with workflow.unsafe.imports_passed_through():
    from duragent._workflows.inputs import AgentInput


@workflow.defn(name="EarlierParent", sandboxed=False)
class EarlierParent:
    @workflow.run
    async def run(self, child_id: str, task_queue: str, child: AgentInput) -> None:
        await workflow.execute_child_workflow(
            "AgentWorkflow",
            child,
            id=child_id,
            task_queue=task_queue,
            id_reuse_policy=WorkflowIDReusePolicy.REJECT_DUPLICATE,
        )
