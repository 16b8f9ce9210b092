"""Logs, metrics and traces for the worker (docs/operations.md).

- Logs: JSON lines (`AGENT_LOG_FORMAT=json`, the default; `text` for people) on stderr. Workflow and
  activity code logs through `workflow.logger` / `activity.logger`, whose records carry the workflow and
  activity; `JsonFormatter` turns those into fields: `run_id` (our run id: the workflow id),
  `workflow_run_id` (Temporal's run id of this execution), `activity_type`, `attempt`, … plus every
  `extra=` field (`step`, `tool`, `key`, `status`, …). `duragent._run_logging.LoggingInterceptor` logs
  each model call, tool call and compensation (start and finish, with step / model / key / status) and each
  run's start and end. Arguments, results and error messages are never logged: they are what the payload
  codec encrypts.
  `RedactFailures` (on the handler `configure_logging` installs) enforces it for every logger, the SDK's
  included: an exception is logged as its type and Temporal error type, never its message or traceback,
  unless `LOG_LEVEL=DEBUG` (then whoever reads the logs sees everything). Likewise `RedactUrls` for the
  HTTP clients' request lines (httpx logs every request's URL at INFO): no credentials, no query string.
- The SDK core's own log lines (gRPC retries while the server is away, ...) are written by Rust code, in
  colour, straight to stderr unless routed: `worker_runtime` forwards them into Python logging (logger
  `temporalio.core`), so a JSON log stays JSON lines; the command lines drop them (`quiet_core_logs`) and
  say what is wrong in their own words.
- Metrics: the SDK's own (workflow/activity counters and latencies, poller and slot gauges, …) on a
  Prometheus endpoint, `AGENT_METRICS_ADDRESS=0.0.0.0:9464` → `http://HOST:9464/metrics`.
- Traces: `AGENT_OTEL=1` adds the SDK's OpenTelemetry `TracingInterceptor` (client → workflow → activity
  spans, propagated through Temporal headers). Spans go to OTLP if `opentelemetry-exporter-otlp` is
  installed (configured by the standard `OTEL_EXPORTER_OTLP_*` variables), otherwise to stderr as JSON lines.
"""

from __future__ import annotations

import json
import logging
import re
import sys
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, TextIO

from temporalio import activity, workflow
from temporalio.runtime import (
    LogForwardingConfig,
    LoggingConfig,
    PrometheusConfig,
    Runtime,
    TelemetryConfig,
    TelemetryFilter,
)

from agentic.extras import require_extra
from duragent._config.webhook_signing import redact_url

# -- logs -----------------------------------------------------------------------------------------

_STANDARD = set(logging.LogRecord("", 0, "", 0, "", (), None).__dict__) | {"message", "asctime", "taskName"}
# The SDK's logger details, renamed: in this project a run id is the workflow id.
_WORKFLOW_FIELDS = {
    "workflow_id": "run_id",
    "run_id": "workflow_run_id",
    "workflow_type": "workflow_type",
    "task_queue": "task_queue",
    "namespace": "namespace",
    "attempt": "workflow_task_attempt",
}
_ACTIVITY_FIELDS = {
    "workflow_id": "run_id",
    "workflow_run_id": "workflow_run_id",
    "workflow_type": "workflow_type",
    "activity_type": "activity_type",
    "activity_id": "activity_id",
    "attempt": "attempt",
    "task_queue": "task_queue",
    "namespace": "namespace",
}


