"""A real MCP server for the tests, written with the official SDK: a tiny CRM over stdio or streamable HTTP.

    python tests/support/mcp_test_server.py --db effects.db                       # stdio
    python tests/support/mcp_test_server.py --db effects.db --http 8123 [--token T]

It honours the idempotency key a client sends in a call's `_meta` (`IDEMPOTENCY_KEY_META`): an effect is
committed once per key, in SQLite, and a repeat is answered with the first answer. Every call is counted
too, so a test can tell "called twice, done once" from "called once". `--toolset v2` lists a changed set
of tools (a renamed one, a changed description, a new one): what a server may do between a run's start
and its replay. `--slow-after-effect S` answers S seconds after committing an effect, so a worker killed
meanwhile has made the effect without hearing back.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import sys
import time
from pathlib import Path
from typing import Any

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import ToolAnnotations

KEY_META = "io.temporal.durable-agents/idempotency-key"  # agentic.mcp.IDEMPOTENCY_KEY_META, as a server sees it
READ_ONLY = ToolAnnotations(readOnlyHint=True)
ADDITIVE = ToolAnnotations(readOnlyHint=False, destructiveHint=False, idempotentHint=True)
DESTRUCTIVE = ToolAnnotations(readOnlyHint=False, destructiveHint=True)


class Effects:
    """The server's own durable record: calls as they arrive, effects once per idempotency key."""

    def __init__(self, path: Path) -> None:
        self.path = path
        with self._db() as db:
            db.executescript(
                "CREATE TABLE IF NOT EXISTS calls (id INTEGER PRIMARY KEY, tool TEXT, key TEXT, at REAL);"
                "CREATE TABLE IF NOT EXISTS effects (key TEXT PRIMARY KEY, tool TEXT, arguments TEXT, answer TEXT);"
            )

    def _db(self) -> sqlite3.Connection:
        return sqlite3.connect(self.path, timeout=30, isolation_level=None)

    def apply(self, tool: str, key: str | None, arguments: dict[str, Any], answer: str) -> tuple[str, bool]:
        """(the answer, whether this call made the effect): a key seen before gets its first answer back."""
        db = self._db()
        try:
            db.execute("BEGIN IMMEDIATE")
            db.execute("INSERT INTO calls(tool, key, at) VALUES (?, ?, ?)", (tool, key, time.time()))
            if key is not None:
                row = db.execute("SELECT answer FROM effects WHERE key = ?", (key,)).fetchone()
                if row is not None:
                    db.execute("COMMIT")
                    return row[0], False
            stored = key if key is not None else f"nokey:{time.time_ns()}"
            db.execute(
                "INSERT INTO effects(key, tool, arguments, answer) VALUES (?, ?, ?, ?)",
                (stored, tool, json.dumps(arguments, sort_keys=True), answer),
            )
            db.execute("COMMIT")
            return answer, True
        finally:
            db.close()


def build(db: Path, toolset: str = "v1", slow_after_effect: float = 0.0) -> MCPServer:
    effects = Effects(db)
    server = MCPServer("crm-test", log_level="WARNING")

    def key_of(ctx: Context) -> str | None:
        meta = ctx.request_context.meta or {}
        return meta.get(KEY_META)

    lookup_name = "lookup" if toolset == "v1" else "find_customer"

    @server.tool(name=lookup_name, description="Look a customer up: plan and balance.", annotations=READ_ONLY)
    def lookup(customer: str) -> str:
        return f"{customer}: plan gold, balance $42.00"

    note_doc = "Add a note to a customer's file." if toolset == "v1" else "Append a note (v2 wording)."

    @server.tool(description=note_doc, annotations=ADDITIVE)
    def add_note(customer: str, text: str, ctx: Context) -> str:
        answer, _ = effects.apply(
            "add_note", key_of(ctx), {"customer": customer, "text": text}, f"noted for {customer}"
        )
        return answer

    @server.tool(description="Close a customer's account for good.", annotations=DESTRUCTIVE)
    async def close_account(customer: str, ctx: Context) -> str:
        answer, made = effects.apply("close_account", key_of(ctx), {"customer": customer}, f"closed {customer}")
        if made and slow_after_effect:
            await anyio.sleep(slow_after_effect)
        return answer

    @server.tool(description="A report of `size` bytes.", annotations=READ_ONLY)
    def report(size: int) -> str:
        return "r" * size

    @server.tool(description="Always fails, as a tool error.", annotations=READ_ONLY)
    def broken(reason: str) -> str:
        raise ToolError(f"the CRM refused: {reason}")

    if toolset == "v2":

        @server.tool(description="Export everything (new in v2).", annotations=READ_ONLY)
        def export() -> str:
            return "everything"

    return server


class RequireToken:
    """ASGI middleware: every request must carry `Authorization: Bearer <token>`."""

    def __init__(self, app: Any, token: str) -> None:
        self.app, self.expected = app, f"Bearer {token}".encode()

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http" and dict(scope["headers"]).get(b"authorization") != self.expected:
            await send({"type": "http.response.start", "status": 401, "headers": [(b"content-type", b"text/plain")]})
            await send({"type": "http.response.body", "body": b"unauthorized"})
            return
        await self.app(scope, receive, send)


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", type=Path, required=True)
    parser.add_argument("--http", type=int, metavar="PORT", help="serve streamable HTTP on 127.0.0.1:PORT")
    parser.add_argument("--token", help="HTTP: require this bearer token")
    parser.add_argument("--toolset", choices=["v1", "v2"], default="v1")
    parser.add_argument("--slow-after-effect", type=float, default=0.0)
    args = parser.parse_args(argv)
    server = build(args.db, args.toolset, args.slow_after_effect)
    if args.http is None:
        server.run()
        return
    import uvicorn

    app = server.streamable_http_app()
    uvicorn.run(
        RequireToken(app, args.token) if args.token else app, host="127.0.0.1", port=args.http, log_level="warning"
    )


if __name__ == "__main__":
    main(sys.argv[1:])
