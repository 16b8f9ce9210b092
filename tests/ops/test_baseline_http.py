"""The HTTP service over real loopback: bearer tokens with roles, the Host and Content-Type checks, run status,
404s, the SSE progress stream, cancel, and webhooks delivered with retries to a receiver that fails the first
attempt."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest

from duragent._config.http_clients import tls_context
from duragent._config.webhook_signing import TIMESTAMP_HEADER, verify
from tests.support.baseline_helpers import Job, eventually, finish, free_port, one_line_error, open_job
from tests.support.runs_api_stack import read_events

# Processes of its own: `job serve` and `job run`.
pytestmark = pytest.mark.system


@pytest.fixture
def job(tmp_path: Path) -> Iterator[Job]:
    yield from open_job(tmp_path)


APPROVER = "approver-token-0123456789abcdef"
VIEWER = "viewer-token-0123456789abcdef"
TOKENS = f"{APPROVER}=maria:approver,{VIEWER}=ops:viewer"


@pytest.fixture
def api(job: Job) -> Iterator[httpx.Client]:
    """`job serve` in its own process on a free port, reading the same store as the workers; the client
    sends the approver's token."""
    job.extra_env["AGENT_API_TOKENS"] = TOKENS
    port = free_port()
    server = job.spawn("serve", "--port", str(port))
    headers = {"Authorization": f"Bearer {APPROVER}"}
    with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=10, headers=headers, verify=tls_context()) as client:

        def ready() -> bool:
            assert server.poll() is None, server.stderr.read() if server.stderr else ""
            try:
                return client.get("/runs/none").status_code == 404
            except httpx.TransportError:
                return False

        eventually(ready, what="the HTTP server")
        yield client
    server.terminate()
    server.wait(timeout=10)
    assert server.stdout is not None
    assert f"listening on http://127.0.0.1:{port}" in server.stdout.read()


def test_unknown_runs_are_404_json(api: httpx.Client, job: Job) -> None:
    for method, path in (("GET", "/runs/nope"), ("GET", "/runs/nope/events"), ("POST", "/runs/nope/cancel")):
        response = api.request(method, path, json={} if method == "POST" else None)
        assert response.status_code == 404
        assert response.json() == {"error": "unknown run id 'nope'"}  # no database path
        assert str(job.tmp) not in response.text


def test_every_route_needs_a_token_and_a_viewer_may_only_read(job: Job, api: httpx.Client) -> None:
    """401 without a token or with an unknown one, 403 for a viewer's POST; the approver's name
    is what the cancellation records."""
    worker = job.spawn("run", "--id", "x", "--scenario", "migration", "--option", "step_delay=0.5")
    eventually(lambda: job.effects("x"), what="the first record")
    bare = httpx.Client(base_url=str(api.base_url), timeout=10, verify=tls_context())
    for method, path in (("GET", "/runs/x"), ("GET", "/runs/x/events"), ("POST", "/runs/x/cancel")):
        for headers in ({}, {"Authorization": "Bearer wrong-token-0123456789"}, {"Authorization": f"Basic {APPROVER}"}):
            response = bare.request(method, path, headers=headers, json={} if method == "POST" else None)
            assert response.status_code == 401, (method, path, headers)
            assert response.headers["www-authenticate"] == "Bearer"
            assert "output" not in response.text and "migrat" not in response.text
    viewer = {"Authorization": f"Bearer {VIEWER}"}
    assert bare.get("/runs/x", headers=viewer).json()["run_id"] == "x"
    denied = bare.post("/runs/x/cancel", headers=viewer, json={})
    assert denied.status_code == 403 and "ops is a viewer" in denied.json()["error"]
    assert not job.status("x")["cancel_requested"]
    # The schema is for callers with a token; no docs pages (they would load scripts from elsewhere).
    for path in ("/docs", "/redoc"):
        assert api.get(path).status_code == 404
    assert api.get("/openapi.json").status_code == 200 and bare.get("/openapi.json").status_code == 401

    assert api.post("/runs/x/cancel", json={}).status_code == 202
    code, _, err = finish(worker)
    assert code == 0, err
    assert job.status("x")["stop_detail"] == "cancelled over HTTP by maria"
    bare.close()


