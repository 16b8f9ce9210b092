"""The approval gate end to end: a tool that requires confirmation acts only on a decision checked
where the effect happens; a signature binds the run's execution and the request, so
it cannot be replayed onto a new execution under a reused id; and a signed decision routed from a root to
the delegated run that waits keeps its signature."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import pytest
from temporalio.client import Client, WorkflowUpdateFailedError
from temporalio.common import WorkflowIDReusePolicy
from temporalio.worker import Worker

from agentic import ToolCall, ToolStatus
from agentic.agent_set import AgentSet
from agentic.approvals import ApprovalBook, Decision, PendingApproval, arguments_hash, effect_refusal
from agentic.signing import ApproverKey, parse_public_keys
from duragent._activities.describe import DescribeActivities
from duragent._activities.model import ModelActivities
from duragent._activities.served import ServedAgents
from duragent._activities.tools import ToolActivities
from duragent._client import AgentClient
from duragent._workflows.agent import AgentWorkflow
from duragent._workflows.inputs import AgentInput
from examples.options import DemoDeps
from tests.conftest import TEST_AGENTS, new_worker, transcripts_next_to

MARIA = ApproverKey.generate("maria")
KEYS = parse_public_keys(MARIA.public_entry())
NOW = datetime(2026, 12, 1, tzinfo=UTC)
REFUND = ToolCall(id="c", name="refund", arguments={"order_id": "4471"}, uid="1.1")


# -- the rules, pure ------------------------------------------------------------------------------------


def approval(call: ToolCall = REFUND, **fields: object) -> Decision:
    shown = ToolCall(id="", name=call.name, arguments=call.arguments)
    base = {"call_id": call.identity, "approve": True, "approver": "maria", "arguments_hash": arguments_hash(shown)}
    return Decision.model_validate(base | fields)


def test_at_the_effect_only_a_signed_approval_of_this_call_in_this_execution_counts() -> None:
    signed = approval(execution="exec-1", deadline=NOW).signed("r1", MARIA)

    def refusal(decision: Decision | None, call: ToolCall = REFUND, **where: object) -> str | None:
        return effect_refusal(decision, call, **({"run_id": "r1", "execution": "exec-1", "keys": KEYS} | where))  # type: ignore[arg-type]

    assert refusal(signed) is None
    assert "none was shown" in (refusal(None) or "")
    assert "not signed" in (refusal(approval(execution="exec-1", deadline=NOW)) or "")
    assert "not maria's" in (refusal(signed, run_id="r2") or "")  # another run
    assert "not this execution" in (refusal(signed, execution="exec-2") or "")  # a new execution, reused id
    other = REFUND.model_copy(update={"arguments": {"order_id": "9"}})
    assert "other arguments" in (refusal(signed, other) or "")
    assert "not an approval of call 2.1" in (refusal(signed, REFUND.model_copy(update={"uid": "2.1"})) or "")
    denial = approval(approve=False, execution="exec-1", deadline=NOW).signed("r1", MARIA)
    assert "a denial of call 1.1" in (refusal(denial) or "")
    flipped = denial.model_copy(update={"approve": True})
    assert "not maria's" in (refusal(flipped) or "")
    unbound = approval().signed("r1", MARIA)  # signed the way decisions were before executions were bound
    assert "no execution" in (refusal(unbound) or "")
    # Signed over this execution but over no request: a decision the approval tooling never makes (mutant M22).
    assert refusal(approval(execution="exec-1").signed("r1", MARIA)) is not None
    # Maria's signature over another execution, the field edited to this one: the signature covers it.
    assert refusal(approval(execution="exec-0", deadline=NOW).signed("r1", MARIA), execution="exec-0") is None
    moved = approval(execution="exec-0", deadline=NOW).signed("r1", MARIA).model_copy(update={"execution": "exec-1"})
    assert refusal(moved) is not None
    # Without keys nothing can be authenticated: the decision must still be an approval of exactly this call.
    assert refusal(approval(), keys={}) is None
    assert "other arguments" in (refusal(approval(), other, keys={}) or "")


def test_a_book_bound_to_an_execution_takes_signatures_over_it_and_over_the_request_only() -> None:
    book = ApprovalBook(run_id="r1", approver_keys=KEYS, execution="exec-1")
    pending = book.request("r1", REFUND, NOW, 3600)
    assert pending.execution == "exec-1"
    answering = Decision.answering(pending, True, "maria")
    assert (answering.execution, answering.deadline) == ("exec-1", pending.deadline)

    assert "not this execution" in (book.rejection(approval(deadline=pending.deadline).signed("r1", MARIA), NOW) or "")
    other_request = approval(execution="exec-1", deadline=pending.deadline + timedelta(seconds=1)).signed("r1", MARIA)
    assert "answers another request" in (book.rejection(other_request, NOW) or "")
    # Maria's approval of another request for this call, its deadline edited to this one's: the signature covers
    # the deadline, so the edited copy is not hers and decides nothing (mutant M24).
    moved = other_request.model_copy(update={"deadline": pending.deadline})
    assert book.decide(moved, NOW).event == "rejected" and book.outcomes == {} and "1.1" in book.pending
    entry = book.decide(answering.signed("r1", MARIA), NOW)
    assert (entry.event, entry.signed) == ("approved", True)
    assert book.decisions["1.1"].signature  # kept, to show at the effect


def test_a_request_open_when_the_keys_first_arrive_can_be_approved_with_them() -> None:
    """A run that hands over at its request onto a build whose workers have approver keys (mutant M21): the
    request it carries is bound to the execution with the book, so the approval tooling signs over it, the book
    takes maria's decision and the effect accepts it."""
    book = ApprovalBook(run_id="r1")
    book.request("r1", REFUND, NOW, 3600)
    book.use_keys(KEYS, "exec-1")
    decision = Decision.answering(book.pending["1.1"], True, "maria").signed("r1", MARIA)
    assert book.decide(decision, NOW).event == "approved" and book.pending == {}
    shown = book.decisions["1.1"]
    assert effect_refusal(shown, REFUND, run_id="r1", execution="exec-1", keys=KEYS) is None


