"""Observability: the worker's Prometheus metrics, JSON logs with run id and step, and OpenTelemetry traces
that follow a run from the client through the workflow into its activities."""

from __future__ import annotations

import gc
import io
import json
import logging
import socket
import sys
import urllib.request
import uuid
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from temporalio import activity, workflow
from temporalio.client import WorkflowExecutionStatus
from temporalio.testing import WorkflowEnvironment

from duragent._activities.inputs import AgentResult
from duragent._client import AgentClient
from duragent._config import observability
from duragent._config.settings import Settings
from duragent._connection import connect
from duragent._ops.devstack.worker_process import WorkerProcess
from duragent._stores.ledger import EffectsLedger
from duragent._workflows.inputs import AgentInput
from tests.conftest import eventually, new_worker
from tests.temporal.test_approvals import pending_of, start


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def settings_for(env: WorkflowEnvironment, tmp_path: Path, task_queue: str) -> Settings:
    return Settings(
        address=env.client.service_client.config.target_host,
        namespace=env.client.namespace,
        task_queue=task_queue,
        ledger_path=tmp_path / "ledger.db",
    )


def scrape(url: str) -> str:
    with urllib.request.urlopen(url, timeout=5) as response:
        return response.read().decode()


def json_lines(lines: list[str]) -> list[dict[str, Any]]:
    parsed = []
    for line in lines:
        if line.startswith("{"):
            parsed.append(json.loads(line))  # every JSON-looking line must be whole JSON
    return parsed


async def test_worker_process_metrics_logs_and_traces(dev_env: WorkflowEnvironment, tmp_path: Path) -> None:
    """`python worker.py` with AGENT_METRICS_ADDRESS, AGENT_LOG_FORMAT=json and AGENT_OTEL=1: one billing run,
    then /metrics is scraped over HTTP and the worker's output is read line by line."""
    task_queue = f"tq-obs-{uuid.uuid4().hex[:8]}"
    settings = settings_for(dev_env, tmp_path, task_queue)
    port = free_port()
    extra = {"AGENT_METRICS_ADDRESS": f"127.0.0.1:{port}", "AGENT_LOG_FORMAT": "json", "AGENT_OTEL": "1"}
    worker = WorkerProcess(settings, extra_env=extra | {"LOG_LEVEL": "INFO"}).wait_ready()
    try:
        assert any(f"metrics=http://127.0.0.1:{port}/metrics" in line for line in worker.output)
        run_id = f"obs-{uuid.uuid4().hex[:8]}"
        handle = (
            await AgentClient(dev_env.client, task_queue=settings.task_queue).start("billing", run_id=run_id)
        ).workflow
        result: AgentResult = await handle.result()
        assert result.stop.value == "answered"

        metrics_url = f"http://127.0.0.1:{port}/metrics"
        wanted = ("temporal_workflow_completed", "temporal_activity_execution_latency")

        def exported() -> bool:
            text = scrape(metrics_url)
            ours = [line for line in text.splitlines() if f'task_queue="{task_queue}"' in line]
            return all(any(line.startswith(name) for line in ours) for name in wanted)

        await eventually(exported, timeout=20, what="the run's metrics on /metrics")
        text = scrape(metrics_url)
        completed = [
            line
            for line in text.splitlines()
            if line.startswith("temporal_workflow_completed") and f'task_queue="{task_queue}"' in line
        ]
        assert completed and float(completed[0].rsplit(" ", 1)[1]) >= 1
        assert 'activity_type="run_tool"' in text and 'activity_type="call_model"' in text
    finally:
        assert worker.stop() == 0

    records = json_lines(worker.output)
    ours = [r for r in records if r.get("run_id") == handle.id]
    by_message: dict[str, dict[str, Any]] = {}
    for r in ours:
        by_message.setdefault(r["message"], r)  # the first of each
    assert [r["step"] for r in ours if r["message"] == "model call started"] == [1, 2]
    started, finished = by_message["model call started"], by_message["model call finished"]
    assert started["step"] == 1 and started["activity_type"] == "call_model" and started["attempt"] == 1
    assert finished["duration_ms"] >= 0 and finished["input_tokens"] > 0
    tool = by_message["tool call finished"]
    assert tool["tool"] == "charge" and tool["status"] == "ok"
    # the idempotency key the ledger records: the run and the runner's identity of the call (step 1, call 1)
    assert tool["call_id"] == "1.1" and tool["key"] == f"{handle.id}:1.1"
    assert tool["workflow_run_id"] == by_message["run started"]["workflow_run_id"]
    assert by_message["run finished"]["status"] == "completed" and by_message["run finished"]["stop"] == "answered"
    assert {r["level"] for r in ours} == {"info"}
    # Log lines name calls and keys; they never carry arguments (the payload codec's business).
    assert not [r for r in ours if "inv-9:attempt-1" in json.dumps(r)]

    # AGENT_OTEL=1 with no OTLP exporter installed: spans as JSON lines on stderr, one per activity run.
    spans = [r for r in records if "context" in r and "name" in r]
    run_spans = [s for s in spans if s["attributes"].get("temporalWorkflowID") == handle.id]
    assert {"RunActivity:call_model", "RunActivity:run_tool"} <= {s["name"] for s in run_spans}