def test_cross_site_and_rebinding_requests_are_refused(job: Job, api: httpx.Client) -> None:
    """A page the operator opens can send a `text/plain` POST without a preflight, and a rebinding page
    sends its own Host: neither gets through. The browser names the page's origin: 403;
    and were it to name none, such a body is still not JSON: 415."""
    worker = job.spawn("run", "--id", "y", "--scenario", "migration", "--option", "step_delay=0.5")
    eventually(lambda: job.effects("y"), what="the first record")
    evil = {"Origin": "https://evil.example"}
    for headers in ({"Content-Type": "text/plain"}, {"Content-Type": "application/x-www-form-urlencoded"}, {}):
        response = api.post("/runs/y/cancel", headers=evil | headers, content=b"x")
        assert response.status_code == 403 and "cross-site" in response.json()["error"], headers
        assert api.post("/runs/y/cancel", headers=headers, content=b"x").status_code == 415, headers
    assert not job.status("y")["cancel_requested"]
    port = api.base_url.port
    for host in (f"rebind.attacker.example:{port}", "attacker.example", f"localhost.evil.example:{port}"):
        response = api.get("/runs/y", headers={"Host": host})
        assert response.status_code == 400 and "migrat" not in response.text, host
    for host in (f"localhost:{port}", f"127.0.0.1:{port}", f"[::1]:{port}"):
        assert api.get("/runs/y", headers={"Host": host}).status_code == 200, host
    assert api.post("/runs/y/cancel", json={}).status_code == 202
    code, _, err = finish(worker)
    assert code == 0, err


def test_serve_refuses_to_start_without_tokens_unless_insecure_on_loopback(job: Job) -> None:
    refused = job.run("serve", "--port", str(free_port()))
    assert refused.returncode == 2
    assert "AGENT_API_TOKENS" in one_line_error(refused.stderr) and "--insecure-no-auth" in refused.stderr
    off_loopback = job.run("serve", "--host", "0.0.0.0", "--port", str(free_port()), "--insecure-no-auth")
    assert off_loopback.returncode == 2 and "loopback" in off_loopback.stderr
    job.extra_env["AGENT_API_TOKENS"] = "short=maria:approver"
    bad = job.run("serve", "--port", str(free_port()))
    assert bad.returncode == 2 and "entry 1" in bad.stderr and "short" not in bad.stderr.replace("shorter", "")

    job.extra_env.pop("AGENT_API_TOKENS")
    port = free_port()
    server = job.spawn("serve", "--port", str(port), "--insecure-no-auth")
    try:
        assert server.stdout is not None
        line = server.stdout.readline()
        assert f"listening on http://127.0.0.1:{port}" in line and "NO AUTHENTICATION" in line, line

        def answered() -> httpx.Response | None:  # the line is printed just before the port is bound
            try:
                return httpx.get(f"http://127.0.0.1:{port}/runs/none", timeout=10, verify=tls_context())
            except httpx.ConnectError:
                return None

        assert eventually(answered, what="the server").status_code == 404
    finally:
        server.terminate()
        server.wait(timeout=10)


def test_status_and_progress_stream_of_a_run_in_another_process(job: Job, api: httpx.Client) -> None:
    worker = job.spawn(
        "run", "--id", "m", "--scenario", "migration", "--option", "records=3", "--option", "step_delay=0.3"
    )
    eventually(lambda: job.store.run("m"), what="the run row")
    events = read_events(api, "m")
    code, _, err = finish(worker)
    assert code == 0, err

    progress = [data for name, data in events if name == "progress"]
    assert len(progress) >= 3, events
    assert all(set(p) == {"step", "total", "label"} for p in progress)
    assert [p["step"] for p in progress] == sorted(p["step"] for p in progress)
    assert any(p["label"] == "migrate_record(record=rec-2)" for p in progress)
    assert progress[-1]["step"] == progress[-1]["total"] == 7
    assert events[-1] == (
        "end",
        {"run_id": "m", "status": "completed", "stop": "answered", "output": "Migrated 3 records.", "error": None},
    )

    body = api.get("/runs/m").json()
    assert body["status"] == "completed" and body["percent_complete"] == 100.0
    assert [s["status"] for s in body["steps"]] == ["completed"] * 7
    assert body["steps"][1]["step_name"] == "tool:migrate_record"


def test_post_cancel_stops_the_run_between_steps(job: Job, api: httpx.Client) -> None:
    worker = job.spawn("run", "--id", "x", "--scenario", "migration", "--option", "step_delay=0.5")
    eventually(lambda: job.effects("x"), what="the first record")
    response = api.post("/runs/x/cancel", json={})
    assert response.status_code == 202 and response.json()["cancel_requested"] is True
    code, _, err = finish(worker)
    assert code == 0, err

    body = api.get("/runs/x").json()
    assert (body["status"], body["stop"]) == ("abandoned", "cancelled")
    assert body["not_compensable"] == ["migrate_record"]  # each tool once; the ledger counts the effects
    assert len(job.effects("x")) < 5
    assert api.post("/runs/x/cancel", json={}).status_code == 409


