"""The environment is read once, into `Settings`, at the entry points
— `worker.py`, `starter.py` and `job` through the CLI boundary's `load_settings`, a program through the
public conveniences that default to `Settings.from_env()` — and passed down. Library code never builds
`Settings` itself, and reads no variable directly but the few listed here, each for its reason."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from duragent._config.settings import ROOT, Settings

LIBRARY = ["duragent", "workflows", "activities", "baseline", "stores", "config", "agentic", "ops"]

# Where `Settings` may be built from the environment: the class itself and the command lines' boundary.
BUILDS_SETTINGS = {"duragent/_config/settings.py", "duragent/_ops/cli/boundary.py"}
# The public conveniences whose default, when a program passes no settings, is the environment's.
DEFAULTS_TO_THE_ENVIRONMENT = {
    "duragent/_plugin.py",  # DurableAgentsPlugin(): the README program's one read
    "duragent/_connection.py",  # connect()
    "duragent/_worker.py",  # build_worker on a client connected without the plugin
    "duragent/_conversations.py",  # a conversation's transcript store, on a client connected without the plugin
    "duragent/replay.py",  # replay()
    "duragent/testing.py",  # agent_server() (its stores then go to a scratch directory)
    "duragent/_stores/configured.py",  # facts_for(): an operator's program reading agents' memory
}
# Read where they are used, on purpose.
READS_THE_ENVIRONMENT = {
    "duragent/_config/settings.py": "the one place the product's configuration is read",
    "duragent/_ops/cli/boundary.py": (
        "AGENT_DEBUG: the error boundary needs it when the settings themselves fail to load"
    ),
    "duragent/_ops/devstack/worker_process.py": "hands this process's environment to a worker process it starts",
    "duragent/_config/credentials.py": (
        "what the agents' MCP servers read from the worker's environment when they connect, masked as they hold it"
    ),
    "duragent/_ops/retention/temporal.py": "a crash-injection point of the crash tests, not configuration",
    "duragent/_baseline/crash.py": "a crash-injection point of the crash tests, not configuration",
    "duragent/_config/observability.py": "OTEL_SERVICE_NAME, OpenTelemetry's own: we only avoid overriding it",
    "duragent/_stores/postgres/pool.py": "PGPASSWORD_FILE, beside the PG* variables libpq itself reads",
    "duragent/_ops/cli/compose_secrets.py": "OPENAI_API_KEY, copied once into its secret file by `make secrets`",
    "agentic/mcp/server.py": "the variables a program's MCPServer names, read where the tool runs",
}


def library_sources() -> dict[str, str]:
    return {
        str(path.relative_to(ROOT)): path.read_text()
        for package in LIBRARY
        for path in sorted((ROOT / package).rglob("*.py"))
    }


def files_matching(pattern: str) -> set[str]:
    found = re.compile(pattern)
    return {name for name, text in library_sources().items() if found.search(text)}


def test_library_code_builds_no_settings_of_its_own() -> None:
    assert files_matching(r"(?<!\w)Settings\(") <= BUILDS_SETTINGS
    assert files_matching(r"(?<!`)Settings\.from_env\(\)") - BUILDS_SETTINGS == DEFAULTS_TO_THE_ENVIRONMENT


def test_library_code_reads_no_variable_directly_but_these() -> None:
    assert files_matching(r"os\.environ|os\.getenv|environ\.get\(") == set(READS_THE_ENVIRONMENT)


def test_the_variables_once_read_where_used_are_read_into_settings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    secrets = {
        "AGENT_WEBHOOK_SECRET": "whsec-not-in-any-repr",
        "AGENT_API_TOKENS": "tok-not-in-any-repr=maria:approver",
        "AGENT_API_APPROVER_KEYS": "maria:not-in-any-repr",
        "AGENT_CODEC_AUTH_TOKEN": "codec-not-in-any-repr",
    }
    files = {
        "AGENT_WEBHOOK_SECRET_FILE": tmp_path / "webhook",
        "AGENT_API_TOKENS_FILE": tmp_path / "tokens",
        "AGENT_API_APPROVER_KEYS_FILE": tmp_path / "signing",
        "AGENT_APPROVER_KEY_FILE": tmp_path / "maria.key",
    }
    lists = {
        "AGENT_MODULES": "my.agents, more.agents",
        "AGENT_CODEC_ALLOWED_HOSTS": "codec.internal,",
        "AGENT_CODEC_CORS_ORIGINS": " https://ui.internal ",
    }
    for name, value in {**secrets, **{k: str(v) for k, v in files.items()}, **lists}.items():
        monkeypatch.setenv(name, value)
    settings = Settings.from_env()
    assert (settings.webhook_secret, settings.api_tokens) == ("whsec-not-in-any-repr", secrets["AGENT_API_TOKENS"])
    assert (settings.api_approver_keys, settings.codec_auth_token) == ("maria:not-in-any-repr", "codec-not-in-any-repr")
    assert (settings.webhook_secret_file, settings.api_tokens_file) == (
        files["AGENT_WEBHOOK_SECRET_FILE"],
        files["AGENT_API_TOKENS_FILE"],
    )
    assert settings.api_approver_keys_file == files["AGENT_API_APPROVER_KEYS_FILE"]
    assert settings.approver_key_file == files["AGENT_APPROVER_KEY_FILE"]
    assert settings.agent_modules == ("my.agents", "more.agents")
    assert (settings.codec_allowed_hosts, settings.codec_cors_origins) == (
        ("codec.internal",),
        ("https://ui.internal",),
    )
    assert not any(value in repr(settings) for value in secrets.values())

    for name in (*secrets, *files, *lists):  # blank is unset (compose passes `${X:-}` as an empty string)
        monkeypatch.setenv(name, " ")
    blank = Settings.from_env()
    assert blank.webhook_secret is blank.webhook_secret_file is blank.approver_key_file is None
    assert blank.agent_modules == blank.codec_cors_origins == ()