class JsonFormatter(logging.Formatter):
    """One JSON object per line: ts, level, logger, message, the run's identity, and every extra field."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        details = record.__dict__
        for source, names in (("temporal_workflow", _WORKFLOW_FIELDS), ("temporal_activity", _ACTIVITY_FIELDS)):
            info = details.get(source)
            if isinstance(info, Mapping):
                entry.update({names[k]: v for k, v in info.items() if k in names})
        for key, value in details.items():
            if (
                key not in _STANDARD
                and key not in ("temporal_workflow", "temporal_activity", "temporal_log")
                and not key.startswith("_")
            ):
                entry[key] = value
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, default=str, ensure_ascii=False)


class RedactFailures(logging.Filter):
    """An exception in a log record becomes `error` (its class) and `error_type` (a Temporal
    ApplicationError's type): never its message or traceback, which carry tool outputs, provider replies and
    arguments — plaintext the payload codec keeps out of history. The SDK logs every failed
    activity with `exc_info`, and a few of its messages quote an error: those are cut."""

    QUOTED = (", original error: ",)

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info:
            exc = record.exc_info[1] if isinstance(record.exc_info, tuple) else None
            if exc is not None:
                record.__dict__.setdefault("error", type(exc).__name__)
                record.__dict__.setdefault("error_type", getattr(exc, "type", None))
            record.exc_info = None
            record.exc_text = None
        record.stack_info = None
        if record.name.startswith("temporalio"):
            message = record.getMessage()
            for marker in self.QUOTED:
                if marker in message:
                    record.msg, record.args = message.split(marker, 1)[0] + marker + "(redacted)", None
        return True


class RedactUrls(logging.Filter):
    """The HTTP clients' own lines (`HTTP Request: POST https://...`) with every URL redacted as everywhere
    else (`redact_url`: no user:password, no query string): a webhook's or an endpoint's URL may carry a
    token in its query, and httpx logs each request at INFO."""

    LOGGERS = ("httpx", "httpx2", "httpcore", "httpcore2")
    URL = re.compile(r"https?://[^\s\"'<>]+")

    def filter(self, record: logging.LogRecord) -> bool:
        if record.name.split(".", 1)[0] in self.LOGGERS:
            record.msg, record.args = self.URL.sub(lambda m: redact_url(m.group()), record.getMessage()), None
        return True


def configure_logging(log_format: str = "json", level: str = "INFO", stream: TextIO | None = None) -> None:
    """Replace the root logger's handlers with one that writes `log_format` ("json" or "text"); below DEBUG,
    exceptions are logged by type only (`RedactFailures`) and URLs the HTTP clients log without credentials or
    query (`RedactUrls`)."""
    if not isinstance(logging.getLevelName(level.upper()), int):
        raise ValueError(f"LOG_LEVEL={level!r}: expected DEBUG, INFO, WARNING, ERROR or CRITICAL")
    handler = logging.StreamHandler(stream or sys.stderr)
    if level.upper() != "DEBUG":
        handler.addFilter(RedactFailures())
        handler.addFilter(RedactUrls())
    if log_format == "json":
        handler.setFormatter(JsonFormatter())
        # The workflow/activity details are fields already; do not also append them to every message.
        workflow.logger.workflow_info_on_message = False
        activity.logger.activity_info_on_message = False
    elif log_format == "text":
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s %(message)s"))
    else:
        raise ValueError(f"AGENT_LOG_FORMAT={log_format!r}: expected json or text")
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level.upper())


# -- the SDK core's log lines, and metrics ----------------------------------------------------------

CORE_LOGGER = "temporalio.core"


def _core_logging(logger: logging.Logger) -> LoggingConfig:
    return LoggingConfig(
        filter=TelemetryFilter(core_level="WARN", other_level="ERROR"),
        forwarding=LogForwardingConfig(logger=logger),
    )


def worker_runtime(metrics_address: str | None = None) -> Runtime:
    """The worker's Temporal runtime: the core's log lines through Python logging (the configured format,
    JSON by default), and the SDK's metrics for Prometheus at http://ADDRESS/metrics when an address is given."""
    metrics = PrometheusConfig(bind_address=metrics_address) if metrics_address else None
    return Runtime(telemetry=TelemetryConfig(logging=_core_logging(logging.getLogger(CORE_LOGGER)), metrics=metrics))


def quiet_core_logs(show: bool = False) -> None:
    """For a command line, before its first client: the core's log lines go nowhere (or, with `show`, to
    stderr as plain lines). A retry warning printed over a progress bar tells a person nothing the command's
    own message does not say better."""
    # Not shown, not made: forwarding hands each line to Python from a thread of the core's, which takes the
    # GIL to do it — and a server that went away makes retry warnings until the end, interpreter shutdown
    # included, which is where a thread taking the GIL aborts the process (sdk-python issue 300).
    logging_config = None
    if show:
        logger = logging.getLogger(CORE_LOGGER)
        logger.propagate = False
        for old in list(logger.handlers):
            logger.removeHandler(old)
        logger.addHandler(logging.StreamHandler(sys.stderr))
        logging_config = _core_logging(logger)
    Runtime.set_default(Runtime(telemetry=TelemetryConfig(logging=logging_config)), error_if_already_set=False)


# -- traces ---------------------------------------------------------------------------------------

_provider: Any = None


def _exporter() -> tuple[Any, str]:
    try:
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter  # type: ignore

        return OTLPSpanExporter(), "otlp-grpc"
    except ImportError:
        pass
    try:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter  # type: ignore

        return OTLPSpanExporter(), "otlp-http"
    except ImportError:
        pass
    from opentelemetry.sdk.trace.export import ConsoleSpanExporter

    return ConsoleSpanExporter(out=sys.stderr, formatter=lambda span: span.to_json(indent=None) + "\n"), "console"


def install_tracing(exporter: Any = None) -> Any:
    """The process's tracer provider (created once, and made the global one): spans to `exporter`, or to
    OTLP when installed, else to stderr."""
    global _provider
    if _provider is not None:
        return _provider
    import os

    require_extra("otel")  # AGENT_OTEL_EXPORTER set on a worker without the extra: one line naming it

    from opentelemetry import trace
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor

    attributes = {} if os.environ.get("OTEL_SERVICE_NAME") else {"service.name": "durable-agents"}
    provider = TracerProvider(resource=Resource.create(attributes))
    kind = "given"
    if exporter is None:
        exporter, kind = _exporter()
    processor = BatchSpanProcessor(exporter) if kind.startswith("otlp") else SimpleSpanProcessor(exporter)
    provider.add_span_processor(processor)
    trace.set_tracer_provider(provider)
    _provider = provider
    logging.getLogger(__name__).info("tracing on", extra={"exporter": kind})
    return provider


def tracing_interceptor(provider: Any = None) -> Any:
    """The SDK's OpenTelemetry interceptor, on `provider` (default: `install_tracing()`). Given to
    `Client.connect`, it also applies to every worker built on that client."""
    require_extra("otel")  # the SDK's contrib module imports opentelemetry: say which extra first
    from temporalio.contrib.opentelemetry import TracingInterceptor

    provider = provider or install_tracing()
    return TracingInterceptor(tracer=provider.get_tracer("durable-agents"))


def shutdown_tracing() -> None:
    """Flush and stop the exporter (before the process exits)."""
    global _provider
    if _provider is not None:
        _provider.shutdown()
        _provider = None
