"""Signed webhooks: what every engine's deliveries send, and what a receiver checks.

A delivery carries three headers besides its JSON body:

- `X-Agent-Event-Id`: the event's id, the same on every retry of one event — receivers de-duplicate on it
  (delivery is at least once);
- `X-Agent-Timestamp`: when this attempt was signed, Unix seconds;
- `X-Agent-Signature`: `v1=` + hex HMAC-SHA256, under the shared secret, of `<timestamp>.<event id>.<body>`.

A receiver recomputes the signature (constant-time compare), rejects one older than a few minutes (a
replayed capture), and remembers event ids it has processed. The secret is `AGENT_WEBHOOK_SECRET` or the
file named by `AGENT_WEBHOOK_SECRET_FILE` (at least 16 characters; `openssl rand -hex 32`). Receivers in
Python can call `verify()`; elsewhere, three lines of HMAC.

Where deliveries may go: whoever starts a run chooses its URL, and the worker POSTs to it from
inside the operator's network, retrying for a day. So a URL is https, never to a link-local address (cloud
metadata), and never to this machine's loopback — unless the operator opts in with
`AGENT_WEBHOOK_ALLOW_LOOPBACK=1` (a local relay), in which case plain http to loopback is allowed too. The
host's addresses are checked again just before each delivery (`resolved_problem`): a name that resolves to
loopback is loopback. And the delivery connects to the address that was checked (`pinned`), never looking the
name up again: a DNS answer that changes between the check and the connect (DNS rebinding: public when checked,
127.0.0.1 when connecting) cannot move the POST onto this machine.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import socket
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from duragent._config.loopback import is_loopback
from duragent._config.secrets import value_or_file
from duragent._config.settings import Settings

SIGNATURE_HEADER = "X-Agent-Signature"
TIMESTAMP_HEADER = "X-Agent-Timestamp"
EVENT_ID_HEADER = "X-Agent-Event-Id"
SECRET_ENV = "AGENT_WEBHOOK_SECRET"
SECRET_FILE_ENV = "AGENT_WEBHOOK_SECRET_FILE"
ALLOW_LOOPBACK_ENV = "AGENT_WEBHOOK_ALLOW_LOOPBACK"
LOOPBACK_REFUSED = f"a loopback address is allowed only when the operator opts in ({ALLOW_LOOPBACK_ENV}=1)"
MIN_SECRET_CHARS = 16
TOLERANCE_SECONDS = 300
VERSION = "v1"
FAILURES = ("failed", "compensation_failed", "dead_letter")


class WebhookConfigError(ValueError):
    """The secret is missing, unreadable or too short. The message never contains it."""


class WebhookSignatureError(ValueError):
    """A delivery that does not verify: refuse it."""


def load_secret(settings: Settings) -> bytes | None:
    """The settings' webhook secret (`AGENT_WEBHOOK_SECRET` or its file), or None; WebhookConfigError if unusable."""
    found = value_or_file(
        settings.webhook_secret, settings.webhook_secret_file, SECRET_ENV, SECRET_FILE_ENV, WebhookConfigError
    )
    value = found[0].strip() if found else ""
    if not value:
        return None
    if len(value) < MIN_SECRET_CHARS:
        raise WebhookConfigError(f"the webhook secret must be at least {MIN_SECRET_CHARS} characters")
    return value.encode()


def url_problem(url: str, *, allow_loopback: bool = False) -> str | None:
    """Why deliveries cannot go to `url`, or None: https, not to a link-local address, and to loopback (where
    plain http is allowed too, for a local relay) only with `allow_loopback`. Checked before a run starts,
    by both engines, and again by whatever delivers, with the deliverer's own setting."""
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - a port out of range or not a number raises only when read (and at delivery)
    except ValueError as exc:  # "https://[::1/x": Invalid IPv6 URL
        return f"the URL cannot be parsed ({exc})"
    if parts.scheme not in ("https", "http"):
        return "the URL must be http(s)"
    if not parts.hostname:
        return "the URL has no host"
    local = is_loopback(parts.hostname.rstrip(".")) or any(
        _literal(parts.hostname, quality) for quality in ("is_loopback", "is_unspecified")
    )
    if _literal(parts.hostname, "is_link_local"):
        return "a link-local address (such as a cloud metadata service) is never a webhook target"
    if local and not allow_loopback:
        return LOOPBACK_REFUSED
    if parts.scheme == "http" and not local:
        return "use https (plain http only to a loopback host, e.g. a local relay, when the operator allows it)"
    return None


