"""`orders`: an agent of your own, as you would write it — tools that call your service over HTTP, your
HTTP client as the tools' deps, one tool that needs a human's approval. The same `agent` runs in-process
(`agent.run(...)`) and durably (`python worker.py --agents examples.orders`, with ORDERS_URL set).

The refund passes `ctx.idempotency_key` to the service as `Idempotency-Key`: the service refunds once per
key, so a retried or replayed call never refunds twice. That is how real tools make effects idempotent.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Annotated
from urllib.parse import quote

import httpx
from pydantic import StringConstraints

from agentic import Agent, Budget, FakeModel, Message, Registry, ToolContext, ToolRetry, tool, tool_call
from duragent._config.settings import Settings


def call(request: httpx.Request, ctx: ToolContext) -> httpx.Response:
    """Send `request`; a service that is down or failing is retried (same key), a 4xx is the model's."""
    try:
        reply = ctx.deps.send(request)
    except httpx.TransportError as exc:
        raise ToolRetry(f"the orders service is unreachable: {exc}") from exc
    if reply.status_code >= 500:
        raise ToolRetry(f"the orders service answered {reply.status_code}")
    return reply


# An order id as the service knows them. The model's arguments become part of a URL: checked before any
# request (`../refunds` would otherwise reach another endpoint), and quoted as a path segment anyway.
OrderId = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9-]{1,32}$")]


def order_path(order_id: str, suffix: str = "") -> str:
    return f"/orders/{quote(order_id, safe='')}{suffix}"


@tool(description="Look up an order: its amount.", order_id="The order id, e.g. A-1.")
def lookup_order(order_id: OrderId, ctx: ToolContext) -> str:
    return call(ctx.deps.build_request("GET", order_path(order_id)), ctx).text


@tool(description="Refund an order in full.", order_id="The order id.", mutating=True, requires_confirmation=True)
def refund_order(order_id: OrderId, ctx: ToolContext) -> str:
    headers = {"Idempotency-Key": ctx.idempotency_key}  # the service refunds at most once per key
    reply = call(ctx.deps.build_request("POST", order_path(order_id, "/refund"), headers=headers), ctx)
    return reply.json().get("answer") or reply.text


def script(messages: Sequence[Message]) -> object:
    """A scripted model (swap in a real one with `--model`): look up, refund, then answer."""
    results = [m.content for m in messages if m.role == "tool"]
    if not results:
        return tool_call("lookup_order", {"order_id": "A-1"})
    if len(results) == 1:
        return tool_call("refund_order", {"order_id": "A-1"})
    return f"Done: {results[-1]}"


agent = Agent(
    FakeModel.replying(script, name="orders-script"),
    Registry([lookup_order, refund_order]),
    system="You handle refund requests. Look the order up first; refunds need a human's approval.",
    budget=Budget(max_steps=5),
    name="orders",
    description="Look up order A-1 and refund it through the orders service (approval required).",
    task="The customer of order A-1 asks for a refund.",
)
agents = [agent]


def make_deps(settings: Settings) -> httpx.Client:
    """Your service's client, made once per worker; its URL is the worker's configuration."""
    return httpx.Client(base_url=os.environ.get("ORDERS_URL", "http://127.0.0.1:8090"), timeout=30)
