"""The runs API's Temporal-only parts, on one stack (dev server, worker process, `starter.py serve`):

- webhooks on terminal states, delivered by the notifier workflow to a real receiver on loopback that is
  down at first: every run closes without waiting for it, and the receiver ends with exactly one event per
  terminal state (by event id), each signed;
- signed decisions: where workers require them, the API signs for the approvers whose keys it holds, and
  refuses (409) for an identity it has no key for;
- `starter.py serve` refuses to start without tokens unless --insecure-no-auth on loopback.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from agentic.approvals import ApprovalPolicy
from agentic.signing import ApproverKey
from duragent._client import AgentClient
from duragent._config.settings import ROOT, Settings
from duragent._config.webhook_signing import verify
from duragent._connection import connect
from tests.support.baseline_helpers import free_port
from tests.support.runs_api_stack import OTHER_APPROVER, ApiStack, eventually, finished, temporal_stack, waiting

# Processes of its own: an API server and workers.
pytestmark = pytest.mark.system

SECRET = "whsec-test-0123456789abcdef"
MARIA = ApproverKey.generate("maria")


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ApiStack]:
    built = temporal_stack(
        tmp_path_factory.mktemp("api-temporal-only"),
        # The webhook receiver is on loopback: the operator opts in, on the API and on the worker.
        extra_env={"AGENT_API_APPROVER_KEYS": MARIA.entry(), "AGENT_WEBHOOK_ALLOW_LOOPBACK": "1"},
        worker_env={
            "AGENT_WEBHOOK_SECRET": SECRET,
            "AGENT_APPROVER_KEYS": MARIA.public_entry(),
            "AGENT_WEBHOOK_ALLOW_LOOPBACK": "1",
        },
    )
    try:
        yield built
    finally:
        built.close()


class Receiver(BaseHTTPRequestHandler):
    """Checks each delivery's signature; answers the first one 503, every later one 200."""

    deliveries: list[tuple[int, str, dict[str, Any]]] = []
    lock = threading.Lock()

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers["content-length"]))
        event_id = verify(SECRET.encode(), dict(self.headers), raw)  # raises on a bad signature: no record
        with self.lock:
            code = 503 if not self.deliveries else 200
            self.deliveries.append((code, event_id, json.loads(raw)))
        self.send_response(code)
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


def test_webhooks_reach_a_receiver_that_was_down_once_per_terminal_state(stack: ApiStack):
    Receiver.deliveries = []
    port = free_port()  # nothing listens here yet: deliveries are refused
    hook = f"http://127.0.0.1:{port}/hook?token=RECEIVER-SECRET"
    api = stack.client()

    def start(agent: str, **fields: Any) -> str:
        response = api.post("/runs", json={"agent": agent, "webhook": hook} | fields)
        assert response.status_code == 201, response.text
        return str(response.json()["run_id"])

    runs = {
        start("billing"): "run.completed",
        start("trip"): "run.compensated",  # the car booking fails: flight and hotel are undone
        start("t-short"): "run.failed",  # its model's script runs out
    }
    cancelled = start("migration", options={"records": 30, "step_delay": 0.5})
    runs[cancelled] = "run.cancelled"
    eventually(lambda: stack.effects(cancelled), what="the first migrated record")
    assert api.post(f"/runs/{cancelled}/cancel", json={}).status_code == 202

    async def expiring() -> str:  # AgentClient.start(webhook=...) as a program would
        settings = Settings(address=stack.env["TEMPORAL_ADDRESS"], task_queue=stack.env["TEMPORAL_TASK_QUEUE"])
        agents = AgentClient(await connect(settings))
        policy = ApprovalPolicy(timeout_seconds=2, on_expire="abandon")
        return (await agents.start("refund", approvals=policy, webhook=hook)).run_id

    runs[asyncio.run(expiring())] = "run.approval_expired"

    # Every run closes while its receiver is down: the notifier never holds a run open.
    for run_id in runs:
        finished(api, run_id, timeout=90)

    def refused_at_least_once() -> bool:
        hooks = [api.get(f"/runs/{run_id}").json()["webhooks"] for run_id in runs]
        return all(h and h[0]["status"] == "pending" and h[0]["attempts"] >= 1 for h in hooks)

    eventually(refused_at_least_once, timeout=60, what="a refused delivery attempt for every run")
    shown = api.get(f"/runs/{cancelled}").json()["webhooks"][0]
    assert shown["url"] == f"http://127.0.0.1:{port}/hook?…"  # never the query's secret
    assert Receiver.deliveries == []

    receiver = ThreadingHTTPServer(("127.0.0.1", port), Receiver)
    threading.Thread(target=receiver.serve_forever, daemon=True).start()
    try:

        def all_delivered() -> bool:
            return {e for code, e, _ in Receiver.deliveries if code == 200} == {f"{r}:{e}" for r, e in runs.items()}

        eventually(all_delivered, timeout=120, what="every event delivered")
        eventually(
            lambda: all(api.get(f"/runs/{r}").json()["webhooks"][0]["status"] == "delivered" for r in runs),
            what="the notifiers to close",
        )
    finally:
        receiver.shutdown()
        receiver.server_close()

    accepted = [(event_id, payload) for code, event_id, payload in Receiver.deliveries if code == 200]
    assert sorted(e for e, _ in accepted) == sorted(f"{r}:{e}" for r, e in runs.items())  # once each
    assert Receiver.deliveries[0][0] == 503  # the first delivery that got through was refused, then retried
    for event_id, payload in accepted:
        run_id = event_id.rsplit(":", 1)[0]
        assert (payload["event"], payload["run_id"]) == (runs[run_id], run_id)
    by_event = {payload["event"]: payload for _, payload in accepted}
    assert by_event["run.completed"]["output"] and by_event["run.completed"]["status"] == "completed"
    assert by_event["run.compensated"]["status"] == "compensated"
    assert by_event["run.failed"]["status"] == "failed" and by_event["run.failed"]["error"]
    assert by_event["run.cancelled"]["stop"] == "cancelled"
    assert by_event["run.approval_expired"]["stop"] == "approval_expired"
    api.close()


