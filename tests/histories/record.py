"""Record workflow histories of the demo agents for the replay test.

    .venv/bin/python -m tests.histories.record [NAME...]    # all, or only the recordings named

Recorded with `duragent.replay.save_histories`, as a user records theirs: a run that delegates is
recorded with its child runs' histories (named after it: `support~2.1.json`). Re-record only for a
deliberate, versioned change to the workflow: the committed histories are what already-running workflows
look like, and the replay test proves new code still replays them.

Two were recorded by an older engine, from inputs today's clients no longer send, and are kept as they are:
`trip-inline.json` (`transcript: "inline"`: the whole transcript in workflow state) and
`migration-continued-run*.json` (`continue_as_new` in the input, which the worker's `EngineOptions` replaced;
re-recorded here, the runs would carry no such field).
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
from pathlib import Path

from duragent._activities.inputs import ContinueAsNewPolicy, EngineOptions
from duragent._client import AgentClient
from duragent._stores.ledger import EffectsLedger
from duragent._workflows.inputs import AgentInput
from duragent.replay import save_histories
from duragent.testing import start_time_skipping
from tests.conftest import new_worker

HERE = Path(__file__).parent
OFTEN = EngineOptions(continue_as_new=ContinueAsNewPolicy(max_history_events=40))
# name: (input, the worker's engine options)
RECORDINGS = {
    "billing": (AgentInput(agent="billing"), None),
    "migration": (AgentInput(agent="migration"), None),
    "trip-car-fails": (AgentInput(agent="trip"), None),
    "billing-flaky": (AgentInput(agent="billing", options={"flaky_attempts": 1}), None),
    "refund-expired": (AgentInput(agent="refund"), None),
    "migration-continued": (AgentInput(agent="migration", options={"records": 8}), OFTEN),
    # A delegation: the billing desk's child workflow, whose refund approval expires (24 h, skipped).
    "support": (AgentInput(agent="support"), None),
    # Nine fast steps, progress published by workflow time — the run records the patch marker
    # (`progress-by-time`) where the rule of every 5th step would have upserted.
    "migration-by-time": (AgentInput(agent="migration", options={"records": 8}), None),
    # Progress published by the activities' work — two migrations of 2.1 s each publish it mid-run,
    # their `worked_ms` in the tool results; the record says `progress_by_work`.
    "migration-by-work": (AgentInput(agent="migration", options={"records": 2, "step_delay": 2.1}), None),
}


async def record(names: list[str]) -> None:
    env = await start_time_skipping()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for name, (input, engine) in RECORDINGS.items():
                if names and name not in names:
                    continue
                async with new_worker(env.client, f"record-{name}", EffectsLedger(Path(tmp) / "l.db"), engine=engine):
                    agents = AgentClient(env.client, task_queue=f"record-{name}")
                    handle = await agents._start_input(input, run_id=f"recorded-{name}")  # a whole input: not public
                    await handle.result()
                for path in await save_histories(handle, HERE, name=name):  # its children's too
                    print(f"recorded {path.name}")
    finally:
        await env.shutdown()


if __name__ == "__main__":
    asyncio.run(record(sys.argv[1:]))
