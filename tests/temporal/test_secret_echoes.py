"""Review 4, U4: every secret the worker holds stays out of everything its activities return or raise.

Played with a real MCP server over HTTP that quotes the bearer token it was sent (in its listing's error, in a
call's error result), a registry tool whose HTTP error names its URL with `?api_key=`, and a compensation whose
result quotes a credential. The assertions are on the run's history (every byte of it), the run's failure, what
the model is sent next, and what a viewer of the runs API reads (`GET /runs`, `GET /runs/{id}`)."""

from __future__ import annotations

import os
import uuid
from collections.abc import Sequence
from pathlib import Path

import httpx
import pytest
from temporalio.api.history.v1 import History

from agentic import Agent, Budget, FakeModel, Message, Registry, tool, tool_call
from agentic.mcp import MCPServer
from agentic.scrub import MASK
from duragent._client import AgentClient, RunHandle
from duragent._config.settings import Settings
from duragent._errors import RunFailed
from duragent._ops.http.app import create_app
from duragent._ops.http.auth import HttpAuth, TokenTable
from duragent._ops.http.temporal import TemporalEngine
from duragent._stores.ledger import EffectsLedger
from tests.conftest import new_worker
from tests.support.echoing_mcp_server import EchoingMCPServer

MCP_TOKEN = "mcp-TOKEN-SECRET-4242-echoed"
HEADER_SECRET = "hdr-SECRET-5151-echoed"
TOOL_KEY = "TOOLKEY-6262-in-a-url"  # a tool's own key: the worker does not hold it, its shape gives it away
VIEWER = "viewer-token-0123456789abcdef"
SECRETS = (MCP_TOKEN, HEADER_SECRET, TOOL_KEY)


@tool("Fetch the monthly report.")
def fetch_report() -> str:
    url = f"https://reports.example/v1/monthly?api_key={TOOL_KEY}&month=11"
    httpx.Response(401, request=httpx.Request("GET", url)).raise_for_status()  # its error names the URL
    return "never"


def _release(arguments: dict[str, object], result: str, context: object) -> str:
    return f"released {arguments['what']} with Bearer {os.environ['MCP_ECHO_TOKEN']}"  # a careless undo's answer


@tool("Reserve a thing.", mutating=True, compensation=_release)
def reserve(what: str) -> str:
    return f"reserved {what}"


class Reader:
    """A model that calls the tools in turn and keeps what it was sent each time."""

    def __init__(self, calls: Sequence[tuple[str, dict[str, object]]], answer: bool = True) -> None:
        self.calls, self.answer = calls, answer
        self.sent: list[str] = []

    def __call__(self, messages: Sequence[Message]) -> object:
        self.sent.extend(m.content for m in messages)
        done = [m.content for m in messages if m.role == "tool"]
        if len(done) < len(self.calls):
            return tool_call(*self.calls[len(done)])
        return " | ".join(done) if self.answer else tool_call("reserve", {"what": "again"})


def echo(server: EchoingMCPServer) -> MCPServer:
    return MCPServer.http(
        "echo", server.url, token_env="MCP_ECHO_TOKEN", headers_env={"X-Tenant-Key": "MCP_ECHO_HEADER"}
    )


async def history_bytes(run: RunHandle) -> bytes:
    return History(events=(await run.workflow.fetch_history()).events).SerializeToString()


async def viewer_reads(client: AgentClient, agents: Sequence[Agent], run_id: str) -> str:
    """What a viewer of the runs API is answered for the list and for the run."""
    auth = HttpAuth(TokenTable.parse(f"{VIEWER}=olga:viewer"), hosts=["agents.example"])
    app = create_app(TemporalEngine(client, agents), auth)
    headers = {"Authorization": f"Bearer {VIEWER}"}
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://agents.example", headers=headers) as http:
        listed, one = await http.get("/runs"), await http.get(f"/runs/{run_id}")
    assert (listed.status_code, one.status_code) == (200, 200), (listed.text, one.text)
    assert run_id in listed.text
    return listed.text + one.text


@pytest.fixture
def mcp_secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MCP_ECHO_TOKEN", MCP_TOKEN)
    monkeypatch.setenv("MCP_ECHO_HEADER", HEADER_SECRET)


def assert_nowhere(*texts: str | bytes) -> None:
    for text in texts:
        raw = text.encode() if isinstance(text, str) else text
        for secret in SECRETS:
            assert secret.encode() not in raw, (secret, raw[:2000])


