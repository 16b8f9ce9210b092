"""The three runners on the real local model (SmolLM2-135M on llama-cpp-python's server,
duragent/_ops/devstack/modelserver.py):
the in-process `Agent.run`, the checkpoint runner (`jobs.start`, `job run --model local`) and Temporal (a
worker and `AgentClient.start(..., model="local")`), each taking the model the worker declares as `local`.

The agent is the demo's `billing` (examples/billing.py): its `charge` tool records an effect in the ledger
under the call's key, so effects are counted in durable storage. A run's first model call must call
`charge` (`first_tool_choice`: the server constrains the arguments with a grammar built from the tool's
schema, but their values are the model's own), later calls answer in words (`none`); temperature 0, few
tokens. What the model *says* is not asserted, only what the runners guarantee.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from temporalio.client import Client

from agentic import Agent, Budget, ModelReply, ModelSettings, Stop, ToolCall, ToolResult, ToolStatus
from agentic.agent_set import AgentSet
from agentic.loop import initial_messages
from duragent._activities.inputs import AgentResult
from duragent._baseline import jobs
from duragent._baseline.options import RunOptions
from duragent._baseline.store import Store
from duragent._client import AgentClient, RunHandle
from duragent._config.models import declared_models
from duragent._config.settings import ROOT, Settings
from duragent._ops.demo.local_model import LONG_TASK, asked, model_attempts, model_call_running
from duragent._ops.devstack.devserver import free_port
from duragent._ops.devstack.modelserver import ModelServer
from duragent._ops.devstack.worker_process import WorkerProcess
from duragent._stores.ledger import Effect, EffectsLedger
from duragent._workflows.inputs import Timeouts
from examples import billing
from examples.options import DemoDeps
from tests.conftest import dev_settings, eventually, new_worker

# `first_tool_choice="charge"`, then `none`, at temperature 0, at most 32 tokens a reply (the model's
# arguments for `charge` take about 23): how the demo asks the small model (duragent/_ops/demo/local_model.py).
ASKED = asked("charge")
# LONG_TASK makes the model write to max_tokens: seconds of generation, for a kill to land in.
LONG = asked("charge", 200)


@dataclass
class Called:
    """A tool call the model asked for, and what the runner answered it with."""

    call: ToolCall
    status: ToolStatus
    content: str


@dataclass
class Outcome:
    """How a run ended, the same from every runner."""

    run_id: str
    stop: Stop
    steps: int
    output_tokens: int
    called: list[Called]
    effects: list[Effect]


def local_settings(server: ModelServer) -> Settings:
    """A worker's settings whose declared model `local` is `server`."""
    return dataclasses.replace(Settings(), local_model_url=server.base_url)


class InProcess:
    name = "in-process"

    def __init__(self, settings: Settings, ledger: EffectsLedger) -> None:
        self.settings, self.ledger = settings, ledger

    async def run(self, agent: Agent, model_settings: ModelSettings, task: str | None = None) -> Outcome:
        run_id = f"inproc-{uuid.uuid4().hex[:8]}"
        model = declared_models(self.settings).resolve("local")
        local = dataclasses.replace(agent, model=model, deps=DemoDeps(ledger=self.ledger))
        run = await asyncio.to_thread(local.run, task, run_id=run_id, model_settings=model_settings)
        called = [Called(r.call, r.status, r.content) for r in run.records]
        return Outcome(run_id, run.stop, run.step_count, run.output_tokens, called, self.ledger.effects(run_id))


