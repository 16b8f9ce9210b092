"""Record workflow histories of the demo agents for the replay test.

    .venv/bin/python -m tests.histories.record [NAME...]    # all, or only the recordings named

A run that delegates is recorded with its child runs' histories (files named by their run ids, which derive
from the parent's). Re-record only for a deliberate, versioned change to the workflow: the committed histories are what
already-running workflows look like, and the replay test proves new code still replays them.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
from pathlib import Path

from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.testing import WorkflowEnvironment

from durable_agents.client import AgentClient, RunHandle
from stores.ledger import EffectsLedger
from tests.conftest import new_worker
from workflows import search_attributes
from workflows.inputs import AgentInput, ContinueAsNewPolicy

HERE = Path(__file__).parent
RECORDINGS = {
    "billing": AgentInput(agent="billing"),
    "migration": AgentInput(agent="migration"),
    "trip-car-fails": AgentInput(agent="trip"),
    "billing-flaky": AgentInput(agent="billing", options={"flaky_attempts": 1}),
    "refund-expired": AgentInput(agent="refund"),
    "migration-continued": AgentInput(
        agent="migration",
        options={"records": 8},
        continue_as_new=ContinueAsNewPolicy(max_history_events=40),
    ),
    "trip-inline": AgentInput(agent="trip", transcript="inline"),
    # A delegation: the billing desk's child workflow, whose refund approval expires (24 h, skipped).
    "support": AgentInput(agent="support"),
}


async def record(names: list[str]) -> None:
    env = await WorkflowEnvironment.start_time_skipping(
        data_converter=pydantic_data_converter,
        test_server_existing_path=str(Path(sys.executable).parent / "temporal-test-server"),
    )
    try:
        await search_attributes.register(env.client)  # else every upsert fails its workflow task
        with tempfile.TemporaryDirectory() as tmp:
            async with new_worker(env.client, "record", EffectsLedger(Path(tmp) / "l.db")):
                agents = AgentClient(env.client, task_queue="record")
                for name, input in RECORDINGS.items():
                    if names and name not in names:
                        continue
                    handle = await agents.start_input(input, run_id=f"recorded-{name}")
                    await handle.result()
                    await save(agents, handle, name)
    finally:
        await env.shutdown()


async def save(agents: AgentClient, handle: RunHandle, name: str) -> None:
    runs = await handle.histories()  # every run of a continue-as-new chain
    for i, history in enumerate(runs, 1):
        label = name if len(runs) == 1 else f"{name}-run{i}"
        (HERE / f"{label}.json").write_text(history.to_json())
        print(f"recorded {label}: {len(history.events)} events")
        for event in history.events:  # the runs it delegated to, named by their run ids
            if event.HasField("start_child_workflow_execution_initiated_event_attributes"):
                child = event.start_child_workflow_execution_initiated_event_attributes.workflow_id
                await save(agents, agents.handle(child), child.removeprefix("recorded-"))


if __name__ == "__main__":
    asyncio.run(record(sys.argv[1:]))
