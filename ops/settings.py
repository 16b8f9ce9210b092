"""Where the worker and the command line connect, and where local state lives — read from the environment
once, here. `TEMPORAL_TASK_QUEUE` is the single definition of the task queue name.

Connection security (docs/operations.md): `TEMPORAL_TLS_CERT` / `TEMPORAL_TLS_KEY` (client certificate and
key, PEM paths, for mTLS), `TEMPORAL_TLS_CA` (the server's CA, PEM path; default: the system roots),
`TEMPORAL_TLS_SERVER_NAME` (SNI / verification name), `TEMPORAL_API_KEY` (implies TLS), `TEMPORAL_TLS`
(`true` turns TLS on with none of the others). Encryption at rest: `AGENT_CODEC_KEYS` or
`AGENT_CODEC_KEY_FILE`. Stores shared by worker hosts: `AGENT_DATABASE_URL` (PostgreSQL; default: SQLite files in
the data directory). Observability: `AGENT_METRICS_ADDRESS`, `AGENT_OTEL`, `AGENT_LOG_FORMAT`, `LOG_LEVEL`.
The local model (`starter.py model-server`): `AGENT_LOCAL_MODEL_URL`, the worker's endpoint for it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

# Where the code is (to start `worker.py` as a process, to count lines); never a place for data.
ROOT = Path(__file__).resolve().parent.parent

# Where `starter.py model-server` listens by default (so where a worker looks for the local model), and
# the context window it gives the model.
LOCAL_MODEL_PORT = 8088
LOCAL_MODEL_N_CTX = 4096


def data_dir() -> Path:
    """Where local state lives (ledger, transcripts, the embedded server's database): `AGENT_DATA_DIR`,
    default `.data` under the working directory — never next to the source, which may be read-only."""
    return Path(_env("AGENT_DATA_DIR") or ".data")


def _env(name: str) -> str | None:
    """The variable's value, or None when unset or blank (compose passes `${X:-}` as an empty string)."""
    value = os.environ.get(name, "").strip()
    return value or None


def _env_path(name: str) -> Path | None:
    value = _env(name)
    return Path(value) if value else None


def _env_flag(name: str) -> bool | None:
    value = _env(name)
    if value is None:
        return None
    if value.lower() in ("1", "true", "yes", "on"):
        return True
    if value.lower() in ("0", "false", "no", "off"):
        return False
    raise ValueError(f"{name}={value!r}: expected true or false")


@dataclass(frozen=True)
class Settings:
    address: str = field(default_factory=lambda: os.environ.get("TEMPORAL_ADDRESS", "localhost:7233"))
    namespace: str = field(default_factory=lambda: os.environ.get("TEMPORAL_NAMESPACE", "default"))
    task_queue: str = field(default_factory=lambda: os.environ.get("TEMPORAL_TASK_QUEUE", "durable-agents"))
    data_dir: Path = field(default_factory=data_dir)
    ledger_path: Path = field(default_factory=lambda: Path(_env("AGENT_LEDGER") or data_dir() / "ledger.db"))
    # postgresql://user:password@host:port/db: the ledger and transcripts for every worker host (ops/stores.py).
    database_url: str | None = field(default_factory=lambda: _env("AGENT_DATABASE_URL"), repr=False)
    ui_url: str = field(default_factory=lambda: os.environ.get("TEMPORAL_UI_URL", "http://localhost:8233"))
    # -- connection security: see client.connect_options ------------------------------------------
    tls: bool | None = field(default_factory=lambda: _env_flag("TEMPORAL_TLS"))  # None: on when any below is set
    tls_cert: Path | None = field(default_factory=lambda: _env_path("TEMPORAL_TLS_CERT"))
    tls_key: Path | None = field(default_factory=lambda: _env_path("TEMPORAL_TLS_KEY"))
    tls_ca: Path | None = field(default_factory=lambda: _env_path("TEMPORAL_TLS_CA"))
    tls_server_name: str | None = field(default_factory=lambda: _env("TEMPORAL_TLS_SERVER_NAME"))
    api_key: str | None = field(default_factory=lambda: _env("TEMPORAL_API_KEY"), repr=False)
    # -- models the worker declares: see ops/models.py (a run names one; endpoints and keys stay here) ---
    local_model_url: str = field(
        default_factory=lambda: _env("AGENT_LOCAL_MODEL_URL") or f"http://127.0.0.1:{LOCAL_MODEL_PORT}/v1"
    )
    openai_api_key: str | None = field(default_factory=lambda: _env("OPENAI_API_KEY"), repr=False)
    openai_base_url: str | None = field(default_factory=lambda: _env("AGENT_OPENAI_BASE_URL"))
    # -- encryption at rest: see codec/ -----------------------------------------------------------
    codec_keys: str | None = field(default_factory=lambda: _env("AGENT_CODEC_KEYS"), repr=False)
    codec_key_file: Path | None = field(default_factory=lambda: _env_path("AGENT_CODEC_KEY_FILE"))
    # -- observability: see observability.py ------------------------------------------------------
    metrics_address: str | None = field(default_factory=lambda: _env("AGENT_METRICS_ADDRESS"))
    otel: bool = field(default_factory=lambda: bool(_env_flag("AGENT_OTEL")))
    log_format: str = field(default_factory=lambda: _env("AGENT_LOG_FORMAT") or "json")
    log_level: str = field(default_factory=lambda: _env("LOG_LEVEL") or "INFO")

    def run_url(self, run_id: str) -> str:
        return f"{self.ui_url}/namespaces/{self.namespace}/workflows/{run_id}"
