"""The second line of `compensate` (duragent/_activities/tools.py): after the server has confirmed that the caller is an
agents' run, the input still decides nothing — whose effect is undone must be the caller's or a run it delegated
to (the server's parent links), and the undo's key is derived from the original's, never chosen.

No outsider reaches these checks today (the caller check refuses them first: tests/temporal/test_outsider.py),
so the activity is called here as a subverted agents' run would call it: directly, in an `ActivityEnvironment`
whose `activity.info()` names a real `AgentWorkflow` on the agents' queue, against the real server that holds
its history, with an input crafted the way an attacker would. What is counted is the ledger: no undo."""

from __future__ import annotations

import dataclasses
import uuid

from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

from agentic.agent_set import AgentSet
from agentic.undo import CompensationStep, undo_key
from duragent._activities.caller import REFUSED
from duragent._activities.inputs import CompensationInput
from duragent._activities.served import ServedAgents
from duragent._activities.tools import ToolActivities
from duragent._client import AgentClient, RunHandle
from duragent._stores.ledger import EffectsLedger
from examples.options import DemoDeps
from tests.conftest import TEST_AGENTS, new_worker, transcripts_next_to


def as_run(env: ActivityEnvironment, run: RunHandle, task_queue: str, execution: str) -> ActivityEnvironment:
    """`env` with `activity.info()` saying that `run` (its `execution`) scheduled a `compensate` on the queue."""
    env.info = dataclasses.replace(
        env.info,
        activity_type="compensate",
        task_queue=task_queue,
        workflow_type="AgentWorkflow",
        workflow_id=run.run_id,
        workflow_run_id=execution,
    )
    return env


def undos(ledger: EffectsLedger, run_id: str) -> list[str]:
    return [e.key for e in ledger.effects(run_id) if e.compensates is not None]


async def test_compensate_undoes_only_the_callers_own_effects_under_the_derived_key(
    skipping_env, ledger, task_queue
) -> None:
    client = skipping_env.client
    tools = ToolActivities(ServedAgents(AgentSet(TEST_AGENTS, DemoDeps(ledger=ledger))), transcripts_next_to(ledger))
    async with new_worker(client, task_queue, ledger):
        agents = AgentClient(client, task_queue=task_queue)
        # A real refund, approved: the effect an undo would reverse.
        bill = await agents.start("billing-desk", run_id=f"bill-{uuid.uuid4().hex[:8]}")
        [waiting] = await bill.wait_for_approval()
        await bill.approve(waiting.call_id, by="maria", arguments_hash=waiting.arguments_hash)
        assert (await bill.result()).status == "completed"
        # Another agents' run: one that neither made that refund nor delegated to its maker.
        stranger = await agents.start("billing-desk", run_id=f"stranger-{uuid.uuid4().hex[:8]}")
        await stranger.result()  # (its approval expires unanswered: no effect of its own)
        [refund] = ledger.effects(bill.run_id)
        [recorded] = [r for r in (await bill.result()).records if r.call.name == refund.tool]
        step = CompensationStep(
            call=recorded.call,
            result=refund.result,
            original_key=refund.key,
            key=undo_key(refund.key),
            run_id=bill.run_id,
            agent="billing-desk",
        )
        undo = CompensationInput(run_id=bill.run_id, agent="billing-desk", step=step)
        executions = {run.run_id: (await run.workflow.describe()).run_id for run in (bill, stranger)}

        def by(run: RunHandle) -> ActivityEnvironment:
            return as_run(ActivityEnvironment(client=client), run, task_queue, executions[run.run_id])

        async def attempt(run: RunHandle, input: CompensationInput) -> str | None:
            """The type of the refusal, None when the activity did what it was asked."""
            try:
                await by(run).run(tools.compensate, input)
            except ApplicationError as exc:
                return exc.type
            return None

        # The stranger's run names the refund's maker as the owner, with the keys as they would be derived.
        refused = await attempt(stranger, undo)
        assert undos(ledger, bill.run_id) == [] and refused == REFUSED

        # The maker itself undoes it once, under the derived key (the activity works; the refusal meant it)...
        assert await attempt(bill, undo) is None
        assert undos(ledger, bill.run_id) == [undo_key(refund.key)]
        # ...and cannot undo it again under a key of its choosing (at most once is the key's work).
        again = undo.model_copy(update={"step": step.model_copy(update={"key": f"{refund.key}:undo-again"})})
        refused = await attempt(bill, again)
        assert undos(ledger, bill.run_id) == [undo_key(refund.key)] and refused == REFUSED
