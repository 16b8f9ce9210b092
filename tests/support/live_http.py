"""The runs API over Temporal in the test's own event loop (its engine shares the test's Temporal client), served
by the same uvicorn server as `starter.py serve`, and an SSE reader for its event streams."""

from __future__ import annotations

import argparse
import asyncio
import json
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import httpx
from temporalio.client import Client

from agentic import Agent
from duragent._client import AgentClient
from duragent._ops.http.app import create_app
from duragent._ops.http.auth import HttpAuth, TokenTable
from duragent._ops.http.serve import listen, server
from duragent._ops.http.temporal import TemporalEngine

APPROVER = "approver-token-0123456789"
VIEWER = "viewer-token-0123456789ab"
TOKENS = f"{APPROVER}=maria:approver,{VIEWER}=ops:viewer"


@dataclass
class LiveApi:
    url: str
    engine: TemporalEngine

    def client(self, token: str = APPROVER) -> httpx.AsyncClient:
        return httpx.AsyncClient(base_url=self.url, headers={"Authorization": f"Bearer {token}"}, timeout=60)


@asynccontextmanager
async def live_api(client: Client, task_queue: str, agents: Sequence[Agent], **app: Any) -> AsyncIterator[LiveApi]:
    engine = TemporalEngine(AgentClient(client, task_queue=task_queue), list(agents))
    built = create_app(engine, HttpAuth(TokenTable.parse(TOKENS)), **app)
    listener = listen(argparse.Namespace(host="127.0.0.1", port=0))
    running = server(built)
    task = asyncio.create_task(running.serve(sockets=[listener]))
    try:
        while not running.started:
            assert not task.done(), "the server did not start"
            await asyncio.sleep(0.01)
        yield LiveApi(f"http://127.0.0.1:{listener.getsockname()[1]}", engine)
    finally:
        running.should_exit = True
        await asyncio.wait_for(task, 30)
        listener.close()
        await engine.close()


@dataclass
class Frame:
    event: str
    data: dict[str, Any]
    id: str | None = None


async def frames(response: httpx.Response) -> AsyncIterator[Frame]:
    """The SSE frames of a streamed response, as they come."""
    event, data, id = "message", "", None
    async for line in response.aiter_lines():
        if line.startswith("id: "):
            id = line.removeprefix("id: ")
        elif line.startswith("event: "):
            event = line.removeprefix("event: ")
        elif line.startswith("data: "):
            data += line.removeprefix("data: ")
        elif line == "" and data:
            yield Frame(event, json.loads(data), id)
            event, data, id = "message", "", None
