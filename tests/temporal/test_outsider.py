"""Played as the outsider: someone with Temporal frontend access only (no approver key,
no API token) runs workflows of their own, on a task queue of their own, with their own worker, and schedules
every activity the agents' worker serves on the agents' task queue, with inputs of their choosing
(tests/support/outsider.py). The agents' worker requires signed decisions (maria's key); the first test plays it
against a worker without keys, where the caller checks alone hold.

The gated tool and the compensation do nothing — counted in the ledger: zero — and each refusal says why; what
the rest can do is what docs/operations.md ("Trust model", the activities table) says."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from temporalio.worker import Worker

from agentic import ToolCall
from agentic.approvals import arguments_hash
from agentic.signing import ApproverKey, parse_public_keys
from duragent._client import AgentClient
from duragent._stores.transcripts import EMPTY, releasable
from tests.conftest import new_worker, transcripts_next_to
from tests.support.baseline_helpers import free_port
from tests.support.outsider import ImpostorAgent, ImpostorNotifier, Outsider

MARIA = ApproverKey.generate("maria")
KEYS = parse_public_keys(MARIA.public_entry())
SECRET = b"whsec-outsider-test-0123456789"


class Receiver(BaseHTTPRequestHandler):
    posts: list[bytes] = []

    def do_POST(self) -> None:
        self.posts.append(self.rfile.read(int(self.headers["content-length"])))
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def receiver() -> Iterator[str]:
    Receiver.posts = []
    server = ThreadingHTTPServer(("127.0.0.1", free_port()), Receiver)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/hook"
    finally:
        server.shutdown()
        server.server_close()


def call(name: str, uid: str = "1.1", **arguments: Any) -> dict[str, Any]:
    return {"id": "x", "name": name, "arguments": arguments, "uid": uid}


def approval_of(tool_call: dict[str, Any]) -> dict[str, Any]:
    """What the outsider shows the gated tool: an approval it wrote itself (it holds no approver key)."""
    shown = ToolCall(id="x", name=tool_call["name"], arguments=tool_call["arguments"])
    return {"call_id": tool_call["uid"], "approve": True, "approver": "maria", "arguments_hash": arguments_hash(shown)}


def attempts(queue: str, me: str, *, bill: str, victim: str, hook: str) -> list[dict[str, Any]]:
    """Every activity the agents' worker serves, with inputs a stranger chooses. `me` is the stranger's own
    workflow id (inputs that name it pass the "this run" check; the victim's are refused anyway)."""
    refund = call("refund", order_id="ROGUE-777")
    undo = call("refund_payment", order_id="4471", amount_cents=2500)

    def on(activity: str, input: dict[str, Any], timeout: float = 30) -> dict[str, Any]:
        return {"activity": activity, "task_queue": queue, "input": input, "timeout": timeout}

    empty = {"head": EMPTY}  # the transcript part every tool and model call carries
    tool = {"run_id": me, "agent": "refund", "call": refund, "idempotency_key": f"{me}:1.1", "transcript": empty}
    return [
        on("run_tool", tool | {"approved": True, "decision": approval_of(refund)}),  # the gated refund
        on("run_tool", tool | {"run_id": "victim-future", "idempotency_key": "victim-future:1.1"}),  # another's key
        on(  # a tool that needs no approval, under the stranger's own key
            "run_tool",
            {
                "run_id": me,
                "agent": "support",
                "call": call("open_ticket", customer="x"),
                "idempotency_key": f"{me}:1.1",
                "transcript": empty,
            },
        ),
        on(  # undo a real run's refund (an effect in the ledger)
            "compensate",
            {
                "run_id": bill,
                "agent": "billing-desk",
                "step": {"call": undo, "result": "refunded", "original_key": f"{bill}:1.1", "key": f"{bill}:1.1:undo"},
            },
        ),
        on(
            "call_model",
            {
                "run_id": me,
                "agent": "refund",
                "call_index": 0,
                "transcript": {"head": EMPTY, "unsaved": [{"role": "user", "content": "hi"}]},
            },
        ),
        on("list_mcp_tools", {"run_id": me, "agent": "refund"}),
        on("describe_agent", {"agent": "refund"}),
        on("attach_delegate", {"run_id": f"{victim}~2.1", "parent_run_id": victim, "call_id": "2.1"}, timeout=10),
        on(
            "deliver_webhook",
            {
                "url": hook,
                "event_id": f"{victim}:run.completed",
                "payload": {"event": "run.completed", "run_id": victim, "status": "completed", "output": "all good"},
            },
        ),
    ]


def outcome(outcomes: list[dict[str, Any]], index: int) -> tuple[bool, str]:
    found = outcomes[index]
    return found["ok"], found.get("type", "")


async def test_with_no_approver_keys_an_impostor_still_makes_no_effect_and_writes_nothing_as_another_run(
    skipping_env, ledger, task_queue
) -> None:
    """A deployment without approver keys (an approval is then any approval of exactly the call): the impostor,
    named `AgentWorkflow` but on its own queue, shows the gated refund an approval it wrote itself, and calls the
    model as another run (whose transcript rows it would then own). Only the task queue check stands between it
    and the refund, and only the run check between it and the other run's rows: nothing happens."""
    client = skipping_env.client
    own_queue = f"{task_queue}-stranger"
    impostor, victim = f"impostor-{uuid.uuid4().hex[:8]}", f"victim-{uuid.uuid4().hex[:8]}"
    refund = call("refund", order_id="ROGUE-778")
    empty = {"head": EMPTY}
    tool = {"run_id": impostor, "agent": "refund", "call": refund, "idempotency_key": f"{impostor}:1.1"}
    model = {"run_id": victim, "agent": "refund", "call_index": 0}
    planned = [
        {
            "activity": "run_tool",
            "task_queue": task_queue,
            "input": tool | {"transcript": empty, "approved": True, "decision": approval_of(refund)},
        },
        {
            "activity": "call_model",
            "task_queue": task_queue,
            "input": model | {"transcript": {"head": EMPTY, "unsaved": [{"role": "user", "content": "hi"}]}},
        },
    ]
    stranger = Worker(client, task_queue=own_queue, workflows=[ImpostorAgent])
    async with new_worker(client, task_queue, ledger, approver_keys={}), stranger:
        gated, as_victim = await client.execute_workflow(ImpostorAgent.run, planned, id=impostor, task_queue=own_queue)
    assert ledger.effects() == []
    assert releasable(transcripts_next_to(ledger).store).owned_blobs(victim) == []
    assert not gated["ok"] and not as_victim["ok"]


async def test_an_outsider_schedules_every_activity_and_the_gate_holds(
    skipping_env, ledger, task_queue, receiver
) -> None:
    client = skipping_env.client
    own_queue = f"{task_queue}-stranger"
    stranger = Worker(client, task_queue=own_queue, workflows=[Outsider, ImpostorAgent, ImpostorNotifier])
    async with new_worker(client, task_queue, ledger, approver_keys=KEYS, webhook_secret=SECRET), stranger:
        agents = AgentClient(client, task_queue=task_queue)
        # A real refund, approved by maria (signed): an effect an undo could reverse.
        bill = await agents.start("billing-desk", run_id=f"bill-{uuid.uuid4().hex[:8]}")
        [waiting] = await bill.wait_for_approval()
        await bill.approve(waiting.call_id, by="maria", key=MARIA)
        assert (await bill.result()).status == "completed"
        # A real run whose delegated child waits for an approval: a run to attach to.
        victim = await agents.start("support", run_id=f"victim-{uuid.uuid4().hex[:8]}")
        await victim.wait_for_approval()

        def planned(me: str) -> list[dict[str, Any]]:
            return attempts(task_queue, me, bill=bill.run_id, victim=victim.run_id, hook=receiver)

        outsider, impostor = f"rogue-{uuid.uuid4().hex[:8]}", f"impostor-{uuid.uuid4().hex[:8]}"
        by_outsider = await client.execute_workflow(Outsider.run, planned(outsider), id=outsider, task_queue=own_queue)
        by_impostor = await client.execute_workflow(
            ImpostorAgent.run, planned(impostor), id=impostor, task_queue=own_queue
        )
        by_notifier = await client.execute_workflow(
            ImpostorNotifier.run, planned(impostor)[-1:], id=f"{victim.run_id}/webhook", task_queue=own_queue
        )

    # The gated refund and the undo did nothing, whoever asked; nobody planted a row under another run's key,
    # and no event reached the receiver with the worker's signature.
    assert [e for e in ledger.effects() if e.tool in ("refund", "reverse_refund")] == []
    assert [e.tool for e in ledger.effects(bill.run_id)] == ["refund_payment"]
    assert ledger.effects("victim-future") == []
    assert Receiver.posts == []

    # A workflow that is not an AgentWorkflow may read an agent's spec, and nothing else.
    assert [o["ok"] for o in by_outsider] == [False] * 6 + [True] + [False] * 2
    assert {o["type"] for o in by_outsider if not o["ok"]} == {"CallerRefused"}
    assert "serves AgentWorkflow runs only" in by_outsider[0]["message"]
    assert by_outsider[6]["result"]["approver_keys"] == KEYS  # public keys: they grant nothing

    # One that calls itself AgentWorkflow, on its own queue: what docs/operations.md says it can do.
    gated, other_key, ungated, undo, model, mcp, spec, attach, hook = by_impostor
    assert not gated["ok"] and gated["type"] == "CallerRefused"
    assert f"not an AgentWorkflow on '{task_queue}'" in gated["message"]
    assert not other_key["ok"] and "the input names run 'victim-future'" in other_key["message"]
    assert ungated["ok"] and [e.key for e in ledger.effects(impostor)] == [f"{impostor}:1.1"]  # its own key only
    assert not undo["ok"] and undo["type"] == "CallerRefused"
    assert model["ok"] and mcp["ok"] and spec["ok"]  # the worker's model and the agents' specs
    assert not attach["ok"] and attach["type"] == "CallerRefused"
    assert not hook["ok"] and hook["type"] == "CallerRefused"
    assert "serves WebhookDelivery runs only" in hook["message"]

    # One that calls itself the notifier, under the victim's notifier id: not a notifier its run started.
    [delivered] = by_notifier
    assert not delivered["ok"] and "is not the notifier run" in delivered["message"]
