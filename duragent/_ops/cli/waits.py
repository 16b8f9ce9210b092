"""Waiting on a run from the command line (`run --wait`, `result`, `watch`): a wait that does not move says
what it waits for — no worker has picked the run up, or a model or tool call keeps failing and is being
retried — and `--timeout S` gives up after S seconds (exit 1; the run itself goes on).

What the run waits for is read from the server (`describe`: the pending workflow task and activities), so
it needs no worker: that is the case it has to explain.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from collections.abc import Callable

from temporalio.api.enums.v1 import PendingActivityState, PendingWorkflowTaskState
from temporalio.client import WorkflowExecutionStatus

from duragent._activities.inputs import AgentResult
from duragent._client import RunHandle
from duragent._errors import AgentClientError
from duragent._ops.cli.arguments import positive_float
from duragent._ops.cli.output import CliError, command, printable

STALL_AFTER = 3.0  # seconds a task may wait for a worker before we say that none has taken it
CHECK_EVERY = 2.0  # seconds between looks at what the run waits for
FAILURE_SHOWN = 200  # characters of a retried call's last failure


def add_timeout(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--timeout", type=positive_float, metavar="S", help="give up waiting after S seconds (the run goes on)"
    )


async def stalled(handle: RunHandle, now: float | None = None) -> str | None:
    """What keeps the open run from moving, in a sentence; None when it is moving (or closed)."""
    description = await handle.describe()
    if description.status != WorkflowExecutionStatus.RUNNING:
        return None
    raw = description.raw_description
    now = time.time() if now is None else now
    nobody = (
        f"waiting for a worker on task queue {handle.agents.task_queue!r}: none has picked up run "
        f"{handle.run_id} (start one with `python worker.py`)"
    )
    if raw.HasField("pending_workflow_task"):
        task = raw.pending_workflow_task
        waited = now - task.scheduled_time.ToSeconds()
        if task.state == PendingWorkflowTaskState.PENDING_WORKFLOW_TASK_STATE_SCHEDULED and waited > STALL_AFTER:
            return printable(nobody)
    for pending in raw.pending_activities:
        kind = pending.activity_type.name
        what = "the model" if kind == "call_model" else "a compensation" if kind == "compensate" else "a tool call"
        if pending.attempt > 1 and pending.HasField("last_failure"):
            failure = pending.last_failure.message[:FAILURE_SHOWN]
            return printable(
                f"waiting for {what}: attempt {pending.attempt - 1} failed ({failure}); the worker retries it"
            )
        waited = now - pending.scheduled_time.ToSeconds()
        if pending.state == PendingActivityState.PENDING_ACTIVITY_STATE_SCHEDULED and waited > STALL_AFTER:
            return printable(nobody)
    return None


def say_on_stderr(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


async def wait_for_result(
    handle: RunHandle, timeout: float | None, say: Callable[[str], None] = say_on_stderr
) -> AgentResult:
    """The run's result; meanwhile, each new reason it is not moving is said once; CliError after `timeout`."""
    loop = asyncio.get_running_loop()
    deadline = None if timeout is None else loop.time() + timeout
    result = asyncio.ensure_future(handle.result())
    said: str | None = None
    try:
        while True:
            pause = CHECK_EVERY if deadline is None else max(min(CHECK_EVERY, deadline - loop.time()), 0.0)
            done, _ = await asyncio.wait({result}, timeout=pause)
            if done:
                return result.result()
            if deadline is not None and loop.time() >= deadline:
                raise CliError(timed_out(handle.run_id, timeout or 0.0, said))
            try:
                why = await stalled(handle)
            except AgentClientError:
                why = None  # the result's own wait reports a server that went away
            if why and why != said:
                say(why)
            said = why
    finally:
        result.cancel()


def timed_out(run_id: str, timeout: float, why: str | None) -> str:
    return (
        f"timed out after {timeout:g} s waiting for run {run_id}"
        + (f" ({why})" if why else "")
        + f"; the run goes on: `{command(f'result {run_id}')}` waits again"
    )
