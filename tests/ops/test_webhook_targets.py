"""Where a webhook may go. Whoever starts a run chooses its URL, and the worker POSTs from inside the
operator's network for a day: so never to this machine's loopback unless the operator opts in
(`AGENT_WEBHOOK_ALLOW_LOOPBACK=1`), never to a link-local address, and a name that resolves to loopback is
loopback. The tests play the attacker — runs started with a loopback URL by a raw client, one behind a name
that hides 127.0.0.1, and a notifier workflow of the attacker's own (refused as no run's notifier before its URL
is looked at) — and count what a listener on loopback received.
A viewer sees that a delivery failed, never why (the per-port error was an oracle)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from temporalio.client import WorkflowExecutionStatus, WorkflowFailureError
from temporalio.exceptions import ActivityError, ApplicationError
from temporalio.testing import WorkflowEnvironment

from duragent._activities.inputs import WebhookInput
from duragent._client import AgentClient
from duragent._config.webhook_signing import ALLOW_LOOPBACK_ENV, resolved_problem, url_problem
from duragent._stores.ledger import EffectsLedger
from tests.conftest import new_worker
from tests.support.baseline_helpers import Job, free_port, open_job
from tests.support.baseline_helpers import eventually as poll
from tests.support.runs_api_stack import VIEWER, checkpoint_stack

# Processes of their own: `job` command lines, servers.
pytestmark = pytest.mark.system

SECRET = "whsec-test-0123456789abcdef"


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:8765/runs",
        "https://127.0.0.1:7233/",
        "http://localhost:8233/api/v1/namespaces",
        "https://localhost./x",
        "http://[::1]:9/x",
        "https://[::ffff:127.0.0.1]:9/x",
        "http://0.0.0.0:9/x",  # connects to this machine
    ],
)
def test_loopback_targets_need_the_operators_opt_in(url: str) -> None:
    assert url_problem(url) is not None and "AGENT_WEBHOOK_ALLOW_LOOPBACK" in (url_problem(url) or "")
    assert url_problem(url, allow_loopback=True) is None


@pytest.mark.parametrize("url", ["https://169.254.169.254/latest/meta-data/", "http://[fe80::1]/x"])
def test_link_local_targets_are_never_allowed(url: str) -> None:
    for allow in (False, True):
        assert "link-local" in (url_problem(url, allow_loopback=allow) or "")


def test_names_are_judged_by_what_they_resolve_to() -> None:
    assert url_problem("https://127.1:9/x") is None  # not an address literal: only resolving tells
    assert "resolves to this machine" in (resolved_problem(["127.0.0.1"]) or "")
    assert "resolves to this machine" in (resolved_problem(["93.184.215.14", "::1"]) or "")
    assert "link-local" in (resolved_problem(["169.254.169.254"], allow_loopback=True) or "")
    assert resolved_problem(["127.0.0.1"], allow_loopback=True) is None
    assert resolved_problem(["93.184.215.14"]) is None
    assert url_problem("http://hooks.example.com/x") is not None  # plain http off loopback: never


class Counting(BaseHTTPRequestHandler):
    """An internal service on loopback: what reaches it, the attacker made the worker send."""

    hits: list[str] = []

    def do_POST(self) -> None:
        self.hits.append(self.path)
        self.send_response(401)
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def internal_service() -> Iterator[int]:
    Counting.hits = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), Counting)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield int(server.server_address[1])
    server.shutdown()
    server.server_close()


async def test_a_worker_without_the_opt_in_posts_nothing_to_its_loopback(
    dev_env: WorkflowEnvironment,
    task_queue: str,
    ledger: EffectsLedger,
    internal_service: int,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(ALLOW_LOOPBACK_ENV, raising=False)
    client = dev_env.client
    async with new_worker(client, task_queue, ledger, webhook_secret=SECRET.encode()):
        # Runs started by a raw client (no API to refuse them) with a URL on the worker's loopback, one of them
        # behind a name that resolves to 127.0.0.1: their own notifiers are refused where the POST would be made.
        agents = AgentClient(client, task_queue=task_queue)
        runs = [
            await agents.start("billing", webhook=url)
            for url in (f"http://127.0.0.1:{internal_service}/runs", f"https://127.1:{internal_service}/x")
        ]
        for run in runs:
            assert (await run.result()).status == "completed"
            notifier = client.get_workflow_handle(f"{run.run_id}/webhook")
            # Bounded: a notifier that was let through retries its failing POST for a day (mutant M36 hung here
            # until pytest's timeout); refused, it fails within seconds.
            with pytest.raises(WorkflowFailureError) as failed:
                await asyncio.wait_for(notifier.result(), 30)
            cause = failed.value.cause
            assert isinstance(cause, ActivityError) and isinstance(cause.cause, ApplicationError)
            assert cause.cause.type == "WebhookRejected" and "AGENT_WEBHOOK_ALLOW_LOOPBACK" in cause.cause.message
            assert (await notifier.describe()).status == WorkflowExecutionStatus.FAILED  # not retried for a day
        # A notifier workflow of the attacker's own is refused before any URL is looked at: it is no run's
        # notifier (duragent/_activities/webhook.py, the caller check).
        foreign = await client.start_workflow(
            "WebhookDelivery",
            WebhookInput(url=f"https://127.1:{internal_service}/x", event_id="x", payload={"event": "x"}),
            id=f"foreign-notifier-{task_queue}",
            task_queue=task_queue,
        )
        with pytest.raises(WorkflowFailureError) as failed:
            await foreign.result()
        assert isinstance(failed.value.cause, ActivityError) and isinstance(failed.value.cause.cause, ApplicationError)
        assert failed.value.cause.cause.type == "CallerRefused"
    assert Counting.hits == []


@pytest.fixture
def job(tmp_path: Path) -> Iterator[Job]:
    yield from open_job(tmp_path)


def test_the_checkpoint_engine_refuses_loopback_without_the_opt_in(job: Job, internal_service: int) -> None:
    job.extra_env["AGENT_WEBHOOK_SECRET"] = SECRET
    refused = job.run("run", "--id", "r", "--scenario", "billing", "--webhook", f"http://127.0.0.1:{internal_service}/")
    assert refused.returncode == 2 and "AGENT_WEBHOOK_ALLOW_LOOPBACK" in refused.stderr
    assert job.store.run("r") is None
    # A name that resolves to loopback passes the start, and is refused before the POST.
    hidden = job.run("run", "--id", "h", "--scenario", "billing", "--webhook", f"https://127.1:{internal_service}/")
    assert hidden.returncode == 0, hidden.stderr
    [delivery] = job.status("h")["webhooks"]
    assert delivery["status"] == "failed" and delivery["attempts"] == 1
    assert "resolves to this machine" in delivery["history"][0]["error"]
    assert Counting.hits == []


def test_a_viewer_sees_that_a_delivery_failed_not_why(tmp_path: Path) -> None:
    """With the opt-in, the approver who set the URL sees each attempt's error; a viewer only 'failed'."""
    stack = checkpoint_stack(tmp_path, {"AGENT_WEBHOOK_SECRET": SECRET, ALLOW_LOOPBACK_ENV: "1"})
    try:
        approver, viewer = stack.client(), stack.client(VIEWER)
        closed = free_port()
        started = approver.post("/runs", json={"agent": "billing", "webhook": f"http://127.0.0.1:{closed}/x"})
        assert started.status_code == 201, started.text
        run_id = started.json()["run_id"]

        def failed() -> bool:
            hooks = approver.get(f"/runs/{run_id}").json()["webhooks"]  # none until the run has ended
            return bool(hooks) and hooks[0]["status"] == "failed"

        poll(failed, what="the run's end and its 5 attempts")
        [seen_by_approver] = approver.get(f"/runs/{run_id}").json()["webhooks"]
        assert all("ConnectError" in a["error"] for a in seen_by_approver["history"])
        shown = viewer.get(f"/runs/{run_id}")
        [seen_by_viewer] = shown.json()["webhooks"]
        assert seen_by_viewer["status"] == "failed" and len(seen_by_viewer["history"]) == 5
        assert {a["error"] for a in seen_by_viewer["history"]} == {"failed"}
        assert "ConnectError" not in shown.text
    finally:
        stack.close()