def test_a_decision_carries_the_hash_of_what_was_shown_not_the_hash_it_was_told() -> None:
    shown = PendingApproval(
        run_id="r1",
        call_id="1.1",
        tool="refund",
        arguments={"order_id": "SANDBOX-TEST-0 (no money moves)"},
        arguments_hash=arguments_hash(REFUND),  # the decoy's lie: the real call's hash
        requested_at=NOW,
        deadline=NOW + timedelta(hours=4),
    )
    decision = Decision.answering(shown, True, "maria")
    assert decision.arguments_hash == arguments_hash(ToolCall(name="refund", arguments=shown.arguments))
    assert decision.arguments_hash != arguments_hash(REFUND)


# -- at the effect, on a real server -------------------------------------------------------------------


def split_workers(client, task_queue, ledger) -> tuple[Worker, Worker]:  # type: ignore[no-untyped-def]
    """The run's workflow on a worker whose describe knows no approver keys (a misconfigured or out-of-date
    workflow worker: its book takes any decision), its tools and model on one that requires maria's."""
    deps = DemoDeps(ledger=ledger)
    keyless = ServedAgents(AgentSet(TEST_AGENTS, deps))
    keyed = ServedAgents(AgentSet(TEST_AGENTS, deps, approver_keys=KEYS))
    transcripts = transcripts_next_to(ledger)
    workflows = Worker(
        client,
        task_queue=task_queue,
        workflows=[AgentWorkflow],
        activities=[DescribeActivities(keyless).describe_agent],
        no_remote_activities=True,
    )
    tools, model = ToolActivities(keyed, transcripts), ModelActivities(keyed, transcripts)
    # A client without our plugin, which would add the workflow to this activities-only worker too.
    bare = Client(client.service_client, namespace=client.namespace, data_converter=client.data_converter)
    effects = Worker(bare, task_queue=task_queue, activities=[tools.run_tool, model.call_model])
    return workflows, effects


# How the decision shown at the effect is wrong, and the reason the effects worker gives.
SIGNINGS = {
    "unsigned": "not signed",
    "signed-without-execution": "signed for no execution",
    "signed-without-deadline": "not this execution",  # mutant M22
    "execution-edited": "not maria's",  # M23: signed for another execution, the field edited to this one
    "deadline-edited": "not maria's",  # M24: signed for another request, the field edited to this one's deadline
}


