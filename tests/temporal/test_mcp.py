"""Tools from MCP servers with the guarantees of an agent's own tools, against a real MCP
server written with the official SDK (tests/support/mcp_test_server.py) over stdio and streamable HTTP on loopback.

The server keeps its own durable record (SQLite): every call as it arrives, and each effect once per
idempotency key it finds in the call's `_meta`. Counting there is how these tests see effects.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.worker import Replayer

from agentic import Agent, FakeModel, Registry, ToolCall, ToolContext, ToolStatus
from agentic.agent_set import AgentSet
from agentic.mcp import MCPConfigError, MCPServer, MCPUnavailable
from agentic.mcp import client as mcp_client
from agentic.mcp.toolset import checked_arguments, merged, specs_of
from duragent import AgentClient, RunFailed
from duragent._activities.inputs import ContinueAsNewPolicy, EngineOptions
from duragent._baseline import jobs
from duragent._baseline.options import RunOptions
from duragent._baseline.store import Store
from duragent._config.settings import ROOT
from duragent._ops.devstack.devserver import free_port, port_open
from duragent._ops.devstack.worker_process import WorkerProcess
from duragent._workflows.agent import AgentWorkflow
from duragent._workflows.inputs import Timeouts
from examples import mcp_notes
from tests.conftest import dev_settings, eventually, new_worker, transcripts_next_to
from tests.support import baseline_helpers, mcp_agents
from tests.support.docs import code_block_after
from tests.support.processes import descendants

V1_TOOLS = "crm__add_note,crm__broken,crm__close_account,crm__lookup,crm__report,give_up"


class CRM:
    """tests/support/mcp_test_server.py over streamable HTTP, in a process of its own (stopped by pid)."""

    def __init__(self, db: Path, *, token: str | None = None, slow_after_effect: float = 0.0) -> None:
        self.db, self.token, self.slow = db, token, slow_after_effect
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self, toolset: str = "v1") -> CRM:
        command = [sys.executable, mcp_agents.SERVER, "--db", str(self.db), "--http", str(self.port)]
        command += ["--toolset", toolset, "--slow-after-effect", str(self.slow)]
        command += ["--token", self.token] if self.token else []
        self.process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 30
        while not port_open("127.0.0.1", self.port):
            assert self.process.poll() is None and time.monotonic() < deadline, "the MCP test server did not start"
            time.sleep(0.05)
        return self

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=10)


def effects(db: Path, tool: str | None = None) -> list[str]:
    """The keys the server made an effect under (of `tool`), in order."""
    if not db.exists():
        return []
    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT key, tool FROM effects ORDER BY rowid").fetchall()
    return [key for key, name in rows if tool is None or name == tool]


def calls(db: Path, key: str) -> int:
    with sqlite3.connect(db) as conn:
        return conn.execute("SELECT count(*) FROM calls WHERE key = ?", (key,)).fetchone()[0]


@pytest.fixture
def crm_db(tmp_path: Path) -> Iterator[Path]:
    yield tmp_path / "crm-effects.db"
    mcp_client.STDIO.close_all()  # the stdio servers this test started (they would stop when idle anyway)


@pytest.fixture
def crm(crm_db: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[CRM]:
    server = CRM(crm_db, token="s3cret").start()
    monkeypatch.setenv("MCP_TEST_URL", server.url)
    monkeypatch.setenv("MCP_TEST_TOKEN", "s3cret")
    yield server
    server.stop()


# -- the tool list, as data ---------------------------------------------------------------------------


def listed(name: str, **annotations: bool) -> dict[str, object]:
    schema = {"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]}
    return {"name": name, "description": f"{name}.", "inputSchema": schema, "annotations": annotations}


def test_a_listing_becomes_prefixed_specs_with_the_servers_schema_and_the_agents_approval_rules():
    server = MCPServer.stdio("files", ["unused"])
    tools = [
        listed("read", readOnlyHint=True),
        listed("append", destructiveHint=False),
        listed("delete", destructiveHint=True),
        listed("touch"),  # no annotations: the protocol's defaults say it may write and destroy
    ]
    specs = specs_of(server, tools)
    assert list(specs) == ["files__read", "files__append", "files__delete", "files__touch"]
    assert specs["files__read"].parameters == tools[0]["inputSchema"]  # as the server gave it
    assert specs["files__delete"].mcp.tool == "delete"
    flags = {name: (s.mutating, s.requires_confirmation) for name, s in specs.items()}
    assert flags == {
        "files__read": (False, False),
        "files__append": (True, False),
        "files__delete": (True, True),
        "files__touch": (True, True),
    }
    by_pattern = specs_of(MCPServer.stdio("files", ["unused"], requires_confirmation=["app*", "read"]), tools)
    assert [n for n, s in by_pattern.items() if s.requires_confirmation] == ["files__read", "files__append"]
    assert not any(
        s.requires_confirmation
        for s in specs_of(MCPServer.stdio("f", ["x"], requires_confirmation=False), tools).values()
    )
    exposed = specs_of(MCPServer.stdio("files", ["unused"], tools=["read", "app*"]), tools)
    assert list(exposed) == ["files__read", "files__append"]
    assert list(specs_of(server, [listed("a.b/c")])) == ["files__a_b_c"]  # what a model accepts as a name


def test_names_a_model_cannot_take_or_that_collide_are_configuration_errors():
    server = MCPServer.stdio("files", ["unused"])
    with pytest.raises(MCPConfigError, match="longer than the 64 characters"):
        specs_of(server, [listed("x" * 60)])
    with pytest.raises(MCPConfigError, match="two of its tools become 'files__a_b'"):
        specs_of(server, [listed("a.b"), listed("a/b")])
    with pytest.raises(MCPConfigError, match="collides"):
        merged(["files__read"], [specs_of(server, [listed("read")])])
    with pytest.raises(MCPConfigError, match="MCP server name"):
        MCPServer.stdio("a__b", ["x"])
    with pytest.raises(MCPConfigError, match="exactly one of url= and url_env="):
        MCPServer.http("crm")


def test_arguments_are_checked_against_the_servers_schema():
    [spec] = specs_of(MCPServer.stdio("files", ["unused"]), [listed("read", readOnlyHint=True)]).values()
    assert checked_arguments(spec, ToolCall(id="1", name="files__read", arguments={"id": "a"})) == {"id": "a"}
    wrong = checked_arguments(spec, ToolCall(id="1", name="files__read", arguments={"id": 3, "extra": 1}))
    assert wrong.status is ToolStatus.INVALID_ARGUMENTS
    assert wrong.content == (
        "Error: invalid arguments for files__read: id: 3 is not of type 'string'. Call it again with valid arguments."
    )
    not_json = checked_arguments(spec, ToolCall(id="1", name="files__read", arguments="{oops"))
    assert not_json.status is ToolStatus.INVALID_ARGUMENTS and "not a JSON object" in not_json.content


def test_credentials_come_from_the_workers_environment_and_never_show_in_messages(monkeypatch):
    server = MCPServer.http("crm", url_env="CRM_URL", token_env="CRM_TOKEN", headers_env={"X-Tenant": "CRM_TENANT"})
    with pytest.raises(MCPConfigError, match=r"its URL comes from \$CRM_URL, not set on this worker"):
        server.resolve_url()
    monkeypatch.setenv("CRM_URL", "https://user:pw@crm.example/mcp?key=secret")
    monkeypatch.setenv("CRM_TOKEN", "tok")
    monkeypatch.setenv("CRM_TENANT", "acme")
    assert server.resolve_headers() == {"X-Tenant": "acme", "Authorization": "Bearer tok"}
    assert server.where() == "https://crm.example/mcp ($CRM_URL)"


# -- the in-process runner ------------------------------------------------------------------------------


@pytest.mark.system
def test_the_in_process_runner_uses_two_mcp_tools_over_stdio_and_the_server_deduplicates_on_the_key(crm_db):
    asked: list[str] = []

    def confirm(name: str, arguments: dict[str, object]) -> bool:
        asked.append(name)
        return True

    agent = mcp_agents.crm_agent(mcp_agents.crm_stdio(crm_db), registry=Registry(confirm=confirm))
    first = agent.run(run_id="inproc-1")
    assert first.trajectory() == ["crm__lookup", "crm__close_account"]
    assert first.output == f"Done: closed ada [{V1_TOOLS}]"
    assert asked == ["crm__close_account"]  # destructive: confirmed; the read-only lookup was not asked about
    again = agent.run(run_id="inproc-1")  # a process repeating the run: the same keys, in `_meta`
    assert again.output == first.output
    assert effects(crm_db) == ["inproc-1:2.1"]  # closed once, though called twice
    assert calls(crm_db, "inproc-1:2.1") == 2


@pytest.mark.system
def test_a_stdio_server_runs_between_calls_and_one_that_died_is_started_again(crm_db):
    agent = mcp_agents.crm_agent(mcp_agents.crm_stdio(crm_db), registry=Registry(confirm=lambda name, args: True))
    agent.list_mcp_tools()
    [first] = servers_running(crm_db)
    assert agent.run(run_id="warm").output.startswith("Done: closed ada")
    assert servers_running(crm_db) == [first]  # the calls went to the server the listing started
    os.kill(first, signal.SIGKILL)
    again = agent.run(run_id="after-crash")  # the broken session is dropped; the call is retried on a new one
    assert again.output.startswith("Done: closed ada")
    [second] = servers_running(crm_db)
    assert second != first
    assert effects(crm_db) == ["warm:2.1", "after-crash:2.1"]


def servers_running(db: Path) -> list[int]:
    """The test server processes (for `db`) this process started."""
    return sorted(pid for pid in descendants(os.getpid()) if str(db) in Path(f"/proc/{pid}/cmdline").read_text())


@pytest.mark.system
def test_in_process_a_declined_call_makes_no_effect_and_errors_reach_the_model(crm_db):
    agent = mcp_agents.crm_agent(mcp_agents.crm_stdio(crm_db))  # no confirm callback: declined
    run = agent.run(run_id="declined")
    assert "declined" in [m for m in run.messages if m.role == "tool"][1].content
    assert effects(crm_db) == []
    result = agent.dispatch(
        ToolCall(id="c", name="crm__broken", arguments={"reason": "maintenance"}),
        _context("k"),
        spec=agent.list_mcp_tools()["crm__broken"],
    )
    assert result.status is ToolStatus.ERROR
    assert result.content.startswith("Error: crm__broken failed:") and "the CRM refused: maintenance" in result.content


@pytest.mark.system
def test_a_server_gone_mid_run_is_a_retryable_tool_error_and_a_tool_it_dropped_is_an_error(crm):
    agent = mcp_agents.crm_agent(mcp_agents.crm_http())
    recorded = agent.list_mcp_tools()
    crm.stop()
    crm.start("v2")  # `lookup` is gone from the server, but the run recorded it
    dropped = agent.dispatch(_call("crm__lookup", customer="ada"), _context("k1"), spec=recorded["crm__lookup"])
    assert dropped.status is ToolStatus.ERROR and "Unknown tool" in dropped.content
    crm.stop()
    gone = agent.dispatch(_call("crm__lookup", customer="ada"), _context("k2"), spec=recorded["crm__lookup"])
    assert gone.status is ToolStatus.RETRYABLE  # the runners retry it under the same key, then tell the model
    assert gone.content.startswith("Error: crm__lookup failed transiently: MCP server 'crm' (http://127.0.0.1:")


@pytest.mark.system
def test_credentials_the_server_refuses_fail_at_once(crm, monkeypatch):
    agent = mcp_agents.crm_agent(mcp_agents.crm_http())
    assert "crm__lookup" in agent.list_mcp_tools()  # the right token
    monkeypatch.setenv("MCP_TEST_TOKEN", "wrong")
    with pytest.raises(MCPConfigError, match=r"refused our credentials \(HTTP 401\)") as refused:
        agent.list_mcp_tools()
    assert "wrong" not in str(refused.value)


@pytest.mark.system
def test_a_call_over_its_timeout_is_abandoned_as_a_timeout_and_the_model_is_told(crm_db, monkeypatch):
    """`MCPServer(timeout=)`: a call the server has not answered in time is given up (a TIMEOUT the model
    reads), while the server, which committed before it stalled, holds the effect once."""
    server = CRM(crm_db, token="s3cret", slow_after_effect=5.0).start()  # commits, then answers 5 s later
    monkeypatch.setenv("MCP_TEST_URL", server.url)
    monkeypatch.setenv("MCP_TEST_TOKEN", "s3cret")
    try:
        agent = mcp_agents.crm_agent(mcp_agents.crm_http(timeout=0.5), registry=Registry(confirm=lambda n, a: True))
        run = agent.run(run_id="slow")
    finally:
        server.stop()
    [lookup, closed] = run.records
    assert (lookup.status, closed.status) == (ToolStatus.OK, ToolStatus.TIMEOUT)
    assert closed.content == "Error: crm__close_account timed out after 0.5s and was abandoned."
    assert run.output == f"Done: {closed.content} [{V1_TOOLS}]"  # the model read why
    assert effects(crm_db, "close_account") == ["slow:2.1"]  # made once, under the call's key


def _call(name: str, **arguments: object) -> ToolCall:
    return ToolCall(id="c", name=name, arguments=arguments)


def _context(key: str) -> ToolContext:
    return ToolContext(run_id="r", call_id="1.1", idempotency_key=key)


@pytest.mark.system
def test_in_process_an_unreachable_or_misconfigured_server_fails_the_run_at_start(monkeypatch):
    port = free_port()  # nothing listens there
    down = mcp_agents.crm_agent(MCPServer.http("crm", f"http://127.0.0.1:{port}/mcp"))
    down.tool_attempts = 2
    with pytest.raises(MCPUnavailable, match=rf"MCP server 'crm' \(http://127.0.0.1:{port}/mcp\) is unreachable"):
        down.run()
    monkeypatch.delenv("MCP_TEST_TOKEN", raising=False)
    monkeypatch.setenv("MCP_TEST_URL", f"http://127.0.0.1:{port}/mcp")
    with pytest.raises(MCPConfigError, match=r"its token comes from \$MCP_TEST_TOKEN, not set on this worker"):
        mcp_agents.crm_agent(mcp_agents.crm_http()).run()
    missing = mcp_agents.crm_agent(MCPServer.stdio("crm", ["/nonexistent/mcp-server"]))
    with pytest.raises(MCPConfigError, match="cannot start MCP server 'crm'"):
        missing.run()


# -- durable runs -------------------------------------------------------------------------------------


async def test_a_durable_run_uses_two_mcp_tools_waits_for_approval_and_keeps_its_tool_list_across_continue_as_new(
    dev_env, task_queue, ledger, crm_db
):
    agent = mcp_agents.crm_agent(mcp_agents.crm_stdio(crm_db))
    often = EngineOptions(continue_as_new=ContinueAsNewPolicy(max_history_events=12))
    async with new_worker(dev_env.client, task_queue, ledger, agents=[agent], engine=often):
        agents = AgentClient(dev_env.client, task_queue=task_queue)
        run = await agents.start(agent)
        [waiting] = await run.wait_for_approval()
        assert (waiting.tool, waiting.arguments) == ("crm__close_account", {"customer": "ada"})
        assert effects(crm_db) == []  # nothing happens before the human says so
        await run.approve(waiting.call_id, by="maria", arguments_hash=waiting.arguments_hash)
        result = await asyncio.wait_for(run.result(), 60)
    assert result.status == "completed"
    assert result.trajectory() == ["crm__lookup", "crm__close_account"]
    assert result.output == f"Done: closed ada [{V1_TOOLS}]"
    assert result.continued >= 1  # handed over at least once, with the recorded tools
    assert effects(crm_db, "close_account") == [f"{run.run_id}:2.1"]
    listings = await _scheduled(dev_env.client, run.run_id, "list_mcp_tools", every_run=True)
    assert listings == 1  # listed when the run started, never again in its continuations


async def test_a_worker_sigkilled_mid_call_and_the_server_makes_the_effect_once(dev_env, task_queue, tmp_path, crm_db):
    server = CRM(crm_db, token="s3cret", slow_after_effect=4.0).start()  # answers 4 s after committing
    settings = dev_settings(dev_env, task_queue, tmp_path)
    env = {"AGENT_MODULES": "tests.support.mcp_agents", "MCP_TEST_URL": server.url, "MCP_TEST_TOKEN": "s3cret"}
    worker = WorkerProcess(settings, extra_env=env).wait_ready()
    try:
        agents = AgentClient(dev_env.client, task_queue=settings.task_queue)
        run = await agents.start("crm", timeouts=Timeouts(heartbeat_seconds=2.0))
        [waiting] = await run.wait_for_approval()
        await run.approve(waiting.call_id, by="maria", arguments_hash=waiting.arguments_hash)
        await eventually(lambda: effects(crm_db, "close_account") != [], what="the effect at the server")
        worker.kill()  # the account is closed; the worker never heard back
        worker = WorkerProcess(settings, extra_env=env).wait_ready()
        result = await asyncio.wait_for(run.result(), 120)
    finally:
        worker.stop()
        server.stop()
    key = f"{run.run_id}:2.1"
    assert result.status == "completed"
    assert result.output == f"Done: closed ada [{V1_TOOLS}]"  # the retry got the first answer back
    assert effects(crm_db, "close_account") == [key]  # once, by the server's own count
    # Though it was called again, with the same key in `_meta`: twice, or (a machine loaded past its cores can
    # make the new worker miss its 2-s heartbeat too) three times; the effect above is once either way.
    assert calls(crm_db, key) >= 2


async def test_a_server_that_changes_its_tools_after_the_run_started_changes_nothing_in_it(
    dev_env, task_queue, ledger, crm_db, monkeypatch
):
    server = CRM(crm_db).start("v1")
    monkeypatch.setenv("MCP_TEST_URL", server.url)
    monkeypatch.setenv("MCP_TEST_TOKEN", "unused")
    agent = mcp_agents.crm_agent(mcp_agents.crm_http())
    try:
        # No cache: every workflow task replays the history from its first event.
        async with new_worker(dev_env.client, task_queue, ledger, agents=[agent], max_cached_workflows=0):
            run = await AgentClient(dev_env.client, task_queue=task_queue).start(agent)
            [waiting] = await run.wait_for_approval()
            server.stop()
            server.start("v2")  # `lookup` renamed, a description changed, `export` added
            await run.approve(waiting.call_id, by="maria", arguments_hash=waiting.arguments_hash)
            result = await asyncio.wait_for(run.result(), 60)
    finally:
        server.stop()
    assert result.status == "completed"
    # The model was offered the tools listed when the run started, not the server's new list.
    assert result.output == f"Done: closed ada [{V1_TOOLS}]"
    history = await dev_env.client.get_workflow_handle(run.run_id).fetch_history()
    replayer = Replayer(workflows=[AgentWorkflow], data_converter=pydantic_data_converter)
    replayed = await replayer.replay_workflow(history, raise_on_replay_failure=True)
    assert replayed.replay_failure is None


async def test_a_1mb_mcp_result_goes_through_the_claim_check(dev_env, task_queue, ledger, crm):
    agent = mcp_agents.report_agent(mcp_agents.crm_http())
    async with new_worker(dev_env.client, task_queue, ledger, agents=[agent]):
        run = await AgentClient(dev_env.client, task_queue=task_queue).start(agent)
        result = await asyncio.wait_for(run.result(), 60)
    assert result.output == "the report has 1,000,000 characters"  # the model read all of it
    [tool_message] = [m for m in result.transcript_messages(transcripts_next_to(ledger)) if m.role == "tool"]
    assert tool_message.content == "r" * 1_000_000
    history = await dev_env.client.get_workflow_handle(run.run_id).fetch_history()
    assert len(history.to_json()) < 100_000  # the megabyte is in the transcript store, not in history


async def test_an_unreachable_server_fails_the_run_at_start_with_a_clear_message(
    dev_env, task_queue, ledger, monkeypatch
):
    port = free_port()  # nothing listens there
    monkeypatch.setenv("MCP_TEST_URL", f"http://127.0.0.1:{port}/mcp")
    monkeypatch.setenv("MCP_TEST_TOKEN", "t")
    down = mcp_agents.crm_agent(mcp_agents.crm_http())
    async with new_worker(dev_env.client, task_queue, ledger, agents=[down]):
        agents = AgentClient(dev_env.client, task_queue=task_queue)
        run = await agents.start(down)
        with pytest.raises(RunFailed) as failed:
            await asyncio.wait_for(run.result(), 60)
        message = str(failed.value)
        assert f"run {run.run_id} cannot start" in message
        assert f"MCP server 'crm' (http://127.0.0.1:{port}/mcp ($MCP_TEST_URL)) is unreachable" in message
        assert await _last_attempt(dev_env.client, run.run_id) == 3  # a few tries, then the run failed

        monkeypatch.delenv("MCP_TEST_TOKEN")  # a worker without its token: retrying cannot help
        run = await agents.start(down)
        with pytest.raises(RunFailed, match=r"its token comes from \$MCP_TEST_TOKEN, not set on this worker"):
            await asyncio.wait_for(run.result(), 60)
        assert await _last_attempt(dev_env.client, run.run_id) == 1


async def _scheduled(client, run_id: str, activity: str, *, every_run: bool = False) -> int:
    """How many `activity` tasks the run scheduled (with `every_run`, across its continuations too)."""
    count, handle = 0, client.get_workflow_handle(run_id)
    description = await handle.describe()
    run_ids = {description.run_id}
    if every_run:
        async for execution in client.list_workflows(f"WorkflowId = '{run_id}'"):
            run_ids.add(execution.run_id)
    for one in run_ids:
        async for event in client.get_workflow_handle(run_id, run_id=one).fetch_history_events():
            scheduled = event.activity_task_scheduled_event_attributes
            if event.HasField("activity_task_scheduled_event_attributes") and scheduled.activity_type.name == activity:
                count += 1
    return count


async def _last_attempt(client, run_id: str) -> int:
    """The attempt the run's last activity task had when it ended (history records only the last one)."""
    attempt = 0
    async for event in client.get_workflow_handle(run_id).fetch_history_events():
        if event.HasField("activity_task_started_event_attributes"):
            attempt = event.activity_task_started_event_attributes.attempt
    return attempt


