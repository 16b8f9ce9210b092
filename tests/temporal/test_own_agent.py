"""Written as a user would: an agent of your own (`examples/orders.py`) whose tools call
a real HTTP service on loopback that honours `Idempotency-Key`. The same `Agent` object runs in-process and
durably; the durable run survives two SIGKILLed workers, is approved through `RunHandle` while no worker
runs, and the service sees each effect exactly once. And the README's snippet runs as written."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import httpx
import pytest

from duragent import AgentClient
from duragent._config.settings import ROOT
from duragent._ops.devstack.devserver import free_port, port_open
from duragent._ops.devstack.worker_process import WorkerProcess
from duragent._workflows.inputs import Timeouts
from examples import orders
from tests.conftest import dev_settings, eventually
from tests.support.docs import code_block_after

# Processes of its own: the orders service and workers.
pytestmark = pytest.mark.system


class OrdersService:
    def __init__(self, tmp: Path, slow_after_effect: float = 0.0) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        command = [sys.executable, "-m", "examples.orders_service", "--port", str(self.port), "--db", str(tmp / "o.db")]
        command += ["--slow-after-effect", str(slow_after_effect)]
        self.log = tmp / "orders-service.log"
        with open(self.log, "wb") as log:
            self.process = subprocess.Popen(command, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)

    def wait_ready(self, timeout: float = 60.0) -> OrdersService:
        """Until it listens (its start-up takes seconds on a loaded machine); one that exited fails at once."""
        deadline = time.monotonic() + timeout
        while not port_open("127.0.0.1", self.port):
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(
                    f"the orders service did not start: {self.log.read_text(errors='replace')[-2000:]}"
                )
            time.sleep(0.1)
        return self

    def refunds(self) -> list[dict[str, str]]:
        with urllib.request.urlopen(f"{self.url}/refunds", timeout=5) as reply:
            return json.loads(reply.read())

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=10)


@pytest.fixture
def service(tmp_path: Path) -> Iterator[OrdersService]:
    running = OrdersService(tmp_path).wait_ready()
    yield running
    running.stop()


@pytest.fixture
def slow_service(tmp_path: Path) -> Iterator[OrdersService]:
    """Answers a refund 4 s after committing it: a worker killed then has made the effect unknowingly."""
    running = OrdersService(tmp_path, slow_after_effect=4.0).wait_ready()
    yield running
    running.stop()


def test_the_users_agent_is_one_file_under_80_lines_and_the_readme_says_how_long():
    lines = len((ROOT / "examples" / "orders.py").read_text().splitlines())
    assert lines < 80  # an agent of your own, as a user writes it, in one short file
    assert f"`examples/orders.py` is a complete one ({lines} lines)" in (ROOT / "README.md").read_text()


def test_the_agent_runs_in_process_and_a_second_run_with_its_run_id_refunds_nothing_more(service):
    agent = orders.agent
    saved = agent.deps, agent.registry.confirm
    agent.deps, agent.registry.confirm = httpx.Client(base_url=service.url), (lambda name, arguments: True)
    try:
        first = agent.run(run_id="inproc-1")
        again = agent.run(run_id="inproc-1")  # a resumed process repeating the run: the same keys
    finally:
        agent.deps, agent.registry.confirm = saved
    assert first.trajectory() == ["lookup_order", "refund_order"]
    assert first.output == "Done: refunded A-1: $42.00, refund #1"
    assert again.output == first.output  # the service answered the repeat from its key
    assert [(r["key"], r["order_id"]) for r in service.refunds()] == [("inproc-1:2.1", "A-1")]


async def test_the_same_agent_runs_durably_through_two_sigkills_and_refunds_once(
    dev_env, task_queue, tmp_path, slow_service
):
    settings = dev_settings(dev_env, task_queue, tmp_path)
    env = {"AGENT_MODULES": "examples.orders", "ORDERS_URL": slow_service.url}

    def start_worker() -> WorkerProcess:
        return WorkerProcess(settings, extra_env=env).wait_ready()

    agents = AgentClient(dev_env.client, task_queue=settings.task_queue)
    worker = start_worker()
    try:
        run = await agents.start(orders.agent, timeouts=Timeouts(heartbeat_seconds=2.0))
        [waiting] = await run.wait_for_approval()
        assert (waiting.tool, waiting.arguments) == ("refund_order", {"order_id": "A-1"})

        worker.kill()  # 1: while the run waits for its human
        outcome = await run.approve(
            waiting.call_id, by="maria", arguments_hash=waiting.arguments_hash, wait=timedelta(seconds=2)
        )
        assert (outcome.via, outcome.decision) == ("signal", "queued")  # no worker: kept by the server

        worker = start_worker()
        await eventually(lambda: len(slow_service.refunds()) == 1, what="the refund at the service")
        worker.kill()  # 2: the refund happened; the worker never heard back

        worker = start_worker()
        result = await asyncio.wait_for(run.result(), 120)
    finally:
        worker.stop()
    assert result.status == "completed"
    assert result.output == "Done: refunded A-1: $42.00, refund #1"  # the retry got the first refund back
    assert [r["key"] for r in slow_service.refunds()] == [f"{run.run_id}:2.1"]
    assert [a.event for a in result.audit] == ["approved"]


def readme_snippet() -> str:
    return code_block_after("README.md", "## Your own agent")


def test_the_readme_snippet_is_short_and_runs_as_written(dev_env, tmp_path, service):
    code = readme_snippet()
    assert len([line for line in code.splitlines() if line.strip()]) <= 25  # lines of code; blank lines are PEP 8's
    script = tmp_path / "snippet.py"
    script.write_text(code)
    env = os.environ | {
        "TEMPORAL_ADDRESS": dev_env.client.service_client.config.target_host,
        "ORDERS_URL": service.url,
        "AGENT_DATA_DIR": str(tmp_path),
        "PYTHONPATH": str(ROOT),
    }
    done = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "Refunded A-1."
    assert [r["order_id"] for r in service.refunds()] == ["A-1"]
