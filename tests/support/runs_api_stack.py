"""The runs API as a user runs it, for the tests of both engines: real processes on loopback.

- Temporal: a dev server, a worker process (`worker.py`) and `python starter.py serve`.
- Checkpoints: `job serve` (which starts a `job resume` worker process per run).

Both serve the demo agents and tests/support/agents_for_tests.py; both count effects in the same kind of ledger
file. Everything is stopped by pid.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from duragent._config.http_clients import tls_context
from duragent._config.settings import ROOT, Settings
from duragent._ops.devstack import devserver
from duragent._ops.devstack.worker_process import WorkerProcess
from duragent._stores.ledger import Effect, EffectsLedger
from tests.support.baseline_helpers import eventually as poll_until
from tests.support.baseline_helpers import free_port

APPROVER = "approver-token-0123456789abcdef"
VIEWER = "viewer-token-0123456789abcdef"
OTHER_APPROVER = "other-approver-token-0123456789"
TOKENS = f"{APPROVER}=maria:approver,{VIEWER}=ops:viewer,{OTHER_APPROVER}=jo:approver"
AGENT_MODULES = ["examples", "tests.support.agents_for_tests"]
TERMINAL = ("completed", "abandoned", "compensated", "compensation_failed", "failed", "terminated", "timed_out")


@dataclass
class ApiStack:
    engine: str
    url: str
    ledger: Path
    tmp: Path
    stops: list[Callable[[], object]] = field(default_factory=list)
    server: subprocess.Popen[str] | None = None
    env: dict[str, str] = field(default_factory=dict)  # Temporal: TEMPORAL_ADDRESS, TEMPORAL_TASK_QUEUE
    _ledger: EffectsLedger | None = None

    def client(self, token: str | None = APPROVER) -> httpx.Client:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        return httpx.Client(base_url=self.url, headers=headers, timeout=30, verify=tls_context())

    def effects(self, run_id: str) -> list[Effect]:
        # One ledger object for the stack's life: opening the file anew in this process each time (its
        # create_private opens and closes a descriptor) drops the SQLite locks of the connections still
        # open here, and a later read can come from a stale snapshot.
        if self._ledger is None:
            if not self.ledger.exists():
                return []
            self._ledger = EffectsLedger(self.ledger)
        return self._ledger.effects(run_id)

    def close(self) -> None:
        for stop in reversed(self.stops):
            stop()


def eventually(check: Callable[[], Any], timeout: float = 60.0, what: str = "", interval: float = 0.1) -> Any:
    return poll_until(check, timeout, what, interval)


def _serve(stack: ApiStack, command: list[str], env: dict[str, str]) -> None:
    log = open(stack.tmp / "serve.log", "w")  # noqa: SIM115 - lives as long as the process
    process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, text=True)
    stack.server = process

    def stop() -> None:
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        log.close()

    stack.stops.append(stop)
    with httpx.Client(base_url=stack.url, timeout=5, verify=tls_context()) as client:

        def ready() -> bool:
            assert process.poll() is None, (stack.tmp / "serve.log").read_text()
            try:
                return client.get("/runs/none", headers={"Authorization": f"Bearer {APPROVER}"}).status_code == 404
            except httpx.TransportError:
                return False

        eventually(ready, what="the API server")


def _env(extra: dict[str, str]) -> dict[str, str]:
    return os.environ | {"PYTHONUNBUFFERED": "1", "AGENT_API_TOKENS": TOKENS} | extra


def checkpoint_stack(
    tmp: Path, extra_env: dict[str, str] | None = None, extra_args: list[str] | None = None
) -> ApiStack:
    """`extra_args`: more flags for `job serve` (`--stream-seconds 3`)."""
    port = free_port()
    stack = ApiStack("checkpoints", f"http://127.0.0.1:{port}", tmp / "ledger.db", tmp)
    command = [
        sys.executable,
        "-m",
        "duragent._ops.cli.job",
        "serve",
        "--port",
        str(port),
        "--db",
        str(tmp / "baseline.db"),
    ]
    command += ["--ledger", str(stack.ledger), *(extra_args or [])]
    for module in AGENT_MODULES:
        command += ["--agents", module]
    _serve(stack, command, _env(extra_env or {}))
    return stack


def temporal_stack(
    tmp: Path,
    extra_env: dict[str, str] | None = None,
    worker_env: dict[str, str] | None = None,
    modules: list[str] = AGENT_MODULES,
) -> ApiStack:
    stack = ApiStack("temporal", "", tmp / "ledger.db", tmp)
    server = devserver.start_on_free_ports(tmp / "dev.db", ui=True, log=tmp / "server.log")
    stack.stops.append(server.stop)
    try:
        asyncio.run(devserver.wait_until_serving(server.address))
        settings = Settings(
            address=server.address,
            task_queue=f"tq-{uuid.uuid4().hex[:8]}",
            ledger_path=stack.ledger,
            data_dir=tmp,
        )
        command = [sys.executable, str(ROOT / "worker.py")]
        for module in modules:
            command += ["--agents", module]
        worker = WorkerProcess(settings, log=tmp / "worker.log", extra_env=worker_env, command=command)
        stack.stops.append(worker.stop)
        worker.wait_ready()
        port = free_port()
        stack.url = f"http://127.0.0.1:{port}"
        env = _env(
            {
                "TEMPORAL_ADDRESS": settings.address,
                "TEMPORAL_TASK_QUEUE": settings.task_queue,
                "AGENT_DATA_DIR": str(tmp),
                "AGENT_LEDGER": str(stack.ledger),
            }
            | (extra_env or {})
        )
        stack.env = {"TEMPORAL_ADDRESS": settings.address, "TEMPORAL_TASK_QUEUE": settings.task_queue}
        serve = [sys.executable, str(ROOT / "starter.py"), "serve", "--port", str(port)]
        for module in modules:
            serve += ["--agents", module]
        _serve(stack, serve, env)
    except BaseException:
        stack.close()
        raise
    return stack


def read_events(client: httpx.Client, run_id: str, timeout: float = 60) -> list[tuple[str, dict[str, Any]]]:
    events: list[tuple[str, dict[str, Any]]] = []
    with client.stream("GET", f"/runs/{run_id}/events", timeout=timeout) as response:
        assert response.status_code == 200, response.read()
        assert response.headers["content-type"].startswith("text/event-stream")
        name = ""
        for line in response.iter_lines():
            if line.startswith("event: "):
                name = line.removeprefix("event: ")
            elif line.startswith("data: "):
                events.append((name, json.loads(line.removeprefix("data: "))))
    return events


def finished(client: httpx.Client, run_id: str, timeout: float = 60) -> dict[str, Any]:
    def done() -> dict[str, Any] | None:
        view = client.get(f"/runs/{run_id}").json()
        return view if view["status"] in TERMINAL else None

    return eventually(done, timeout, f"run {run_id} to end")


def waiting(client: httpx.Client, run_id: str, timeout: float = 60) -> dict[str, Any]:
    """The run's view once it waits for an approval."""

    def asked() -> dict[str, Any] | None:
        view = client.get(f"/runs/{run_id}").json()
        return view if view["pending_approvals"] else None

    return eventually(asked, timeout, f"run {run_id} to ask for approval")
