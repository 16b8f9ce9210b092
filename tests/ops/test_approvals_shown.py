"""What a person approves is what the run reports, through the runs API, as maria uses it: a stack (dev server, a
worker process that requires signed decisions, `starter.py serve` holding maria's key), and an attacker with a plain
Temporal client who starts a decoy whose memo lists a harmless refund under a real run's name and hash. `/approvals`
and the inbox page show what the runs themselves report; an approval of what is shown is signed, also for a call a
delegated run waits on."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from datetime import datetime, timedelta

import pytest
from temporalio.client import Client
from temporalio.common import SearchAttributePair, TypedSearchAttributes
from temporalio.contrib.pydantic import pydantic_data_converter

from agentic import ToolCall
from agentic.approvals import arguments_hash
from agentic.signing import ApproverKey
from duragent._client import PENDING_QUERY
from duragent._workflows import search_attributes as sa
from duragent._workflows.inputs import AgentInput
from tests.support.runs_api_stack import APPROVER, ApiStack, eventually, finished, temporal_stack, waiting

# Processes of its own (servers, command lines, Python interpreters): tests/support/cost_markers.py.
pytestmark = pytest.mark.system


MARIA = ApproverKey.generate("maria")
HARMLESS = {"order_id": "SANDBOX-TEST-0 (no money moves)"}


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ApiStack]:
    built = temporal_stack(
        tmp_path_factory.mktemp("approvals-shown"),
        extra_env={"AGENT_API_APPROVER_KEYS": MARIA.entry()},
        worker_env={"AGENT_APPROVER_KEYS": MARIA.public_entry()},
    )
    try:
        yield built
    finally:
        built.close()


async def plant_decoy(stack: ApiStack, real: str, decoy: str) -> None:
    """decoy.py: the real run hidden from visibility, and a decoy on a queue nobody polls naming it."""
    client = await Client.connect(stack.env["TEMPORAL_ADDRESS"], data_converter=pydantic_data_converter)
    queue = stack.env["TEMPORAL_TASK_QUEUE"]
    await client.start_workflow(
        "AgentWorkflow", AgentInput(agent="refund", search_attributes=False), id=real, task_queue=queue
    )
    now = datetime.now().astimezone()
    row = {
        "run_id": real,
        "call_id": "1.1",
        "tool": "refund",
        "arguments": HARMLESS,
        "arguments_hash": arguments_hash(ToolCall(name="refund", arguments={"order_id": "4471"})),
        "requested_at": now.isoformat(),
        "deadline": (now + timedelta(hours=4)).isoformat(),
    }
    attributes = TypedSearchAttributes(
        [
            SearchAttributePair(sa.AGENT_STATUS, "awaiting_approval"),
            SearchAttributePair(sa.AGENT_NAME, "refund"),
            SearchAttributePair(sa.AGENT_PENDING_APPROVALS, 1),
        ]
    )
    await client.start_workflow(
        "AgentWorkflow",
        AgentInput(agent="refund"),
        id=decoy,
        task_queue="nobody-polls-this",
        memo={"pending_approvals": [row]},
        search_attributes=attributes,
    )

    async def listed() -> bool:
        return any([e.id == decoy async for e in client.list_workflows(PENDING_QUERY)])

    deadline = asyncio.get_running_loop().time() + 30
    while not await listed():
        assert asyncio.get_running_loop().time() < deadline, "the decoy never reached visibility"
        await asyncio.sleep(0.2)


def test_the_inbox_shows_what_runs_report_never_a_decoys_memo(stack: ApiStack) -> None:
    real, decoy = f"sec-real-{uuid.uuid4().hex[:8]}", f"sec-decoy-{uuid.uuid4().hex[:8]}"
    asyncio.run(plant_decoy(stack, real, decoy))
    with stack.client() as api:
        honest = api.post("/runs", json={"agent": "refund"}).json()["run_id"]
        waiting(api, honest)
        eventually(lambda: any(i["run_id"] == honest for i in api.get("/approvals").json()), what="the honest run")
        listed = api.get("/approvals").json()
        assert [i["arguments"] for i in listed if i["arguments"] == HARMLESS] == []
        assert [i for i in listed if i["run_id"] in (real, decoy)] == []
        [item] = [i for i in listed if i["run_id"] == honest]
        shown = ToolCall(name=item["tool"], arguments=item["arguments"])
        assert (item["arguments"], item["arguments_hash"]) == ({"order_id": "4471"}, arguments_hash(shown))

    with stack.client(None) as browser:  # the inbox page, signed in as maria
        assert browser.post("/login", data={"token": APPROVER}).status_code == 303
        page = browser.get("/inbox").text
        assert "SANDBOX-TEST-0" not in page and real not in page
        assert f"data-run='{honest}'" in page and f"data-hash='{item['arguments_hash']}'" in page
        # What the Approve button sends: the hash of what the row shows.
        body = {"approve": True, "reason": "checked", "arguments_hash": item["arguments_hash"]}
        decided = browser.post(f"/runs/{honest}/approvals/{item['call_id']}", json=body)
        assert decided.status_code == 200, decided.text
        assert (decided.json()["outcome"], decided.json()["signed"]) == ("approved", True)
    with stack.client() as api:
        assert finished(api, honest)["output"] == "Refunded order 4471."
    assert [e.tool for e in stack.effects(honest)] == ["refund"]
    assert stack.effects(real) == []


def test_a_delegated_runs_call_is_approved_signed_over_http(stack: ApiStack) -> None:
    with stack.client() as api:
        root = api.post("/runs", json={"agent": "support"}).json()["run_id"]
        child = f"{root}~2.1"

        def listed() -> dict[str, object] | None:
            return next((i for i in api.get("/approvals").json() if i["run_id"] == child), None)

        item = eventually(listed, what="the child's approval in the inbox")
        [pending] = waiting(api, child)["pending_approvals"]
        assert item["path"] == [root, child] and item["arguments_hash"] == pending["arguments_hash"]
        body = {"approve": True, "reason": "damaged parcel", "arguments_hash": item["arguments_hash"]}
        decided = api.post(f"/runs/{child}/approvals/{item['call_id']}", json=body)
        assert decided.status_code == 200, decided.text
        assert (decided.json()["outcome"], decided.json()["signed"]) == ("approved", True)
        assert finished(api, root)["status"] == "completed"
    assert [e.tool for e in stack.effects(child)] == ["refund_payment"]
