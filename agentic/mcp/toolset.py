"""What an agent's MCP tools are, as data: a server's listing turned into `ToolSpec`s under the agent's
rules, arguments checked against the schema the server gave, and the schemas a model is offered.

Pure: no connection here. A durable run records these specs once, when it starts, and decides with the
record from then on — so what a server lists later changes nothing in a run that already started.
"""

from __future__ import annotations

import asyncio
import re
import threading
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from agentic.mcp.schema_check import CHECK_SECONDS, argument_errors, schema_problem
from agentic.mcp.server import SEPARATOR, MCPConfigError, MCPServer
from agentic.messages import ToolCall, canonical_json
from agentic.models.base import ToolSchema
from agentic.results import ToolResult
from agentic.tools import MCPToolRef, ToolSpec

# What model providers accept as a function name (OpenAI: ^[a-zA-Z0-9_-]{1,64}$).
_MODEL_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_NOT_ALLOWED = re.compile(r"[^A-Za-z0-9_-]")
_EMPTY_OBJECT: dict[str, Any] = {"type": "object", "properties": {}}


def specs_of(server: MCPServer, listed: Iterable[Mapping[str, Any]]) -> dict[str, ToolSpec]:
    """The listed tools (the protocol's JSON: name, description, inputSchema, annotations) that the server
    exposes, as the loop sees them: prefixed names, the schema as given, flags from the annotations.

    The annotations are the server's claim, read on the safe side: `destructiveHint: true` → destructive
    and mutating, whatever `readOnlyHint` says; else `readOnlyHint` → not mutating;
    else mutating, and destructive unless `destructiveHint` is false — the protocol's own defaults, so an
    unannotated tool is treated as one that may destroy. An agent that gives `trusted_read_only` believes no
    claim: the tools it lists are read-only, every other one mutating. Which tools wait for approval is the
    agent's choice (`MCPServer.needs_confirmation`; default: the destructive).

    A schema that cannot be checked in bounded time (`schema_check.schema_problem`) is a configuration error:
    it would be recorded in the run's history and checked at every call."""
    specs: dict[str, ToolSpec] = {}
    for tool in listed:
        remote = str(tool["name"])
        if not server.exposes(remote):
            continue
        read_only, destructive = _flags(server, remote, tool.get("annotations") or {})
        name = prefixed(server, remote)
        if name in specs:
            raise MCPConfigError(f"MCP server {server.name!r}: two of its tools become {name!r}")
        parameters = dict(tool.get("inputSchema") or _EMPTY_OBJECT)
        if (problem := schema_problem(parameters)) is not None:
            raise MCPConfigError(
                f"MCP server {server.name!r}: tool {remote!r} cannot be used: {problem}; leave it out with tools=[...]"
            )
        specs[name] = ToolSpec(
            name=name,
            description=str(tool.get("description") or tool.get("title") or remote),
            parameters=parameters,
            mutating=not read_only,
            requires_confirmation=server.needs_confirmation(remote, destructive),
            timeout=server.timeout,
            mcp=MCPToolRef(server=server.name, tool=remote),
        )
    return specs


def _flags(server: MCPServer, tool: str, hints: Mapping[str, Any]) -> tuple[bool, bool]:
    """(read-only, destructive) of one listed tool, under the agent's rules for its server."""
    if server.trusted_read_only is not None:
        trusted = server.trusts_read_only(tool)
        return trusted, not trusted
    destructive = hints.get("destructiveHint") is True or (
        hints.get("readOnlyHint") is not True and hints.get("destructiveHint") is not False
    )
    return hints.get("readOnlyHint") is True and not destructive, destructive


