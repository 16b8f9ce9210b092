"""Property-based tests of the loop and its three runners: random model replies (valid and invalid tool
calls, unknown tools, non-JSON arguments, repeats, give-ups, huge answers) and random tool outcomes.

For every script: no exception escapes, the transcript is well formed, consumption never exceeds the budget
by more than one step, the stop is a documented one — and the in-process agent, the checkpoint runner and
the Temporal workflow (time-skipping server; a few examples only) produce the same transcript.

`make test` runs the default hypothesis profile (bounded); `HYPOTHESIS_PROFILE=deep` (set by `make
test-slow`) runs many more examples.
"""

from __future__ import annotations

import os
import uuid
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from agentic import Budget, Message, Stop, Usage, tool_call
from agentic.agent_set import AgentSet
from agentic.loop import MAX_CALLS_PER_REPLY
from duragent._baseline import jobs
from duragent._baseline.options import RunOptions
from duragent._baseline.runner import transcript
from duragent._baseline.store import Store
from duragent._stores.ledger import EffectsLedger
from duragent._workflows.agent import AgentWorkflow
from duragent._workflows.inputs import AgentInput
from examples.options import DemoDeps
from tests.conftest import transcripts_next_to
from tests.support.scripted_runs import (
    AGENT,
    DOCUMENTED_STOPS,
    MAX_STEPS,
    assert_well_formed,
    assert_within_budget,
    in_process,
    last_step_usage,
    plain,
    register,
    scratch,
    scripts,
    temporal_in_background,
)

steps = st.integers(1, MAX_STEPS)


def _checked(messages: list[Message], usage: Any, stop: Stop, script: list[Any], max_steps: int) -> None:
    assert stop in DOCUMENTED_STOPS
    event(f"stop: {stop.value}")
    assert_well_formed(messages)
    budget = AGENT.budget.model_copy(update={"max_steps": max_steps})
    assert_within_budget(usage, budget, last_step_usage(messages, script, usage.steps))
    if stop is Stop.ANSWERED:
        assert messages[-1].role == "assistant" and not messages[-1].tool_calls


@given(script=scripts(), max_steps=steps)
def test_in_process_runs_keep_the_invariants(tmp_path_factory: pytest.TempPathFactory, script, max_steps) -> None:
    tmp = scratch(tmp_path_factory.mktemp("prop"))
    run = in_process(AGENT, register(script), max_steps, DemoDeps(EffectsLedger(tmp / "ledger.db")), "run-1")
    _checked(run.messages, run.usage, run.stop, script, max_steps)
    effects = EffectsLedger(tmp / "ledger.db").effects()
    assert len({e.key for e in effects}) == len(effects)  # at most once per key


@given(script=scripts(), max_steps=steps)
def test_the_checkpoint_runner_reaches_the_in_process_transcript(
    tmp_path_factory: pytest.TempPathFactory, script, max_steps
) -> None:
    tmp = scratch(tmp_path_factory.mktemp("prop"))
    task = register(script)
    local = in_process(AGENT, task, max_steps, DemoDeps(EffectsLedger(tmp / "local.db")), "same")
    store, ledger = Store(tmp / "baseline.db"), EffectsLedger(tmp / "ledger.db")
    agents = AgentSet([AGENT], DemoDeps(ledger))
    try:
        row = jobs.start(
            store, agents, "same", "prop", RunOptions(task=task, max_steps=max_steps, retry_backoff_seconds=0)
        )
        replayed = transcript(store, agents, "same")
        assert row.status in ("completed", "abandoned", "compensated"), row.error
        assert replayed.messages == local.messages
        assert replayed.loop.state.consumed == local.usage == row.consumed
        assert row.stop == local.stop.value
        _checked(replayed.messages, row.consumed, Stop(row.stop), script, max_steps)
        if Stop(row.stop) is not Stop.ANSWERED:  # abandoned: every write undone once, newest first
            writes = [e for e in ledger.effects("same") if e.compensates is None]
            undone = [e.compensates for e in ledger.effects("same") if e.compensates is not None]
            assert undone == [e.key for e in reversed(writes)]
    finally:
        store.close()


@pytest.fixture(scope="module")
def temporal(tmp_path_factory: pytest.TempPathFactory):
    ledger = EffectsLedger(tmp_path_factory.mktemp("prop-temporal") / "ledger.db")
    with temporal_in_background(ledger, "prop", [AGENT]) as (loop, env):
        yield loop, env, ledger


@pytest.mark.temporal
@settings(max_examples=60 if os.environ.get("HYPOTHESIS_PROFILE") == "deep" else 12)
@given(script=scripts(), max_steps=steps)
def test_the_workflow_reaches_the_in_process_transcript(temporal, tmp_path_factory, script, max_steps) -> None:
    loop, env, ledger = temporal
    tmp = scratch(tmp_path_factory.mktemp("prop"))
    task = register(script)
    run_id = f"prop-{uuid.uuid4().hex[:10]}"
    local = in_process(AGENT, task, max_steps, DemoDeps(EffectsLedger(tmp / "local.db")), run_id)

    async def durable() -> Any:
        input = AgentInput(agent="prop", task=task, budget=AGENT.budget.model_copy(update={"max_steps": max_steps}))
        return await env.client.execute_workflow(AgentWorkflow.run, input, id=run_id, task_queue="prop")

    result = loop.run(durable())
    messages = result.transcript_messages(transcripts_next_to(ledger))
    assert plain(messages) == plain(local.messages)
    assert result.usage == local.usage and result.stop is local.stop
    _checked(messages, result.usage, result.stop, script, max_steps)


def test_a_reply_of_10000_tool_calls_is_refused_whole_in_every_runner(tmp_path: Path) -> None:
    """The hostile model's flood: nothing runs, the model reads why, what is kept is bounded."""
    flooded = replace(AGENT, name="prop-flood", budget=Budget(max_steps=3))  # the flood's tokens count, too
    task = register([[tool_call("write", {"row": f"r{i}"}) for i in range(10_000)], "Sorry."])
    ledger = EffectsLedger(tmp_path / "local.db")
    local = in_process(flooded, task, 3, DemoDeps(ledger), "flood")
    assert local.stop is Stop.ANSWERED and local.output == "Sorry."
    request, *answers, _answer = local.messages[1:]
    assert len(request.tool_calls) == MAX_CALLS_PER_REPLY == len(answers)
    assert "asked for 10000 tool calls at once; at most 64" in answers[0].content
    assert ledger.effects() == []  # none ran
    assert_well_formed(local.messages)

    store = Store(tmp_path / "baseline.db")
    agents = AgentSet([flooded], DemoDeps(EffectsLedger(tmp_path / "ledger.db")))
    row = jobs.start(store, agents, "flood", "prop-flood", RunOptions(task=task))
    assert transcript(store, agents, "flood").messages == local.messages and row.stop == "answered"
    assert store.query("SELECT max(length(body)) FROM outputs")[0][0] < 50_000  # the checkpoint stayed small
    store.close()


def test_the_budget_property_catches_a_loop_that_checks_after_the_call() -> None:
    """Control: the budget check the properties make fails on consumption two steps over the limit."""
    budget = Budget(max_output_tokens=100)
    with pytest.raises(AssertionError):
        assert_within_budget(Usage(steps=3, output_tokens=300), budget, Usage(steps=1, output_tokens=100))
    assert_within_budget(Usage(steps=2, output_tokens=150), budget, Usage(steps=1, output_tokens=100))