class Checkpoint:
    name = "checkpoint"

    def __init__(self, settings: Settings, ledger: EffectsLedger, tmp_path: Path) -> None:
        self.settings, self.ledger = settings, ledger
        self.store = Store(tmp_path / "checkpoints.db")

    async def run(self, agent: Agent, model_settings: ModelSettings, task: str | None = None) -> Outcome:
        run_id = f"job-{uuid.uuid4().hex[:8]}"
        agents = AgentSet([agent], DemoDeps(ledger=self.ledger), declared_models(self.settings), where="in the test")
        options = RunOptions(model="local", model_settings=model_settings, task=task)
        row = await asyncio.to_thread(jobs.start, self.store, agents, run_id, agent.label, options)
        assert row.status in ("completed", "abandoned") and row.stop is not None, row.error
        return Outcome(
            run_id, Stop(row.stop), row.used_steps, row.output_tokens, self.called(run_id), self.ledger.effects(run_id)
        )

    def called(self, run_id: str) -> list[Called]:
        """The model's calls from its recorded replies, each with the recorded result of its tool step."""
        requested: list[ToolCall] = []
        results: dict[str, ToolResult] = {}
        for step in self.store.steps(run_id):
            output = self.store.output(step.output_ref) if step.output_ref is not None else None
            if step.step_name == "model_call":
                requested += ModelReply.model_validate(output).message.tool_calls
            elif step.step_name.startswith("tool:"):
                result = ToolResult.model_validate(output["result"])
                results[result.call_id] = result
        return [Called(c, results[c.id].status, results[c.id].content) for c in requested if c.id in results]


class OnTemporal:
    name = "temporal"

    def __init__(self, settings: Settings, ledger: EffectsLedger, client: Client, task_queue: str) -> None:
        self.settings, self.ledger, self.client, self.task_queue = settings, ledger, client, task_queue

    async def run(self, agent: Agent, model_settings: ModelSettings, task: str | None = None) -> Outcome:
        run_id = f"temporal-{uuid.uuid4().hex[:8]}"
        worker = new_worker(
            self.client, self.task_queue, self.ledger, agents=[agent], models=declared_models(self.settings)
        )
        async with worker:
            agents = AgentClient(self.client, task_queue=self.task_queue)
            handle = await agents.start(agent, task, run_id=run_id, model="local", model_settings=model_settings)
            result = await asyncio.wait_for(handle.result(), 240)
        return outcome_of(result, self.ledger)


def outcome_of(result: AgentResult, ledger: EffectsLedger) -> Outcome:
    called = [Called(r.call, r.status, r.content) for r in result.records]
    return Outcome(
        result.run_id, result.stop, result.step_count, result.output_tokens, called, ledger.effects(result.run_id)
    )


Runner = InProcess | Checkpoint | OnTemporal


@pytest.fixture(params=["in-process", "checkpoint", "temporal"])
def runner(
    request: pytest.FixtureRequest, local_model_server: ModelServer, ledger: EffectsLedger, tmp_path: Path
) -> Iterator[Runner]:
    settings = local_settings(local_model_server)
    if request.param == "in-process":
        yield InProcess(settings, ledger)
    elif request.param == "checkpoint":
        checkpoints = Checkpoint(settings, ledger, tmp_path)
        yield checkpoints
        checkpoints.store.close()
    else:
        env = request.getfixturevalue("dev_env")  # the dev server only for the runs that need it
        yield OnTemporal(settings, ledger, env.client, request.getfixturevalue("task_queue"))


def the_charge(outcome: Outcome) -> Called:
    [charge] = outcome.called
    assert charge.call.name == "charge"
    return charge


# -- every runner ---------------------------------------------------------------------------------------


async def test_the_tool_runs_on_the_models_own_arguments(runner: Runner) -> None:
    outcome = await runner.run(billing.agent, ASKED)

    assert outcome.stop is Stop.ANSWERED
    charge = the_charge(outcome)
    assert charge.status is ToolStatus.OK
    assert isinstance(charge.call.arguments, dict)
    [effect] = outcome.effects
    # What the tool did is what the model wrote: no scripted argument anywhere in this run.
    assert effect.tool == "charge" and effect.args == charge.call.arguments
    assert effect.result == charge.content
    assert outcome.steps == 2 and 0 < outcome.output_tokens <= 2 * 32


async def test_malformed_arguments_reach_the_tool_as_an_error_and_the_run_goes_on(runner: Runner) -> None:
    # Three tokens cut the arguments mid-JSON, as a small model running out of tokens does.
    outcome = await runner.run(billing.agent, ASKED.override(ModelSettings(max_tokens=3)))

    charge = the_charge(outcome)
    assert isinstance(charge.call.arguments, str)  # not JSON: kept as the model wrote it
    assert charge.status is not ToolStatus.OK
    assert charge.content.startswith("Error: the arguments for charge are not a JSON object:")
    assert outcome.effects == []  # the tool never ran on them
    assert outcome.stop is Stop.ANSWERED and outcome.steps == 2  # the model read the error and answered


