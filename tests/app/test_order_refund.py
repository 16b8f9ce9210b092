"""The repository's application on the time-skipping server, served the way `python worker.py` serves it
(`application_worker`: a plain `Worker` with `DurableAgentsPlugin`) against the real orders service: OrderRefund
looks the order up, its agent step waits a day for approval and refunds once, then the customer is told once;
unapproved for longer than the request allows, the agent gives up and no one is told. And as its commands run
it: `python worker.py` and `python starter.py order-refund`, on the dev server."""

from __future__ import annotations

import dataclasses
import json
import sys
import urllib.request
import uuid
from datetime import timedelta

import httpx
import pytest

from duragent import AgentClient, Settings
from duragent._config.settings import ROOT
from duragent._ops.devstack.worker_process import WorkerProcess
from examples import orders
from tests.conftest import dev_settings
from tests.ops.test_cli import starter
from tests.temporal.test_own_agent import OrdersService
from worker import application_worker
from workflows import OrderRefund, RefundOutcome, RefundRequest

pytestmark = pytest.mark.system  # the orders service is a process of its own


@pytest.fixture
def service(tmp_path):
    running = OrdersService(tmp_path).wait_ready()
    yield running
    running.stop()


def notices(service: OrdersService) -> list[dict[str, str]]:
    with urllib.request.urlopen(f"{service.url}/notices", timeout=5) as reply:
        return json.loads(reply.read())


async def test_order_refund_waits_a_day_for_its_agent_steps_approval_then_tells_the_customer_once(
    skipping_env, task_queue, tmp_path, service, monkeypatch
):
    monkeypatch.setenv("ORDERS_URL", service.url)
    settings = dataclasses.replace(Settings.from_env(), task_queue=task_queue, data_dir=tmp_path)
    client = skipping_env.client
    deps = httpx.Client(base_url=service.url)
    async with application_worker(client, settings, [orders.agent], deps):
        handle = await client.start_workflow(
            OrderRefund.run,
            RefundRequest(order_id="A-1", approval_hours=48),
            id=f"order-refund-{uuid.uuid4().hex[:6]}",
            task_queue=task_queue,
            result_type=RefundOutcome,
        )
        agents = AgentClient(client, task_queue=task_queue)
        [waiting] = await agents.handle(handle.id).wait_for_approval()
        assert (waiting.run_id, waiting.tool) == (f"{handle.id}~orders-1", "refund_order")
        await skipping_env.sleep(timedelta(days=1))
        assert service.refunds() == [] and notices(service) == []
        await agents.handle(waiting.run_id).approve(waiting.call_id, by="maria", arguments_hash=waiting.arguments_hash)
        outcome = await handle.result()
    assert (outcome.refunded, outcome.customer_notified) == (True, True)
    assert outcome.answer == "Done: refunded A-1: $42.00, refund #1"
    assert [r["key"] for r in service.refunds()] == [f"{waiting.run_id}:2.1"]
    assert [(n["key"], n["order_id"]) for n in notices(service)] == [(f"{handle.id}:notify", "A-1")]


async def test_an_unapproved_refund_is_given_up_and_no_one_is_told(
    skipping_env, task_queue, tmp_path, service, monkeypatch
):
    monkeypatch.setenv("ORDERS_URL", service.url)
    settings = dataclasses.replace(Settings.from_env(), task_queue=task_queue, data_dir=tmp_path)
    client = skipping_env.client
    async with application_worker(client, settings, [orders.agent], httpx.Client(base_url=service.url)):
        outcome = await client.execute_workflow(
            OrderRefund.run,
            RefundRequest(order_id="A-1", approval_hours=2),
            id=f"order-refund-{uuid.uuid4().hex[:6]}",
            task_queue=task_queue,
            result_type=RefundOutcome,
        )
    assert (outcome.refunded, outcome.customer_notified) == (False, False)
    assert outcome.answer == "approval for refund_order expired"
    assert service.refunds() == [] and notices(service) == []


async def test_starter_order_refund_starts_it_on_worker_py_and_approve_as_sees_it_through(
    dev_env, task_queue, tmp_path, service
):
    """The application as its commands run it: `python worker.py` (a real process) serves it, and
    `python starter.py order-refund A-1` starts it, says how to approve, and with `--approve-as` ends it."""
    settings = dev_settings(dev_env, task_queue, tmp_path)
    worker = WorkerProcess(
        settings, command=[sys.executable, str(ROOT / "worker.py")], extra_env={"ORDERS_URL": service.url}
    ).wait_ready()
    try:
        code, out, err = await starter("order-refund", "A-1", settings=settings)
        assert code == 0, err
        assert "its agent step" in out and "approve it: python starter.py approve order-refund-A-1-" in out
        waiting = out.split()[1].rstrip(":")  # `started ID: URL`
        await dev_env.client.get_workflow_handle(waiting).terminate("seen waiting: that was the test")
        code, out, err = await starter("order-refund", "A-1", "--approve-as", "maria", "--json", settings=settings)
        assert code == 0, err
        said = json.loads(out)
    finally:
        worker.stop()
    assert (said["refunded"], said["customer_notified"]) == (True, True)
    assert said["agent_run"] == f"{said['workflow_id']}~orders-1"
    assert [r["key"] for r in service.refunds()] == [f"{said['agent_run']}:2.1"]  # the first one still waits
    assert [n["key"] for n in notices(service)] == [f"{said['workflow_id']}:notify"]
