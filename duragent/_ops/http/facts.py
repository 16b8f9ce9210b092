"""What agents remember, over HTTP ("purge and inspect ... and the HTTP API"): the same reads and
the same purge as `starter.py facts`, on the workers' fact store (`AGENT_DATABASE_URL`, else
`AGENT_DATA_DIR/facts.db`) — not Temporal's, so both engines serve the same routes.

    GET  /facts                                  namespaces, with how many facts each    viewer
    GET  /facts/{namespace}                      the facts, each with its source          viewer
    GET  /facts/{namespace}/history?key=         every version, forgotten ones included   viewer
    GET  /facts/{namespace}/audit                refused writes and forgotten sources     viewer
    POST /facts/{namespace}/forget {"source"}    remove what one source taught            approver

Who forgets is the caller's token identity, recorded in the audit, never a request field."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from functools import cache
from typing import TypeVar

from fastapi import Depends, FastAPI, Query
from pydantic import BaseModel, ConfigDict, Field, StrictStr

from duragent._ops.http.auth import HttpAuth, Principal
from duragent._ops.http.errors import EngineUnavailable, InvalidRequest
from duragent._ops.http.limits import require_json
from duragent._stores.errors import StoreUnavailable
from duragent._stores.facts import DurableFactStore, FactAudit, FactRecord, Forgotten, check_namespace

T = TypeVar("T")


class ForgetRequest(BaseModel):
    """`POST /facts/{namespace}/forget`. Unknown fields are refused (`by` is the caller, not a field)."""

    model_config = ConfigDict(extra="forbid")

    source: StrictStr = Field(min_length=1, max_length=500, description="The source whose facts are removed.")


def add_facts(app: FastAPI, auth: HttpAuth, open_store: Callable[[], DurableFactStore]) -> None:
    """The routes above, on the store `open_store` opens (once, on first use)."""
    store = cache(open_store)
    viewer = Depends(auth.require("viewer"))
    approver = Depends(auth.require("approver"))
    json_only = Depends(require_json)

    async def using(read: Callable[[DurableFactStore], T]) -> T:
        def run() -> T:
            return read(store())

        try:
            return await asyncio.to_thread(run)
        except StoreUnavailable as exc:
            raise EngineUnavailable(str(exc)) from None
        except ValueError as exc:  # a namespace, key or source the store refuses (blank, too long, NUL)
            raise InvalidRequest(str(exc)) from None

    @app.get("/facts", response_model=dict[str, int])
    async def namespaces(who: Principal = viewer) -> dict[str, int]:
        return await using(lambda s: s.namespaces())

    @app.get("/facts/{namespace}", response_model=list[FactRecord])
    async def facts(namespace: str, who: Principal = viewer) -> list[FactRecord]:
        return await using(lambda s: s.namespace(_checked(namespace)).records())

    @app.get("/facts/{namespace}/history", response_model=list[FactRecord])
    async def history(
        namespace: str, who: Principal = viewer, key: str | None = Query(None, max_length=200)
    ) -> list[FactRecord]:
        return await using(lambda s: s.namespace(_checked(namespace)).history(key))

    @app.get("/facts/{namespace}/audit", response_model=list[FactAudit])
    async def audit(namespace: str, who: Principal = viewer) -> list[FactAudit]:
        return await using(lambda s: s.namespace(_checked(namespace)).audit())

    @app.post("/facts/{namespace}/forget", response_model=Forgotten)
    async def forget(
        namespace: str, request: ForgetRequest, who: Principal = approver, _: None = json_only
    ) -> Forgotten:
        if not request.source.strip():
            raise InvalidRequest("the source whose facts are removed, not blank", "source")
        return await using(lambda s: s.namespace(_checked(namespace)).forget(request.source, by=who.name))


def _checked(namespace: str) -> str:
    try:
        return check_namespace(namespace)
    except ValueError as exc:
        raise InvalidRequest(str(exc), "namespace") from None
