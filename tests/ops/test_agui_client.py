"""The official AG-UI client (`@ag-ui/client`, npm, run by Node.js: tests/agui_client) drives a durable
conversation through `POST /agui/{agent}`: text arrives in deltas while the turn is still running, a tool call's
events, an approval as an interrupt and a resume — and a worker killed mid-stream, after which the client's view
ends with the complete answer once."""

from __future__ import annotations

import asyncio
import json
import shutil
import signal
import sys
import uuid
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import WorkflowExecutionStatus

from duragent._ops.devstack.worker_process import WorkerProcess
from duragent._workflows.turns import turn_run_id
from tests.conftest import dev_settings, new_worker
from tests.support.live_agents import SLOW_CHAT, STORY
from tests.support.live_http import APPROVER, live_api

CLIENT = Path(__file__).resolve().parents[1] / "agui_client"
NODE = shutil.which("node")

# A Node.js process of its own: a system test.
pytestmark = [
    pytest.mark.system,
    pytest.mark.skipif(
        NODE is None or not (CLIENT / "node_modules" / "@ag-ui" / "client").is_dir(),
        reason="Node.js or @ag-ui/client missing (make setup runs npm ci in tests/agui_client)",
    ),
]


async def drive(url: str, thread: str, *steps: str) -> AsyncIterator[dict[str, Any]]:
    """What the client prints, line by line as it happens (an event, an error, the state after each step)."""
    process = await asyncio.create_subprocess_exec(
        NODE or "node",
        "drive.mjs",
        f"{url}/agui/{SLOW_CHAT.name}",
        APPROVER,
        thread,
        *steps,
        cwd=CLIENT,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    assert process.stdout is not None
    try:
        async for line in process.stdout:
            yield json.loads(line)
        assert await process.wait() == 0, (await process.stderr.read()).decode() if process.stderr else ""
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()


def events(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [line["event"] for line in lines if line["kind"] == "event"]


def assistant_texts(step: dict[str, Any]) -> list[str]:
    return [m.get("content") or "" for m in step["messages"] if m["role"] == "assistant" and m.get("content")]


async def _read(
    url: str, thread: str, steps: list[str], on_line: Callable[[dict[str, Any]], Any] | None = None
) -> list[dict[str, Any]]:
    lines: list[dict[str, Any]] = []
    async for line in drive(url, thread, *steps):
        lines.append(line)
        if on_line is not None:
            await on_line(line)
    return lines


async def test_the_official_client_streams_a_turn_a_tool_call_and_an_approval(skipping_env, ledger, task_queue):
    thread = f"agui-{uuid.uuid4().hex[:8]}"
    running_at_first_text: list[bool] = []

    async def on_line(line: dict[str, Any]) -> None:
        event = line.get("event") or {}
        if event.get("type") == "TEXT_MESSAGE_CONTENT" and not running_at_first_text:
            handle = skipping_env.client.get_workflow_handle(turn_run_id(thread, 1))
            running_at_first_text.append((await handle.describe()).status == WorkflowExecutionStatus.RUNNING)

    worker = new_worker(skipping_env.client, task_queue, ledger, agents=[SLOW_CHAT])
    async with worker, live_api(skipping_env.client, task_queue, [SLOW_CHAT]) as served:
        lines = await asyncio.wait_for(
            _read(served.url, thread, ["say:story please", "say:pay s-9", "approve"], on_line), 120
        )
    assert not [line for line in lines if line["kind"] == "error"], lines
    story, paying, approving = [line for line in lines if line["kind"] == "step"]
    seen = events(lines)
    first_run = seen[: [e["type"] for e in seen].index("RUN_FINISHED") + 1]
    content = [e["delta"] for e in first_run if e["type"] == "TEXT_MESSAGE_CONTENT"]
    assert running_at_first_text == [True]  # the first words reached the client while the model was still writing
    assert len(content) >= 3 and "".join(content) == STORY
    assert assistant_texts(story) == [STORY]

    types = [e["type"] for e in seen]
    errors = [e for e in seen if e["type"] == "RUN_ERROR"]  # a run that errs says why here
    assert {"TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END", "TOOL_CALL_RESULT"} <= set(types), errors
    [interrupt] = paying["pendingInterrupts"]
    assert interrupt["reason"] == "tool_approval" and interrupt["metadata"]["arguments"] == {"supplier": "s-9"}
    assert approving["pendingInterrupts"] == []
    assert assistant_texts(approving) == [STORY, "Done: paid s-9 (turn 2)"]


async def test_a_worker_killed_mid_stream_leaves_the_client_with_the_answer_once(dev_env, task_queue, tmp_path):
    settings = dev_settings(dev_env, task_queue, tmp_path)
    command = ["-m", "duragent._ops.cli.worker", "--agents", "tests.support.live_agents"]
    thread = f"agui-{uuid.uuid4().hex[:8]}"
    first = WorkerProcess(settings, log=tmp_path / "worker1.log", command=[sys.executable, *command]).wait_ready()
    second: WorkerProcess | None = None
    contents = 0

    async def on_line(line: dict[str, Any]) -> None:
        nonlocal contents, second
        if (line.get("event") or {}).get("type") == "TEXT_MESSAGE_CONTENT":
            contents += 1
            # The first words: the worker writing them dies mid-sentence. (At the second, a loaded machine's batching
            # had sometimes sent the whole story in one batch: no second came, and no worker was killed.)
            if contents == 1 and second is None:
                first.kill()
                second = WorkerProcess(settings, log=tmp_path / "worker2.log", command=[sys.executable, *command])
                await asyncio.to_thread(second.wait_ready)

    try:
        async with live_api(dev_env.client, task_queue, [SLOW_CHAT]) as served:
            lines = await asyncio.wait_for(_read(served.url, thread, ["say:story please"], on_line), 180)
    finally:
        first.kill()
        if second is not None:
            second.stop()
    assert first.process.returncode == -signal.SIGKILL and second is not None
    [step] = [line for line in lines if line["kind"] == "step"]
    assert assistant_texts(step) == [STORY]  # the partial text is gone from the client's view; the answer once
    types = [e["type"] for e in events(lines)]
    assert "MESSAGES_SNAPSHOT" in types  # the client was told to drop the partial message
    assert types[-1] == "RUN_FINISHED"