def test_the_api_signs_for_the_approvers_whose_keys_it_holds(stack: ApiStack):
    api = stack.client()
    run_id = str(api.post("/runs", json={"agent": "refund"}).json()["run_id"])
    [pending] = waiting(api, run_id)["pending_approvals"]
    url = f"/runs/{run_id}/approvals/{pending['call_id']}"
    decision = {"approve": True, "reason": "ok", "arguments_hash": pending["arguments_hash"]}
    with stack.client(OTHER_APPROVER) as jo:  # an approver token, but the API holds no key for jo
        refused = jo.post(url, json=decision)
    assert refused.status_code == 409 and "jo" in refused.json()["error"], refused.text
    accepted = api.post(url, json=decision)
    assert accepted.status_code == 200 and accepted.json()["signed"] is True, accepted.text
    done = finished(api, run_id)
    assert [(a["outcome"], a["approver"], a["signed"]) for a in done["audit"]] == [("approved", "maria", True)]
    assert [e.tool for e in stack.effects(run_id)] == ["refund"]
    api.close()


def test_serve_refuses_to_start_without_tokens_unless_insecure_on_loopback():
    def serve(*flags: str) -> subprocess.CompletedProcess[str]:
        env = {k: v for k, v in os.environ.items() if k != "AGENT_API_TOKENS"}
        command = [sys.executable, str(ROOT / "starter.py"), "serve", "--port", str(free_port()), *flags]
        return subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)

    refused = serve()
    assert refused.returncode == 2 and "AGENT_API_TOKENS" in refused.stderr and "--insecure-no-auth" in refused.stderr
    off_loopback = serve("--host", "0.0.0.0", "--insecure-no-auth")
    assert off_loopback.returncode == 2 and "loopback" in off_loopback.stderr


def test_the_progress_benchmark_runs_and_idle_streams_add_no_history(tmp_path):
    """`python -m bench http-progress`, tiny: its line parses, idle streams grew no history, and every streamed
    action was seen (the numbers themselves are the benchmark's business, not a test's)."""
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "bench",
            "http-progress",
            "--runs",
            "3",
            "--idle-seconds",
            "3",
            "--records",
            "2",
            "--out",
            str(tmp_path),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    line = done.stdout.strip().splitlines()[-1]
    assert line.startswith("http-progress temporal: streams=3 ") and "history_events_per_hour=0.0 " in line, line
    measured = json.loads((tmp_path / "http-progress.json").read_text())
    assert measured["history_events_added"] == 0
    assert measured["queries_per_minute"] * 3 / 60 <= 3  # at most the one a follower asks as it joins
    assert measured["step_to_sse_ms"]["n"] == 5  # 2 records: 5 actions, each reported