WEBHOOK_SECRET = "whsec-test-0123456789abcdef"


class Receiver(BaseHTTPRequestHandler):
    """A webhook receiver that checks each delivery's signature and fails the first one."""

    received: list[tuple[int, dict[str, Any], str, str]] = []

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers["content-length"]))
        event_id = verify(WEBHOOK_SECRET.encode(), dict(self.headers), raw)  # raises: the test sees no delivery
        code = 500 if not self.received else 200
        self.received.append((code, json.loads(raw), event_id, self.headers[TIMESTAMP_HEADER]))
        self.send_response(code)
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


def test_webhook_on_terminal_state_is_signed_retried_until_delivered_and_shown_redacted(
    job: Job, api: httpx.Client
) -> None:
    Receiver.received = []
    job.extra_env |= {"AGENT_WEBHOOK_SECRET": WEBHOOK_SECRET, "AGENT_WEBHOOK_ALLOW_LOOPBACK": "1"}  # a local receiver
    receiver = ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
    thread = threading.Thread(target=receiver.serve_forever, daemon=True)
    thread.start()
    try:
        port = receiver.server_address[1]
        url = f"http://hookuser:hookpass@127.0.0.1:{port}/hook?api_token=WEBHOOK-SECRET-42"
        done = job.run("run", "--id", "hook", "--scenario", "billing", "--webhook", url)
        assert done.returncode == 0, done.stderr
        assert "note:" not in done.stderr  # delivered: nothing to say
    finally:
        receiver.shutdown()
        receiver.server_close()

    assert [code for code, _, _, _ in Receiver.received] == [500, 200]
    first, second = Receiver.received[0][1], Receiver.received[1][1]
    assert first == second  # the same delivery, retried
    assert (second["event"], second["run_id"], second["status"]) == ("run.completed", "hook", "completed")
    assert Receiver.received[0][2] == Receiver.received[1][2] == "hook:1"  # one event id to dedupe on
    [delivery] = job.status("hook")["webhooks"]
    assert (delivery["status"], delivery["attempts"]) == ("delivered", 2)
    assert [(h["status_code"], h["error"]) for h in delivery["history"]] == [(500, "HTTP 500"), (200, None)]

    shown = api.get("/runs/hook")
    [hook] = shown.json()["webhooks"]
    assert hook["url"] == f"http://127.0.0.1:{port}/hook?…"
    assert "WEBHOOK-SECRET-42" not in shown.text and "hookpass" not in shown.text


def test_a_webhook_that_cannot_be_delivered_is_said_when_the_run_ends(job: Job) -> None:
    """The run is done (exit 0), and the person who ran it is told its webhook did not arrive."""
    job.extra_env |= {"AGENT_WEBHOOK_SECRET": WEBHOOK_SECRET, "AGENT_WEBHOOK_ALLOW_LOOPBACK": "1"}
    with socket.socket() as probe:  # a loopback port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"http://127.0.0.1:{port}/hook?token=SECRET-IN-QUERY"
    done = job.run("run", "--id", "lost", "--scenario", "billing", "--webhook", url)
    assert done.returncode == 0, done.stderr
    [note] = [line for line in done.stderr.splitlines() if line.startswith("note:")]
    assert f"the webhook to http://127.0.0.1:{port}/hook?… was not delivered: 5 attempts, the last: Connect" in note
    assert "SECRET-IN-QUERY" not in done.stderr and "job status lost --json" in note
    [delivery] = job.status("lost")["webhooks"]
    assert (delivery["status"], delivery["attempts"]) == ("failed", 5)


def test_a_webhook_needs_the_secret_and_https_off_loopback(job: Job) -> None:
    unsigned = job.run("run", "--id", "u", "--scenario", "billing", "--webhook", "http://127.0.0.1:9/hook")
    assert unsigned.returncode == 2 and "AGENT_WEBHOOK_SECRET" in one_line_error(unsigned.stderr)
    job.extra_env["AGENT_WEBHOOK_SECRET"] = WEBHOOK_SECRET
    for url, why in (
        ("http://hooks.example.com/x", "https"),
        ("ftp://127.0.0.1/x", "http"),
        ("https:///x", "host"),
    ):
        refused = job.run("run", "--id", "u", "--scenario", "billing", "--webhook", url)
        assert refused.returncode == 2 and why in one_line_error(refused.stderr), (url, refused.stderr)
    assert job.store.run("u") is None  # refused before anything was stored
