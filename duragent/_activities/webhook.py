"""The webhook activity: POST one signed terminal-state event to a run's webhook URL.

Delivery is at least once: every attempt carries the same event id (receivers de-duplicate on it) and is
signed afresh (duragent/_config/webhook_signing.py), so its timestamp is current. The secret is worker configuration
(`AGENT_WEBHOOK_SECRET`), never run input: a worker without it keeps retrying — an unsigned delivery is
never sent — until one with it picks the attempt up.

A signature vouches that the worker sends the event, so the worker sends only events of its agents' runs:
the caller must be the notifier an `AgentWorkflow` on this task queue started for its own end (the server's
parent link, `{run_id}/webhook`, an event id of that run). A stranger's workflow cannot have the worker sign
a payload of its choosing.
"""

from __future__ import annotations

import json

from temporalio import activity
from temporalio.exceptions import ApplicationError

from duragent._activities.caller import agent_run_execution, calling_run, describe, refused
from duragent._activities.heartbeat import in_thread
from duragent._activities.inputs import WebhookDelivered, WebhookInput
from duragent._config.http_clients import tls_context
from duragent._config.webhook_signing import (
    SECRET_ENV,
    host_addresses,
    pinned,
    redact_url,
    resolved_problem,
    signed_headers,
    url_problem,
)

TIMEOUT_SECONDS = 10.0
NOTIFIER = "WebhookDelivery"  # the notifier workflow's type (duragent/_workflows/webhook.py)


class WebhookActivities:
    """`allow_loopback`: the operator's `AGENT_WEBHOOK_ALLOW_LOOPBACK`, decided here, where the POST is made —
    whoever starts a run chooses its URL, and any client can start a notifier workflow of its own."""

    def __init__(self, secret: bytes | None, *, timeout: float = TIMEOUT_SECONDS, allow_loopback: bool = False) -> None:
        self.secret = secret
        self.timeout = timeout
        self.allow_loopback = allow_loopback

    @activity.defn(name="deliver_webhook")
    async def deliver_webhook(self, input: WebhookInput) -> WebhookDelivered:
        await _announced_by_its_run(input)
        where = redact_url(input.url)  # messages end up in history and logs: no credentials, no query
        problem = url_problem(input.url, allow_loopback=self.allow_loopback)
        addresses: list[str] = []
        if problem is None:
            addresses = await _addresses(input.url)
            problem = resolved_problem(addresses, allow_loopback=self.allow_loopback)
        if problem is not None:
            raise ApplicationError(f"webhook {where}: {problem}", type="WebhookRejected", non_retryable=True)
        if self.secret is None:
            raise ApplicationError(
                f"not sent to {where}: {SECRET_ENV} is not set on this worker, and deliveries are signed",
                type="WebhookNotConfigured",
            )
        # Imported where a delivery is made: httpx also loads its command line's libraries (rich, click,
        # pygments), a fifth of a second at every start of every process that imports the workflows.
        import httpx

        if not addresses:  # the name does not resolve now: retried
            raise ApplicationError(f"webhook {where}: its host does not resolve", type="WebhookFailed")
        body = json.dumps(input.payload, sort_keys=True).encode()
        headers = {"content-type": "application/json"} | signed_headers(self.secret, input.event_id, body)
        # To the address just checked, not to the name again: a DNS answer that changed since (rebinding to
        # 127.0.0.1) is never connected to.
        target = pinned(input.url, addresses[0])
        try:
            async with httpx.AsyncClient(timeout=self.timeout, verify=tls_context()) as client:
                response = await client.post(
                    target.url, content=body, headers=headers | target.headers, extensions=target.extensions
                )
        except httpx.HTTPError as exc:
            raise ApplicationError(f"webhook {where}: {type(exc).__name__}", type="WebhookFailed") from None
        if not 200 <= response.status_code < 300:
            raise ApplicationError(f"webhook {where}: HTTP {response.status_code}", type="WebhookFailed")
        return WebhookDelivered(status_code=response.status_code, attempt=activity.info().attempt)


async def _addresses(url: str) -> list[str]:
    """What the URL's host resolves to now (none when it does not resolve: the POST then fails, retryably)."""
    try:
        return await in_thread(host_addresses, url)
    except OSError:
        return []


async def _announced_by_its_run(input: WebhookInput) -> None:
    """Refuses unless the caller is the notifier an agents' run started for this event of its own."""
    notifier = calling_run(workflow_type=NOTIFIER)
    run_id = str(input.payload.get("run_id", ""))
    described = await describe(notifier, activity.info().workflow_run_id)
    parent = described.raw_description.workflow_execution_info.parent_execution
    if notifier != f"{run_id}/webhook" or parent.workflow_id != run_id or not input.event_id.startswith(f"{run_id}:"):
        raise refused(f"{notifier!r} is not the notifier run {run_id!r} started for its own end; nothing was sent")
    agent_run_execution(await describe(parent.workflow_id, parent.run_id), parent.workflow_id)
