"""Webhooks on terminal states, through an outbox: the terminal write queues the delivery in the same
transaction, then whoever finished the run (or `job recover`) POSTs it with retries and backoff, and
every attempt is recorded in `webhook_attempts`. Delivery is at least once: receivers dedupe on
`X-Agent-Event-Id` (`<run id>:<n>`; `X-Baseline-Delivery` carries `<n>` as before).

Every delivery is signed (duragent/_config/webhook_signing.py: HMAC-SHA256 under `AGENT_WEBHOOK_SECRET`, with a
timestamp):
`job run --webhook` refuses to start without the secret, and a deliverer without it leaves the delivery
pending rather than send it unsigned. URLs are https, or http to a loopback host (a local relay) when the
operator allows loopback (`AGENT_WEBHOOK_ALLOW_LOOPBACK=1`); checked before a run starts and again, with the
host's addresses, before each delivery (duragent/_config/webhook_signing.py)."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from duragent._baseline.errors import BadInput
from duragent._baseline.store import Store, iso
from duragent._config.http_clients import tls_context
from duragent._config.settings import Settings
from duragent._config.webhook_signing import (
    SECRET_ENV,
    WebhookConfigError,
    host_addresses,
    load_secret,
    pinned,
    redact_url,
    resolved_problem,
    signed_headers,
    url_problem,
)

if TYPE_CHECKING:
    import httpx


@dataclass(frozen=True)
class Sender:
    """What a deliverer signs with, and whether its operator lets deliveries go to this machine (both from the
    deliverer's own settings, never from whoever started the run)."""

    secret: bytes
    allow_loopback: bool = False


ATTEMPTS = 5
BACKOFF_SECONDS = 0.5
TIMEOUT_SECONDS = 5.0
CLAIM_SECONDS = 120.0


def deliver_pending(
    store: Store,
    sender: Sender | None,
    run_id: str | None = None,
    *,
    attempts: int = ATTEMPTS,
    backoff: float = BACKOFF_SECONDS,
    timeout: float = TIMEOUT_SECONDS,
) -> int:
    """Deliver queued webhooks (of one run, or all), signed by `sender` (`deliverer`); returns how many were
    delivered now."""
    where, params = ("AND run_id = ?", (run_id,)) if run_id else ("", ())
    rows = store.query(f"SELECT * FROM webhooks WHERE status = 'pending' {where} ORDER BY id", params)
    if not rows:
        return 0  # most runs have no webhook: don't pay for an HTTP client
    if sender is None:
        for row in rows:  # stays pending: `job recover` with the secret delivers it
            _record(store, row, None, f"not sent: {SECRET_ENV} is not set here, and deliveries are signed")
        return 0
    # Imported here, when there is something to send: httpx also loads its command line's libraries (rich,
    # click, pygments), a fifth of a second at every start of `job`, whose runs mostly have no webhook.
    import httpx

    delivered = 0
    with httpx.Client(timeout=timeout, verify=tls_context()) as client:
        for row in rows:
            if _claim(store, row["id"]) and _deliver(store, client, row, sender, attempts, backoff):
                delivered += 1
    return delivered


def deliverer(settings: Settings) -> Sender | None:
    """How this process delivers: the secret it signs with and its loopback opt-in; None when it has no secret
    or an unusable one (its deliveries then stay pending: `job recover` with the secret delivers them)."""
    try:
        secret = load_secret(settings)
    except WebhookConfigError:
        return None
    return Sender(secret, settings.webhook_allow_loopback) if secret is not None else None


def check_webhook(url: str, settings: Settings) -> None:
    """Refuse, before a run starts, a webhook that could not be delivered safely."""
    try:
        if load_secret(settings) is None:
            raise WebhookConfigError(f"set {SECRET_ENV} (or {SECRET_ENV}_FILE): deliveries are signed with it")
    except WebhookConfigError as exc:
        raise BadInput(f"--webhook: {exc}") from None
    problem = url_problem(url, allow_loopback=settings.webhook_allow_loopback)
    if problem is not None:
        raise BadInput(f"--webhook: {problem}")


def _claim(store: Store, webhook_id: int) -> bool:
    """One deliverer at a time per webhook (the worker and a `job recover` may race)."""
    now = time.time()
    with store.transaction() as db:
        return bool(
            db.execute(
                "UPDATE webhooks SET claimed_until = ? WHERE id = ? AND status = 'pending' AND claimed_until < ?",
                (now + CLAIM_SECONDS, webhook_id, now),
            ).rowcount
        )


def _deliver(store: Store, client: httpx.Client, row: Any, sender: Sender, attempts: int, backoff: float) -> bool:
    import httpx  # already loaded by deliver_pending, which made the client

    body = row["payload"].encode() if isinstance(row["payload"], str) else bytes(row["payload"])
    event_id = f"{row['run_id']}:{row['id']}"
    refused = _refusal(row["url"], sender.allow_loopback)
    if refused is not None:  # never sent: a URL the operator does not allow is not retried either
        _record(store, row, None, refused)
        with store.transaction() as db:
            db.execute("UPDATE webhooks SET status = 'failed' WHERE id = ?", (row["id"],))
        return False
    for attempt in range(attempts):
        code: int | None = None
        headers = {"content-type": "application/json", "x-baseline-delivery": str(row["id"])}
        headers |= signed_headers(sender.secret, event_id, body)  # each attempt signed afresh: a fresh timestamp
        try:
            # Looked up and checked at each attempt, and sent to the address checked (never looked up again
            # by the client: a DNS answer rebound to this machine in between is never connected to).
            addresses = host_addresses(row["url"])
        except OSError:
            addresses = []
        problem = resolved_problem(addresses, allow_loopback=sender.allow_loopback) if addresses else None
        if problem is not None:
            _record(store, row, None, f"refused: {problem}")
            with store.transaction() as db:
                db.execute("UPDATE webhooks SET status = 'failed' WHERE id = ?", (row["id"],))
            return False
        try:
            if not addresses:
                raise httpx.ConnectError("its host does not resolve")
            target = pinned(row["url"], addresses[0])
            response = client.post(
                target.url, content=body, headers=headers | target.headers, extensions=target.extensions
            )
            code = response.status_code
            error = None if 200 <= code < 300 else f"HTTP {code}"
        except httpx.HTTPError as exc:
            error = f"{type(exc).__name__}: {exc}"
        _record(store, row, code, error)
        if error is None:
            return True
        if attempt + 1 < attempts:
            time.sleep(backoff * 2**attempt)
    with store.transaction() as db:
        db.execute("UPDATE webhooks SET status = 'failed' WHERE id = ?", (row["id"],))
    return False


def _refusal(url: str, allow: bool) -> str | None:
    problem = url_problem(url, allow_loopback=allow)
    if problem is None:
        try:
            problem = resolved_problem(host_addresses(url), allow_loopback=allow)
        except OSError:
            return None  # does not resolve (now): the attempts below fail and say so
    return f"refused: {problem}" if problem else None


def _record(store: Store, row: Any, code: int | None, error: str | None) -> None:
    with store.transaction() as db:
        attempt = db.execute(
            "UPDATE webhooks SET attempts = attempts + 1 WHERE id = ? RETURNING attempts", (row["id"],)
        ).fetchone()[0]
        db.execute(
            "INSERT INTO webhook_attempts(webhook_id, run_id, attempt, at, status_code, error)"
            " VALUES (?, ?, ?, ?, ?, ?)",
            (row["id"], row["run_id"], attempt, iso(), code, error),
        )
        if error is None:
            db.execute("UPDATE webhooks SET status = 'delivered', delivered_at = ? WHERE id = ?", (iso(), row["id"]))


def deliveries(store: Store, run_id: str) -> list[dict[str, Any]]:
    hooks = store.query("SELECT id, url, status, attempts, delivered_at FROM webhooks WHERE run_id = ?", (run_id,))
    tries = store.query(
        "SELECT webhook_id, attempt, at, status_code, error FROM webhook_attempts WHERE run_id = ? ORDER BY id",
        (run_id,),
    )
    return [dict(h) | {"history": [dict(t) for t in tries if t["webhook_id"] == h["id"]]} for h in hooks]


def undelivered(hook: dict[str, Any], run_id: str) -> str:
    """What to tell the person who ran `run_id` about a delivery (of `deliveries`) that did not happen."""
    last = hook["history"][-1]["error"] if hook["history"] else "no attempt yet"
    where = f"the webhook to {redact_url(hook['url'])}"
    if hook["status"] == "failed":
        tries = hook["attempts"]
        return f"{where} was not delivered: {tries} attempts, the last: {last} (`job status {run_id} --json`)"
    return f"{where} is not delivered yet ({last}); `job recover` delivers it"