@pytest.fixture(scope="module")
def first_reply_tokens(local_model_server: ModelServer) -> int:
    """What the server counts for the billing agent's first reply, asked directly: at temperature 0 the
    same request gets the same reply (tests/ops/test_real_model.py), so a run's first step counts the same."""
    model = declared_models(local_settings(local_model_server)).resolve("local")
    messages = initial_messages(billing.agent.system, billing.agent.task or "")
    reply = model.complete(messages, billing.agent.schemas(), settings=ASKED)
    assert reply.message.tool_calls and reply.output_tokens > 1
    return reply.output_tokens


async def test_max_output_tokens_stops_the_run_on_the_servers_own_count(
    runner: Runner, first_reply_tokens: int
) -> None:
    # Exactly the first reply's count: the budget is spent after step 1, so the run stops before step 2.
    budget = Budget(max_steps=4, max_output_tokens=first_reply_tokens)

    outcome = await runner.run(dataclasses.replace(billing.agent, budget=budget), ASKED)

    assert outcome.stop is Stop.TOKEN_BUDGET
    assert outcome.steps == 1 and outcome.output_tokens == first_reply_tokens
    assert [e.tool for e in outcome.effects] == ["charge"]  # the step it paid for was completed


async def test_one_token_more_and_the_run_goes_on_to_answer(
    local_model_server: ModelServer, ledger: EffectsLedger, first_reply_tokens: int
) -> None:
    # The other side of the boundary (in-process: the loop's accounting is shared by every runner).
    budget = Budget(max_steps=4, max_output_tokens=first_reply_tokens + 1)
    agent = dataclasses.replace(billing.agent, budget=budget)

    outcome = await InProcess(local_settings(local_model_server), ledger).run(agent, ASKED)

    assert outcome.stop is Stop.ANSWERED and outcome.steps == 2


def test_job_run_takes_the_local_model_by_name(local_model_server: ModelServer, tmp_path: Path) -> None:
    """The checkpoint runner's command line: `job run --model local` and the model-settings flags."""
    db, ledger = tmp_path / "jobs.db", tmp_path / "ledger.db"
    argv = [
        sys.executable,
        "-m",
        "duragent._ops.cli.job",
        "run",
        "--id",
        "j-local",
        "--agent",
        "billing",
        "--model",
        "local",
    ]
    argv += ["--first-tool-choice", "charge", "--tool-choice", "none", "--temperature", "0", "--max-tokens", "32"]
    argv += ["--db", str(db), "--ledger", str(ledger), "--json"]
    env = {**os.environ, "AGENT_LOCAL_MODEL_URL": local_model_server.base_url}

    done = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=240)

    assert done.returncode == 0, done.stderr
    status = json.loads(done.stdout)
    assert (status["status"], status["stop"]) == ("completed", "answered")
    assert status["options"]["model"] == "local"
    assert status["consumption"]["output_tokens"] > 0 and status["consumption"]["cost"] == 0.0
    [effect] = EffectsLedger(ledger).effects("j-local")
    charge_step = next(s for s in status["steps"] if s["step_name"] == "tool:charge")
    assert charge_step["label"] == f"charge(invoice={effect.args['invoice']}, key={effect.args['key']})"


# -- Temporal: crashes of the worker and of the model server --------------------------------------------


async def generating(handle: RunHandle, ledger: EffectsLedger) -> bool:
    """The charge is done and the answer's model call is running on a worker: the server is generating."""
    return len(ledger.effects(handle.run_id)) == 1 and await model_call_running(handle)