def prefixed(server: MCPServer, tool: str) -> str:
    """`files` + `read` → `files__read`; characters a model cannot take in a name become '_'."""
    name = _NOT_ALLOWED.sub("_", f"{server.name}{SEPARATOR}{tool}")
    if not _MODEL_NAME.match(name):
        raise MCPConfigError(
            f"MCP server {server.name!r}: tool {tool!r} would be named {name!r}, longer than the 64 characters "
            "a model takes; leave it out with tools=[...] or use a shorter server name"
        )
    return name


def merged(own: Iterable[str], listings: Sequence[dict[str, ToolSpec]]) -> dict[str, ToolSpec]:
    """The servers' specs as one mapping; a name taken twice (or by one of the agent's own tools) is an error."""
    taken = set(own)
    out: dict[str, ToolSpec] = {}
    for specs in listings:
        for name, spec in specs.items():
            if name in taken or name in out:
                raise MCPConfigError(f"MCP tool {name!r} collides with another tool of the agent")
            out[name] = spec
    return out


def checked_arguments(spec: ToolSpec, call: ToolCall) -> dict[str, Any] | ToolResult:
    """The call's arguments, or the result that tells the model why they cannot be sent (the wording of an
    agent's own tools)."""
    if isinstance(call.arguments, str):
        return ToolResult.not_json(call)
    problems = argument_errors(spec.parameters, call.arguments)
    if problems is not None:
        return ToolResult.invalid_arguments(call, problems)
    return dict(call.arguments)


CHECK_THREADS = 2
"""Threads that check MCP arguments, in a pool of their own: a check that runs on (a schema a server wrote)
can hold only these, never the threads model and tool calls run in (the event loop's default executor)."""

_checks: ThreadPoolExecutor | None = None
_checking: set[str] = set()  # the tools a check is running for, in some thread
_checking_lock = threading.Lock()


async def checked_off_loop(spec: ToolSpec, call: ToolCall) -> dict[str, Any] | ToolResult:
    """`checked_arguments` in a thread of the checks' own pool (`CHECK_THREADS`): the event loop — which
    heartbeats the activity and runs every other run's tasks on this worker — never waits on a schema a server
    wrote, and neither do the threads of model and tool calls. The check bounds itself (`CHECK_SECONDS`); this
    wait is bounded as well, should one step of it not be. While a check of a tool is still running, another
    call of that tool is refused unchecked: a server's schema cannot fill the pool with copies of one slow
    check. A refusal is an invalid-arguments result: the model reads why, and nothing is retried."""
    with _checking_lock:
        if spec.name in _checking:
            why = "a check of this tool's arguments against the server's schema is still running; call it later"
            return ToolResult.invalid_arguments(call, why)
        _checking.add(spec.name)
    try:
        submitted = _pool().submit(checked_arguments, spec, call)
    except BaseException:
        _done_checking(spec.name)
        raise
    # Done however it ends: the check returns, raises, or is cancelled before a thread took it.
    submitted.add_done_callback(lambda _: _done_checking(spec.name))
    try:
        return await asyncio.wait_for(asyncio.wrap_future(submitted), CHECK_SECONDS + 1.0)
    except TimeoutError:
        why = f"checking them against the server's schema took over {CHECK_SECONDS:g}s (CHECK_SECONDS)"
        return ToolResult.invalid_arguments(call, why)


def _pool() -> ThreadPoolExecutor:
    global _checks
    with _checking_lock:
        if _checks is None:
            _checks = ThreadPoolExecutor(CHECK_THREADS, thread_name_prefix="mcp-argument-check")
        return _checks


def _done_checking(name: str) -> None:
    with _checking_lock:
        _checking.discard(name)


def schemas_of(specs: Mapping[str, ToolSpec]) -> list[ToolSchema]:
    """The MCP tools among `specs`, as a model is offered them."""
    return [spec.schema() for spec in specs.values() if spec.mcp is not None]


def schemas_document(schemas: Sequence[ToolSchema]) -> str:
    """The schemas as one canonical JSON text: its hash names it in the transcript store."""
    return canonical_json([s.model_dump(mode="json") for s in schemas])
