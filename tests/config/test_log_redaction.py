"""Secrets in failures stay out of the logs: a real worker process on the dev server, whose tool
fails with a planted card number, whose model call fails with a planted provider reply, and whose second run
fails for good with a third secret. The worker's whole output (our JSON lines, the SDK's, the core's) holds
none of them at LOG_LEVEL=INFO — only the exception types — and all of them at LOG_LEVEL=DEBUG. And the HTTP
clients' request lines: URLs without query or credentials below DEBUG."""

from __future__ import annotations

import importlib
import io
import json
import logging
import threading
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from temporalio.client import WorkflowFailureError
from temporalio.testing import WorkflowEnvironment

from duragent._activities.inputs import AgentResult
from duragent._client import AgentClient
from duragent._config.observability import configure_logging
from duragent._ops.devstack.worker_process import WorkerProcess
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


@pytest.mark.parametrize("client", ["httpx", "httpx2"])
@pytest.mark.parametrize("level", ["INFO", "DEBUG"])
def test_http_clients_log_urls_without_their_query_or_credentials(client: str, level: str) -> None:
    """httpx (webhooks) and httpx2 (the OpenAI SDK) log each request's URL at INFO; a token in a
    webhook's query string or user:password in its URL stays out of the log below DEBUG."""
    secret = f"WEBHOOK-SECRET-{uuid.uuid4().hex[:6]}"
    http = importlib.import_module(client)
    out = io.StringIO()
    root = logging.getLogger()
    saved = root.handlers[:], root.level
    server = ThreadingHTTPServer(("127.0.0.1", 0), Accepting)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        configure_logging("json", level, stream=out)
        url = f"http://hookuser:{secret}-pw@127.0.0.1:{server.server_address[1]}/hook?api_token={secret}"
        assert http.post(url, content=b"{}").status_code == 204
    finally:
        server.shutdown()
        server.server_close()
        root.handlers[:], _ = saved
        root.setLevel(saved[1])
    [line] = [json.loads(line) for line in out.getvalue().splitlines() if f'"logger": "{client}"' in line]
    if level == "INFO":
        assert secret not in out.getvalue(), out.getvalue()
        assert f"POST http://127.0.0.1:{server.server_address[1]}/hook?…" in line["message"]
    else:
        assert f"api_token={secret}" in line["message"]  # at DEBUG, whoever debugs sees it whole


class Accepting(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass
