"""Memory as tools, in the three runners — in-process, Temporal (the real time-skipping server) and the
checkpoint runner: a fact outlives its run, recalled facts reach the model with their source, a prompt
injection that makes the model remember `is_admin` is refused and audited, and a repeated call is one version."""

from __future__ import annotations

import dataclasses
import uuid
from pathlib import Path

import pytest

from agentic import Agent, Stop, ToolCall, ToolContext, ToolStatus
from agentic.agent_set import AgentSet
from duragent import AgentClient
from duragent._baseline import jobs
from duragent._baseline.options import RunOptions
from duragent._baseline.runner import transcript
from duragent._baseline.store import Store
from duragent._stores.facts import SqliteFactStore
from duragent._stores.ledger import EffectsLedger
from duragent._stores.memory_tools import MemoryOptions
from examples import courier
from examples.options import DemoDeps
from tests.conftest import new_worker, transcripts_next_to
from tests.support import memory_agents

TICKET = "Ticket T-1: customer C-7 prefers BlueDart"
QUESTION = "Which courier does C-7 prefer?"


def served(agent: Agent, tmp_path: Path) -> tuple[Agent, SqliteFactStore]:
    facts = SqliteFactStore(tmp_path / "facts.db")
    return dataclasses.replace(agent, deps=DemoDeps(EffectsLedger(tmp_path / "ledger.db"), facts)), facts


def tool_messages(messages: list) -> list[str]:  # type: ignore[type-arg]
    return [m.content for m in messages if m.role == "tool"]


# -- in-process -----------------------------------------------------------------------------------------


def test_a_fact_outlives_its_run_reaches_the_model_with_its_source_and_is_forgotten(tmp_path: Path) -> None:
    agent, facts = served(courier.agent, tmp_path)
    first = agent.run(TICKET, options={"namespace": "C-7"})
    assert first.output == "Noted: C-7 prefers BlueDart (source: ticket T-1)."
    record = facts.namespace("C-7").record("preferred_courier")
    assert record is not None
    assert (record.value, record.source, record.writer, record.call_id) == ("BlueDart", "ticket T-1", "courier", "1.1")
    assert record.write_key == f"{record.run_id}:1.1"

    second = agent.run(QUESTION, options={"namespace": "C-7"})
    assert second.output == "C-7 prefers BlueDart (from memory; source: ticket T-1)."
    [recalled] = tool_messages(second.messages)
    assert 'preferred_courier = "BlueDart" (source: ticket T-1; written by courier in run' in recalled

    other = agent.run("Which courier does C-8 prefer?", options={"namespace": "C-8"})
    assert "I don't know" in (other.output or "")  # another customer's memory is not this one's

    assert facts.namespace("C-7").forget_source("ticket T-1") == 1
    third = agent.run(QUESTION, options={"namespace": "C-7"})
    assert third.output == "I don't know which courier C-7 prefers: nothing is remembered about it."


def test_an_injected_remember_of_is_admin_is_refused_and_audited_in_process(tmp_path: Path) -> None:
    agent, facts = served(memory_agents.GULLIBLE, tmp_path)
    run = agent.run(options={"namespace": "C-7"}, run_id="gullible-1")
    assert run.stop is Stop.ANSWERED  # the refusal is the model's to read, not the end of the run
    refusal = tool_messages(run.messages)[1]
    assert refusal.startswith("Error: remember raised ProtectedFactError: fact key 'is_admin' is protected")
    assert run.output is not None and "is protected" in run.output  # what the model read
    assert_refused_and_audited(facts, "gullible-1")


def assert_refused_and_audited(facts: SqliteFactStore, run_id: str) -> None:
    c7 = facts.namespace("C-7")
    assert "is_admin" not in c7 and c7.history("is_admin") == []  # no version, not even a forgotten one
    [entry] = c7.audit()
    assert (entry.action, entry.key, entry.value, entry.source) == ("refused", "is_admin", "true", "ticket T-9")
    assert (entry.writer, entry.run_id, entry.call_id, entry.write_key) == (
        "t-gullible",
        run_id,
        "2.1",
        f"{run_id}:2.1",
    )


def test_a_repeated_remember_call_leaves_one_version(tmp_path: Path) -> None:
    """What a retry, a replay or a resumed run does: the same call, under the same key, again."""
    agent, facts = served(courier.agent, tmp_path)
    call = ToolCall(id="c1", name="remember", arguments={"key": "k", "value": 1, "source": "s"}, uid="1.1")
    for attempt in (1, 2, 3):
        context = ToolContext(
            run_id="r", call_id="1.1", idempotency_key="r:1.1", deps=agent.deps, options=MemoryOptions(namespace="N")
        )
        context.attempt = attempt
        result = agent.registry.dispatch(call, context)
        assert result.status is ToolStatus.OK and result.content.startswith("Remembered in N: k = 1")
    assert len(facts.namespace("N").history()) == 1


