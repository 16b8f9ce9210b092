"""What a run writes to show itself: `AgentClient` starts a run with the search attributes its
first publish would write, so that publish writes nothing, and such a run writes no empty approvals memo (a
missing one reads as none) — two history events (and two visibility writes) fewer per run — while what
visibility shows stays the same. A run started without them (a raw start, an older client) still publishes
them itself. Progress (step, tokens, cost) is published by time, not every 5th step — a fast run shows
it at its end only, a slow step at once; the time is what the activities worked, not workflow time (a
run slowed by waits publishes no more than a fast one), and a run follows the rule its start's record names;
one whose record names none asks a patch where the old rules would differ."""

from __future__ import annotations

import json
import time
import uuid
from datetime import timedelta
from typing import Any

from temporalio.api.enums.v1 import EventType
from temporalio.api.history.v1 import HistoryEvent

from agentic import Agent, FakeModel, Registry, Stop, tool, tool_call
from duragent._activities import describe
from duragent._activities.inputs import DescribedAgent
from duragent._client import AgentClient
from duragent._workflows import search_attributes as sa
from duragent._workflows import visibility
from duragent._workflows.agent import AgentWorkflow
from duragent._workflows.inputs import AgentInput
from tests.conftest import agent_named, new_worker

UPSERT = EventType.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES
MEMO = EventType.EVENT_TYPE_WORKFLOW_PROPERTIES_MODIFIED
PATCH_MARKER = "core_patch"  # the SDK's marker name for `workflow.patched`
PATCH_ATTRIBUTE = "TemporalChangeVersion"  # the SDK upserts it with each patch marker


def upserts(events: Any) -> list[dict[str, Any]]:
    """Each search attribute upsert of a history, decoded: name -> value."""
    found = []
    for e in events:
        if e.event_type == UPSERT:
            fields = e.upsert_workflow_search_attributes_event_attributes.search_attributes.indexed_fields
            found.append({name: json.loads(payload.data) for name, payload in fields.items()})
    return found


