"""Where the worker and the command line connect, and where local state lives — read from the environment
once, here. `TEMPORAL_TASK_QUEUE` is the single definition of the task queue name.

The connection to Temporal is Temporal's own client configuration (`temporalio.envconfig`): the standard
`TEMPORAL_ADDRESS`, `TEMPORAL_NAMESPACE`, `TEMPORAL_API_KEY` (implies TLS), `TEMPORAL_TLS`,
`TEMPORAL_TLS_CLIENT_CERT_PATH` / `TEMPORAL_TLS_CLIENT_KEY_PATH` (mTLS), `TEMPORAL_TLS_SERVER_CA_CERT_PATH`,
`TEMPORAL_TLS_SERVER_NAME`, and TOML profiles (`TEMPORAL_CONFIG_FILE`, `TEMPORAL_PROFILE`) — what the
`temporal` CLI and every Temporal SDK read, so an existing Temporal configuration just works.
Worker Versioning: `TEMPORAL_DEPLOYMENT_NAME` and `TEMPORAL_WORKER_BUILD_ID` (the names the Temporal Worker
Controller injects; docs/operations.md, "Deploying a new version").
Encryption at rest: `AGENT_CODEC_KEYS` or `AGENT_CODEC_KEY_FILE`, `AGENT_CODEC_STRICT`. The workers' own seal
keys: `AGENT_WORKER_KEYS` or `AGENT_WORKER_KEYS_FILE` (duragent/_config/worker_keys.py). Stores shared by worker
hosts: `AGENT_DATABASE_URL` (PostgreSQL; default: SQLite files in the data directory). Worker tuning:
`AGENT_EAGER_ACTIVITIES`, `AGENT_RELEASE_STICKY_RUNS`. Observability: `AGENT_METRICS_ADDRESS`, `AGENT_OTEL`,
`AGENT_LOG_FORMAT`, `LOG_LEVEL`.
The local model (`starter.py model-server`): `AGENT_LOCAL_MODEL_URL`, the worker's endpoint for it.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from urllib.parse import quote

from temporalio.envconfig import ClientConfigProfile

from duragent._config.secrets import env_or_file

# The source checkout this code runs from, or None when installed (site-packages): the working directory of the
# worker processes the dev stack starts, so the repo's demo agents (`examples`) are found there, as they are by
# `python worker.py`; installed, those processes keep the caller's directory, where the caller's agents are.
# Never a place for data.
ROOT = Path(__file__).resolve().parents[2]
CHECKOUT: Path | None = ROOT if (ROOT / "pyproject.toml").is_file() and (ROOT / "worker.py").is_file() else None

# Where `starter.py model-server` listens by default (so where a worker looks for the local model), and
# the context window it gives the model.
LOCAL_MODEL_PORT = 8088
LOCAL_MODEL_N_CTX = 4096

# After a worker dies, its runs' next workflow tasks wait this long on its sticky queue (SDK default: 10 s).
# Here, not in worker.py, so the bench's bare floor worker uses it without importing our engine.
STICKY_TIMEOUT = timedelta(seconds=5)

# The runs API's bearer tokens (`name:role:token,...`; duragent/_ops/http/auth.py reads them when the API starts).
API_TOKENS_ENV = "AGENT_API_TOKENS"

# The task queue workers serve and clients start runs on, unless TEMPORAL_TASK_QUEUE or the caller says otherwise.
DEFAULT_TASK_QUEUE = "durable-agents"


def data_dir() -> Path:
    """Where local state lives (ledger, transcripts, the embedded server's database): `AGENT_DATA_DIR`,
    default `.data` under the working directory — never next to the source, which may be read-only."""
    return Path(_env("AGENT_DATA_DIR") or ".data")


def _env(name: str) -> str | None:
    """The variable's value, or None when unset or blank (compose passes `${X:-}` as an empty string)."""
    value = os.environ.get(name, "").strip()
    return value or None


def _env_secret(name: str) -> str | None:
    """A secret from `NAME`, or from the file `NAME_FILE` names (how container secrets arrive: compose mounts
    them under /run/secrets/); None when neither is set or the value is blank. Both set: ValueError."""
    found = env_or_file(os.environ, name, f"{name}_FILE", ValueError)
    return (found[0].strip() or None) if found else None


def _env_path(name: str) -> Path | None:
    value = _env(name)
    return Path(value) if value else None


def _env_list(name: str) -> tuple[str, ...]:
    """A comma-separated variable's items, blanks dropped."""
    return tuple(item.strip() for item in os.environ.get(name, "").split(",") if item.strip())


def _env_count(name: str, default: int) -> int:
    """A whole number >= 0 from `NAME`, `default` when unset; anything else: ValueError naming the variable."""
    value = _env(name)
    if value is None:
        return default
    if not value.isdigit():
        raise ValueError(f"{name}={value!r}: expected a whole number (0 or more)")
    return int(value)


def _env_flag(name: str) -> bool | None:
    value = _env(name)
    if value is None:
        return None
    if value.lower() in ("1", "true", "yes", "on"):
        return True
    if value.lower() in ("0", "false", "no", "off"):
        return False
    raise ValueError(f"{name}={value!r}: expected true or false")


# The variables Temporal's client configuration reads (besides a TOML file): listed for the docs and checks.
TEMPORAL_STANDARD = frozenset(
    {
        "TEMPORAL_ADDRESS",
        "TEMPORAL_NAMESPACE",
        "TEMPORAL_API_KEY",
        "TEMPORAL_TLS",
        "TEMPORAL_TLS_CLIENT_CERT_PATH",
        "TEMPORAL_TLS_CLIENT_KEY_PATH",
        "TEMPORAL_TLS_SERVER_CA_CERT_PATH",
        "TEMPORAL_TLS_SERVER_NAME",
        "TEMPORAL_CONFIG_FILE",
        "TEMPORAL_PROFILE",
    }
)

# Variable names this project read before it used Temporal's standard ones: named, not silently ignored.
_RENAMED = {
    "TEMPORAL_TLS_CERT": "TEMPORAL_TLS_CLIENT_CERT_PATH",
    "TEMPORAL_TLS_KEY": "TEMPORAL_TLS_CLIENT_KEY_PATH",
    "TEMPORAL_TLS_CA": "TEMPORAL_TLS_SERVER_CA_CERT_PATH",
}


def temporal_profile() -> ClientConfigProfile:
    """Temporal's client configuration: the TOML profile (`TEMPORAL_CONFIG_FILE`, `TEMPORAL_PROFILE`; the
    default file location when present) with the `TEMPORAL_*` environment variables on top."""
    for old, new in _RENAMED.items():
        if _env(old):
            raise ValueError(f"{old} is no longer read: set {new} (Temporal's standard name) instead")
    _env_flag("TEMPORAL_TLS")  # Temporal would take "maybe" as "on": refuse it instead
    try:
        return ClientConfigProfile.load(profile=_env("TEMPORAL_PROFILE"))
    except Exception as exc:  # the SDK's parser: a malformed TOML file or profile name
        raise ValueError(f"Temporal client configuration: {exc}") from None


DEFAULT_UI_URL = "http://localhost:8233"
_LOCAL_HOSTS = ("localhost", "127.0.0.1", "::1", "[::1]")


def ui_record(port: int, root: Path | None = None) -> Path:
    """Where `starter.py server` notes the Web UI of the server it runs on `port` (and removes it when the
    server stops), so that `run`, `watch` and `demo` link to the UI actually in use (`--ui-port`)."""
    return (root or data_dir()) / "temporal" / f"ui-{port}.json"


def recorded_ui_url(address: str, root: Path | None = None) -> str | None:
    """The Web UI URL `starter.py server` recorded for a local server at `address`, if that server still runs."""
    host, _, port = address.rpartition(":")
    if host not in _LOCAL_HOSTS or not port.isdigit():
        return None
    try:
        record = json.loads(ui_record(int(port), root).read_text())
        os.kill(int(record["pid"]), 0)  # a record left by a server that was killed is not the UI in use
        return str(record["ui_url"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


@dataclass(frozen=True)
class Settings:
    # Connection: from `temporal_profile()` unless given; see connection.py for how it becomes a client.
    temporal: ClientConfigProfile = field(default_factory=temporal_profile, repr=False)
    address: str = ""  # default: the profile's, else localhost:7233
    namespace: str = ""  # default: the profile's, else default
    task_queue: str = field(default_factory=lambda: os.environ.get("TEMPORAL_TASK_QUEUE", DEFAULT_TASK_QUEUE))
    data_dir: Path = field(default_factory=data_dir)
    ledger_path: Path = field(default_factory=lambda: Path(_env("AGENT_LEDGER") or data_dir() / "ledger.db"))
    # postgresql://user:password@host:port/db: the ledger and transcripts for every worker host
    # (duragent/_stores/configured.py).
    database_url: str | None = field(default_factory=lambda: _env("AGENT_DATABASE_URL"), repr=False)
    # The Web UI links printed: TEMPORAL_UI_URL, else the UI `starter.py server` runs for this address, else :8233.
    ui_url: str = field(default_factory=lambda: _env("TEMPORAL_UI_URL") or "")
    # -- connection security: the profile's unless given (duragent/_config/connection.py connect_options) --------
    tls: bool | None = None  # True/False force TLS on/off; None: as the profile says (an API key implies it)
    api_key: str | None = field(default=None, repr=False)
    # -- models the worker declares: see duragent/_config/models.py (a run names one; endpoints and keys stay here) ---
    local_model_url: str = field(
        default_factory=lambda: _env("AGENT_LOCAL_MODEL_URL") or f"http://127.0.0.1:{LOCAL_MODEL_PORT}/v1"
    )
    openai_api_key: str | None = field(default_factory=lambda: _env_secret("OPENAI_API_KEY"), repr=False)
    openai_base_url: str | None = field(default_factory=lambda: _env("AGENT_OPENAI_BASE_URL"))
    anthropic_api_key: str | None = field(default_factory=lambda: _env_secret("ANTHROPIC_API_KEY"), repr=False)
    anthropic_base_url: str | None = field(default_factory=lambda: _env("AGENT_ANTHROPIC_BASE_URL"))
    google_api_key: str | None = field(
        default_factory=lambda: _env_secret("GOOGLE_API_KEY") or _env_secret("GEMINI_API_KEY"), repr=False
    )
    google_base_url: str | None = field(default_factory=lambda: _env("AGENT_GOOGLE_BASE_URL"))
    # Bedrock signs each request (SigV4) with these; no other source of AWS credentials (profiles, instance roles)
    # is read: a worker's model keys are the ones its settings name.
    aws_access_key_id: str | None = field(default_factory=lambda: _env_secret("AWS_ACCESS_KEY_ID"), repr=False)
    aws_secret_access_key: str | None = field(default_factory=lambda: _env_secret("AWS_SECRET_ACCESS_KEY"), repr=False)
    aws_session_token: str | None = field(default_factory=lambda: _env_secret("AWS_SESSION_TOKEN"), repr=False)
    aws_region: str | None = field(default_factory=lambda: _env("AWS_REGION") or _env("AWS_DEFAULT_REGION"))
    bedrock_base_url: str | None = field(default_factory=lambda: _env("AGENT_BEDROCK_BASE_URL"))
    groq_api_key: str | None = field(default_factory=lambda: _env_secret("GROQ_API_KEY"), repr=False)
    groq_base_url: str | None = field(default_factory=lambda: _env("AGENT_GROQ_BASE_URL"))
    mistral_api_key: str | None = field(default_factory=lambda: _env_secret("MISTRAL_API_KEY"), repr=False)
    mistral_base_url: str | None = field(default_factory=lambda: _env("AGENT_MISTRAL_BASE_URL"))
    # -- signed approvals (agentic/signing.py): approvers' PUBLIC keys, `name=base64,...` or a file -------
    approver_keys: str | None = field(default_factory=lambda: _env("AGENT_APPROVER_KEYS"))
    approver_keys_file: Path | None = field(default_factory=lambda: _env_path("AGENT_APPROVER_KEYS_FILE"))
    # -- encryption at rest: see codec/ -----------------------------------------------------------
    codec_keys: str | None = field(default_factory=lambda: _env("AGENT_CODEC_KEYS"), repr=False)
    codec_key_file: Path | None = field(default_factory=lambda: _env_path("AGENT_CODEC_KEY_FILE"))
    # Refuse unencrypted payloads (once every writer has the keys): see duragent/_config/codec/aesgcm.py.
    codec_strict: bool = field(default_factory=lambda: bool(_env_flag("AGENT_CODEC_STRICT")))
    # -- Worker Versioning (duragent/_worker.py): both set, the worker serves this build of this deployment and
    # runs stay on the build they started on; both unset, an unversioned worker (any worker takes any task).
    deployment_name: str | None = field(default_factory=lambda: _env("TEMPORAL_DEPLOYMENT_NAME"))
    build_id: str | None = field(default_factory=lambda: _env("TEMPORAL_WORKER_BUILD_ID"))
    # -- worker tuning ------------------------------------------------------------------------------
    # true (default): a worker runs the activities its own workflow task schedules when it has a free slot,
    # saving a trip through the task queue; false: every activity goes through the queue to any worker.
    eager_activities: bool = field(default_factory=lambda: _env_flag("AGENT_EAGER_ACTIVITIES") is not False)
    # true (default): a worker that starts first moves the runs that are stepping off any worker's sticky queue, so
    # runs a killed worker was serving recover without waiting out STICKY_TIMEOUT (duragent/_sticky.py);
    # false: it does not (each worker start then costs no list and no requests, and other workers keep their
    # runs' cache entries).
    release_sticky_runs: bool = field(default_factory=lambda: _env_flag("AGENT_RELEASE_STICKY_RUNS") is not False)
    # The runs a worker keeps in memory between their workflow tasks (the SDK's sticky cache, `max_cached_workflows`):
    # a run past it is evicted and replayed from its history when its next task comes (docs/operations.md).
    max_cached_workflows: int = field(default_factory=lambda: _env_count("AGENT_MAX_CACHED_WORKFLOWS", 1000))
    # -- observability: see observability.py ------------------------------------------------------
    metrics_address: str | None = field(default_factory=lambda: _env("AGENT_METRICS_ADDRESS"))
    otel: bool = field(default_factory=lambda: bool(_env_flag("AGENT_OTEL")))
    log_format: str = field(default_factory=lambda: _env("AGENT_LOG_FORMAT") or "json")
    log_level: str = field(default_factory=lambda: _env("LOG_LEVEL") or "INFO")
    # -- read here rather than where they are used: secrets as given, checked where they are used ---
    # The agents modules when no --agents flag names one (duragent/_config/agent_modules.py).
    agent_modules: tuple[str, ...] = field(default_factory=lambda: _env_list("AGENT_MODULES"))
    # Signs webhook deliveries, value or file (duragent/_config/webhook_signing.py).
    webhook_secret: str | None = field(default_factory=lambda: _env("AGENT_WEBHOOK_SECRET"), repr=False)
    webhook_secret_file: Path | None = field(default_factory=lambda: _env_path("AGENT_WEBHOOK_SECRET_FILE"))
    # The workers' own HMAC keys, value or file: the agents' workflow code seals what it schedules, the activities
    # act only on a seal (duragent/_config/worker_keys.py). Unset: nothing is sealed or checked, as before.
    worker_keys: str | None = field(default_factory=lambda: _env("AGENT_WORKER_KEYS"), repr=False)
    worker_keys_file: Path | None = field(default_factory=lambda: _env_path("AGENT_WORKER_KEYS_FILE"))
    # Deliveries to this machine's loopback (a local relay): the operator's opt-in, never a run's.
    webhook_allow_loopback: bool = field(default_factory=lambda: bool(_env_flag("AGENT_WEBHOOK_ALLOW_LOOPBACK")))
    # The runs API (duragent/_ops/http/): its bearer tokens, and the approvers' PRIVATE keys it signs decisions with
    # (duragent/_config/approver_keys.py).
    api_tokens: str | None = field(default_factory=lambda: _env("AGENT_API_TOKENS"), repr=False)
    api_tokens_file: Path | None = field(default_factory=lambda: _env_path("AGENT_API_TOKENS_FILE"))
    api_approver_keys: str | None = field(default_factory=lambda: _env("AGENT_API_APPROVER_KEYS"), repr=False)
    api_approver_keys_file: Path | None = field(default_factory=lambda: _env_path("AGENT_API_APPROVER_KEYS_FILE"))
    # The codec endpoint (duragent/_ops/http/codec.py): its bearer token, Host names and the Web UI origins it answers.
    codec_auth_token: str | None = field(default_factory=lambda: _env("AGENT_CODEC_AUTH_TOKEN"), repr=False)
    codec_auth_token_file: Path | None = field(default_factory=lambda: _env_path("AGENT_CODEC_AUTH_TOKEN_FILE"))
    codec_allowed_hosts: tuple[str, ...] = field(default_factory=lambda: _env_list("AGENT_CODEC_ALLOWED_HOSTS"))
    codec_cors_origins: tuple[str, ...] = field(default_factory=lambda: _env_list("AGENT_CODEC_CORS_ORIGINS"))
    # An approver's own PRIVATE key, which `starter.py approve` signs with unless --key-file names one.
    approver_key_file: Path | None = field(default_factory=lambda: _env_path("AGENT_APPROVER_KEY_FILE"))

    @classmethod
    def from_env(cls) -> Settings:
        """The environment's settings, read now: the one place a program that passes no settings gets them.
        `DurableAgentsPlugin()`, `connect()`, `build_worker` on a client without the plugin, `replay` and
        `facts_for` default to it; everything below takes the settings it is given and never reads them again.
        Raises ValueError naming a malformed variable."""
        return cls()

    def __post_init__(self) -> None:
        profile = self.temporal
        # Given values win; else the profile's; else the defaults of a local dev server.
        object.__setattr__(self, "address", self.address or profile.address or "localhost:7233")
        object.__setattr__(self, "namespace", self.namespace or profile.namespace or "default")
        if self.api_key is None:
            object.__setattr__(self, "api_key", profile.api_key)
        if not self.ui_url:
            ui_url = recorded_ui_url(self.address, self.data_dir) or DEFAULT_UI_URL
            object.__setattr__(self, "ui_url", ui_url)  # frozen: set once, here
        object.__setattr__(self, "ui_url", self.ui_url.rstrip("/"))

    def run_url(self, run_id: str) -> str:
        return run_url(self.ui_url, self.namespace, run_id)


def run_url(ui_url: str, namespace: str, run_id: str) -> str:
    """A run's page in the Temporal Web UI at `ui_url`."""
    return f"{ui_url.rstrip('/')}/namespaces/{quote(namespace, safe='')}/workflows/{quote(run_id, safe='')}"
