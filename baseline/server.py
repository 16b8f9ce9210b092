"""`job serve`: run status, a progress stream and cancellation over HTTP, read from the store — so it
works whichever process runs the run (lesson 004: progress events, not token streams)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from fastapi import FastAPI
from fastapi.responses import JSONResponse, Response, StreamingResponse

from baseline.errors import RunNotResumable, UnknownRun
from baseline.jobs import cancel
from baseline.status import run_status
from baseline.store import Store


def create_app(db_path: Path, *, poll_seconds: float = 0.2, keepalive_seconds: float = 15.0) -> FastAPI:
    store = Store(db_path)
    app = FastAPI(title="baseline runs", description="SQLite checkpoint runner: status, progress, cancel.")

    @app.get("/runs/{run_id}")
    def get_run(run_id: str) -> Any:
        try:
            return run_status(store, run_id)
        except UnknownRun as exc:
            return JSONResponse({"error": str(exc)}, status_code=404)

    @app.post("/runs/{run_id}/cancel", status_code=202)
    def post_cancel(run_id: str) -> Any:
        try:
            cancel(store, run_id, "cancelled over HTTP")
        except UnknownRun as exc:
            return JSONResponse({"error": str(exc)}, status_code=404)
        except RunNotResumable as exc:
            return JSONResponse({"error": str(exc)}, status_code=409)
        return {"run_id": run_id, "cancel_requested": True}

    @app.get("/runs/{run_id}/events")
    async def get_events(run_id: str) -> Response:
        if await asyncio.to_thread(store.run, run_id) is None:
            return JSONResponse({"error": f"unknown run id {run_id!r}"}, status_code=404)
        return StreamingResponse(
            _events(store, run_id, poll_seconds, keepalive_seconds),
            media_type="text/event-stream",
            headers={"cache-control": "no-cache", "x-accel-buffering": "no"},
        )

    return app


async def _events(store: Store, run_id: str, poll: float, keepalive: float) -> AsyncIterator[str]:
    """`progress` events {step, total, label} whenever the stored progress changes, then one `end`."""
    last: dict[str, Any] | None = None
    quiet = 0.0
    while True:
        run = await asyncio.to_thread(store.run, run_id)
        if run is None:
            yield _event("end", {"run_id": run_id, "status": "deleted"})
            return
        progress = run.progress.to_dict()
        if progress != last:
            yield _event("progress", progress)
            last, quiet = progress, 0.0
        if run.terminal:
            yield _event(
                "end",
                {"run_id": run_id, "status": run.status, "stop": run.stop, "output": run.output, "error": run.error},
            )
            return
        if quiet >= keepalive:
            yield ": keep-alive\n\n"  # a comment line: proxies keep the connection, clients ignore it
            quiet = 0.0
        await asyncio.sleep(poll)
        quiet += poll


def _event(name: str, data: dict[str, Any]) -> str:
    return f"event: {name}\ndata: {json.dumps(data, sort_keys=True)}\n\n"