def ours(found: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The upserts of our attributes (not the SDK's record of a patch)."""
    return [u for u in found if PATCH_ATTRIBUTE not in u]


def patch_markers(events: list[HistoryEvent]) -> list[HistoryEvent]:
    return [e for e in events if e.marker_recorded_event_attributes.marker_name == PATCH_MARKER]


async def test_a_run_started_by_the_client_writes_only_what_changes(skipping_env, ledger, task_queue):
    agent = agent_named("t-rows")
    async with new_worker(skipping_env.client, task_queue, ledger):
        run = await AgentClient(skipping_env.client, task_queue=task_queue).start(agent)
        result = await run.result()
        history = await run.workflow.fetch_history()
        description = await run.describe()
    assert result.stop is Stop.ANSWERED
    kinds = [e.event_type for e in history.events]
    assert MEMO not in kinds  # it never waited for an approval: no memo written
    # One upsert: the end (status, stop, and the step count at the end); none at the start.
    assert kinds.count(UPSERT) == 1
    shown = description.typed_search_attributes
    assert shown.get(sa.AGENT_STATUS) == "completed" and shown.get(sa.AGENT_STOP) == "answered"
    assert shown.get(sa.AGENT_NAME) == "t-rows" and shown.get(sa.AGENT_STEP) == result.usage.steps
    assert await description.memo_value("pending_approvals", default=[]) == []  # as every reader reads it


async def test_a_run_started_without_them_publishes_them_itself(skipping_env, ledger, task_queue):
    async with new_worker(skipping_env.client, task_queue, ledger):
        handle = await skipping_env.client.start_workflow(
            AgentWorkflow.run, AgentInput(agent="t-rows"), id=f"raw-{uuid.uuid4().hex[:10]}", task_queue=task_queue
        )
        result = await handle.result()
        history = await handle.fetch_history()
        description = await handle.describe()
    kinds = [e.event_type for e in history.events]
    assert kinds.count(UPSERT) == 2 and kinds.count(MEMO) == 1  # the start's, then the end's; the memo once
    shown = description.typed_search_attributes
    assert shown.get(sa.AGENT_STATUS) == "completed" and shown.get(sa.AGENT_STEP) == result.usage.steps


async def test_a_run_started_without_search_attributes_writes_none(skipping_env, ledger, task_queue):
    """`search_attributes=False`: the price list's switch (docs/benchmarks.md) — no upsert, no memo, nothing to
    filter on; the run itself is unchanged, and its progress is still answered by the query."""
    agent = agent_named("t-rows")
    async with new_worker(skipping_env.client, task_queue, ledger):
        run = await AgentClient(skipping_env.client, task_queue=task_queue).start(agent, search_attributes=False)
        result = await run.result()
        history = await run.workflow.fetch_history()
        description = await run.describe()
    assert result.stop is Stop.ANSWERED and result.usage.steps >= 3
    kinds = [e.event_type for e in history.events]
    assert UPSERT not in kinds and MEMO not in kinds
    assert description.typed_search_attributes.get(sa.AGENT_STATUS) is None


async def test_a_fast_run_publishes_its_progress_once_at_its_end(skipping_env, ledger, task_queue):
    """Nine fast steps: the rule of every 5th step would have upserted step 5 on the way; by time, the progress
    is shown once, at the end, with the status. The run follows the new rule because its start's record says so
    (`progress_by_work`): no patch marker, no `TemporalChangeVersion` upsert."""
    async with new_worker(skipping_env.client, task_queue, ledger):
        run = await AgentClient(skipping_env.client, task_queue=task_queue).start(
            agent_named("migration"), options={"records": 8}
        )
        result = await run.result()
        history = await run.workflow.fetch_history()
        description = await run.describe()
    assert result.usage.steps == 9
    found = upserts(history.events)
    assert ours(found) == [
        {
            "AgentStatus": "completed",
            "AgentStop": "answered",
            "AgentStep": 9,
            "AgentTokens": result.usage.input_tokens + result.usage.output_tokens,
            "AgentCost": result.usage.cost,
        }
    ]
    assert len(found) == 1 and not patch_markers(history.events)
    assert description.typed_search_attributes.get(sa.AGENT_STEP) == 9


async def test_a_run_described_before_the_record_asks_the_patch(skipping_env, ledger, task_queue, monkeypatch):
    """A run whose start record names no rule (described by a worker before the by-work rule, and still in flight at
    the deploy) asks `workflow.patched` where the rules first differ, as it did: by time, with the marker and the
    SDK's `TemporalChangeVersion` — the same commands its history was recorded with."""
    recorded_by(monkeypatch, progress_by_time=False, progress_by_work=False)
    # By time, a run publishes mid-run once 2 s of workflow time have passed, and on a loaded machine nine steps
    # take longer than that in real time (which the time-skipping server's clock follows): an hour keeps the
    # run's publishing to its end whatever the load, so the markers below are all that is compared.
    monkeypatch.setattr(visibility, "PROGRESS_INTERVAL", timedelta(hours=1))
    async with new_worker(skipping_env.client, task_queue, ledger):
        run = await AgentClient(skipping_env.client, task_queue=task_queue).start(
            agent_named("migration"), options={"records": 8}
        )
        result = await run.result()
        history = await run.workflow.fetch_history()
    assert result.usage.steps == 9
    found = upserts(history.events)
    assert [u.get("AgentStep") for u in ours(found)] == [9]  # by time: the end only
    assert [u for u in found if PATCH_ATTRIBUTE in u] == [{PATCH_ATTRIBUTE: [visibility.PROGRESS_BY_TIME]}]
    assert len(patch_markers(history.events)) == 1


def recorded_by(monkeypatch: Any, **rule: bool) -> None:
    """Runs started from here on are described as a worker of an earlier change would have: with `rule`."""
    monkeypatch.setattr(describe, "DescribedAgent", lambda **fields: DescribedAgent(**fields | rule))


def running_steps(events: Any) -> list[int]:
    """The steps a run published while running (progress without a status change)."""
    return [u["AgentStep"] for u in ours(upserts(events)) if "AgentStatus" not in u]


# billing with each tool call failing once, transiently, after its effect: each call waits out a retry's backoff
# (0.25 s of workflow time, skipped) and works a few milliseconds.
WAITING = {"flaky_attempts": 1}


async def test_a_run_slowed_by_waits_publishes_its_progress_at_its_end(skipping_env, ledger, task_queue, monkeypatch):
    """Each step lasts longer than the interval in workflow time (its retry's backoff), but the
    activities work only milliseconds: by work, nothing is published mid-run, as for a fast run — a loaded
    server's queues stretch workflow time the same way, and publishing there added a visibility write per step
    where the server had least to spare."""
    monkeypatch.setattr(visibility, "PROGRESS_INTERVAL", timedelta(seconds=0.2))
    async with new_worker(skipping_env.client, task_queue, ledger):
        run = await AgentClient(skipping_env.client, task_queue=task_queue).start(
            agent_named("billing"), options=WAITING
        )
        result = await run.result()
        history = await run.workflow.fetch_history()
    assert result.usage.steps >= 2
    assert running_steps(history.events) == []
    assert ours(upserts(history.events))[-1]["AgentStep"] == result.usage.steps


async def test_a_run_recorded_by_time_keeps_publishing_by_time(skipping_env, ledger, task_queue, monkeypatch):
    """The same run, described by a worker of the by-time rule (its record says by time, not by work), still in flight
    at the deploy: it publishes as it did, mid-run after each wait, so its history replays with the same commands."""
    monkeypatch.setattr(visibility, "PROGRESS_INTERVAL", timedelta(seconds=0.2))
    recorded_by(monkeypatch, progress_by_time=True, progress_by_work=False)
    async with new_worker(skipping_env.client, task_queue, ledger):
        run = await AgentClient(skipping_env.client, task_queue=task_queue).start(
            agent_named("billing"), options=WAITING
        )
        await run.result()
        history = await run.workflow.fetch_history()
    assert running_steps(history.events) != []
    assert not patch_markers(history.events)


async def test_a_short_fast_run_records_no_marker(skipping_env, ledger, task_queue):
    """Up to four fast steps both rules upsert the same (only the end): nothing to record."""
    async with new_worker(skipping_env.client, task_queue, ledger):
        run = await AgentClient(skipping_env.client, task_queue=task_queue).start(
            agent_named("migration"), options={"records": 3}
        )
        await run.result()
        history = await run.workflow.fetch_history()
    assert not patch_markers(history.events)
    assert [u.get("AgentStep") for u in upserts(history.events)] == [4]


async def test_a_slow_step_publishes_its_progress_at_once(skipping_env, ledger, task_queue, monkeypatch):
    """Steps that work longer than the interval (here 0.3 s, so the test stays short; 2 s as shipped): each
    step's progress is shown while the run is still running, though no step is a 5th one."""
    monkeypatch.setattr(visibility, "PROGRESS_INTERVAL", timedelta(seconds=0.3))
    async with new_worker(skipping_env.client, task_queue, ledger):
        run = await AgentClient(skipping_env.client, task_queue=task_queue).start(
            agent_named("migration"), options={"records": 2, "step_delay": 0.5}
        )
        await run.result()
        history = await run.workflow.fetch_history()
    shown = ours(upserts(history.events))
    running = [u["AgentStep"] for u in shown if "AgentStatus" not in u]
    assert running == [1, 2]  # after each slow migration, before the next model call
    assert shown[-1]["AgentStatus"] == "completed" and shown[-1]["AgentStep"] == 3


async def test_a_run_without_search_attributes_records_no_marker(skipping_env, ledger, task_queue):
    async with new_worker(skipping_env.client, task_queue, ledger):
        run = await AgentClient(skipping_env.client, task_queue=task_queue).start(
            agent_named("migration"), options={"records": 8}, search_attributes=False
        )
        await run.result()
        history = await run.workflow.fetch_history()
    assert not upserts(history.events) and not patch_markers(history.events)


@tool("Note a line.")
def note(line: str) -> str:
    return f"noted {line}"


def _slow_thinker(messages: Any) -> object:
    time.sleep(0.5)  # the model's work: longer than the interval below
    done = [m for m in messages if m.role == "tool"]
    return tool_call("note", {"line": f"line {len(done)}"}) if len(done) < 2 else "done"


async def test_a_slow_model_step_publishes_its_progress_at_once(skipping_env, ledger, task_queue, monkeypatch):
    """The model's work counts like a tool's: a run whose model calls take longer than the interval shows its
    progress mid-run, though its tools take no time."""
    monkeypatch.setattr(visibility, "PROGRESS_INTERVAL", timedelta(seconds=0.3))
    agent = Agent(FakeModel.replying(_slow_thinker, name="slow"), Registry([note]), name="t-slow-model", task="Go.")
    async with new_worker(skipping_env.client, task_queue, ledger, agents=[agent]):
        run = await AgentClient(skipping_env.client, task_queue=task_queue).start(agent)
        assert (await run.result()).output == "done"
        history = await run.workflow.fetch_history()
    assert running_steps(history.events) != []


async def test_a_run_described_before_both_rules_follows_time_when_it_waits(
    skipping_env, ledger, task_queue, monkeypatch
):
    """A record naming neither rule (described before issue 36) asks the patch between the time rule and the old
    step rule — never the work rule: its waits, not its work, publish mid-run, with the patch's marker."""
    monkeypatch.setattr(visibility, "PROGRESS_INTERVAL", timedelta(seconds=0.2))
    recorded_by(monkeypatch, progress_by_time=False, progress_by_work=False)
    async with new_worker(skipping_env.client, task_queue, ledger):
        run = await AgentClient(skipping_env.client, task_queue=task_queue).start(
            agent_named("billing"), options=WAITING
        )
        await run.result()
        history = await run.workflow.fetch_history()
    assert running_steps(history.events) != []
    assert len(patch_markers(history.events)) == 1