async def test_a_worker_killed_mid_generation_is_replaced_and_the_model_call_runs_again(
    dev_env, task_queue: str, tmp_path: Path, local_model_server: ModelServer
) -> None:
    settings = dev_settings(dev_env, task_queue, tmp_path)
    ledger = EffectsLedger(settings.ledger_path)
    env = {"AGENT_LOCAL_MODEL_URL": local_model_server.base_url}
    agents = AgentClient(dev_env.client, task_queue=task_queue)
    first = WorkerProcess(settings, log=tmp_path / "worker1.log", extra_env=env).wait_ready()
    try:
        # A short heartbeat timeout: a dead worker is noticed in seconds, while the server still spends the
        # abandoned generation's time on it before the retry's request is served.
        handle = await agents.start(
            "billing", LONG_TASK, model="local", model_settings=LONG, timeouts=Timeouts(heartbeat_seconds=3.0)
        )
        await eventually(lambda: generating(handle, ledger), timeout=180, what="the answer's generation")
        await asyncio.sleep(0.3)  # the request is at the server
    finally:
        first.kill()
    second = WorkerProcess(settings, log=tmp_path / "worker2.log", extra_env=env).wait_ready()
    try:
        result = await asyncio.wait_for(handle.result(), 300)
        history = await handle.workflow.fetch_history()
    finally:
        second.stop()

    assert result.stop is Stop.ANSWERED
    assert [e.tool for e in ledger.effects(handle.run_id)] == ["charge"]  # each effect once
    [(_, charged_by), (attempt, answered_by)] = model_attempts(history)
    # Retried once, usually; on a machine loaded far past its cores the new worker can miss the 3-s heartbeat
    # and the call runs once more. Attempt 1 would mean the kill landed outside the generation.
    assert attempt >= 2, "the answer's model call was not retried: the kill landed outside the generation"
    assert f"{first.pid}@" in charged_by and f"{second.pid}@" in answered_by
    assert result.output_tokens > 32  # the answer was a long generation (the retried one, counted once)


async def test_a_model_server_killed_mid_run_is_waited_for_and_the_run_completes(
    dev_env, task_queue: str, ledger: EffectsLedger, own_servers: Callable[..., ModelServer]
) -> None:
    server = own_servers(n_ctx=2048)
    models = declared_models(local_settings(server))
    agents = AgentClient(dev_env.client, task_queue=task_queue)
    async with new_worker(dev_env.client, task_queue, ledger, models=models):
        handle = await agents.start("billing", LONG_TASK, model="local", model_settings=LONG)
        await eventually(lambda: generating(handle, ledger), timeout=180, what="the answer's generation")
        await asyncio.sleep(0.3)
        server.kill()

        async def failed_twice() -> bool:
            [pending] = (await handle.describe()).raw_description.pending_activities
            return pending.attempt >= 3 and "connection failed" in pending.last_failure.message

        await eventually(failed_twice, timeout=60, what="two failed attempts while the server is down")
        assert await handle.is_running()  # waiting, not failed
        own_servers(port=server.port, n_ctx=2048)  # the same address the worker declares
        result = await asyncio.wait_for(handle.result(), 240)
        history = await handle.workflow.fetch_history()

    assert result.stop is Stop.ANSWERED
    assert [e.tool for e in ledger.effects(handle.run_id)] == ["charge"]
    [(first_attempt, _), (attempt, _)] = model_attempts(history)
    assert first_attempt == 1 and attempt >= 3  # the model activity retried with backoff until it answered


async def test_a_model_server_that_is_down_is_named_in_the_retried_failure(
    dev_env, task_queue: str, ledger: EffectsLedger
) -> None:
    """No model server at all (no `llm` group needed): while the model call is retried, the pending activity
    says why, in words — not "Failure exceeds size limit." (the server's 4 KB cap, which the HTTP client's
    exception chain with its stack traces exceeds)."""
    down = dataclasses.replace(Settings(), local_model_url=f"http://127.0.0.1:{free_port()}/v1")
    agents = AgentClient(dev_env.client, task_queue=task_queue)
    async with new_worker(dev_env.client, task_queue, ledger, models=declared_models(down)):
        handle = await agents.start("billing", model="local", model_settings=ASKED)
        try:

            async def retried() -> str:
                pending = (await handle.describe()).raw_description.pending_activities
                return pending[0].last_failure.message if pending and pending[0].attempt >= 2 else ""

            await eventually(retried, timeout=60, what="a retried model call")
            message = await retried()
        finally:
            await handle.workflow.terminate("test over")
    assert "local: connection failed" in message and "Connection refused" in message
