"""Random approval decisions against the approval rules (`agentic.approvals`), then through the workflow.

Decisions with the right or a wrong hash, for unknown calls, duplicated, early (before the run reaches the
call), at or after the deadline, signed or not: at most one outcome per call; an outcome only from a decision
that matched the pending call's hash before its deadline (or the deadline itself); every decision received
is in the audit trail; and in the workflow, effects only for approved calls.
"""

from __future__ import annotations

import os
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from temporalio.client import WorkflowExecutionStatus, WorkflowUpdateFailedError
from temporalio.service import RPCError

from agentic import ToolCall
from agentic.approvals import ApprovalBook, Decision, Outcome, arguments_hash
from agentic.signing import ApproverKey
from duragent._stores.ledger import EffectsLedger
from duragent._workflows.agent import AgentWorkflow
from duragent._workflows.inputs import AgentInput
from tests.conftest import TEST_AGENTS, eventually
from tests.support.scripted_runs import temporal_in_background

START = datetime(2026, 1, 1, tzinfo=UTC)
TIMEOUT = 3600.0
CALLS = [ToolCall(id=f"c{i}", name="pay", arguments={"supplier": f"s-{i}"}, uid=f"1.{i}") for i in (1, 2, 3)]
MARIA = ApproverKey.generate("maria")

# One action: a decision about one of the calls (or an unknown one), with the right or a wrong hash, at a
# time relative to the deadline; or the run reaching a call (opening its request); or the deadline passing.
decisions = st.fixed_dictionaries(
    {
        "kind": st.just("decide"),
        "call": st.sampled_from(["1.1", "1.2", "1.3", "9.9"]),
        "approve": st.booleans(),
        "right_hash": st.booleans(),
        "signed": st.booleans(),
        "at": st.sampled_from([0.0, 10.0, TIMEOUT - 1, TIMEOUT, TIMEOUT + 1]),
    }
)
reaches = st.fixed_dictionaries({"kind": st.just("reach"), "call": st.sampled_from(["1.1", "1.2", "1.3"])})
actions = st.lists(st.one_of(decisions, decisions, reaches), max_size=14)


def _hash(call_id: str) -> str:
    call = next((c for c in CALLS if c.uid == call_id), None)
    return arguments_hash(call) if call else "0" * 64


@pytest.mark.parametrize("keys", [False, True], ids=["unsigned", "approver-keys"])
@given(script=actions)
def test_at_most_one_outcome_per_call_and_only_from_a_matching_timely_decision(keys: bool, script) -> None:
    book = ApprovalBook(run_id="r", approver_keys={"maria": MARIA.public_entry().split("=", 1)[1]} if keys else {})
    opened: dict[str, datetime] = {}
    accepted: dict[str, list[Decision]] = {}
    received = 0
    for action in script:
        call_id = action["call"]
        if action["kind"] == "reach":
            call = next(c for c in CALLS if c.uid == call_id)
            before = dict(book.outcomes)
            book.request("r", call, START, TIMEOUT)
            opened.setdefault(call_id, START)
            assert set(before.items()) <= set(book.outcomes.items())  # outcomes are final
            continue
        now = START + timedelta(seconds=action["at"])
        decision = Decision(
            call_id=call_id,
            approve=action["approve"],
            approver="maria",
            arguments_hash=_hash(call_id) if action["right_hash"] else "f" * 64,
        )
        if action["signed"]:
            decision = decision.signed("r", MARIA)
        before = dict(book.outcomes)
        queued = [c.uid for c in CALLS if c.uid not in opened]  # requested by the model, not reached yet
        audit_before = len(book.audit)
        entry = book.decide(decision, now, queued)
        received += 1
        assert set(before.items()) <= set(book.outcomes.items())  # no outcome is ever changed
        if entry.event != "rejected" and call_id in book.outcomes and call_id not in before:
            accepted.setdefault(call_id, []).append(decision)
            assert len(book.audit) == audit_before + 1
        if entry.event == "rejected":
            assert entry.rejection and len(book.audit) == audit_before + 1

    for call_id, outcome in book.outcomes.items():
        if outcome is Outcome.EXPIRED:
            continue
        [decision] = accepted.get(call_id) or [book_decision(book, call_id)]
        assert decision.arguments_hash == _hash(call_id)  # only the exact arguments
        assert outcome is (Outcome.APPROVED if decision.approve else Outcome.DECLINED)
        if keys:
            assert decision.signature is not None
    decided = [e for e in book.audit if e.event in ("approved", "declined")]
    assert len({e.call_id for e in decided}) == len(decided)  # at most one outcome per call
    assert all(e.call_id in opened for e in decided)
    assert all(e.at < opened[e.call_id] + timedelta(seconds=TIMEOUT) for e in decided)  # never at the deadline
    rejected = [e for e in book.audit if e.event == "rejected"]
    assert len(decided) + len(rejected) <= received  # each decision received is audited at most once


