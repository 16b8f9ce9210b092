"""Replaying a user's own histories against today's code before a deploy (`starter.py replay`,
`duragent.replay`). It passes on today's recorded histories; it fails when the engine changes what a
run does without a patch (the approval gate dropped: a tool activity where the history has a timer); an
agent edit replays, because the run recorded its agent's spec; and for a run still open it names an agent
no longer deployed, or a tool the run recorded that is gone."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agentic import Agent, Registry
from duragent._activities.inputs import ContinueAsNewPolicy, EngineOptions
from duragent._client import AgentClient
from duragent._config.settings import ROOT
from duragent._stores.ledger import EffectsLedger
from duragent.replay import fetch_histories, load_histories, replay, save_histories
from duragent.testing import agent_server
from examples.options import DemoDeps
from examples.refund import agent as refund_agent
from tests.conftest import agent_named, eventually, new_worker
from tests.support import mcp_agents
from tests.support.docs import code_block_after
from tests.temporal.test_mcp import crm_db

# Processes of its own (servers, command lines, Python interpreters): tests/support/cost_markers.py.
pytestmark = pytest.mark.system
__all__ = ["crm_db"]  # the fixture, shared with test_mcp.py

HISTORIES = sorted((ROOT / "tests" / "histories").glob("*.json"))
APPROVAL_HISTORIES = {"refund-expired.json", "support~2.1.json"}  # the runs whose tool waited for a human

# The engine changed without a patch: the loop no longer gates a tool that requires confirmation. A new
# worker would run the tool where the recorded run started its approval timer.
UNGATED_ENGINE = """
import agentic.loop as loop


_next_step = loop.AgentLoop.next_step


def next_step(self):
    step = _next_step(self)
    if isinstance(step, loop.RunTool) and step.needs_approval:
        return step.model_copy(update={"needs_approval": False})
    return step


