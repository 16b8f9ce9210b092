"""The merged event stream's `end` once every live event is read: the run's result, or — a result that fails
to come or fails to read — an `end` saying the status is unknown and why, never a stream that hangs or breaks off
without its last frame (duragent/_ops/http/live.py)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from duragent._ops.http import live

pytestmark = pytest.mark.unit


async def test_the_end_is_the_runs_result_when_it_comes() -> None:
    async def end_of(run_id: str) -> dict[str, Any]:
        return {"run_id": run_id, "status": "completed", "stop": "answered", "output": "hi"}

    assert (await live._ending(end_of, "r1"))["output"] == "hi"


async def test_a_result_that_cannot_be_read_ends_the_stream_saying_why() -> None:
    async def end_of(run_id: str) -> dict[str, Any]:
        raise ConnectionError("the server went away")

    end = await live._ending(end_of, "r1")
    assert end == {
        "run_id": "r1",
        "status": "unknown",
        "stop": None,
        "output": None,
        "error": "ConnectionError: the server went away",
    }


async def test_a_result_that_never_comes_ends_the_stream_after_a_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(live, "END_SECONDS", 0.05)

    async def end_of(run_id: str) -> dict[str, Any]:
        await asyncio.Event().wait()
        raise AssertionError("unreachable")

    end = await asyncio.wait_for(live._ending(end_of, "r1"), 5)
    assert end["status"] == "unknown" and end["error"] == "no result within 0 s"