def book_decision(book: ApprovalBook, call_id: str) -> Decision:
    """An early decision applied when its call was reached: its audit entry stands for it."""
    entry = next(e for e in book.audit if e.call_id == call_id and e.event in ("approved", "declined"))
    return Decision(
        call_id=call_id,
        approve=entry.event == "approved",
        approver=entry.approver or "",
        arguments_hash=entry.arguments_hash or "",
        signature="applied" if entry.signed else None,
    )


def test_a_decision_exactly_at_the_deadline_is_too_late() -> None:
    book = ApprovalBook(run_id="r")
    pending = book.request("r", CALLS[0], START, TIMEOUT)
    decision = Decision(call_id="1.1", approve=True, approver="maria", arguments_hash=pending.arguments_hash)
    assert book.rejection(decision, pending.deadline - timedelta(microseconds=1)) is None
    assert "expired" in (book.rejection(decision, pending.deadline) or "")
    entry = book.decide(decision, pending.deadline)
    assert entry.event == "rejected" and book.outcomes == {}


# -- through the workflow: effects only for approved calls --------------------------------------------------


@pytest.fixture(scope="module")
def temporal(tmp_path_factory: pytest.TempPathFactory):
    ledger = EffectsLedger(tmp_path_factory.mktemp("prop-approvals") / "ledger.db")
    with temporal_in_background(ledger, "prop-approvals", TEST_AGENTS) as (loop, env):
        yield loop, env, ledger


workflow_decisions = st.lists(
    st.fixed_dictionaries(
        {
            "call": st.sampled_from(["1.1", "1.2", "9.9"]),
            "approve": st.booleans(),
            "right_hash": st.booleans(),
            "by": st.sampled_from(["signal", "update"]),
            "wait_minutes": st.sampled_from([0, 0, 30, 61]),  # 61: past the one-hour deadline
        }
    ),
    max_size=6,
)


@pytest.mark.temporal
@settings(max_examples=40 if os.environ.get("HYPOTHESIS_PROFILE") == "deep" else 8)
@given(sent=workflow_decisions)
def test_the_workflow_makes_effects_only_for_approved_calls(temporal, sent) -> None:
    loop, env, ledger = temporal
    run_id = f"prop-appr-{uuid.uuid4().hex[:10]}"
    hashes = {
        f"1.{i}": arguments_hash(ToolCall(id=f"x{i}", name="pay", arguments={"supplier": f"s-{i}"})) for i in (1, 2)
    }

    async def scenario() -> Any:
        from agentic.approvals import ApprovalPolicy

        handle = await env.client.start_workflow(
            AgentWorkflow.run,
            AgentInput(agent="t-pay-batch", approvals=ApprovalPolicy(timeout_seconds=3600)),
            id=run_id,
            task_queue="prop-approvals",
        )

        async def asking() -> bool:
            return bool((await handle.query(AgentWorkflow.approvals)).pending)

        await eventually(asking, what="the first approval request")
        for d in sent:
            if d["wait_minutes"]:
                await env.sleep(timedelta(minutes=d["wait_minutes"]))
            decision = Decision(
                call_id=d["call"],
                approve=d["approve"],
                approver="maria",
                arguments_hash=hashes.get(d["call"], "0" * 64) if d["right_hash"] else "f" * 64,
            )
            try:
                if d["by"] == "signal":
                    await handle.signal(AgentWorkflow.decision, decision)
                else:
                    await handle.execute_update(AgentWorkflow.decide, decision)
            except WorkflowUpdateFailedError:
                pass  # rejected by the validator: nothing changed
            except RPCError:  # the run closed meanwhile (every call decided or expired)
                if (await handle.describe()).status == WorkflowExecutionStatus.RUNNING:
                    raise
                break
        return await handle.result()

    result = loop.run(scenario())
    outcomes = [(e.call_id, e.event) for e in result.audit if e.event != "rejected"]
    assert len({c for c, _ in outcomes}) == len(outcomes) <= 2  # at most one outcome per call
    approved = sorted(c for c, event in outcomes if event == "approved")
    effects = ledger.effects(run_id)
    assert sorted(e.key.rsplit(":", 1)[1] for e in effects) == approved  # effects only for approved calls
    assert len({e.key for e in effects}) == len(effects)