loop.AgentLoop.next_step = next_step
"""


def starter_replay(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "starter.py", "replay", *args],
        cwd=ROOT,
        env=os.environ | (env or {}),
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_command_replays_todays_recorded_histories():
    done = starter_replay("--agents", "examples", *map(str, HISTORIES))
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[-1] == f"{len(HISTORIES)} of {len(HISTORIES)} histories replayed"
    assert all(line.startswith("ok") for line in lines[:-1])


def test_an_engine_change_without_a_patch_fails_the_command_naming_each_history_it_breaks(tmp_path):
    (tmp_path / "sitecustomize.py").write_text(UNGATED_ENGINE)  # today's code, changed, in every process
    # Added to PYTHONPATH, not in its place: a checkout run with PYTHONPATH=$PWD (a worktree beside the venv's
    # editable install) would otherwise import the install's packages, not its own.
    path = os.pathsep.join(filter(None, [str(tmp_path), os.environ.get("PYTHONPATH")]))
    done = starter_replay("--json", *map(str, HISTORIES), env={"PYTHONPATH": path})
    assert done.returncode == 1, done.stdout + done.stderr
    report = json.loads(done.stdout)
    failed = {Path(r["source"]).name: r["problem"] for r in report["replayed"] if r["problem"]}
    assert set(failed) == APPROVAL_HISTORIES  # the others never reach the gate: they still replay
    assert all("Nondeterminism" in problem for problem in failed.values())


async def test_a_run_in_flight_survives_an_agent_edit_but_not_its_agent_or_tool_going(dev_env, tmp_path):
    """An open run (waiting for its approval) fetched from the server: replayed with the agent edited (its
    tool no longer requires confirmation) it passes — the run decides with its recorded spec; with the agent
    not deployed, or without its tool, the report names what would strand it."""
    async with agent_server([refund_agent], deps=_deps(tmp_path), env=dev_env) as agents:
        run = await agents.start(refund_agent)
        await run.wait_for_approval()
        histories = await fetch_histories(agents.client, run_ids=[run.run_id])

        async def listed() -> bool:  # what `--query` fetches: the runs visibility lists
            found = await fetch_histories(agents.client, query=f'WorkflowId = "{run.run_id}"')
            return [h.workflow_id for _, h in found] == [run.run_id]

        await eventually(listed, timeout=10, what="the run in visibility")

        [tool] = refund_agent.registry
        ungated = Registry([dataclasses.replace(tool, requires_confirmation=False)])
        edited = Agent(refund_agent.model, ungated, name="refund", system="Refunds, now without asking.")
        report = await replay(histories, agents=[edited])
        assert report.ok, report
        [replayed] = report.replayed
        assert (replayed.open, replayed.agent) == (True, "refund")

        report = await replay(histories, agents=[agent_named("billing")])
        assert not report.ok and "agent 'refund' is not among the agents given (billing)" in str(report)

        toolless = Agent(refund_agent.model, Registry(), name="refund")
        report = await replay(histories, agents=[toolless])
        assert not report.ok and "no longer has tool(s) refund" in str(report)

        # The same from the command line, against the server the run is on.
        env = {"TEMPORAL_ADDRESS": agents.address, "TEMPORAL_NAMESPACE": agents.settings.namespace}
        assert starter_replay("--run", run.run_id, "--agents", "examples", env=env).returncode == 0
        done = starter_replay("--run", run.run_id, "--agents", "examples.orders", env=env)
        assert done.returncode == 1 and "agent 'refund' is not among the agents given (orders)" in done.stdout
        await run.cancel()


async def test_an_open_run_with_mcp_tools_is_not_stranded_by_its_own_agent(dev_env, task_queue, ledger, crm_db):
    """The pre-deploy check for an MCP agent's run waiting for its approval, in a continuation (whose recorded
    spec, carried over, lists the MCP tools): those tools are the MCP server's, listed at the run's start, not
    the agent's registry; given the same agent, the run replays and nothing is reported (every deploy of an
    MCP agent would otherwise be held back). On the dev server: on the time-skipping one, time skipping was
    now and then stuck after this test."""
    agent = mcp_agents.crm_agent(mcp_agents.crm_stdio(crm_db))
    often = EngineOptions(continue_as_new=ContinueAsNewPolicy(max_history_events=12))
    async with new_worker(dev_env.client, task_queue, ledger, agents=[agent], engine=often):
        run = await AgentClient(dev_env.client, task_queue=task_queue).start(agent)
        [waiting] = await run.wait_for_approval()
        assert waiting.tool == "crm__close_account"
        histories = await fetch_histories(dev_env.client, run_ids=[run.run_id])
        report = await replay(histories, agents=[agent])
        await run.cancel()
    assert report.ok, report
    assert [(r.open, r.agent) for r in report.replayed][-2:] == [(False, "crm"), (True, "crm")]  # it continued


async def test_saved_histories_of_a_delegating_run_replay_from_their_files(tmp_path, monkeypatch):
    """`save_histories` writes the run and the run it delegated to, named after it; each file replays. A file
    without `workflowId` (a Web UI or `temporal workflow show` download) finds the run id from its children's
    ids, which the replay must match."""
    support = agent_named("support")
    async with agent_server([support, agent_named("billing-desk")], deps=_deps(tmp_path)) as agents:
        run = await agents.start(support)
        result = await run.result()  # the desk's refund approval expires (24 h, skipped)
        paths = await save_histories(run, tmp_path / "histories", name="support")
        # docs/testing.md's lines, as written: into ./histories, each file named after the run.
        (tmp_path / "documented").mkdir()
        monkeypatch.chdir(tmp_path / "documented")
        documented = await run_documented(code_block_after("docs/testing.md", "Record histories of your runs"), run)
    assert result.status in ("completed", "compensated", "abandoned")
    assert [p.name for p in paths] == ["support.json", "support~2.1.json"]
    assert [p.name for p in documented] == [f"{run.run_id}.json", f"{run.run_id}~2.1.json"]
    assert all(p.parent == Path("histories") and (tmp_path / "documented" / p).is_file() for p in documented)
    report = await replay(load_histories(paths))
    assert report.ok, report
    assert [r.run_id for r in report.replayed] == [run.run_id, f"{run.run_id}~2.1"]

    download = tmp_path / "download.json"
    data = json.loads(paths[0].read_text())
    del data["workflowId"]
    download.write_text(json.dumps(data))
    [(_, history)] = load_histories([download])
    assert history.workflow_id == run.run_id
    assert (await replay([history])).ok


def _deps(tmp_path: Path) -> DemoDeps:
    return DemoDeps(ledger=EffectsLedger(tmp_path / "ledger.db"))


async def run_documented(snippet: str, run: object) -> list[Path]:
    """A documented snippet that awaits, run as a coroutine's body with `run` in scope; what it left in `paths`."""
    body = "".join(f"    {line}\n" for line in snippet.splitlines())
    scope: dict[str, object] = {"run": run}
    exec(compile(f"async def documented():\n{body}    return paths\n", "docs/testing.md", "exec"), scope)
    return [Path(p) for p in await scope["documented"]()]  # type: ignore[operator]
