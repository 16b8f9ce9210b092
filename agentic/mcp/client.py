"""Talking to MCP servers with the official `mcp` SDK: list a server's tools, call one.

Nothing a run relies on lives in an MCP session: a session is not durable (a worker may die, a call may be
retried on another host), so a run keeps only what it recorded. Over HTTP each listing and each call opens
its own connection; a stdio server is started once per process and kept running between calls
(`sessions.py`) — an optimisation only. A call carries its idempotency key in the request's `_meta` under
`IDEMPOTENCY_KEY_META`, the same on every retry, so a server that honours it performs the effect once.

Failures are sorted once, here: unreachable (retried), misconfigured (not), and what the server said.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from functools import partial
from typing import Any, TypeVar

import anyio

from agentic.extras import require_extra

require_extra("mcp")

import httpx2
from mcp import Client, MCPError, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp_types import CONNECTION_CLOSED, REQUEST_TIMEOUT, CallToolResult, Implementation

from agentic.mcp import IDEMPOTENCY_KEY_META
from agentic.mcp.server import MCPConfigError, MCPServer, MCPToolsError, MCPUnavailable
from agentic.mcp.sessions import StdioSessions
from agentic.mcp.toolset import specs_of
from agentic.messages import ToolCall, canonical_json
from agentic.results import ToolResult, ToolStatus
from agentic.tools import ToolSpec

CLIENT = Implementation(name="duragent", version="0.2.0")  # who connects, as an MCP server sees it
_MAX_PAGES = 100
# Above the claim check's hard cap (16 MB): a large result reaches the claim check, which says it is too large.
_MAX_EVENT_BYTES = 32 * 1024 * 1024
T = TypeVar("T")


async def list_tools(server: MCPServer) -> dict[str, ToolSpec]:
    """The tools `server` lists now, as the agent exposes them. Raises MCPUnavailable or MCPConfigError."""

    async def pages(client: Client) -> list[dict[str, Any]]:
        listed: list[dict[str, Any]] = []
        cursor: str | None = None
        for _ in range(_MAX_PAGES):
            page = await client.list_tools(cursor=cursor)
            listed += [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in page.tools]
            cursor = page.next_cursor
            if cursor is None:
                break
        return listed

    try:
        with anyio.fail_after(server.connect_timeout):
            listed = await _with_client(server, pages)
    except Exception as exc:
        raise _sorted(server, exc, "list its tools") from None
    return specs_of(server, listed)


async def call_tool(
    server: MCPServer, spec: ToolSpec, call: ToolCall, arguments: dict[str, Any], key: str
) -> ToolResult:
    """Call the tool `spec` names on `server`, under `key`; every outcome comes back as a `ToolResult`."""
    assert spec.mcp is not None
    tool = spec.mcp.tool

    async def call_it(client: Client) -> CallToolResult:
        return await client.call_tool(
            tool, arguments, read_timeout_seconds=spec.timeout, meta={IDEMPOTENCY_KEY_META: key}
        )

    try:
        result = await _with_client(server, call_it)
    except Exception as exc:
        return _failed(server, spec, call, exc)
    text = render(result)
    if result.is_error:
        return ToolResult.of(call, ToolStatus.ERROR, f"Error: {call.name} failed: {text}")
    return ToolResult.of(call, ToolStatus.OK, text)


def render(result: CallToolResult) -> str:
    """What the model reads of a result: its text, with placeholders for what is not text."""
    parts: list[str] = []
    for block in result.content:
        kind = getattr(block, "type", "")
        if kind == "text":
            parts.append(block.text)  # type: ignore[union-attr]
        elif kind == "resource":
            resource = block.resource  # type: ignore[union-attr]
            text = getattr(resource, "text", None)
            parts.append(text if text is not None else f"[resource {resource.uri}]")
        elif kind == "resource_link":
            parts.append(f"[resource link {block.uri}]")  # type: ignore[union-attr]
        else:
            parts.append(f"[{kind} {getattr(block, 'mime_type', '')}]".replace(" ]", "]"))
    if not parts and result.structured_content is not None:
        return canonical_json(result.structured_content)
    return "\n".join(parts)


async def _with_client(server: MCPServer, use: Callable[[Client], Awaitable[T]]) -> T:
    """`use(client)` connected to `server`: a stdio server's live session (`sessions.py`), or a connection
    of its own over HTTP (cheap on a network, and credentials are read afresh each time)."""
    if server.transport == "stdio":
        return await STDIO.run(server, use)
    async with _connected(server) as client:
        return await use(client)


@asynccontextmanager
async def _connected(server: MCPServer) -> AsyncIterator[Client]:
    if server.transport == "stdio":
        command = server.command
        parameters = StdioServerParameters(
            command=command[0], args=list(command[1:]), env=server.resolve_env(), cwd=server.cwd
        )
        async with Client(stdio_client(parameters, errlog=sys.stderr), client_info=CLIENT, cache=None) as client:
            yield client
        return
    url, headers = server.resolve_url(), server.resolve_headers()
    # No read timeout of the HTTP client's own: a call's limit is its tool timeout (or the activity's).
    timeout = httpx2.Timeout(server.connect_timeout, read=None)
    async with create_mcp_http_client(headers=headers, timeout=timeout) as http:
        # The SDK reports any HTTP error as one generic protocol error; credentials refused must say so.
        http.event_hooks["response"].append(partial(_refused, server))
        transport = streamable_http_client(url, http_client=http, max_sse_event_size=_MAX_EVENT_BYTES)
        async with Client(transport, client_info=CLIENT, cache=None) as client:
            yield client


async def _refused(server: MCPServer, response: httpx2.Response) -> None:
    if response.status_code in (401, 403):
        raise MCPConfigError(
            f"MCP server {server.name!r} ({server.where()}) refused our credentials (HTTP {response.status_code})"
        )


def _failed(server: MCPServer, spec: ToolSpec, call: ToolCall, exc: BaseException) -> ToolResult:
    cause = _leaf(exc)
    if (isinstance(cause, MCPError) and cause.code == REQUEST_TIMEOUT) or isinstance(cause, TimeoutError):
        return ToolResult.of(
            call, ToolStatus.TIMEOUT, f"Error: {call.name} timed out after {spec.timeout:g}s and was abandoned."
        )
    problem = _sorted(server, exc, f"call {spec.mcp.tool if spec.mcp else call.name}")
    if isinstance(problem, MCPUnavailable):
        return ToolResult.of(call, ToolStatus.RETRYABLE, f"Error: {call.name} failed transiently: {problem}")
    return ToolResult.of(call, ToolStatus.ERROR, f"Error: {call.name} failed: {problem}")


def _sorted(server: MCPServer, exc: BaseException, doing: str) -> MCPToolsError:
    """The failure as one of ours, with a message naming the server (never its credentials)."""
    cause = _leaf(exc)
    if isinstance(cause, MCPToolsError):
        return cause
    who = f"MCP server {server.name!r} ({server.where()})"
    if isinstance(cause, FileNotFoundError | PermissionError) and server.transport == "stdio":
        return MCPConfigError(f"cannot start {who}: {cause.strerror or cause}")
    if isinstance(cause, httpx2.HTTPStatusError):
        status = cause.response.status_code
        if status in (401, 403):
            return MCPConfigError(f"{who} refused our credentials (HTTP {status}) when asked to {doing}")
        if status < 500 and status != 429:
            return MCPConfigError(f"{who} answered HTTP {status} when asked to {doing}")
        return MCPUnavailable(f"{who} answered HTTP {status} when asked to {doing}")
    if isinstance(cause, MCPError) and cause.code != CONNECTION_CLOSED:
        return MCPConfigError(f"{who} answered an error when asked to {doing}: {cause.message} (code {cause.code})")
    if isinstance(cause, TimeoutError):
        return MCPUnavailable(f"{who} did not answer within {server.connect_timeout:g}s when asked to {doing}")
    detail = str(cause) or type(cause).__name__
    return MCPUnavailable(f"{who} is unreachable: could not {doing} ({detail})")


def _leaf(exc: BaseException) -> BaseException:
    """The first real failure inside the task groups' exception groups the SDK raises."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = _first(exc.exceptions)
    return exc


def _first(excs: Sequence[BaseException]) -> BaseException:
    # A cancellation next to the real failure is its consequence, not its cause.
    real = [e for e in excs if not isinstance(e, anyio.get_cancelled_exc_class())]
    return (real or list(excs))[0]


STDIO = StdioSessions(_connected)
"""This process's live stdio servers."""
