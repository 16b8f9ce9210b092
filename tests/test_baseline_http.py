"""The HTTP service over real loopback: run status, 404s, the SSE progress stream, cancel, and webhooks
delivered with retries to a receiver that fails the first attempt."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.baseline_helpers import Job, eventually, finish, free_port, open_job


@pytest.fixture
def job(tmp_path: Path) -> Iterator[Job]:
    yield from open_job(tmp_path)


@pytest.fixture
def api(job: Job) -> Iterator[httpx.Client]:
    """`job serve` in its own process on a free port, reading the same store as the workers."""
    port = free_port()
    server = job.spawn("serve", "--port", str(port))
    with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=10) as client:

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


def read_events(client: httpx.Client, run_id: str) -> list[tuple[str, dict[str, Any]]]:
    events: list[tuple[str, dict[str, Any]]] = []
    with client.stream("GET", f"/runs/{run_id}/events", timeout=30) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        name = ""
        for line in response.iter_lines():
            if line.startswith("event: "):
                name = line.removeprefix("event: ")
            elif line.startswith("data: "):
                events.append((name, json.loads(line.removeprefix("data: "))))
    return events


def test_unknown_runs_are_404_json(api: httpx.Client) -> None:
    for method, path in (("GET", "/runs/nope"), ("GET", "/runs/nope/events"), ("POST", "/runs/nope/cancel")):
        response = api.request(method, path)
        assert response.status_code == 404
        assert "unknown run id 'nope'" in response.json()["error"]


def test_status_and_progress_stream_of_a_run_in_another_process(job: Job, api: httpx.Client) -> None:
    worker = job.spawn("run", "--id", "m", "--scenario", "migration", "--records", "3", "--step-delay", "0.3")
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
    worker = job.spawn("run", "--id", "x", "--scenario", "migration", "--step-delay", "0.5")
    eventually(lambda: job.effects("x"), what="the first record")
    response = api.post("/runs/x/cancel")
    assert response.status_code == 202 and response.json()["cancel_requested"] is True
    code, _, err = finish(worker)
    assert code == 0, err

    body = api.get("/runs/x").json()
    assert (body["status"], body["stop"]) == ("abandoned", "cancelled")
    assert body["not_compensable"] == ["migrate_record"] * len(job.effects("x"))
    assert len(job.effects("x")) < 5
    assert api.post("/runs/x/cancel").status_code == 409


class Receiver(BaseHTTPRequestHandler):
    """A webhook receiver that fails the first delivery."""

    received: list[tuple[int, dict[str, Any], str]] = []

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        code = 500 if not self.received else 200
        self.received.append((code, body, self.headers["x-baseline-delivery"]))
        self.send_response(code)
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


def test_webhook_on_terminal_state_is_retried_until_delivered(job: Job) -> None:
    Receiver.received = []
    receiver = ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
    thread = threading.Thread(target=receiver.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{receiver.server_address[1]}/hook"
        done = job.run("run", "--id", "hook", "--scenario", "billing", "--webhook", url)
        assert done.returncode == 0, done.stderr
    finally:
        receiver.shutdown()
        receiver.server_close()

    assert [code for code, _, _ in Receiver.received] == [500, 200]
    first, second = Receiver.received[0][1], Receiver.received[1][1]
    assert first == second  # the same delivery, retried
    assert (second["event"], second["run_id"], second["status"]) == ("run.completed", "hook", "completed")
    assert Receiver.received[0][2] == Receiver.received[1][2]  # one delivery id to dedupe on
    [delivery] = job.status("hook")["webhooks"]
    assert (delivery["status"], delivery["attempts"]) == ("delivered", 2)
    assert [(h["status_code"], h["error"]) for h in delivery["history"]] == [(500, "HTTP 500"), (200, None)]
