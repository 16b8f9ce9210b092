"""`POST /agui/{agent}`: an AG-UI run is a turn of the durable conversation `threadId` — its text as
TEXT_MESSAGE_* while it is written, its tool calls as TOOL_CALL_*, a gated tool as an `interrupt` outcome whose
`resume` is the approver's decision (through the runs API's checks and audit; a viewer cannot make it). The
official client's own test is tests/ops/test_agui_client.py; this one reads the wire in Python."""

from __future__ import annotations

import json
import uuid
from typing import Any

import httpx

from tests.conftest import new_worker
from tests.support.conversation_agents import CHAT
from tests.support.live_http import VIEWER, live_api


def _input(thread: str, text: str | None = None, resume: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"threadId": thread, "runId": f"r-{uuid.uuid4().hex[:6]}", "messages": []}
    if text is not None:
        body["messages"] = [{"id": "m-1", "role": "user", "content": text}]
    if resume is not None:
        body["resume"] = resume
    return body


async def _run(api: httpx.AsyncClient, body: dict[str, Any]) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    async with api.stream("POST", f"/agui/{CHAT.name}", json=body) as response:
        assert response.status_code == 200, await response.aread()
        assert response.headers["content-type"].startswith("text/event-stream")
        async for line in response.aiter_lines():
            if line.startswith("data: "):
                events.append(json.loads(line.removeprefix("data: ")))
    return events


def _types(events: list[dict[str, Any]]) -> list[str]:
    return [e["type"] for e in events]


async def test_a_turn_streams_as_ag_ui_events_and_an_approval_is_an_interrupt_and_a_resume(
    skipping_env, ledger, task_queue
):
    thread = f"agui-{uuid.uuid4().hex[:8]}"
    worker = new_worker(skipping_env.client, task_queue, ledger, agents=[CHAT])
    async with worker, live_api(skipping_env.client, task_queue, [CHAT]) as served, served.client() as api:
        hello = await _run(api, _input(thread, "hello there"))
        paying = await _run(api, _input(thread, "pay s-9"))
        [interrupt] = paying[-1]["outcome"]["interrupts"]
        async with served.client(VIEWER) as viewer:
            refused = await viewer.post(f"/agui/{CHAT.name}", json=_input(thread, resume=[]))
        resumed = await _run(
            api,
            _input(
                thread,
                resume=[
                    {
                        "interruptId": interrupt["id"],
                        "status": "resolved",
                        "payload": {"approved": True, "argumentsHash": interrupt["metadata"]["argumentsHash"]},
                    }
                ],
            ),
        )
        audit = (await api.get(f"/runs/{thread}~turn-2")).json()["audit"]

    assert _types(hello)[:2] == ["RUN_STARTED", "STATE_SNAPSHOT"] and _types(hello)[-1] == "RUN_FINISHED"
    content = [e["delta"] for e in hello if e["type"] == "TEXT_MESSAGE_CONTENT"]
    assert len(content) >= 2 and "".join(content) == "You said 'hello there' (turn 1, 2 messages)"
    assert hello[-1]["result"]["answer"] == "".join(content) and hello[-1]["outcome"] == {"type": "success"}

    assert {"TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END"} <= set(_types(paying))
    args = "".join(e["delta"] for e in paying if e["type"] == "TOOL_CALL_ARGS")
    assert json.loads(args) == {"supplier": "s-9"}
    assert paying[-1]["type"] == "RUN_FINISHED" and paying[-1]["outcome"]["type"] == "interrupt"
    assert interrupt["reason"] == "tool_approval" and interrupt["toolCallId"] == interrupt["id"]
    assert interrupt["id"] == f"{thread}~turn-2/1.1"
    assert (
        interrupt["metadata"]["arguments"] == {"supplier": "s-9"} and len(interrupt["metadata"]["argumentsHash"]) == 64
    )

    assert refused.status_code == 403  # a viewer decides nothing (nor sends)
    assert "TOOL_CALL_RESULT" in _types(resumed) and resumed[-1]["type"] == "RUN_FINISHED"
    assert resumed[-1]["result"]["answer"] == "Done: paid s-9 (turn 2)"
    assert not any(e["type"] == "TOOL_CALL_START" for e in resumed)  # not shown twice
    [approved] = [a for a in audit if a["outcome"] == "approved"]
    assert approved["approver"] == "maria"  # the token's identity, through the runs API's decision path


async def test_a_resume_naming_another_threads_call_or_without_the_hash_is_an_error(skipping_env, ledger, task_queue):
    thread = f"agui-{uuid.uuid4().hex[:8]}"
    worker = new_worker(skipping_env.client, task_queue, ledger, agents=[CHAT])
    async with worker, live_api(skipping_env.client, task_queue, [CHAT]) as served, served.client() as api:
        paying = await _run(api, _input(thread, "pay s-1"))
        [interrupt] = paying[-1]["outcome"]["interrupts"]
        stranger = await _run(
            api, _input(thread, resume=[{"interruptId": "other~turn-1/1.1", "status": "resolved", "payload": {}}])
        )
        no_hash = await _run(
            api,
            _input(
                thread, resume=[{"interruptId": interrupt["id"], "status": "resolved", "payload": {"approved": True}}]
            ),
        )
        pending = (await api.get(f"/runs/{thread}~turn-1")).json()["pending_approvals"]
    assert stranger[-1]["type"] == "RUN_ERROR" and "not one of this thread's" in stranger[-1]["message"]
    assert no_hash[-1]["type"] == "RUN_ERROR" and "argumentsHash" in no_hash[-1]["message"]
    assert [p["call_id"] for p in pending] == ["1.1"]  # still waiting: nothing was decided
