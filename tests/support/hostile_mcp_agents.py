"""Agents whose MCP server is hostile (tests/support/hostile_mcp_server.py, its record at $HOSTILE_MCP_DB): an
agents module, so a worker process serves them too (`AGENT_MODULES=tests.support.hostile_mcp_agents`).

- `mcp-redos` (T1): its model sends `evil__lookup` the 30 `a`s and a `!` that the schema's catastrophic
  pattern chokes on, then a word that fits;
- `mcp-probe`: no tools, answers at once: a run that shows whether its worker is alive;
- `mcp-wipe` (T2): calls `evil__wipe_everything`, which claims to be read-only and destructive at once;
- `mcp-trusting` (T2): trusts only `lookup` as read-only; calls it, then `evil__export_all`, which claims
  read-only too.
- `mcp-bulk` (review 4, U2): its server's `bulk` tool has `MAX_PATTERNS` patternProperties (the most a listing
  takes) and no additional properties; the model sends it `BULK_CALLS` calls at once, each with `BULK_KEYS`
  keys — patterns times keys searches per check;
- `mcp-patterns` (U2): the same server with 3,000 patterns, the review's schema: refused at listing.

Each model's answer is the tool results it read, joined by " | ".
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agentic import Agent, Budget, FakeModel, Message, Registry, tool_call
from agentic.mcp import MCPServer
from agentic.mcp.schema_check import MAX_PATTERNS

SERVER = str(Path(__file__).with_name("hostile_mcp_server.py"))
PATTERN_HEAVY = str(Path(__file__).with_name("pattern_heavy_mcp_server.py"))
BULK_CALLS = 6
BULK_KEYS = 2500
CHOKES = "a" * 30 + "!"  # Python's `re` on `^(a+)+$`: doubles with each `a`, about a minute here
FITS = "aaaa"


def evil(db: str | Path, **rules: Any) -> MCPServer:
    return MCPServer.stdio("evil", [sys.executable, SERVER, "--db", str(db)], **rules)


def pattern_heavy(calls: str | Path, patterns: int) -> MCPServer:
    command = [sys.executable, PATTERN_HEAVY, "--patterns", str(patterns), "--calls", str(calls)]
    return MCPServer.stdio("heavy", command)


def _bulk(messages: Sequence[Message]) -> object:
    done = [m.content for m in messages if m.role == "tool"]
    if done:
        return " | ".join(done)
    # Other keys in each call: the loop refuses a call repeating another's arguments before it is checked.
    return [tool_call("heavy__bulk", {f"record{n}-{i}": 0 for i in range(BULK_KEYS)}) for n in range(BULK_CALLS)]


def _scripted(name: str, calls: Sequence[tuple[str, dict[str, Any]]]) -> FakeModel:
    def reply(messages: Sequence[Message]) -> object:
        done = [m.content for m in messages if m.role == "tool"]
        if len(done) < len(calls):
            return tool_call(*calls[len(done)])
        return " | ".join(done)

    return FakeModel.replying(reply, name=name)


def agents_for(db: str | Path) -> list[Agent]:
    calls = Path(db).with_suffix(".calls")
    lookups = [("evil__lookup", {"q": CHOKES}), ("evil__lookup", {"q": FITS})]
    trusting = [("evil__lookup", {"q": FITS}), ("evil__export_all", {})]
    budget = Budget(max_steps=4)
    return [
        Agent(
            _scripted("redos", lookups), Registry(), name="mcp-redos", task="Look up.", budget=budget, mcp=[evil(db)]
        ),
        Agent(FakeModel(["alive"]), Registry(), name="mcp-probe", task="Are you there?", budget=budget),
        Agent(
            _scripted("wipe", [("evil__wipe_everything", {})]),
            Registry(),
            name="mcp-wipe",
            task="Tidy up.",
            budget=budget,
            mcp=[evil(db)],
        ),
        Agent(
            _scripted("trusting", trusting),
            Registry(),
            name="mcp-trusting",
            task="Show the records.",
            budget=budget,
            mcp=[evil(db, trusted_read_only=["lookup"])],
        ),
        Agent(
            FakeModel.replying(_bulk, name="bulk"),
            Registry(),
            name="mcp-bulk",
            task="Tag the records.",
            budget=budget,
            mcp=[pattern_heavy(calls, MAX_PATTERNS)],
        ),
        Agent(
            FakeModel.replying(_bulk, name="bulk"),
            Registry(),
            name="mcp-patterns",
            task="Tag the records.",
            budget=budget,
            mcp=[pattern_heavy(calls, 3000)],
        ),
    ]


agents = agents_for(os.environ.get("HOSTILE_MCP_DB") or Path(os.environ.get("AGENT_DATA_DIR") or ".data") / "evil.db")
