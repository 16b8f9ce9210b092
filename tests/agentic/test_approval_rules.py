"""The approval rules (`agentic.approvals`), pure: what a decision must match to count, and what each
outcome records. The workflow's and the checkpoint runner's tests show them executed durably."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from agentic import ToolCall
from agentic.approvals import (
    DEFAULT_TIMEOUT,
    UNREADABLE,
    ApprovalBook,
    ApprovalPolicy,
    Decision,
    Outcome,
    arguments_hash,
)

NOW = datetime(2026, 1, 1, tzinfo=UTC)
PAY = ToolCall(id="c1", name="pay", arguments={"supplier": "s-1", "amount": 5}, uid="1.1")


def decision(call_id: str = "1.1", approve: bool = True, hash: str | None = None) -> Decision:
    return Decision(
        call_id=call_id, approve=approve, approver="maria", reason="ok", arguments_hash=hash or arguments_hash(PAY)
    )


def test_the_hash_covers_the_tool_and_exactly_its_arguments() -> None:
    same = ToolCall(id="other", name="pay", arguments={"amount": 5, "supplier": "s-1"}, uid="9.9")
    assert arguments_hash(same) == arguments_hash(PAY)  # key order, ids: not part of what is approved
    assert arguments_hash(PAY.model_copy(update={"arguments": {"supplier": "s-1", "amount": 6}})) != arguments_hash(PAY)
    assert arguments_hash(PAY.model_copy(update={"name": "refund"})) != arguments_hash(PAY)


def test_timeouts_per_run_tool_then_declared_then_default() -> None:
    assert ApprovalPolicy().timeout_seconds == DEFAULT_TIMEOUT == 24 * 3600
    policy = ApprovalPolicy(timeout_seconds=100, tool_timeouts={"pay": 10})
    assert policy.timeout_for("pay", declared=50) == 10
    assert policy.timeout_for("refund", declared=50) == 50
    assert policy.timeout_for("refund") == 100
    assert (ApprovalPolicy().on_decline, ApprovalPolicy().on_expire) == ("continue", "continue")


def test_a_request_opens_once_with_its_deadline() -> None:
    book = ApprovalBook(run_id="r")
    pending = book.request("r", PAY, NOW, 60)
    assert (pending.call_id, pending.tool, pending.arguments_hash) == ("1.1", "pay", arguments_hash(PAY))
    assert pending.deadline == NOW + timedelta(seconds=60) and pending.requested_at == NOW
    assert book.request("r", PAY, NOW + timedelta(seconds=30), 600) == pending  # reopened: the same deadline


def test_a_matching_decision_before_the_deadline_decides_once() -> None:
    book = ApprovalBook(run_id="r")
    book.request("r", PAY, NOW, 60)
    entry = book.decide(decision(approve=False), NOW + timedelta(seconds=59))
    assert (entry.event, entry.tool, entry.approver, entry.reason) == ("declined", "pay", "maria", "ok")
    assert entry.rejection is None and not entry.signed
    assert book.outcomes == {"1.1": Outcome.DECLINED} and book.pending == {}
    again = book.decide(decision(approve=True), NOW + timedelta(seconds=1))
    assert again.event == "rejected" and again.rejection == "call 1.1 was already declined"
    assert book.outcomes == {"1.1": Outcome.DECLINED}
    assert [e.event for e in book.audit] == ["declined", "rejected"]


def test_each_mismatch_is_rejected_saying_why_and_changes_nothing() -> None:
    book = ApprovalBook(run_id="r")
    book.request("r", PAY, NOW, 60)
    wrong = book.decide(decision(hash="f" * 64), NOW)
    assert wrong.rejection == "the arguments hash does not match the pending call's arguments"
    unknown = book.decide(decision(call_id="7.7"), NOW)
    assert unknown.rejection == "no approval is pending for call 7.7" and unknown.tool is None
    late = book.decide(decision(), NOW + timedelta(seconds=60))
    assert late.rejection is not None and late.rejection.startswith("the approval for call 1.1 expired at")
    assert wrong.tool == late.tool == "pay"
    assert book.outcomes == {} and list(book.pending) == ["1.1"] and len(book.audit) == 3


def test_a_decision_for_a_call_not_reached_yet_is_kept_and_applied_when_reached() -> None:
    book = ApprovalBook(run_id="r")
    early = book.decide(decision(), NOW, expected=["1.1"])
    assert early.event == "approved" and book.audit == [] and "1.1" in book.early
    book.request("r", PAY, NOW + timedelta(seconds=5), 60)
    assert book.outcomes == {"1.1": Outcome.APPROVED} and book.early == {}
    [entry] = book.audit
    assert (entry.event, entry.tool, entry.at) == ("approved", "pay", NOW + timedelta(seconds=5))


def test_an_early_decision_with_the_wrong_hash_is_rejected_when_its_call_is_reached() -> None:
    book = ApprovalBook(run_id="r")
    book.decide(decision(hash="f" * 64), NOW, expected=["1.1"])
    book.request("r", PAY, NOW, 60)
    assert book.outcomes == {} and [e.event for e in book.audit] == ["rejected"]


def test_expiry_is_final_and_stamped_at_the_deadline() -> None:
    book = ApprovalBook(run_id="r")
    pending = book.request("r", PAY, NOW, 60)
    entry = book.expire("1.1")
    assert (entry.event, entry.at, entry.approver, entry.arguments_hash) == (
        "expired",
        pending.deadline,
        None,
        pending.arguments_hash,
    )
    assert book.outcomes == {"1.1": Outcome.EXPIRED} and book.pending == {}
    assert book.decide(decision(), NOW).rejection == "call 1.1 was already expired"


def test_an_unreadable_decision_is_audited_cut_short() -> None:
    book = ApprovalBook(run_id="r")
    entry = book.unreadable(NOW, "x" * 10_000)
    assert (entry.call_id, entry.event, entry.approver) == (UNREADABLE, "rejected", None)
    assert entry.rejection == "the decision could not be read: " + "x" * 300 and book.audit == [entry]