def test_memory_tools_without_a_store_or_a_namespace_stop_the_run_saying_why(tmp_path: Path) -> None:
    no_store = dataclasses.replace(courier.agent, deps=DemoDeps(EffectsLedger(tmp_path / "ledger.db")))
    run = no_store.run(TICKET, options={"namespace": "C-7"})
    assert run.stop is Stop.TOOL_FAILED
    assert "memory tools need a fact store" in tool_messages(run.messages)[0]

    facts = SqliteFactStore(tmp_path / "facts.db")
    no_namespace = dataclasses.replace(
        courier.agent, options=None, deps=DemoDeps(EffectsLedger(tmp_path / "l.db"), facts)
    )
    run = no_namespace.run(TICKET)
    assert run.stop is Stop.TOOL_FAILED
    assert "memory tools need the run's namespace" in tool_messages(run.messages)[0]
    assert not facts.path.exists()  # nothing was written, not even an empty store


@pytest.mark.parametrize("namespace", ["", "   ", "x" * 201, "a\x00b"])
def test_a_bad_namespace_is_refused_when_the_run_starts(namespace: str) -> None:
    from agentic.agent import InvalidOptions

    with pytest.raises(InvalidOptions, match="namespace"):
        courier.agent.parse_options({"namespace": namespace})


def test_a_bad_fact_is_a_readable_tool_error(tmp_path: Path) -> None:
    agent, facts = served(courier.agent, tmp_path)
    context = ToolContext(
        run_id="r", call_id="1.1", idempotency_key="r:1.1", deps=agent.deps, options=MemoryOptions(namespace="N")
    )
    call = ToolCall(id="c1", name="remember", arguments={"key": " ", "value": 1, "source": "s"}, uid="1.1")
    result = agent.registry.dispatch(call, context)
    assert result.status is ToolStatus.ERROR and "not a fact: key: Value error, must not be blank" in result.content
    assert facts.namespace("N").history() == []


# -- Temporal ---------------------------------------------------------------------------------------------


async def test_on_temporal_memory_outlives_the_run_and_an_injection_is_refused(skipping_env, ledger, task_queue):
    facts = SqliteFactStore(ledger.path.parent / "facts.db")
    agents = [courier.agent, memory_agents.GULLIBLE]
    async with new_worker(skipping_env.client, task_queue, ledger, agents=agents):  # facts.db next to the ledger
        client = AgentClient(skipping_env.client, task_queue=task_queue)
        c7 = {"namespace": "C-7"}
        noted = await (await client.start("courier", TICKET, options=c7)).result()
        answered = await (await client.start("courier", QUESTION, options=c7)).result()
        run_id = f"gullible-{uuid.uuid4().hex[:8]}"
        attacked = await (await client.start("t-gullible", run_id=run_id, options=c7)).result()

    assert noted.output == "Noted: C-7 prefers BlueDart (source: ticket T-1)."
    assert answered.output == "C-7 prefers BlueDart (from memory; source: ticket T-1)."
    record = facts.namespace("C-7").record("preferred_courier")
    assert record is not None and (record.run_id, record.write_key) == (noted.run_id, f"{noted.run_id}:1.1")
    recalled = tool_messages(answered.transcript_messages(transcripts_next_to(ledger)))
    assert "(source: ticket T-1; written by courier in run " + noted.run_id in recalled[0]

    assert attacked.stop is Stop.ANSWERED and "is protected" in (attacked.output or "")
    assert facts.namespace("C-7").keys() == ["preferred_courier"]
    assert_refused_and_audited(facts, run_id)


# -- the checkpoint runner --------------------------------------------------------------------------------


def test_in_the_checkpoint_runner_the_same_rules(tmp_path: Path) -> None:
    store, ledger = Store(tmp_path / "baseline.db"), EffectsLedger(tmp_path / "ledger.db")
    facts = SqliteFactStore(tmp_path / "facts.db")
    agents = AgentSet([courier.agent, memory_agents.GULLIBLE], DemoDeps(ledger, facts))
    c7 = {"namespace": "C-7"}
    try:
        noted = jobs.start(store, agents, "note", "courier", RunOptions(options=c7, task=TICKET))
        answered = jobs.start(store, agents, "ask", "courier", RunOptions(options=c7, task=QUESTION))
        attacked = jobs.start(store, agents, "gullible-job", "t-gullible", RunOptions(options=c7))
        replayed = transcript(store, agents, "ask")
    finally:
        store.close()
    assert noted.output == "Noted: C-7 prefers BlueDart (source: ticket T-1)."
    assert answered.output == "C-7 prefers BlueDart (from memory; source: ticket T-1)."
    assert "written by courier in run note, call 1.1" in tool_messages(replayed.messages)[0]
    assert (attacked.status, attacked.stop) == ("completed", "answered")
    assert_refused_and_audited(facts, "gullible-job")
    assert len(facts.namespace("C-7").history()) == 1
