"""`GET /runs/{id}/events` streams a run's live events as server-sent events: the model's text in batches as it
is written, with ids (offsets) a client resumes after with `Last-Event-ID`, between the progress frames and the
`end` — under the same tokens and stream limits as before."""

from __future__ import annotations

import time

import httpx
import pytest

from agentic.live import Transcript, live_event
from tests.conftest import new_worker
from tests.support.live_agents import AGENTS, LONG_ANSWER
from tests.support.live_batches import batch_bound
from tests.support.live_http import VIEWER, Frame, frames, live_api


async def _start(api: httpx.AsyncClient, agent: str, **fields: object) -> str:
    response = await api.post("/runs", json={"agent": agent} | fields)
    assert response.status_code == 201, response.text
    return str(response.json()["run_id"])


async def _read(
    api: httpx.AsyncClient, run_id: str, last_id: str | None = None, limit: int | None = None
) -> list[Frame]:
    headers = {"Last-Event-ID": last_id} if last_id is not None else {}
    read: list[Frame] = []
    async with api.stream("GET", f"/runs/{run_id}/events", headers=headers) as response:
        assert response.status_code == 200, await response.aread()
        async for frame in frames(response):
            read.append(frame)
            if limit is not None and len([f for f in read if f.id is not None]) == limit:
                break
    return read


def _live(read: list[Frame]) -> list[Frame]:
    return [f for f in read if f.id is not None]


@pytest.mark.long
async def test_a_viewer_reads_the_streamed_text_between_progress_and_the_end(skipping_env, ledger, task_queue):
    worker = new_worker(skipping_env.client, task_queue, ledger, agents=AGENTS)
    async with worker, live_api(skipping_env.client, task_queue, AGENTS) as served:
        began = time.monotonic()
        async with served.client() as api:
            run_id = await _start(api, "live-writer", stream=True)
        async with served.client(VIEWER) as viewer:
            read = await _read(viewer, run_id)
        bound = await batch_bound(skipping_env.client, run_id, time.monotonic() - began)
    assert read[-1].event == "end" and read[-1].data["output"] == LONG_ANSWER
    assert all(f.event in ("progress", "end") for f in read if f.id is None)  # progress frames carry no id
    live = _live(read)
    assert [int(f.id) for f in live] == list(range(len(live)))  # type: ignore[arg-type]
    view = Transcript()
    for f in live:
        view.add(live_event({"type": f.event, **f.data}))
    assert view.text == LONG_ANSWER
    deltas = [f for f in live if f.event == "text_delta"]
    assert "".join(f.data["text"] for f in deltas) == LONG_ANSWER
    assert 2 <= len(deltas) <= bound < 500  # batches the schedule allows for the calls' time, not tokens


@pytest.mark.long
async def test_last_event_id_resumes_after_it_nothing_missed_nothing_repeated(skipping_env, ledger, task_queue):
    worker = new_worker(skipping_env.client, task_queue, ledger, agents=AGENTS)
    async with worker, live_api(skipping_env.client, task_queue, AGENTS) as served, served.client() as api:
        run_id = await _start(api, "live-writer", stream=True)
        first = _live(await _read(api, run_id, limit=4))  # the client goes away after 4 events
        rest = _live(await _read(api, run_id, last_id=first[-1].id))
        whole = _live(await _read(api, run_id))
    assert [f.id for f in first + rest] == [f.id for f in whole]
    assert [(f.event, f.data) for f in first + rest] == [(f.event, f.data) for f in whole]


async def test_a_last_event_id_that_is_not_an_offset_is_refused(skipping_env, ledger, task_queue):
    async with live_api(skipping_env.client, task_queue, AGENTS) as served, served.client() as api:
        for bad in ("-1", "abc", "1e3", str(2**70)):
            response = await api.get("/runs/anything/events", headers={"Last-Event-ID": bad})
            assert response.status_code == 422, (bad, response.text)
            assert "last-event-id" in response.json()["error"]
        anonymous = await httpx.AsyncClient(base_url=served.url).get("/runs/anything/events")
        assert anonymous.status_code == 401
