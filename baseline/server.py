"""`job serve`: run status, a progress stream and cancellation over HTTP, read from the store — so it
works whichever process runs the run (lesson 004: progress events, not token streams).

Access (ops/http_auth.py): every route needs `Authorization: Bearer <token>` from `AGENT_API_TOKENS` /
`AGENT_API_TOKENS_FILE`; a `viewer` reads, an `approver` may also cancel (and is named in the cancellation).
The Host header must be a local name or one given with `--allowed-host`; a POST must be
`Content-Type: application/json`, which a cross-site page cannot send without a CORS preflight (which this
server never grants). Webhook URLs are shown without their query string or credentials; a 404 names the run
id only; /docs and /openapi.json are off.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from fastapi import Depends, FastAPI, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse

from baseline.errors import RunNotResumable, UnknownRun
from baseline.jobs import cancel
from baseline.status import run_status
from baseline.store import Store
from baseline.webhooks import redact_url
from ops.http_auth import ANONYMOUS, HttpAuth, Principal


def create_app(db_path: Path, auth: HttpAuth, *, poll_seconds: float = 0.2, keepalive_seconds: float = 15.0) -> FastAPI:
    store = Store(db_path)
    app = FastAPI(
        title="baseline runs",
        description="SQLite checkpoint runner: status, progress, cancel.",
        docs_url=None,
        redoc_url=None,
        openapi_url=None,
    )
    auth.install(app)
    viewer = Depends(auth.require("viewer"))
    approver = Depends(auth.require("approver"))

    @app.get("/runs/{run_id}")
    def get_run(run_id: str, who: Principal = viewer) -> Any:
        try:
            return public_view(run_status(store, run_id), who)
        except UnknownRun:
            return _unknown(run_id)

    @app.post("/runs/{run_id}/cancel", status_code=202)
    def post_cancel(run_id: str, request: Request, who: Principal = approver) -> Any:
        if not _is_json(request):
            return JSONResponse({"error": "POST needs Content-Type: application/json"}, status_code=415)
        try:
            cancel(store, run_id, f"cancelled over HTTP by {who.name}")
        except UnknownRun:
            return _unknown(run_id)
        except RunNotResumable as exc:
            return JSONResponse({"error": str(exc)}, status_code=409)
        return {"run_id": run_id, "cancel_requested": True, "by": who.name}

    @app.get("/runs/{run_id}/events")
    async def get_events(run_id: str, who: Principal = viewer) -> Response:
        if await asyncio.to_thread(store.run, run_id) is None:
            return _unknown(run_id)
        return StreamingResponse(
            _events(store, run_id, poll_seconds, keepalive_seconds),
            media_type="text/event-stream",
            headers={"cache-control": "no-cache", "x-accel-buffering": "no"},
        )

    return app


def _unknown(run_id: str) -> JSONResponse:
    return JSONResponse({"error": f"unknown run id {run_id!r}"}, status_code=404)  # never the store's path


def _is_json(request: Request) -> bool:
    media_type = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    return media_type == "application/json"


def public_view(view: dict[str, Any], who: Principal) -> dict[str, Any]:
    """What the API shows of `job status --json`: webhook URLs without secrets, and — to a caller nobody
    authenticated (--insecure-no-auth) — no webhook errors, which would map internal hosts and ports."""
    hooks = []
    for hook in view.get("webhooks", []):
        hook = hook | {"url": redact_url(hook["url"])}
        if who is ANONYMOUS:
            hook["history"] = [
                attempt | {"error": "failed" if attempt["error"] else None} for attempt in hook["history"]
            ]
        hooks.append(hook)
    return view | {"webhooks": hooks}


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
