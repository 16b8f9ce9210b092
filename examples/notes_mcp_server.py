"""A tiny notes service as an MCP server (the official SDK), over stdio: what the `notes` example agent
(examples/mcp_notes.py) gets its tools from. Notes live in SQLite.

    python examples/notes_mcp_server.py --db .data/notes.db     # the worker starts it; it speaks on stdin/out

`add_note` honours the idempotency key a durable agent sends in each call's `_meta`: a retried call with
the same key saves nothing more and gets the first answer back. `delete_note` is annotated destructive,
so an agent asks a human before calling it (unless it says otherwise).
"""

from __future__ import annotations

import argparse
import sqlite3
import sys
from pathlib import Path

from mcp.server.mcpserver import Context, MCPServer
from mcp_types import ToolAnnotations

KEY_META = "io.temporal.durable-agents/idempotency-key"


def build(db: Path) -> MCPServer:
    db.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(db, isolation_level=None, check_same_thread=False)
    conn.execute("CREATE TABLE IF NOT EXISTS notes (title TEXT PRIMARY KEY, text TEXT NOT NULL)")
    conn.execute("CREATE TABLE IF NOT EXISTS done (key TEXT PRIMARY KEY, answer TEXT NOT NULL)")
    server = MCPServer("notes", log_level="WARNING")

    @server.tool(description="The titles of all notes.", annotations=ToolAnnotations(readOnlyHint=True))
    def list_notes() -> str:
        return ", ".join(title for (title,) in conn.execute("SELECT title FROM notes ORDER BY title")) or "(none)"

    @server.tool(description="A note's text, by title.", annotations=ToolAnnotations(readOnlyHint=True))
    def read_note(title: str) -> str:
        row = conn.execute("SELECT text FROM notes WHERE title = ?", (title,)).fetchone()
        return row[0] if row else f"no note titled {title!r}"

    @server.tool(
        description="Save a note (a note with the same title is replaced).",
        annotations=ToolAnnotations(readOnlyHint=False, destructiveHint=False),
    )
    def add_note(title: str, text: str, ctx: Context) -> str:
        key = (ctx.request_context.meta or {}).get(KEY_META)
        conn.execute("BEGIN IMMEDIATE")
        try:
            seen = conn.execute("SELECT answer FROM done WHERE key = ?", (key,)).fetchone() if key else None
            if seen is None:
                conn.execute("INSERT OR REPLACE INTO notes(title, text) VALUES (?, ?)", (title, text))
                seen = (f"saved {title!r}",)
                if key:
                    conn.execute("INSERT INTO done(key, answer) VALUES (?, ?)", (key, seen[0]))
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        return seen[0]

    @server.tool(description="Delete a note for good.", annotations=ToolAnnotations(destructiveHint=True))
    def delete_note(title: str) -> str:
        deleted = conn.execute("DELETE FROM notes WHERE title = ?", (title,)).rowcount
        return f"deleted {title!r}" if deleted else f"no note titled {title!r}"

    return server


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", type=Path, default=Path(".data/notes.db"))
    build(parser.parse_args(argv).db).run()


if __name__ == "__main__":
    main(sys.argv[1:])