# -- the checkpoint runner ------------------------------------------------------------------------------


@pytest.mark.system
def test_the_checkpoint_runner_records_the_tool_list_as_a_step_and_resumes_with_it(tmp_path, crm_db, monkeypatch):
    """`job run` lists the tools (step 1), waits for approval and is SIGKILLed; the server changes its tools;
    `job resume` finishes from the store alone, offering the model the tools recorded at the start."""
    monkeypatch.setenv("MCP_TEST_DB", str(crm_db))
    monkeypatch.setenv("MCP_TEST_TOOLSET", "v1")
    job = baseline_helpers.Job(tmp_path)
    modules = ("--agents", "tests.support.mcp_agents")
    try:
        worker = job.spawn("run", "--id", "b1", "--scenario", "crm-stdio", "--lease-seconds", "1", *modules)
        baseline_helpers.eventually(
            lambda: job.store.run("b1") and job.status("b1")["status"] == "awaiting_approval", what="the wait"
        )
        job.kill(worker)
        monkeypatch.setenv("MCP_TEST_TOOLSET", "v2")  # what a resume would list now
        assert job.run("approve", "--id", "b1", "--by", "erin", "--yes", *modules).returncode == 0
        job.wait_lease_expired("b1")
        # A process of its own: tests/support/mcp_agents.py reads MCP_TEST_DB when it is first imported.
        code, _, err = baseline_helpers.finish(job.spawn("resume", "--id", "b1", *modules))
        assert code == 0, err
        status = job.status("b1")
        steps = job.steps("b1")
    finally:
        job.close()
    assert status["status"] == "completed"
    assert status["output"] == f"Done: closed ada [{V1_TOOLS}]"
    assert [s.step_name for s in steps] == [
        "mcp_tools",
        "model_call",
        "tool:crm__lookup",
        "model_call",
        "tool:crm__close_account",
        "model_call",
    ]
    assert effects(crm_db) == ["b1:2.1"]


