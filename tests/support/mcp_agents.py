"""Agents whose tools come from the real MCP server in tests/support/mcp_test_server.py — an agents module, so worker
and `job` subprocesses serve them too (`--agents tests.support.mcp_agents`).

`crm` (streamable HTTP: MCP_TEST_URL, MCP_TEST_TOKEN) looks a customer up, then closes the account — a
destructive tool, so it waits for approval. `crm-report` reads a large report. `crm-stdio` is `crm` over
stdio (MCP_TEST_DB, MCP_TEST_TOOLSET). Their model says, in its answer, which tools it was offered.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agentic import Agent, Budget, FakeModel, Message, ModelReply, Registry, ToolSchema, tool_call
from agentic.mcp import MCPServer

SERVER = str(Path(__file__).with_name("mcp_test_server.py"))


def crm_stdio(db: str | Path, toolset: str = "v1", **rules: Any) -> MCPServer:
    return MCPServer.stdio("crm", [sys.executable, SERVER, "--db", str(db), "--toolset", toolset], **rules)


def crm_http(**rules: Any) -> MCPServer:
    """The URL and the token are the worker's: read from its environment when it connects."""
    return MCPServer.http("crm", url_env="MCP_TEST_URL", token_env="MCP_TEST_TOKEN", **rules)


class SaysWhatItWasOffered:
    """A scripted model whose final answer ends with the names of the tools it was offered for it."""

    def __init__(self, model: FakeModel) -> None:
        self.model, self.name = model, model.name

    def complete(
        self, messages: Sequence[Message], tools: Sequence[ToolSchema] = (), *, call_index: int | None = None
    ) -> ModelReply:
        reply = self.model.complete(messages, tools, call_index=call_index)
        if reply.message.tool_calls:
            return reply
        offered = ",".join(sorted(t.name for t in tools))
        return reply.model_copy(
            update={"message": reply.message.model_copy(update={"content": f"{reply.message.content} [{offered}]"})}
        )


def results(messages: Sequence[Message]) -> list[str]:
    return [m.content for m in messages if m.role == "tool"]


def close_account(messages: Sequence[Message]) -> object:
    done = results(messages)
    if not done:
        return tool_call("crm__lookup", {"customer": "ada"})
    if len(done) == 1:
        return tool_call("crm__close_account", {"customer": "ada"})
    return f"Done: {done[-1]}"


def read_report(messages: Sequence[Message]) -> object:
    done = results(messages)
    return f"the report has {len(done[-1]):,} characters" if done else tool_call("crm__report", {"size": 1_000_000})


def crm_agent(server: MCPServer, name: str = "crm", registry: Registry | None = None) -> Agent:
    return Agent(
        SaysWhatItWasOffered(FakeModel.replying(close_account, name="crm-script")),
        Registry() if registry is None else registry,  # an empty Registry is falsy
        name=name,
        task="Close ada's account.",
        budget=Budget(max_steps=5),
        mcp=[server],
    )


def report_agent(server: MCPServer, name: str = "crm-report") -> Agent:
    model = FakeModel.replying(read_report, name="report-script")
    return Agent(model, Registry(), name=name, task="Read the report.", budget=Budget(max_steps=3), mcp=[server])


_db = os.environ.get("MCP_TEST_DB") or str(Path(os.environ.get("AGENT_DATA_DIR") or ".data") / "mcp-effects.db")
agents = [
    crm_agent(crm_http()),
    report_agent(crm_http()),
    crm_agent(crm_stdio(_db, os.environ.get("MCP_TEST_TOOLSET", "v1")), name="crm-stdio"),
]
