"""A run handed over by a version before the decision bounds carries that version's audit: every rejected
decision whole (a reason of any length, no cap on how many). The run on today's worker hands over in turn —
and what it hands over is bounded: rejected entries cut short and capped as they are audited now, the rest
counted, so the audit of a run that lives through many handovers cannot grow past Temporal's 2 MB cap on the
next run's input.

The earlier version is played by a flavour of `AgentWorkflow` that, for a run started with a `carry` (which only
it is given here), continues as new at once with that carry, as the earlier version's own handover did; the
next run is today's code. The carry is a real handover of today's worker (the migration agent's, recorded from
its first run) with the audit an earlier version would have kept: 150 rejected decisions with 5,000-character
reasons."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

from pydantic import ValidationError
from temporalio import workflow
from temporalio.api.history.v1 import HistoryEvent
from temporalio.client import Client
from temporalio.worker import Worker

from agentic.approvals import REJECTED_KEPT, REJECTED_PER_CALL, REJECTED_TEXT_MAX, UNKNOWN_CALL, AuditEntry
from duragent import DurableAgentsPlugin
from duragent._activities.inputs import AgentResult
from duragent._stores.ledger import EffectsLedger
from duragent._workflows.agent import AgentWorkflow
from duragent._workflows.inputs import AgentInput
from duragent._workflows.names import WORKFLOW_TYPE
from examples.options import DemoDeps
from tests.conftest import TEST_AGENTS, transcripts_next_to
from tests.histories.record import OFTEN

WHOLE = 150  # more than REJECTED_KEPT: an earlier version kept them all
LONG = "no, and here is why: " + "x" * 5_000


@workflow.defn(name=WORKFLOW_TYPE, failure_exception_types=[ValidationError], sandboxed=False)
class EarlierVersionHandsOver(AgentWorkflow):
    @workflow.run
    async def run(self, input: AgentInput) -> AgentResult:
        if input.carry is not None and workflow.info().continued_run_id is None:
            workflow.continue_as_new(input)  # the earlier version's handover, carrying its audit as it was
        return await super().run(input)


def whole_audit(at: datetime) -> list[AuditEntry]:
    return [
        AuditEntry(
            call_id=f"forged-{i}",
            tool=None,
            event="rejected",
            approver="mallory" * 100,
            at=at,
            arguments_hash=None,
            reason=LONG,
            rejection=f"the arguments changed: {LONG}",
        )
        for i in range(WHOLE)
    ]


async def handed_over(client: Client, workflow_id: str, run_id: str) -> tuple[AgentInput, str]:
    """What run `run_id` handed to its continuation, and the continuation's run id."""
    events: list[HistoryEvent] = [
        e async for e in client.get_workflow_handle(workflow_id, run_id=run_id).fetch_history_events()
    ]
    attributes = events[-1].workflow_execution_continued_as_new_event_attributes
    assert attributes.new_execution_run_id, f"run {run_id} did not continue as new"
    [carried] = await client.data_converter.decode(attributes.input.payloads, [AgentInput])
    return carried, attributes.new_execution_run_id


async def test_a_run_handed_an_earlier_versions_whole_audit_hands_it_over_bounded(
    skipping_env, ledger: EffectsLedger, task_queue: str
) -> None:
    client = skipping_env.client
    plugin = DurableAgentsPlugin(
        agents=TEST_AGENTS, deps=DemoDeps(ledger=ledger), transcripts=transcripts_next_to(ledger), engine=OFTEN
    )
    async with Worker(client, task_queue=task_queue, workflows=[EarlierVersionHandsOver], plugins=[plugin]):
        # A real handover of today's worker: the migration's first run, continuing as new at 40 events.
        first = await client.start_workflow(
            WORKFLOW_TYPE,
            AgentInput(agent="migration", options={"records": 8}),
            id=f"handover-{uuid.uuid4().hex[:8]}",
            task_queue=task_queue,
            result_type=AgentResult,
        )
        assert (await first.result()).status == "completed"
        real, _ = await handed_over(client, first.id, first.first_execution_run_id or "")
        assert real.carry is not None
        audit = whole_audit(datetime(2026, 1, 5, tzinfo=UTC))
        book = real.carry.book.model_copy(update={"audit": [*real.carry.book.audit, *audit]})
        carry = real.carry.model_copy(update={"book": book})
        # The same run handed over by the earlier version, then run on by today's code (under the run's own id: its
        # transcript is that run's, and a run reads only its own).
        handle = await client.start_workflow(
            WORKFLOW_TYPE,
            real.model_copy(update={"carry": carry}),
            id=first.id,
            task_queue=task_queue,
            result_type=AgentResult,
        )
        result = await handle.result()
    assert result.status == "completed", result
    by_earlier, today = await handed_over(client, handle.id, handle.first_execution_run_id or "")
    assert by_earlier.carry is not None and len(by_earlier.carry.book.audit) >= WHOLE  # handed over whole
    by_today, _ = await handed_over(client, handle.id, today)  # today's run ran on, and handed over in turn
    assert by_today.carry is not None
    rejected = [e for e in by_today.carry.book.audit if e.event == "rejected"]
    # None of the forged call ids is a call of the run: they share one count, cut short, the rest counted.
    assert 0 < len(rejected) <= min(REJECTED_PER_CALL, REJECTED_KEPT), len(rejected)
    assert all(len(e.reason) <= REJECTED_TEXT_MAX and len(e.rejection or "") <= REJECTED_TEXT_MAX for e in rejected)
    assert by_today.carry.book.uncounted[UNKNOWN_CALL] == WHOLE - len(rejected)
