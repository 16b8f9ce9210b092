"""A decision reaches its run as one workflow task — the update (or, with no worker, the signal) — and no query.

`RunHandle.decide` picks the call from what the run published (its history), not from its `approvals` query:
a query followed at once by the update, both for a run the worker has evicted while its cache is full, can
wedge the worker in SDK core (docs/benchmarks-history.md, "A worker wedged on one run"). Counted here by the worker
itself: an interceptor sees every query the workflow answers."""

from __future__ import annotations

import uuid
from typing import Any

from temporalio.worker import (
    HandleQueryInput,
    Interceptor,
    WorkflowInboundInterceptor,
    WorkflowInterceptorClassInput,
)

from duragent._client import AgentClient
from tests.conftest import new_worker


class CountQueries(Interceptor):
    def __init__(self) -> None:
        self.queries: list[str] = []

    def workflow_interceptor_class(self, input: WorkflowInterceptorClassInput) -> type[WorkflowInboundInterceptor]:
        seen = self.queries

        class Inbound(WorkflowInboundInterceptor):
            def handle_query(self, input: HandleQueryInput) -> Any:
                seen.append(input.query)
                return super().handle_query(input)

        return Inbound


async def test_a_decision_sends_its_run_no_query(dev_env, ledger, task_queue) -> None:
    client = dev_env.client
    counted = CountQueries()
    async with new_worker(client, task_queue, ledger, approver_keys={}, interceptors=[counted]):
        agents = AgentClient(client, task_queue=task_queue)
        run = await agents.start("refund", run_id=f"decide-{uuid.uuid4().hex[:8]}")
        [asked] = await run.wait_for_approval()  # an approver looks: the query, as before
        assert "approvals" in counted.queries
        counted.queries.clear()

        outcome = await run.approve(by="maria")

        assert (outcome.via, outcome.call_id) == ("update", asked.call_id)
        assert counted.queries == []  # the call was picked from what the run published
        assert (await run.result()).status == "completed"
        assert len(ledger.effects(run.run_id)) == 1