async def test_a_token_echoed_by_an_mcp_server_or_a_tools_error_reaches_no_history_model_or_viewer(
    dev_env, ledger: EffectsLedger, task_queue: str, tmp_path: Path, mcp_secrets: None
) -> None:
    with EchoingMCPServer("result") as server:
        reader = Reader([("echo__get", {}), ("fetch_report", {})])
        agent = Agent(
            FakeModel.replying(reader, name="reader"),
            Registry([fetch_report]),
            name="t-echo-result",
            task="Get it.",
            mcp=[echo(server)],
        )
        async with new_worker(dev_env.client, task_queue, ledger, agents=[agent], settings=Settings(data_dir=tmp_path)):
            client = AgentClient(dev_env.client, task_queue=task_queue)
            run = await client.start(agent.name, run_id=f"echo-{uuid.uuid4().hex[:8]}")
            result = await run.result()
            history = await history_bytes(run)
            # What the Web UI shows without decoding: memo, search attributes (history holds every upsert
            # and each activity's summary too).
            described = (await run.workflow.describe()).raw_description.SerializeToString()
            seen = await viewer_reads(client, [agent], run.run_id)
    assert f"Bearer {MCP_TOKEN}" in server.received  # the server was sent the token and quoted it
    echoed, failed = (result.output or "").split(" | ")
    assert echoed == f"Error: echo__get failed: upstream 401 for Bearer {MASK}"
    assert failed.startswith("Error: fetch_report raised HTTPStatusError: ") and f"api_key={MASK}&month=11" in failed
    assert echoed in reader.sent and failed in reader.sent  # what the model read next: masked
    assert_nowhere(history, described, seen, "\n".join(reader.sent), result.model_dump_json())


async def test_a_token_an_mcp_server_echoes_in_its_listing_error_is_masked_in_the_runs_failure(
    dev_env, ledger: EffectsLedger, task_queue: str, tmp_path: Path, mcp_secrets: None
) -> None:
    with EchoingMCPServer("list") as server:
        agent = Agent(FakeModel(["unused"]), Registry(), name="t-echo-list", task="Get it.", mcp=[echo(server)])
        async with new_worker(dev_env.client, task_queue, ledger, agents=[agent], settings=Settings(data_dir=tmp_path)):
            client = AgentClient(dev_env.client, task_queue=task_queue)
            run = await client.start(agent.name, run_id=f"echo-{uuid.uuid4().hex[:8]}")
            with pytest.raises(RunFailed) as failed:
                await run.result()
            history = await history_bytes(run)
            seen = await viewer_reads(client, [agent], run.run_id)
    assert f"Bearer {MCP_TOKEN}" in server.received
    assert f"token not allowed here: Bearer {MASK}" in str(failed.value), str(failed.value)
    assert_nowhere(str(failed.value), history, seen)


async def test_a_listing_quoting_the_token_is_recorded_and_offered_masked(
    dev_env, ledger: EffectsLedger, task_queue: str, tmp_path: Path, mcp_secrets: None
) -> None:
    with EchoingMCPServer("describe") as server:
        agent = Agent(FakeModel(["done"]), Registry(), name="t-echo-describe", task="Get it.", mcp=[echo(server)])
        async with new_worker(dev_env.client, task_queue, ledger, agents=[agent], settings=Settings(data_dir=tmp_path)):
            client = AgentClient(dev_env.client, task_queue=task_queue)
            run = await client.start(agent.name, run_id=f"echo-{uuid.uuid4().hex[:8]}")
            assert (await run.result()).output == "done"
            history = await history_bytes(run)
    assert f"get things (you sent Bearer {MASK})" in history.decode(errors="replace")
    assert_nowhere(history)


async def test_a_compensation_result_quoting_a_token_is_masked_in_the_runs_record(
    dev_env, ledger: EffectsLedger, task_queue: str, tmp_path: Path, mcp_secrets: None
) -> None:
    with EchoingMCPServer("result") as server:
        reader = Reader([("reserve", {"what": "a room"})], answer=False)  # then calls on until the budget ends
        agent = Agent(
            FakeModel.replying(reader, name="reader"),
            Registry([reserve]),
            name="t-echo-undo",
            task="Reserve.",
            budget=Budget(max_steps=2),
            mcp=[echo(server)],
        )
        async with new_worker(dev_env.client, task_queue, ledger, agents=[agent], settings=Settings(data_dir=tmp_path)):
            client = AgentClient(dev_env.client, task_queue=task_queue)
            run = await client.start(agent.name, run_id=f"echo-{uuid.uuid4().hex[:8]}")
            result = await run.result()
            history = await history_bytes(run)
            seen = await viewer_reads(client, [agent], run.run_id)
    assert result.status == "compensated", result
    assert f"released a room with Bearer {MASK}" in history.decode(errors="replace")
    assert_nowhere(history, seen, result.model_dump_json())