async def test_tracing_follows_a_run_from_client_to_activities(dev_env: WorkflowEnvironment, tmp_path: Path) -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    task_queue = f"tq-trace-{uuid.uuid4().hex[:8]}"
    settings = settings_for(dev_env, tmp_path, task_queue)
    # Given to connect(), the interceptor applies to the client and to every worker built on it.
    client = await connect(settings, interceptors=[observability.tracing_interceptor(provider)])
    async with new_worker(client, task_queue, EffectsLedger(settings.ledger_path)):
        handle = (await AgentClient(client).start("billing", run_id=f"trace-{uuid.uuid4().hex[:8]}")).workflow
        await handle.result()

    spans = [s for s in exporter.get_finished_spans() if s.attributes.get("temporalWorkflowID") == handle.id]
    names = [s.name for s in spans]
    assert {
        "StartWorkflow:AgentWorkflow",
        "RunWorkflow:AgentWorkflow",
        "StartActivity:call_model",
        "RunActivity:call_model",
        "StartActivity:run_tool",
        "RunActivity:run_tool",
        "CompleteWorkflow:AgentWorkflow",
    } <= set(names)
    assert names.count("RunActivity:call_model") == 2  # billing: a model call, the charge, a model call
    assert len({s.context.trace_id for s in spans}) == 1  # one trace, propagated through Temporal headers
    by_id = {s.context.span_id: s for s in spans}
    run_tool = next(s for s in spans if s.name == "RunActivity:run_tool")
    assert run_tool.parent is not None and by_id[run_tool.parent.span_id].name == "StartActivity:run_tool"
    root = next(s for s in spans if s.name == "StartWorkflow:AgentWorkflow")
    assert root.parent is None


def test_json_formatter_fields_and_configuration() -> None:
    formatter = observability.JsonFormatter()
    record = logging.makeLogRecord(
        {
            "name": "temporalio.activity",
            "levelno": logging.INFO,
            "levelname": "INFO",
            "msg": "model call %s",
            "args": ("started",),
            "temporal_activity": {
                "activity_id": "3",
                "activity_type": "call_model",
                "attempt": 2,
                "namespace": "default",
                "task_queue": "durable-agents",
                "workflow_id": "billing-1a2b",
                "workflow_run_id": "0199-run",
                "workflow_type": "AgentWorkflow",
            },
            "step": 3,
            "key": "billing-1a2b:call_2_1",
            "when": object(),  # not JSON: written as its str(), not an error
        }
    )
    entry = json.loads(formatter.format(record))
    assert entry["message"] == "model call started" and entry["level"] == "info"
    assert entry["run_id"] == "billing-1a2b" and entry["workflow_run_id"] == "0199-run"
    assert entry["step"] == 3 and entry["attempt"] == 2 and entry["activity_type"] == "call_model"
    assert entry["key"] == "billing-1a2b:call_2_1" and entry["when"].startswith("<object")
    assert "temporal_activity" not in entry and entry["ts"].endswith("+00:00")

    workflow_record = logging.makeLogRecord(
        {
            "msg": "run finished",
            "levelname": "INFO",
            "temporal_workflow": {"workflow_id": "trip-9", "run_id": "0199-wf", "attempt": 1, "workflow_type": "W"},
            "steps": 4,
        }
    )
    entry = json.loads(formatter.format(workflow_record))
    assert entry["run_id"] == "trip-9" and entry["workflow_run_id"] == "0199-wf" and entry["steps"] == 4

    try:
        raise ValueError("boom")
    except ValueError:
        import sys

        failing = logging.makeLogRecord({"msg": "failed", "levelname": "ERROR", "exc_info": sys.exc_info()})
    assert "ValueError: boom" in json.loads(formatter.format(failing))["exception"]

    # configure_logging: JSON lines through the root logger; the SDK's info-on-message suffix is dropped.
    root = logging.getLogger()
    saved = (list(root.handlers), root.level, workflow.logger.workflow_info_on_message)
    saved_activity = activity.logger.activity_info_on_message
    stream = io.StringIO()
    try:
        observability.configure_logging("json", "WARNING", stream)
        logging.getLogger("agents").info("hidden")
        logging.getLogger("agents").warning("shown", extra={"step": 7})
        assert [json.loads(line)["step"] for line in stream.getvalue().splitlines()] == [7]
        assert workflow.logger.workflow_info_on_message is False
        assert activity.logger.activity_info_on_message is False
        observability.configure_logging("text", "INFO", stream)
        try:
            observability.configure_logging("xml")
            raise AssertionError("expected ValueError")
        except ValueError as exc:
            assert "AGENT_LOG_FORMAT" in str(exc)
    finally:
        for handler in list(root.handlers):
            root.removeHandler(handler)
        for handler in saved[0]:
            root.addHandler(handler)
        root.setLevel(saved[1])
        workflow.logger.workflow_info_on_message = saved[2]
        activity.logger.activity_info_on_message = saved_activity

    with pytest.raises(ValueError, match="LOG_LEVEL='LOUD'"):
        observability.configure_logging("json", "LOUD")


async def test_a_run_dropped_from_a_stopped_workers_cache_logs_no_error(skipping_env, ledger, task_queue) -> None:
    """A worker stops while a run waits for an approval: the run is not over, and closing its coroutine
    (the garbage collector does, outside the workflow's event loop) must not be logged as an ending: that
    raised 'Not in workflow event loop' from the log interceptor, an exception nobody could catch."""
    escaped: list[BaseException | None] = []
    hook = sys.unraisablehook
    sys.unraisablehook = lambda unraisable: escaped.append(unraisable.exc_value)
    try:
        async with new_worker(skipping_env.client, task_queue, ledger):
            handle = await start(skipping_env, task_queue, AgentInput(agent="refund"))
            await pending_of(handle)
        gc.collect()
    finally:
        sys.unraisablehook = hook
    assert escaped == []
    assert (await handle.describe()).status is WorkflowExecutionStatus.RUNNING  # still waiting, nothing done
    assert ledger.effects(handle.id) == []
