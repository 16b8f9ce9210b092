"""Webhooks on terminal states: when a run started with `webhook=URL` ends, it starts a notifier workflow
(`WebhookDelivery`, its child, abandoned on close) that delivers the event with retries and backoff.

Why a child workflow and not an activity at the end of the run: the run must close when it is done. An
activity would keep it open (and its result unavailable) for as long as the receiver is down; the child
runs on its own, for up to a day of retries, and can never fail or block the run. Its id is the run's id
plus `/webhook`, refused if reused: a run announces its end once.
"""

from __future__ import annotations

import contextlib
from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.common import RetryPolicy, WorkflowIDReusePolicy
from temporalio.exceptions import WorkflowAlreadyStartedError

with workflow.unsafe.imports_passed_through():
    from duragent._activities.inputs import WebhookDelivered, WebhookInput
    from duragent._activities.webhook import WebhookActivities
    from duragent._config.webhook_signing import redact_url, terminal_event

# A receiver down for a minute (or a day) still gets the event: 1 s, 2 s, 4 s... then every 60 s.
WEBHOOK_RETRY = RetryPolicy(
    initial_interval=timedelta(seconds=1),
    backoff_coefficient=2.0,
    maximum_interval=timedelta(seconds=60),
    non_retryable_error_types=["WebhookRejected"],
)
GIVE_UP_AFTER = timedelta(hours=24)


@workflow.defn(name="WebhookDelivery")
class WebhookWorkflow:
    @workflow.run
    async def run(self, input: WebhookInput) -> WebhookDelivered:
        return await workflow.execute_activity_method(
            WebhookActivities.deliver_webhook,
            input,
            start_to_close_timeout=timedelta(seconds=30),
            schedule_to_close_timeout=GIVE_UP_AFTER,
            retry_policy=WEBHOOK_RETRY,
            summary=f"{input.payload.get('event')} → {redact_url(input.url)}",
        )


async def announce(
    url: str | None, run_id: str, status: str, stop: str | None, output: str | None = None, error: str | None = None
) -> None:
    """From the run's workflow, as it ends: hand its terminal event to a notifier (no-op without a URL)."""
    if url is None:
        return
    event = terminal_event(status, stop)
    payload: dict[str, Any] = {
        "event": event,
        "run_id": run_id,
        "status": status,
        "stop": stop,
        "output": output,
        "error": error,
        "finished_at": workflow.now().isoformat(timespec="milliseconds"),
    }
    # Already announced (a reset run ending again) is fine: once is the contract.
    with contextlib.suppress(WorkflowAlreadyStartedError):
        await workflow.start_child_workflow(
            WebhookWorkflow.run,
            WebhookInput(url=url, event_id=f"{run_id}:{event}", payload=payload),
            id=f"{run_id}/webhook",
            id_reuse_policy=WorkflowIDReusePolicy.REJECT_DUPLICATE,
            parent_close_policy=workflow.ParentClosePolicy.ABANDON,
            static_summary=f"{event} of {run_id} → {redact_url(url)}",
        )