def test_the_checkpoint_runner_fails_a_run_whose_server_is_unreachable_at_start(tmp_path):
    down = mcp_agents.crm_agent(MCPServer.http("crm", f"http://127.0.0.1:{free_port()}/mcp"), name="down")
    down.tool_attempts = 1
    store = Store(tmp_path / "baseline.db")
    try:
        run = jobs.start(store, AgentSet([down]), "gone", "down", RunOptions())
    finally:
        store.close()
    assert run.status == "failed"
    assert run.error.startswith("run gone cannot start: MCP server 'crm' (http://127.0.0.1:")
    assert "is unreachable" in run.error


# -- the example ------------------------------------------------------------------------------------------


def mcp_snippet() -> str:
    return code_block_after("docs/agents.md", "## Tools from MCP servers")


def test_the_documented_mcp_lines_build_the_agent_they_describe():
    code = mcp_snippet()
    assert len([line for line in code.splitlines() if line.strip()]) <= 5
    namespace: dict[str, object] = {"sys": sys, "Agent": Agent, "Registry": Registry, "model": FakeModel(["ok"])}
    exec(code, namespace)
    agent = namespace["agent"]
    assert [(s.name, s.transport) for s in agent.mcp] == [("notes", "stdio"), ("crm", "http")]
    assert agent.mcp[1].token_env == "CRM_MCP_TOKEN" and agent.mcp[1].needs_confirmation("close_account", False)


async def test_the_notes_example_runs_durably_and_its_server_saves_once_per_key(dev_env, task_queue, ledger, tmp_path):
    db = tmp_path / "notes.db"
    agent = dataclasses.replace(
        mcp_notes.agent, mcp=[MCPServer.stdio("notes", [sys.executable, str(mcp_notes.SERVER), "--db", str(db)])]
    )
    async with new_worker(dev_env.client, task_queue, ledger, agents=[agent]):
        run = await AgentClient(dev_env.client, task_queue=task_queue).start(agent)
        result = await asyncio.wait_for(run.result(), 60)
    assert result.trajectory() == ["notes__add_note", "notes__read_note"]
    assert result.output == "Saved and read back: MCP tools are durable now."
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT key FROM done").fetchall() == [(f"{run.run_id}:1.1",)]
