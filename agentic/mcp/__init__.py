"""Tools from MCP servers: `Agent(..., mcp=[MCPServer.stdio(...), MCPServer.http(...)])`.

A run lists each server's tools once, when it starts, and keeps that list (durable runners record it), so a
server that changes its tools later changes nothing in a run already started. Each call carries its
idempotency key in the request's `_meta` (`IDEMPOTENCY_KEY_META`). The SDK-facing code is in
`agentic.mcp.client`, imported only when a connection is needed.
"""

from agentic.mcp.server import MCPConfigError, MCPServer, MCPToolsError, MCPUnavailable

IDEMPOTENCY_KEY_META = "io.temporal.durable-agents/idempotency-key"

__all__ = ["IDEMPOTENCY_KEY_META", "MCPConfigError", "MCPServer", "MCPToolsError", "MCPUnavailable"]