def resolved_problem(addresses: Iterable[str], *, allow_loopback: bool = False) -> str | None:
    """Why deliveries cannot go to a host that resolves to `addresses` (checked just before each delivery):
    a name that resolves to loopback or a link-local address is refused as those addresses are."""
    for address in addresses:
        ip = _ip(address)
        if ip.is_link_local:
            return "its host resolves to a link-local address, never a webhook target"
        if (ip.is_loopback or ip.is_unspecified) and not allow_loopback:
            return f"its host resolves to this machine: {LOOPBACK_REFUSED}"
    return None


def host_addresses(url: str) -> list[str]:
    """The addresses `url`'s host resolves to (OSError when it does not resolve: the delivery fails)."""
    parts = urlsplit(url)
    infos = socket.getaddrinfo(parts.hostname or "", parts.port or 443, type=socket.SOCK_STREAM)
    return sorted({str(info[4][0]) for info in infos})


@dataclass(frozen=True)
class PinnedTarget:
    """A delivery aimed at one checked address: POST to `url` with `headers` and `extensions` (httpx's)."""

    url: str
    headers: dict[str, str] = field(default_factory=dict)
    extensions: dict[str, Any] = field(default_factory=dict)


def pinned(url: str, address: str) -> PinnedTarget:
    """`url` aimed at `address` — one its host resolved to, checked with `resolved_problem` — so that the
    connection goes there and nowhere else: no second lookup whose answer could differ. The server still sees
    its own name: in the Host header and, over https, in TLS (SNI, and the certificate is checked against it)."""
    parts = urlsplit(url)
    ip = _ip(address)
    literal = f"[{ip}]" if ip.version == 6 else str(ip)
    userinfo, _, host_and_port = parts.netloc.rpartition("@")
    port = f":{parts.port}" if parts.port is not None else ""
    netloc = (f"{userinfo}@" if userinfo else "") + literal + port
    return PinnedTarget(
        url=urlunsplit(parts._replace(netloc=netloc)),
        headers={"host": host_and_port},
        extensions={"sni_hostname": parts.hostname} if parts.scheme == "https" and parts.hostname else {},
    )


def _literal(host: str, quality: str) -> bool:
    try:
        return bool(getattr(_ip(host.strip("[]")), quality))
    except ValueError:
        return False


def _ip(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    """An address as the kernel connects to it: `::ffff:127.0.0.1` is 127.0.0.1; a zone (`%eth0`) dropped."""
    ip = ipaddress.ip_address(text.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    return ip


def redact_url(url: str) -> str:
    """The URL without what may be a secret: no user:password, no query string, no fragment."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    netloc = f"{host}:{parts.port}" if parts.port else host
    redacted = urlunsplit((parts.scheme, netloc, parts.path, "", ""))
    return redacted + ("?…" if parts.query else "")


def terminal_event(status: str, stop: str | None) -> str:
    """The event a run's end is announced as: `run.cancelled` and `run.approval_expired` say why a run was
    abandoned; otherwise `run.<status>` (completed, compensated, abandoned, failed, compensation_failed...).
    A failure says so whatever stopped the run."""
    if stop in ("cancelled", "approval_expired") and status not in FAILURES:
        return f"run.{stop}"
    return f"run.{status}"


def signature(secret: bytes, timestamp: int, event_id: str, body: bytes) -> str:
    signed = f"{timestamp}.{event_id}.".encode() + body
    return f"{VERSION}=" + hmac.new(secret, signed, hashlib.sha256).hexdigest()


def signed_headers(secret: bytes, event_id: str, body: bytes, *, now: float | None = None) -> dict[str, str]:
    """The headers of one delivery attempt (sign each attempt: its timestamp is fresh)."""
    timestamp = int(time.time() if now is None else now)
    return {
        EVENT_ID_HEADER: event_id,
        TIMESTAMP_HEADER: str(timestamp),
        SIGNATURE_HEADER: signature(secret, timestamp, event_id, body),
    }


def verify(
    secret: bytes,
    headers: Mapping[str, str],
    body: bytes,
    *,
    tolerance: float = TOLERANCE_SECONDS,
    now: float | None = None,
) -> str:
    """The event id of a delivery that verifies; WebhookSignatureError otherwise."""
    lower = {k.lower(): v for k, v in headers.items()}
    try:
        event_id = lower[EVENT_ID_HEADER.lower()]
        given = lower[SIGNATURE_HEADER.lower()]
        timestamp = int(lower[TIMESTAMP_HEADER.lower()])
    except KeyError as exc:
        raise WebhookSignatureError(f"missing header {exc.args[0]}") from None
    except ValueError:
        raise WebhookSignatureError("the timestamp is not a number") from None
    if not hmac.compare_digest(given.encode(), signature(secret, timestamp, event_id, body).encode()):
        raise WebhookSignatureError("the signature does not match")
    age = (time.time() if now is None else now) - timestamp
    if abs(age) > tolerance:
        raise WebhookSignatureError(f"the delivery is too old (or too far ahead): {age:.0f} s")
    return event_id
