"""The runs API over an engine: routes, access rules and error shapes, the same for Temporal and checkpoints.

    GET  /runs?status=&agent=&limit=             runs, newest first                       viewer
    POST /runs                                   {"agent", "task", "run_id", ...} -> 201 approver
    GET  /runs/{id}                              status, percent, steps, approvals, audit viewer
    GET  /runs/{id}/events                       SSE: progress, live events (id: offset), end viewer (4 each, 5 min)
    POST /runs/{id}/cancel                       -> 202                                   approver
    POST /runs/{id}/approvals/{call_id}          {"approve", "reason", "arguments_hash"}  approver
    GET  /approvals                              every pending approval, across runs      viewer
    GET  /openapi.json                           the schema                               viewer
    GET  /inbox, /inbox/runs/{id}                the approvals inbox (duragent/_ops/http/inbox.py)
    GET|POST /login, POST /logout                a browser's session (duragent/_ops/http/login.py)
    GET  /facts..., POST /facts/{ns}/forget      what agents remember (duragent/_ops/http/facts.py)
    POST /conversations/{id}/messages, GET /conversations[/{id}]  conversations (duragent/_ops/http/conversations.py)
    GET  /conversations/{id}/events              SSE: each turn's live events (id: TURN:OFFSET)  viewer
    POST /agui/{agent}                           AG-UI: a turn of conversation threadId (SSE)  approver

Access (duragent/_ops/http/auth.py): `Authorization: Bearer <token>` (or the session cookie of /login); no or an unknown
token → 401, a viewer changing something → 403. The approver in an audit entry is the caller's token
identity, never a request field. Host must be local or allowed (rebinding); a POST from another site (its
Origin or Sec-Fetch-Site, duragent/_ops/http/origin.py) → 403; POSTs must be JSON (415: no cross-site form can send
one without a preflight, and CORS is off); bodies over 64 KiB → 413; a 5th event stream of one token
identity → 429 (duragent/_ops/http/streams.py); malformed
or mistyped input → 422 naming the field; an unknown run → 404; a run not in a state for it → 409. In every
one of those cases nothing changes.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

from fastapi import Depends, FastAPI, Header, Query
from starlette.responses import JSONResponse, Response

from duragent._ops.http.agui import add_agui
from duragent._ops.http.auth import ANONYMOUS, HttpAuth, Principal
from duragent._ops.http.base import new_app
from duragent._ops.http.conversation_events import add_conversation_events
from duragent._ops.http.conversation_page import add_conversation_page
from duragent._ops.http.conversations import add_conversations
from duragent._ops.http.engine import Engine
from duragent._ops.http.errors import InvalidRequest
from duragent._ops.http.facts import add_facts
from duragent._ops.http.in_flight import InFlightCaps, RequestSlots
from duragent._ops.http.inbox import add_inbox
from duragent._ops.http.limits import MAX_BODY_BYTES, require_json
from duragent._ops.http.sse import with_keepalives
from duragent._ops.http.streams import MAX_STREAMS_PER_PRINCIPAL, RECONNECT_MS, STREAM_SECONDS, SlotStream, StreamSlots
from duragent._ops.http.views import (
    AuditView,
    Cancelled,
    CancelRequest,
    DecisionRequest,
    InboxItem,
    RunListItem,
    RunView,
    Started,
    StartRequest,
)
from duragent._stores.facts import DurableFactStore

STATUSES = "running | awaiting_approval | compensating | completed | compensated | abandoned | failed | ..."


def create_app(
    engine: Engine,
    auth: HttpAuth,
    *,
    keepalive_seconds: float = 15.0,
    stream_seconds: float | None = None,
    streams_per_principal: int = MAX_STREAMS_PER_PRINCIPAL,
    max_body_bytes: int = MAX_BODY_BYTES,
    secure_cookie: bool = False,
    facts: Callable[[], DurableFactStore] | None = None,
    request_slots: RequestSlots | None = None,
) -> FastAPI:
    """`facts` opens the workers' fact store: with it, the `/facts` routes are served too. `stream_seconds`,
    `streams_per_principal`: how long an event stream lasts, and how many one token identity may hold."""
    streams = StreamSlots(streams_per_principal)
    requests = request_slots or RequestSlots()
    lifetime = STREAM_SECONDS if stream_seconds is None else stream_seconds

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        yield
        await engine.close()  # followers stop; the checkpoint engine stops the workers it started

    app = new_app(
        auth,
        title=f"agent runs ({engine.name})",
        home="/inbox",
        secure_cookie=secure_cookie,
        description=(__doc__ or "").split("\n\n", 1)[0],
        max_body_bytes=max_body_bytes,
        lifespan=lifespan,
    )
    app.state.engine = engine
    # Requests in flight per token identity, and a reserve for approvers (duragent/_ops/http/in_flight.py).
    app.add_middleware(InFlightCaps, auth=auth, slots=requests)
    viewer = Depends(auth.require("viewer"))
    approver = Depends(auth.require("approver"))
    json_only = Depends(require_json)

    @app.get("/runs", response_model=list[RunListItem])
    async def list_runs(
        who: Principal = viewer,
        status: str | None = Query(None, max_length=40, description=STATUSES),
        agent: str | None = Query(None, max_length=200),
        limit: int = Query(100, ge=1, le=1000),
    ) -> list[RunListItem]:
        return await engine.list_runs(status=status, agent=agent, limit=limit)

    @app.post("/runs", status_code=201, response_model=Started)
    async def start_run(request: StartRequest, who: Principal = approver, _: None = json_only) -> Started:
        return Started(run_id=await engine.start(request))

    @app.get("/runs/{run_id}", response_model=RunView)
    async def get_run(run_id: str, who: Principal = viewer) -> RunView:
        return shown_to(await engine.get_run(run_id), who)

    @app.get("/runs/{run_id}/events")
    async def run_events(
        run_id: str,
        who: Principal = viewer,
        last_event_id: int | None = Header(
            None, ge=0, le=2**62, description="The id (offset) of the last live event the client has: resume after it."
        ),
    ) -> Response:
        await engine.require(run_id)
        give_back = streams.take(who)  # 429 past the caller's share (duragent/_ops/http/streams.py)
        return SlotStream(
            with_keepalives(engine.events(run_id, last_event_id), keepalive_seconds, lifetime, RECONNECT_MS),
            give_back,
            media_type="text/event-stream",
            headers={"cache-control": "no-cache", "x-accel-buffering": "no"},
        )

    @app.post("/runs/{run_id}/cancel", status_code=202, response_model=Cancelled)
    async def cancel_run(
        run_id: str, body: CancelRequest | None = None, who: Principal = approver, _: None = json_only
    ) -> Cancelled:
        await engine.cancel(run_id, who)
        return Cancelled(run_id=run_id, cancel_requested=True, by=who.name)

    @app.post(
        "/runs/{run_id}/approvals/{call_id}",
        response_model=AuditView,
        responses={202: {"description": "no worker answered: queued, applied when one picks the run up"}},
    )
    async def decide(
        run_id: str, call_id: str, request: DecisionRequest, who: Principal = approver, _: None = json_only
    ) -> Any:
        if request.approve and request.arguments_hash is None:
            raise InvalidRequest("required to approve: the hash of the arguments you reviewed", "arguments_hash")
        entry = await engine.decide(run_id, call_id, request, who)
        return JSONResponse(entry.model_dump(mode="json"), status_code=202 if entry.outcome == "queued" else 200)

    @app.get("/approvals", response_model=list[InboxItem])
    async def pending(who: Principal = viewer) -> list[InboxItem]:
        return await engine.pending()

    @app.get("/openapi.json", include_in_schema=False)
    async def openapi(who: Principal = viewer) -> dict[str, Any]:
        return app.openapi()

    add_inbox(app, engine, auth)
    if (conversations := getattr(engine, "conversations", None)) is not None:  # the Temporal engine's
        add_conversations(app, conversations, auth)
        add_conversation_events(app, conversations, auth, streams, keepalive_seconds, lifetime)
        add_agui(app, engine, conversations, auth, streams)
        add_conversation_page(app, conversations, auth)
    if facts is not None:
        add_facts(app, auth, facts)
    return app


def shown_to(view: RunView, who: Principal) -> RunView:
    """To a viewer, and to a caller nobody authenticated (--insecure-no-auth), a webhook's attempts say only
    that they failed, not why: the error per attempt (`HTTP 401`, `ConnectError`) would map which internal
    hosts and ports answer. An approver, who may set webhooks, sees why. URLs are always shown
    without credentials or query (the engines redact them)."""
    if who is not ANONYMOUS and who.may("approver"):
        return view
    hooks = [
        hook.model_copy(update={"history": [a | {"error": "failed" if a.get("error") else None} for a in hook.history]})
        for hook in view.webhooks
    ]
    return view.model_copy(update={"webhooks": hooks})
