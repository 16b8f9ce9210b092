"""`OrderRefund`: the application's business process, with an agent as its middle step — look the order up,
have the `orders` agent refund it (a human approves the refund; the wait may last days), then tell the
customer. Built on the public library only: `duragent.workflow.run_agent` runs the agent as a child workflow
of this one, with its approvals, idempotency keys, budget and saga intact.

    python starter.py order-refund A-1     # start it; approve with `python starter.py approve ...`
"""

from __future__ import annotations

from datetime import timedelta

from pydantic import BaseModel
from temporalio import workflow
from temporalio.common import RetryPolicy

with workflow.unsafe.imports_passed_through():
    from activities.orders import Notice, OrderActivities, UnknownOrder
    from duragent import ApprovalPolicy, Stop
    from duragent.workflow import run_agent

SERVICE_CALL = timedelta(seconds=30)
SERVICE_RETRY = RetryPolicy(maximum_interval=timedelta(seconds=30), non_retryable_error_types=[UnknownOrder])


class RefundRequest(BaseModel):
    order_id: str
    agent: str = "orders"  # the agent that refunds: examples/orders.py
    approval_hours: float = 24.0  # how long the refund waits for a human before it is given up


class RefundOutcome(BaseModel):
    order_id: str
    refunded: bool
    agent_run: str  # the agent's run: its trajectory, approvals and effects (`starter.py status RUN`)
    answer: str
    customer_notified: bool


@workflow.defn
class OrderRefund:
    @workflow.run
    async def run(self, request: RefundRequest) -> RefundOutcome:
        order = await workflow.execute_activity_method(
            OrderActivities.look_up_order,
            request.order_id,
            start_to_close_timeout=SERVICE_CALL,
            retry_policy=SERVICE_RETRY,
        )
        refund = await run_agent(
            request.agent,
            f"The customer of order {order.order_id} asks for a refund of ${order.amount:.2f}.",
            # Unapproved in time: the agent gives up and undoes what it did; this workflow tells no one.
            approvals=ApprovalPolicy(timeout_seconds=request.approval_hours * 3600, on_expire="abandon"),
        )
        refunded = refund.stop is Stop.ANSWERED
        notified = False
        if refunded:
            notified = await workflow.execute_activity_method(
                OrderActivities.notify_customer,
                Notice(order_id=order.order_id, text=refund.output or "Your order was refunded."),
                start_to_close_timeout=SERVICE_CALL,
                retry_policy=SERVICE_RETRY,
            )
        return RefundOutcome(
            order_id=order.order_id,
            refunded=refunded,
            agent_run=refund.run_id,
            answer=refund.output or refund.stop_detail or refund.stop.value,
            customer_notified=notified,
        )
