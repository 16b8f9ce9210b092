"""A drain that stops progressing: which runs stay open long after their decision, and what their histories show.

`bench waiting` sends every parked run its decision and then waits for all of them to close. A run
its worker stops answering — each workflow task taken and timed out, attempt after attempt — would keep that
wait going forever. `until_closed` instead gives up once no run has closed for `stall` seconds and some run
has been open that long since its decision was answered, and raises `DrainStalled` naming those runs with
what their histories show (how many workflow tasks timed out in a row, whether the decision is in it).
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from dataclasses import asdict, dataclass
from datetime import UTC, datetime

from temporalio.api.enums.v1 import EventType
from temporalio.client import Client

from bench.temporal_runs import event_seconds
from duragent._workflows.names import DECISION_SIGNAL

DESCRIBED = 5  # stalled runs whose history is read and shown; the rest are named only


class Unfinished(Exception):
    """A measurement that could not finish; what it measured until then is kept in its results."""


@dataclass(frozen=True)
class StalledRun:
    run_id: str
    open_s: float  # since its decision was answered
    history: str  # what its history shows; "" for the runs past DESCRIBED


class DrainStalled(Unfinished):
    def __init__(self, runs: list[StalledRun], stall: float, closed: int, n: int) -> None:
        self.runs, self.stall, self.closed, self.n = runs, stall, closed, n
        named = "; ".join(f"{r.run_id} ({r.history})" if r.history else r.run_id for r in runs)
        super().__init__(
            f"{len(runs)} run(s) still open {stall:g} s after their decision, no run closed meanwhile"
            f" ({closed} of {n} closed): {named}"
        )

    def record(self) -> dict[str, object]:
        return {"stall_s": self.stall, "closed": self.closed, "runs": [asdict(r) for r in self.runs]}


def _name(event_type: int) -> str:
    """EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT -> WorkflowTaskTimedOut."""
    words = EventType.Name(event_type).removeprefix("EVENT_TYPE_").split("_")  # type: ignore[arg-type]
    return "".join(w.capitalize() for w in words)


async def history_summary(client: Client, run_id: str) -> str:
    """The workflow tasks timed out since the last one completed, the decision as it arrived, the last event."""
    events = (await client.get_workflow_handle(run_id).fetch_history()).events
    if not events:
        return "no history"
    timed_out_in_a_row = 0
    for event in events:
        if event.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
            timed_out_in_a_row = 0
        elif event.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT:
            timed_out_in_a_row += 1
    kinds = Counter(_name(e.event_type) for e in events)
    signals = sum(
        1
        for e in events
        if e.HasField("workflow_execution_signaled_event_attributes")
        and e.workflow_execution_signaled_event_attributes.signal_name == DECISION_SIGNAL
    )
    last = events[-1]
    at = datetime.fromtimestamp(event_seconds(last), UTC).strftime("%H:%M:%SZ")
    return (
        f"{timed_out_in_a_row} WorkflowTaskTimedOut in a row since its last completed workflow task"
        f" ({kinds['WorkflowTaskTimedOut']} in all), {signals} decision signal(s),"
        f" {kinds['WorkflowExecutionUpdateAccepted']} update(s) accepted, {len(events)} events;"
        f" last: {_name(last.event_type)} at {at}"
    )


async def until_closed(client: Client, prefix: str, n: int, decided: dict[str, float], stall: float) -> None:
    """Return once the `n` runs whose ids start with `prefix` are closed. `decided` maps a run to the moment
    (time.monotonic) its decision was answered; it fills while this waits. DrainStalled when no run closed for
    `stall` seconds and some run is still open that long after its decision."""
    query = f'WorkflowId STARTS_WITH "{prefix}"'
    last_count, last_change = -1, time.monotonic()
    next_check = last_change + stall
    while True:
        closed = (await client.count_workflows(f'{query} AND ExecutionStatus != "Running"')).count
        now = time.monotonic()
        if closed >= n:
            return
        if closed != last_count:
            last_count, last_change, next_check = closed, now, now + stall
        elif now >= next_check:
            open_ids = [e.id async for e in client.list_workflows(f'{query} AND ExecutionStatus = "Running"')]
            late = sorted((r for r in open_ids if r in decided and now - decided[r] >= stall), key=decided.__getitem__)
            if late:
                summaries = await asyncio.gather(*(history_summary(client, r) for r in late[:DESCRIBED]))
                runs = [
                    StalledRun(r, round(now - decided[r], 1), summaries[i] if i < DESCRIBED else "")
                    for i, r in enumerate(late)
                ]
                raise DrainStalled(runs, stall, closed, n)
            next_check = now + min(stall, 5.0)  # nothing late yet (decisions still going out): look again soon
        await asyncio.sleep(0.25)
