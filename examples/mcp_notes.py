"""`notes`: an agent whose tools come from an MCP server — examples/notes_mcp_server.py, which the worker
starts over stdio. The agent's own code is five lines of wiring; the tools, their schemas and their
annotations are the server's.

    python worker.py --agents examples.mcp_notes
    python starter.py run notes --agents examples.mcp_notes --wait

The tools are named `notes__add_note`, `notes__read_note`, ...; `notes__delete_note` is destructive, so a
run would wait for a human before calling it. The notes live in `NOTES_DB` (default: notes.db in the data
directory).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path

from agentic import Agent, Budget, FakeModel, Message, Registry, tool_call
from agentic.mcp import MCPServer
from duragent._config.settings import data_dir

SERVER = Path(__file__).with_name("notes_mcp_server.py")
DB = Path(os.environ.get("NOTES_DB") or data_dir() / "notes.db").resolve()


def script(messages: Sequence[Message]) -> object:
    """A scripted model (swap in a real one with `--model`): save a note, read it back, answer."""
    results = [m.content for m in messages if m.role == "tool"]
    if not results:
        return tool_call("notes__add_note", {"title": "standup", "text": "MCP tools are durable now."})
    if len(results) == 1:
        return tool_call("notes__read_note", {"title": "standup"})
    return f"Saved and read back: {results[-1]}"


notes = MCPServer.stdio("notes", [sys.executable, str(SERVER), "--db", str(DB)])
agent = Agent(
    FakeModel.replying(script, name="notes-script"),
    Registry(),
    name="notes",
    description="Save a note through the notes MCP server and read it back.",
    task="Write down today's standup note.",
    budget=Budget(max_steps=4),
    mcp=[notes],
)
agents = [agent]
