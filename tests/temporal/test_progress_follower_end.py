"""A progress stream whose follower cannot go on ends with an `end` saying the status is unknown and why, never a
stream that hangs without its last frame (duragent/_ops/http/feeds.py): the closed run's result that cannot be
read, and a run the server does not know. On the dev server: the follower long-polls the run's history, which the
time-skipping server answers with nothing."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest

from duragent._activities.inputs import AgentResult
from duragent._client import AgentClient
from duragent._ops.http.engine import StreamEvent
from duragent._ops.http.feeds import Feeds
from duragent._workflows.agent import AgentWorkflow
from duragent._workflows.inputs import AgentInput
from tests.conftest import new_worker
from tests.support.live_agents import AGENTS

pytestmark = pytest.mark.system


async def _cannot_read(run_id: str) -> dict[str, Any]:
    raise ConnectionError("the server went away")


async def _streamed(feeds: Feeds, run_id: str) -> list[StreamEvent]:
    try:
        return await asyncio.wait_for(_all(feeds, run_id), timeout=30)
    finally:
        await feeds.close()


async def _all(feeds: Feeds, run_id: str) -> list[StreamEvent]:
    return [event async for event in feeds.stream(run_id)]


async def test_a_closed_run_whose_result_cannot_be_read_ends_its_stream_saying_why(dev_env, ledger, task_queue):
    run_id = f"follow-{uuid.uuid4().hex[:10]}"
    async with new_worker(dev_env.client, task_queue, ledger, agents=AGENTS):
        handle = await dev_env.client.start_workflow(
            AgentWorkflow.run,
            AgentInput(agent="live-writer"),
            id=run_id,
            task_queue=task_queue,
            result_type=AgentResult,
        )
        assert (await handle.result()).status == "completed"
    agents = AgentClient(dev_env.client, task_queue=task_queue)
    events = await _streamed(Feeds(agents, _cannot_read), run_id)
    assert [name for name, _ in events][-1] == "end"
    assert events[-1][1] == {
        "run_id": run_id,
        "status": "unknown",
        "stop": None,
        "output": None,
        "error": "ConnectionError: the server went away",
    }


async def test_a_run_the_server_does_not_know_ends_its_stream_saying_so(dev_env, task_queue):
    agents = AgentClient(dev_env.client, task_queue=task_queue)
    events = await _streamed(Feeds(agents, _cannot_read), "no-such-run")
    assert len(events) == 1 and events[0][0] == "end"
    end = events[0][1]
    assert end["status"] == "unknown" and end["run_id"] == "no-such-run"
    assert end["error"].startswith("RPCError: ") and "no-such-run" in end["error"]
