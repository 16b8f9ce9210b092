"""Signed webhooks, the one module every engine's deliveries use: HMAC-SHA256 over the
timestamp, the event id and the body, under a shared secret; the receiver checks all three and the age."""

from __future__ import annotations

from pathlib import Path

import pytest

from duragent._config.settings import Settings
from duragent._config.webhook_signing import (
    EVENT_ID_HEADER,
    SIGNATURE_HEADER,
    TIMESTAMP_HEADER,
    WebhookConfigError,
    WebhookSignatureError,
    load_secret,
    signed_headers,
    verify,
)

SECRET = b"whsec-0123456789abcdef"
BODY = b'{"event": "run.completed", "run_id": "r1"}'


def test_a_signed_delivery_verifies_and_any_change_does_not() -> None:
    headers = signed_headers(SECRET, "r1:1", BODY, now=1_000_000)
    assert set(headers) == {SIGNATURE_HEADER, TIMESTAMP_HEADER, EVENT_ID_HEADER}
    assert headers[SIGNATURE_HEADER].startswith("v1=") and headers[TIMESTAMP_HEADER] == "1000000"
    lower = {k.lower(): v for k, v in headers.items()}  # HTTP header names are case-insensitive
    assert verify(SECRET, lower, BODY, now=1_000_010) == "r1:1"

    with pytest.raises(WebhookSignatureError, match="signature"):
        verify(SECRET, headers, BODY + b" ", now=1_000_010)
    with pytest.raises(WebhookSignatureError, match="signature"):
        verify(b"another-secret-0123456789", headers, BODY, now=1_000_010)
    with pytest.raises(WebhookSignatureError, match="signature"):
        verify(SECRET, headers | {EVENT_ID_HEADER: "r1:2"}, BODY, now=1_000_010)  # the id is signed too
    with pytest.raises(WebhookSignatureError, match="signature"):
        verify(SECRET, headers | {TIMESTAMP_HEADER: "1000005"}, BODY, now=1_000_010)
    with pytest.raises(WebhookSignatureError, match="old"):
        verify(SECRET, headers, BODY, now=1_000_000 + 301)  # a replay, after the tolerance
    with pytest.raises(WebhookSignatureError, match="missing"):
        verify(SECRET, {k: v for k, v in headers.items() if k != SIGNATURE_HEADER}, BODY, now=1_000_010)


def test_the_secret_comes_from_the_environment_or_a_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def secret(**environ: str) -> bytes | None:  # read as a process reads it: into Settings, once
        for name in ("AGENT_WEBHOOK_SECRET", "AGENT_WEBHOOK_SECRET_FILE"):
            monkeypatch.delenv(name, raising=False)
        for name, value in environ.items():
            monkeypatch.setenv(name, value)
        return load_secret(Settings.from_env())

    assert secret() is None
    assert secret(AGENT_WEBHOOK_SECRET="whsec-0123456789abcdef") == SECRET
    secret_file = tmp_path / "webhook.secret"
    secret_file.write_text("whsec-0123456789abcdef\n")
    assert secret(AGENT_WEBHOOK_SECRET_FILE=str(secret_file)) == SECRET
    with pytest.raises(WebhookConfigError, match="not both"):
        secret(AGENT_WEBHOOK_SECRET="whsec-0123456789abcdef", AGENT_WEBHOOK_SECRET_FILE=str(secret_file))
    with pytest.raises(WebhookConfigError, match="at least 16") as raised:
        secret(AGENT_WEBHOOK_SECRET="tooshort")
    assert "tooshort" not in str(raised.value)
    assert "tooshort" not in repr(Settings.from_env())  # nor in the settings' repr (logged at startup)
