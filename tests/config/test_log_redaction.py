"""Secrets in failures stay out of the logs (review M4): a real worker process on the dev server, whose tool
fails with a planted card number, whose model call fails with a planted provider reply, and whose second run
fails for good with a third secret. The worker's whole output (our JSON lines, the SDK's, the core's) holds
none of them at LOG_LEVEL=INFO — only the exception types — and all of them at LOG_LEVEL=DEBUG."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest
from temporalio.client import WorkflowFailureError
from temporalio.testing import WorkflowEnvironment

from activities.inputs import AgentResult
from durable_agents.client import AgentClient
from ops.devstack.worker_process import WorkerProcess
from tests.conftest import dev_settings
from tests.support.hostile_agents import SECRETS


async def run_both(env: WorkflowEnvironment, tmp_path: Path, level: str) -> list[str]:
    task_queue = f"tq-logs-{uuid.uuid4().hex[:8]}"
    settings = dev_settings(env, task_queue, tmp_path / level)
    extra = {"AGENT_MODULES": "tests.support.hostile_agents", "AGENT_LOG_FORMAT": "json", "LOG_LEVEL": level}
    worker = WorkerProcess(settings, extra_env=extra).wait_ready()
    client = AgentClient(env.client, task_queue=settings.task_queue)
    try:
        leaky = await client.start("t-leaky", run_id=f"leaky-{task_queue}")
        result: AgentResult = await leaky.workflow.result()
        assert result.stop.value == "answered" and result.output == "Done."
        fatal = await client.start("t-fatal", run_id=f"fatal-{task_queue}")
        with pytest.raises(WorkflowFailureError):
            await fatal.workflow.result()
    finally:
        assert worker.stop() == 0
    return worker.output


async def test_failures_log_their_types_not_their_messages(dev_env: WorkflowEnvironment, tmp_path: Path) -> None:
    output = await run_both(dev_env, tmp_path, "INFO")
    text = "".join(output)
    assert not [s for s in SECRETS if s in text], [line for line in output if any(s in line for s in SECRETS)]
    records = [json.loads(line) for line in output if line.startswith("{")]
    failed = [r for r in records if r["message"] == "Completing activity as failed"]
    assert len(failed) >= 2, text[-3000:]  # the tool's retry and the model's retry, at least
    kinds = {(r.get("error"), r.get("error_type")) for r in failed}
    assert ("ApplicationError", "ToolRetry") in kinds and ("ApplicationError", "RetryableModelError") in kinds
    assert not [r for r in failed if "exception" in r]  # no traceback text either
    ours = [r for r in records if r["message"] in ("tool call failed", "model call failed")]
    assert ours and all(r["error"] == "ApplicationError" for r in ours)


async def test_debug_logs_show_the_messages(dev_env: WorkflowEnvironment, tmp_path: Path) -> None:
    text = "".join(await run_both(dev_env, tmp_path, "DEBUG"))
    assert all(s in text for s in SECRETS[:2]), "at DEBUG the failures are logged whole, for whoever debugs"
