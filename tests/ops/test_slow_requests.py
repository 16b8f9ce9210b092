"""Review 4, U6, played as the attacker: a viewer keeps 64 ordinary `GET /runs/{id}` in flight — of a run no
worker answers, each re-sent as it returns — against a real runs API server (uvicorn with the connections'
rules, 64 connections) over a dev server; an approver must still be answered. And `GET /runs/{id}` of a run
that is not one of this API's agents' (a stranger's `AgentWorkflow` on another queue) is refused before any
worker is asked."""

from __future__ import annotations

import asyncio
import socket
import uuid
from collections import Counter
from collections.abc import AsyncIterator

import httpx
import pytest

from agentic import Agent, FakeModel, Registry
from duragent._client import AgentClient
from duragent._ops.http import temporal as temporal_engine
from duragent._ops.http.app import create_app
from duragent._ops.http.auth import HttpAuth, TokenTable
from duragent._ops.http.serve import MAX_CONNECTIONS, server
from duragent._ops.http.temporal import TemporalEngine

VIEWER = "viewer-token-0123456789abcdef"
APPROVER = "approver-token-0123456789abcdef"
AGENT = Agent(FakeModel(["never asked"]), Registry([]), name="t-unanswered", task="Wait.")


@pytest.fixture
async def api(dev_env, task_queue: str) -> AsyncIterator[tuple[str, AgentClient]]:
    """The runs API on a free loopback port, for the agents' queue `task_queue` — which no worker polls."""
    agents = AgentClient(dev_env.client, task_queue=task_queue)
    auth = HttpAuth(TokenTable.parse(f"{VIEWER}=olga:viewer,{APPROVER}=maria:approver"))
    app = create_app(TemporalEngine(agents, [AGENT]), auth)
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(128)
    uvicorn = server(app, max_connections=MAX_CONNECTIONS)
    serving = asyncio.ensure_future(uvicorn.serve(sockets=[listener]))
    try:
        while not uvicorn.started:
            await asyncio.sleep(0.05)
        yield f"http://localhost:{listener.getsockname()[1]}", agents
    finally:
        uvicorn.should_exit = True
        await asyncio.wait_for(serving, 30)
        listener.close()


async def test_a_viewer_holding_64_slow_gets_in_flight_keeps_no_approver_out(api, monkeypatch) -> None:
    monkeypatch.setattr(temporal_engine, "SILENT_SECONDS", 0.0)  # every GET asks the absent worker: the slow case
    url, agents = api
    run = await agents.start(AGENT.name, run_id=f"unanswered-{uuid.uuid4().hex[:8]}")
    statuses: Counter[int] = Counter()
    stop = asyncio.Event()
    limits = httpx.Limits(max_connections=MAX_CONNECTIONS, max_keepalive_connections=MAX_CONNECTIONS)
    viewer = httpx.AsyncClient(base_url=url, headers={"Authorization": f"Bearer {VIEWER}"}, limits=limits, timeout=60)

    async def keep_one_in_flight() -> None:
        while not stop.is_set():
            try:
                status = (await viewer.get(f"/runs/{run.run_id}")).status_code
            except httpx.HTTPError:
                status = 0
            statuses[status] += 1
            if status != 200:
                await asyncio.sleep(0.1)  # this process also runs the server: a busy loop would starve it

    flood = [asyncio.ensure_future(keep_one_in_flight()) for _ in range(MAX_CONNECTIONS)]
    answered: list[int] = []
    try:
        await asyncio.sleep(1.0)  # the flood is in flight
        for _ in range(3):
            async with httpx.AsyncClient(
                base_url=url, headers={"Authorization": f"Bearer {APPROVER}"}, timeout=30
            ) as approver:
                answer = await approver.get(f"/runs/{run.run_id}")
                answered.append(answer.status_code)
                assert answer.status_code != 200 or answer.json()["worker_answered"] is False
    finally:
        stop.set()
        await asyncio.gather(*flood)
        await viewer.aclose()
        await run.workflow.terminate("test over")
    assert answered == [200] * 3
    assert statuses[429] > 0 and statuses[200] > 0, statuses  # the viewer was capped, not shut out


async def test_a_run_nobody_answers_is_shown_from_what_the_server_knows_asking_its_worker_once(api) -> None:
    url, agents = api
    run = await agents.start(AGENT.name, run_id=f"unanswered-{uuid.uuid4().hex[:8]}")
    try:
        async with httpx.AsyncClient(base_url=url, headers={"Authorization": f"Bearer {VIEWER}"}, timeout=60) as viewer:
            first = await viewer.get(f"/runs/{run.run_id}")
            again = [await viewer.get(f"/runs/{run.run_id}") for _ in range(3)]
    finally:
        await run.workflow.terminate("test over")
    assert first.status_code == 200 and first.json()["worker_answered"] is False
    assert [a.status_code for a in again] == [200] * 3
    assert all(a.json()["worker_answered"] is False for a in again)
    assert "none answered the progress query" in first.json()["progress"]["label"]
    # Remembered as silent: the next reads show what the server knows without asking the worker again.
    for answer in again:
        assert "no worker answered this run" in answer.json()["progress"]["label"], answer.json()["progress"]


async def test_a_strangers_run_on_another_queue_is_not_found_before_any_worker_is_asked(api, dev_env) -> None:
    url, _ = api
    stranger = AgentClient(dev_env.client, task_queue=f"nobody-polls-{uuid.uuid4().hex[:6]}")
    run = await stranger.start(AGENT.name, run_id=f"stranger-{uuid.uuid4().hex[:8]}")
    try:
        async with httpx.AsyncClient(base_url=url, headers={"Authorization": f"Bearer {VIEWER}"}, timeout=60) as viewer:
            answer = await viewer.get(f"/runs/{run.run_id}")
    finally:
        await run.workflow.terminate("test over")
    assert answer.status_code == 404 and answer.json() == {"error": f"unknown run id {run.run_id!r}"}


def test_each_viewer_has_a_cap_and_viewers_together_leave_the_rest_to_approvers() -> None:
    from duragent._ops.http.auth import Principal
    from duragent._ops.http.in_flight import RequestSlots

    slots = RequestSlots(per_viewer=2, viewers=3, per_approver=4)
    olga, ivan, maria = Principal("olga", "viewer"), Principal("ivan", "viewer"), Principal("maria", "approver")
    assert [slots.take(olga) for _ in range(2)] == [None, None]
    assert slots.take(olga) == "olga already has 2 requests in flight"
    assert slots.take(ivan) is None
    assert slots.take(ivan) == "viewers have 3 requests in flight: the rest are kept for approvers"
    assert [slots.take(maria) for _ in range(4)] == [None] * 4
    assert slots.take(maria) == "maria already has 4 requests in flight"
    slots.give_back(olga)
    assert slots.take(ivan) is None and slots.held(olga) == 1
