"""A newcomer's smaller frictions, each as they meet it: `worker.py --agents` with a module in the
current directory; one `FakeModel` serving many runs of a long-lived worker; a refused decision that says what
was refused and why — through `RunHandle` and through Temporal's own command line."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys

import pytest

from agentic import Agent, FakeModel, Registry, ToolContext, tool, tool_call
from duragent import ApprovalRejected
from duragent._config.settings import ROOT
from duragent._config.temporal_binaries import TEMPORAL_CLI
from duragent._stores.ledger import EffectsLedger
from duragent.testing import agent_server
from examples.options import DemoDeps
from examples.refund import agent as refund_agent

# Processes of its own (servers, command lines, Python interpreters): tests/support/cost_markers.py.
pytestmark = pytest.mark.system

MY_AGENTS = """
from duragent import Agent, FakeModel, Registry


agents = [Agent(FakeModel(["Hello from my_agents."]), Registry(), name="hello", task="Say hello")]
"""


async def test_worker_py_serves_an_agents_module_in_the_current_directory(dev_env, tmp_path):
    (tmp_path / "my_agents.py").write_text(MY_AGENTS)
    async with agent_server(env=dev_env) as agents:
        env = os.environ | agents.worker_environment()
        worker = subprocess.Popen(
            [sys.executable, str(ROOT / "worker.py"), "--agents", "my_agents"],
            cwd=tmp_path,  # where my_agents.py is, as a user runs it; worker.py is elsewhere
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        try:
            assert worker.stdout is not None
            ready = await asyncio.to_thread(worker.stdout.readline)
            assert b"agents=hello" in ready, ready + worker.stderr.read() if worker.stderr else ready
            run = await agents.start("hello")
            assert (await run.result()).output == "Hello from my_agents."
            worker.send_signal(signal.SIGTERM)
            assert worker.wait(30) == 0  # drained, and a clean exit
        finally:
            worker.kill()
            worker.wait(10)


def test_an_agents_module_found_nowhere_is_one_line_saying_where_it_was_looked_for(tmp_path):
    done = subprocess.run(
        [sys.executable, str(ROOT / "worker.py"), "--agents", "not_my_agents"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    [line] = done.stderr.strip().splitlines()
    assert line.startswith("error: cannot import agents module 'not_my_agents'")
    assert str(tmp_path) in line and "PYTHONPATH" in line


@tool(description="Look an order up.", order_id="The order id.")
def look_up(order_id: str, ctx: ToolContext) -> str:
    ctx.deps.append(ctx.idempotency_key)
    return f"order {order_id}: shipped"


SCRIPTED = Agent(
    FakeModel([tool_call("look_up", {"order_id": "A-1"}), "A-1 has shipped."]), Registry([look_up]), name="orders"
)


async def test_one_fake_model_scripts_each_run_of_a_long_lived_worker_from_its_first_reply():
    """The script is per run (by the run's own model-call index), not a counter of the process: the fifth
    run on the same worker, and runs side by side, each get reply #1 then #2."""
    calls: list[str] = []
    # Real time (the dev server): nothing here waits on a timer, and four runs at once on a loaded machine must not
    # see the time-skipping server jump past their workflow tasks.
    async with agent_server([SCRIPTED], deps=calls, time_skipping=False) as agents:
        first = await agents.start(SCRIPTED, "Where is A-1?")
        assert (await first.result()).output == "A-1 has shipped."
        together = [await agents.start(SCRIPTED, "Where is A-1?") for _ in range(4)]
        results = await asyncio.gather(*(run.result() for run in together))
    assert [r.output for r in results] == ["A-1 has shipped."] * 4
    assert [r.trajectory() for r in results] == [["look_up"]] * 4
    assert sorted(calls) == sorted(f"{run.run_id}:1.1" for run in [first, *together])


async def test_a_refused_decision_says_what_was_refused_and_why(skipping_env, tmp_path):
    deps = DemoDeps(ledger=EffectsLedger(tmp_path / "ledger.db"))
    async with agent_server([refund_agent], deps=deps, env=skipping_env) as agents:
        run = await agents.start(refund_agent)
        [waiting] = await run.wait_for_approval()
        with pytest.raises(ApprovalRejected) as approve:
            await run.approve(waiting.call_id, by="maria", arguments_hash="0" * 64)
        with pytest.raises(ApprovalRejected) as deny:
            await run.deny(waiting.call_id, by="maria", arguments_hash="0" * 64)
        mismatch = "the arguments hash does not match the pending call's arguments"
        assert str(approve.value) == f"decision refused: approve call {waiting.call_id} (refund): {mismatch}"
        assert str(deny.value) == f"decision refused: deny call {waiting.call_id} (refund): {mismatch}"
        assert approve.value.reason == deny.value.reason == mismatch  # the reason alone, as the runs API shows it
        assert "approved" not in str(deny.value)
        assert [p.call_id for p in await run.pending()] == [waiting.call_id]  # nothing changed
        await run.cancel()


async def test_temporals_own_command_line_shows_a_refusal_as_decision_rejected_not_retryable(dev_env, tmp_path):
    """What the newcomer saw as `(type: ValueError, retryable: true)`."""
    deps = DemoDeps(ledger=EffectsLedger(tmp_path / "ledger.db"))
    async with agent_server([refund_agent], deps=deps, env=dev_env) as agents:
        run = await agents.start(refund_agent)
        [waiting] = await run.wait_for_approval()
        decision = {"call_id": waiting.call_id, "approve": False, "approver": "bob", "arguments_hash": "0" * 64}
        command = [str(TEMPORAL_CLI), "workflow", "update", "execute", "--address", agents.address]
        command += ["--workflow-id", run.run_id, "--name", "decide", "--input", json.dumps(decision)]
        done = await asyncio.to_thread(subprocess.run, command, capture_output=True, text=True, timeout=60)
        await run.cancel()
    said = done.stdout + done.stderr
    assert done.returncode != 0, said
    assert f"decision refused: deny call {waiting.call_id} (refund)" in said
    assert "DecisionRejected" in said and "ValueError" not in said
    assert "retryable: true" not in said