@pytest.mark.parametrize("signing", SIGNINGS)
async def test_an_approval_the_workflow_took_does_nothing_unless_the_effects_worker_verifies_it(
    skipping_env, ledger, task_queue, signing
) -> None:
    workflows, effects = split_workers(skipping_env.client, task_queue, ledger)
    async with workflows, effects:
        run = await AgentClient(skipping_env.client, task_queue=task_queue).start(
            "refund", run_id=f"gate-{uuid.uuid4().hex[:8]}"
        )
        [waiting] = await run.wait_for_approval()
        execution = (await run.workflow.describe()).run_id  # the first execution: this run never continued
        decision = Decision(call_id=waiting.call_id, approve=True, approver="maria", arguments_hash=waiting.shown_hash)
        if signing == "signed-without-execution":
            decision = decision.signed(run.run_id, MARIA)
        elif signing == "signed-without-deadline":
            decision = decision.model_copy(update={"execution": execution}).signed(run.run_id, MARIA)
        elif signing == "execution-edited":
            signed = decision.model_copy(update={"execution": "an-earlier-execution", "deadline": waiting.deadline})
            decision = signed.signed(run.run_id, MARIA).model_copy(update={"execution": execution})
        elif signing == "deadline-edited":
            other = waiting.deadline - timedelta(hours=1)
            signed = decision.model_copy(update={"execution": execution, "deadline": other})
            decision = signed.signed(run.run_id, MARIA).model_copy(update={"deadline": waiting.deadline})
        entry = await run.workflow.execute_update(AgentWorkflow.decide, decision)
        assert entry.event == "approved"  # the keyless book took it
        result = await run.result()
    assert ledger.effects(run.run_id) == []
    [refused] = [r for r in result.records if r.call.name == "refund"]
    assert refused.status is ToolStatus.ERROR and SIGNINGS[signing] in refused.content


async def test_a_signature_from_an_earlier_execution_under_the_same_id_is_refused(
    skipping_env, ledger, task_queue
) -> None:
    """N5, as replay_sig.py played it: maria's signed approval, copied from a closed run's history, sent to a
    new execution started under the same id (a raw client allows it; ours never reuses ids)."""
    client = skipping_env.client
    run_id = f"reused-{uuid.uuid4().hex[:8]}"
    async with new_worker(client, task_queue, ledger, approver_keys=KEYS):
        agents = AgentClient(client, task_queue=task_queue)
        first = await agents.start("refund", run_id=run_id)
        [waiting] = await first.wait_for_approval()
        await first.approve(waiting.call_id, by="maria", key=MARIA, reason="checked")
        assert (await first.result()).output == "Refunded order 4471."
        [copied] = [
            await client.data_converter.decode(
                e.workflow_execution_update_accepted_event_attributes.accepted_request.input.args.payloads, [Decision]
            )
            for e in (await first.workflow.fetch_history()).events
            if e.HasField("workflow_execution_update_accepted_event_attributes")
        ]
        await client.start_workflow(
            AgentWorkflow.run,
            AgentInput(agent="refund"),
            id=run_id,
            task_queue=task_queue,
            id_reuse_policy=WorkflowIDReusePolicy.ALLOW_DUPLICATE,
        )
        again = agents.handle(run_id)
        await again.wait_for_approval()
        with pytest.raises(WorkflowUpdateFailedError) as refused:
            await again.workflow.execute_update(AgentWorkflow.decide, copied[0])
        assert "not this execution" in str(refused.value.cause)
        await again.deny(by="maria", key=MARIA, reason="not twice")
        result = await again.result()
    assert result.output == "The refund of order 4471 was declined; nothing was refunded."
    assert [(a.event, a.signed) for a in result.audit] == [("declined", True)]
    assert len(ledger.effects(run_id)) == 1  # the first execution's refund, once


async def test_a_signed_decision_routed_from_the_root_to_the_delegated_run_keeps_its_key(
    skipping_env, ledger, task_queue
) -> None:
    """N34: the support run's billing desk (a child workflow) waits for a refund's approval; maria decides it
    at the root, signed — for the child's run and execution."""
    async with new_worker(skipping_env.client, task_queue, ledger, approver_keys=KEYS):
        agents = AgentClient(skipping_env.client, task_queue=task_queue)
        root = await agents.start("support", run_id=f"support-{uuid.uuid4().hex[:8]}")
        [waiting] = await root.wait_for_approval()
        child = f"{root.run_id}~2.1"
        assert (waiting.run_id, waiting.path) == (child, [root.run_id, child])
        outcome = await root.decide(True, waiting.address, by="maria", key=MARIA, reason="damaged parcel")
        assert outcome.entry is not None and (outcome.entry.event, outcome.entry.signed) == ("approved", True)
        result = await root.result()
        child_result = await agents.handle(child).result()
    assert result.status == "completed"
    assert [(a.event, a.approver, a.signed) for a in child_result.audit] == [("approved", "maria", True)]
    assert [e.tool for e in ledger.effects(child)] == ["refund_payment"]
