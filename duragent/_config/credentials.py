"""Every credential a worker holds, as text to keep out of what it reports (`agentic.scrub.Scrubber`): the
model key, the Temporal API key, the webhook secret, the codec keys, the database password, the worker keys,
and what its agents' MCP servers are configured to read from its environment (a token, headers, a stdio
server's variables, a URL's password and query). A provider's or a server's error quoting any of them reaches
history as `***`."""

from __future__ import annotations

import os
from collections.abc import Iterable
from contextlib import suppress
from pathlib import Path
from urllib.parse import parse_qsl, urlsplit

from agentic import Agent
from agentic.mcp import MCPServer
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
        settings.aws_access_key_id,
        settings.aws_secret_access_key,
        settings.aws_session_token,
        settings.groq_api_key,
        settings.mistral_api_key,
        settings.api_key,
        webhook_secret,
    ]
    secrets.append(_read(settings.webhook_secret, settings.webhook_secret_file))
    secrets += _codec_keys(_read(settings.codec_keys, settings.codec_key_file))
    if settings.database_url:
        with suppress(ValueError):  # a malformed URL is reported where the stores open it
            secrets.append(urlsplit(settings.database_url).password)
    secrets += _worker_keys(_read(settings.worker_keys, settings.worker_keys_file))
    return Scrubber(secrets)


def mcp_credentials(agents: Iterable[Agent]) -> list[str]:
    """What the agents' MCP servers read from this worker's environment when they connect: the values of
    `token_env`, `headers_env`, `env_from`, and the password and query values of the URL in `url_env` — read
    now, as the process holds them."""
    secrets: list[str] = []
    for agent in agents:
        for server in agent.mcp:
            secrets += _server_secrets(server)
    return secrets


def _server_secrets(server: MCPServer) -> list[str]:
    named = [server.token_env, *server.headers_env.values(), *server.env_from]
    found = [os.environ.get(name or "", "").strip() for name in named]
    if server.url_env and (url := os.environ.get(server.url_env, "").strip()):
        with suppress(ValueError):
            parts = urlsplit(url)
            found += [parts.password or "", *(value for _, value in parse_qsl(parts.query))]
    return [secret for secret in found if secret]


def _read(value: str | None, path: Path | None) -> str | None:
    try:
        found = value_or_file(value, path, "value", "file", ValueError)
    except ValueError:
        return value
    return found[0] if found else None


def _worker_keys(text: str | None) -> list[str]:
    # Base64 keys by commas or lines, `#` comments (duragent/_config/worker_keys.py): each as it is written.
    return [entry.strip() for line in (text or "").splitlines() for entry in line.split("#", 1)[0].split(",")]


def _codec_keys(text: str | None) -> list[str]:
    # `kid:base64key` entries, by commas or lines: the key ids are not secret, the keys are.
    entries = (entry for line in (text or "").splitlines() for entry in line.split("#", 1)[0].split(","))
    return [entry.partition(":")[2].strip() for entry in entries if ":" in entry]
