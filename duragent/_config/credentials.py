"""Every credential a worker holds, as text to keep out of what it reports (`agentic.scrub.Scrubber`): the
model key, the Temporal API key, the webhook secret, the codec keys and the database password. A provider's
error quoting any of them reaches history as `***`."""

from __future__ import annotations

from contextlib import suppress
from pathlib import Path
from urllib.parse import urlsplit

from agentic.scrub import Scrubber
from duragent._config.secrets import value_or_file
from duragent._config.settings import Settings


def worker_credentials(settings: Settings, webhook_secret: bytes | None = None) -> Scrubber:
    """A scrubber of the settings' secrets (and of `webhook_secret`, the one the worker signs with). A secret
    file that cannot be read adds nothing here: where the secret is used, that is reported as an error."""
    secrets: list[str | bytes | None] = [
        settings.openai_api_key,
        settings.anthropic_api_key,
        settings.google_api_key,
        settings.api_key,
        webhook_secret,
    ]
    secrets.append(_read(settings.webhook_secret, settings.webhook_secret_file))
    secrets += _codec_keys(_read(settings.codec_keys, settings.codec_key_file))
    if settings.database_url:
        with suppress(ValueError):  # a malformed URL is reported where the stores open it
            secrets.append(urlsplit(settings.database_url).password)
    return Scrubber(secrets)


def _read(value: str | None, path: Path | None) -> str | None:
    try:
        found = value_or_file(value, path, "value", "file", ValueError)
    except ValueError:
        return value
    return found[0] if found else None


def _codec_keys(text: str | None) -> list[str]:
    # `kid:base64key` entries, by commas or lines: the key ids are not secret, the keys are.
    entries = (entry for line in (text or "").splitlines() for entry in line.split("#", 1)[0].split(","))
    return [entry.partition(":")[2].strip() for entry in entries if ":" in entry]
