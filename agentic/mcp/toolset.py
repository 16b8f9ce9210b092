"""What an agent's MCP tools are, as data: a server's listing turned into `ToolSpec`s under the agent's
rules, arguments checked against the schema the server gave, and the schemas a model is offered.

Pure: no connection here. A durable run records these specs once, when it starts, and decides with the
record from then on — so what a server lists later changes nothing in a run that already started.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from agentic.extras import require_extra
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

    `readOnlyHint` → not mutating. Otherwise mutating, and destructive unless `destructiveHint` is false —
    the protocol's own defaults, so an unannotated tool is treated as one that may destroy. Which tools
    wait for approval is the agent's choice (`MCPServer.requires_confirmation`; default: the destructive)."""
    specs: dict[str, ToolSpec] = {}
    for tool in listed:
        remote = str(tool["name"])
        if not server.exposes(remote):
            continue
        hints = tool.get("annotations") or {}
        read_only = hints.get("readOnlyHint") is True
        destructive = not read_only and hints.get("destructiveHint") is not False
        name = prefixed(server, remote)
        if name in specs:
            raise MCPConfigError(f"MCP server {server.name!r}: two of its tools become {name!r}")
        specs[name] = ToolSpec(
            name=name,
            description=str(tool.get("description") or tool.get("title") or remote),
            parameters=dict(tool.get("inputSchema") or _EMPTY_OBJECT),
            mutating=not read_only,
            requires_confirmation=server.needs_confirmation(remote, destructive),
            timeout=server.timeout,
            mcp=MCPToolRef(server=server.name, tool=remote),
        )
    return specs


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


def argument_errors(schema: Mapping[str, Any], arguments: Mapping[str, Any]) -> str | None:
    """Why `arguments` do not fit the tool's input schema (the first few problems), or None."""
    # Imported here, where an MCP tool's arguments are checked: jsonschema takes a tenth of a second to import,
    # which every command line and worker would pay at its start whether it serves MCP tools or not.
    require_extra("mcp")
    from jsonschema import SchemaError
    from jsonschema.validators import validator_for

    try:
        validator = validator_for(schema)(schema)
        problems = sorted(validator.iter_errors(dict(arguments)), key=lambda e: list(e.absolute_path))
    except SchemaError as exc:
        return f"the server's input schema is invalid ({exc.message})"
    if not problems:
        return None
    described = [f"{'.'.join(map(str, e.absolute_path)) or 'arguments'}: {e.message}" for e in problems[:3]]
    more = f" (and {len(problems) - 3} more)" if len(problems) > 3 else ""
    return "; ".join(described) + more


def checked_arguments(spec: ToolSpec, call: ToolCall) -> dict[str, Any] | ToolResult:
    """The call's arguments, or the result that tells the model why they cannot be sent (the wording of an
    agent's own tools)."""
    if isinstance(call.arguments, str):
        return ToolResult.not_json(call)
    problems = argument_errors(spec.parameters, call.arguments)
    if problems is not None:
        return ToolResult.invalid_arguments(call, problems)
    return dict(call.arguments)


def schemas_of(specs: Mapping[str, ToolSpec]) -> list[ToolSchema]:
    """The MCP tools among `specs`, as a model is offered them."""
    return [spec.schema() for spec in specs.values() if spec.mcp is not None]


def schemas_document(schemas: Sequence[ToolSchema]) -> str:
    """The schemas as one canonical JSON text: its hash names it in the transcript store."""
    return canonical_json([s.model_dump(mode="json") for s in schemas])
