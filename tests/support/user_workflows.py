"""A user's own workflow with an agent as its middle step, written against the public API only: look the
order up (an activity of the user's), run the `refund` agent (or `t-book-then-pay`) with `duragent.workflow`,
then notify the customer (another activity) — only if the agent answered."""

from __future__ import annotations

from datetime import timedelta

from pydantic import BaseModel
from temporalio import activity, workflow

with workflow.unsafe.imports_passed_through():
    from duragent import ApprovalPolicy, Stop
    from duragent.workflow import run_agent

NOTIFIED: list[str] = []  # what the user's notify activity sent, in this process


class Refunded(BaseModel):
    order_id: str
    agent_run: str
    stop: str
    output: str
    notified: bool


class RefundRequest(BaseModel):
    order_id: str
    agent: str = "refund"
    approval_days: float = 2.0
    on_expire: str = "continue"


@activity.defn
async def look_up_order(order_id: str) -> str:
    return f"order {order_id}"


@activity.defn
async def notify_customer(text: str) -> None:
    NOTIFIED.append(text)


@workflow.defn
class RefundThenNotify:
    @workflow.run
    async def run(self, request: RefundRequest) -> Refunded:
        order = await workflow.execute_activity(
            look_up_order, request.order_id, start_to_close_timeout=timedelta(seconds=30)
        )
        result = await run_agent(
            request.agent,
            f"Refund {order}",
            approvals=ApprovalPolicy(timeout_seconds=request.approval_days * 86400, on_expire=request.on_expire),
        )
        answered = result.stop is Stop.ANSWERED
        if answered:
            await workflow.execute_activity(
                notify_customer, f"{request.order_id}: {result.output}", start_to_close_timeout=timedelta(seconds=30)
            )
        return Refunded(
            order_id=request.order_id,
            agent_run=result.run_id,
            stop=result.stop.value,
            output=result.output or "",
            notified=answered,
        )
