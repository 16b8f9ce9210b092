"""Conversations over HTTP (Temporal engine), under the runs API's tokens and roles:

    POST /conversations/{id}/messages   {"agent", "text", "expect_turn", "wait", "model"} -> 202 | 200    approver
    GET  /conversations/{id}            status, turns, consumption, a transcript page, pending approvals   viewer
    GET  /conversations/{id}/turns/{n}  the turn's answer (waits for it)                                   viewer
    GET  /conversations                 conversations, newest first                                        viewer

A message is one update-with-start (`ConversationHandle.send`): the handler never asks whether the conversation
exists. Approvals of a turn are decided at `POST /runs/{turn run}/approvals/{call_id}` like any run's, and show in
`GET /approvals` and the inbox. A refused message is 422 (empty, too long, a model the workers do not declare) or 409
(closed, stale turn, busy, over budget), nothing sent; an unknown conversation 404.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from fastapi import Depends, FastAPI, Query
from pydantic import BaseModel, Field
from starlette.responses import JSONResponse

from agentic import Agent
from agentic.agent import InvalidOptions
from duragent._client import AgentClient
from duragent._conversations import HistoryPage
from duragent._errors import MessageRefused, TemporalUnavailable, UnknownRun, WorkerUnavailable
from duragent._ops.http.auth import HttpAuth, Principal
from duragent._ops.http.errors import ApiError, Conflict, EngineUnavailable, InvalidRequest
from duragent._ops.http.limits import require_json
from duragent._workflows import search_attributes as sa
from duragent._workflows.conversation_inputs import ConversationView, TurnResult

INPUT_REFUSALS = ("EmptyMessage", "MessageTooLong")


class ConversationNotFound(ApiError):
    status_code = 404

    def __init__(self, conversation_id: str) -> None:
        super().__init__(f"unknown conversation id {conversation_id!r}")


class MessageRequest(BaseModel):
    agent: str = Field(max_length=64, description="The agent the conversation talks to (used when it starts).")
    text: str = Field(max_length=65536)
    expect_turn: int | None = Field(None, ge=1, description="Refused (409) unless this message is that turn.")
    wait: bool = Field(False, description="Answer with the turn's result (200) instead of its number (202).")
    options: dict[str, Any] = Field(default_factory=dict)
    model: str | None = Field(
        None, max_length=200, description="The model for this turn, by the name the workers declare; None: the usual."
    )


class MessageAccepted(BaseModel):
    conversation_id: str
    turn: int


class ConversationPage(BaseModel):
    conversation: ConversationView
    transcript: HistoryPage


class Conversations:
    """The Temporal engine's conversations: `AgentClient.conversation` for the agents this server knows."""

    def __init__(self, agents: AgentClient, served: Sequence[Agent]) -> None:
        self.agents = agents
        self.served = {a.name: a for a in served if a.name}

    async def send(self, conversation_id: str, request: MessageRequest) -> TurnResult | MessageAccepted:
        agent = self.served.get(request.agent)
        if agent is None:
            served = ", ".join(sorted(self.served)) or "none"
            raise InvalidRequest(f"unknown agent {request.agent!r}; served: {served}", "agent")
        with _translated(conversation_id):
            try:
                conv = self.agents.conversation(agent, conversation_id, options=request.options)
            except InvalidOptions as exc:
                raise InvalidRequest(str(exc), "options") from None
            except ValueError as exc:
                raise InvalidRequest(str(exc), "conversation_id") from None
            answer = await conv.send(
                request.text, wait=request.wait, expect_turn=request.expect_turn, model=request.model
            )
        return (
            answer if isinstance(answer, TurnResult) else MessageAccepted(conversation_id=conversation_id, turn=answer)
        )

    async def get(self, conversation_id: str, offset: int, limit: int) -> ConversationPage:
        conv = self._handle(conversation_id)
        with _translated(conversation_id):
            page = await conv.history(offset, limit)
            view = await conv.describe()
        return ConversationPage(conversation=view, transcript=page)

    async def describe(self, conversation_id: str) -> ConversationView:
        with _translated(conversation_id):
            return await self._handle(conversation_id).describe()

    async def turn(self, conversation_id: str, turn: int) -> TurnResult:
        with _translated(conversation_id):
            return await self._handle(conversation_id).wait(turn)

    async def list(self, status: str | None, agent: str | None, limit: int) -> list[dict[str, Any]]:
        with _translated():
            try:
                found = await self.agents.conversations(status=status, agent=agent, limit=limit)
            except ValueError as exc:
                raise InvalidRequest(str(exc)) from None
        return [
            {
                "conversation_id": e.id,
                "agent": e.typed_search_attributes.get(sa.AGENT_NAME),
                "status": e.typed_search_attributes.get(sa.AGENT_STATUS),
                "turns": e.typed_search_attributes.get(sa.AGENT_STEP),
                "started_at": e.start_time.isoformat() if e.start_time else None,
            }
            for e in found
        ]

    def _handle(self, conversation_id: str) -> Any:
        try:
            return self.agents.conversation("-", conversation_id)  # reading: the agent is the conversation's own
        except ValueError as exc:
            raise InvalidRequest(str(exc), "conversation_id") from None


def add_conversations(app: FastAPI, conversations: Conversations, auth: HttpAuth) -> None:
    viewer = Depends(auth.require("viewer"))
    approver = Depends(auth.require("approver"))
    json_only = Depends(require_json)

    @app.post(
        "/conversations/{conversation_id}/messages",
        responses={202: {"model": MessageAccepted}, 200: {"model": TurnResult}},
    )
    async def send(
        conversation_id: str, request: MessageRequest, who: Principal = approver, _: None = json_only
    ) -> Any:
        answer = await conversations.send(conversation_id, request)
        status = 202 if isinstance(answer, MessageAccepted) else 200
        return JSONResponse(answer.model_dump(mode="json"), status_code=status)

    @app.get("/conversations/{conversation_id}", response_model=ConversationPage)
    async def get(
        conversation_id: str,
        who: Principal = viewer,
        offset: int = Query(0, ge=0),
        limit: int = Query(50, ge=1, le=500),
    ) -> ConversationPage:
        return await conversations.get(conversation_id, offset, limit)

    @app.get("/conversations/{conversation_id}/turns/{turn}", response_model=TurnResult)
    async def turn(conversation_id: str, turn: int, who: Principal = viewer) -> TurnResult:
        return await conversations.turn(conversation_id, turn)

    @app.get("/conversations")
    async def list_conversations(
        who: Principal = viewer,
        status: str | None = Query(None, max_length=40),
        agent: str | None = Query(None, max_length=200),
        limit: int = Query(100, ge=1, le=1000),
    ) -> list[dict[str, Any]]:
        return await conversations.list(status, agent, limit)


@contextmanager
def _translated(conversation_id: str = "") -> Iterator[None]:
    try:
        yield
    except MessageRefused as exc:
        if exc.kind in INPUT_REFUSALS:
            raise InvalidRequest(exc.reason, "text") from None
        if exc.kind == "UnknownModel":
            raise InvalidRequest(exc.reason, "model") from None
        if exc.kind == "UnknownTurn":
            raise ConversationNotFound(conversation_id) from None
        raise Conflict(f"{exc.kind}: {exc.reason}") from None
    except UnknownRun:
        raise ConversationNotFound(conversation_id) from None
    except (TemporalUnavailable, WorkerUnavailable) as exc:
        raise EngineUnavailable(str(exc)) from None
