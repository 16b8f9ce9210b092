"""The rules: a decision is bounded field by field; a rejected one is audited cut short, at most
`REJECTED_PER_CALL` per call and `REJECTED_KEPT` in all (the rest counted); and the book a run hands over is
bounded even when an earlier version audited rejections whole."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from pydantic import ValidationError

from agentic import ToolCall
from agentic.approvals import (
    APPROVER_MAX,
    REJECTED_KEPT,
    REJECTED_PER_CALL,
    REJECTED_TEXT_MAX,
    UNKNOWN_CALL,
    UNREADABLE,
    ApprovalBook,
    AuditEntry,
    Decision,
)

NOW = datetime(2026, 12, 5, tzinfo=UTC)
CALL = ToolCall(id="c", name="refund", arguments={"order_id": "4471"}, uid="1.1")


def waiting() -> ApprovalBook:
    book = ApprovalBook(run_id="r1")
    book.request("r1", CALL, NOW, 3600)
    return book


def decision(**fields: object) -> Decision:
    return Decision.model_validate(
        {"call_id": "1.1", "approve": True, "approver": "maria", "arguments_hash": "0" * 64} | fields
    )


@pytest.mark.parametrize(
    ("field", "longest"),
    [
        ("call_id", 100),
        ("approver", 200),
        ("reason", 2000),
        ("arguments_hash", 128),
        ("signature", 200),
        ("client", 200),
        ("execution", 100),
    ],
)
def test_every_text_a_decision_carries_is_bounded(field: str, longest: int) -> None:
    assert len(getattr(decision(**{field: "x" * longest}), field)) == longest
    with pytest.raises(ValidationError, match=f"at most {longest} characters"):
        decision(**{field: "x" * (longest + 1)})


def test_a_rejected_decision_is_audited_cut_short() -> None:
    book = waiting()
    entry = book.decide(decision(reason="R" * 2000, approver="x" * APPROVER_MAX, client="c" * 200), NOW)
    assert (
        entry.event == "rejected"
        and entry.rejection == "the arguments hash does not match the pending call's arguments"
    )
    assert (len(entry.reason), len(entry.approver or ""), len(entry.client or "")) == (REJECTED_TEXT_MAX, 200, 200)
    assert book.audit == [entry] and book.pending  # it changed nothing


def test_rejections_are_kept_up_to_a_cap_per_call_and_in_all_and_the_rest_counted() -> None:
    book = waiting()
    for _ in range(REJECTED_PER_CALL + 5):
        book.decide(decision(), NOW)  # the wrong hash, for the pending call
    for i in range(REJECTED_KEPT + 50):
        book.decide(decision(call_id=f"9.{i}"), NOW)  # calls the run never had: one count for all
    for _ in range(3):
        book.unreadable(NOW, "not JSON")
    rejected = [e for e in book.audit if e.event == "rejected"]
    assert sum(e.call_id == "1.1" for e in rejected) == REJECTED_PER_CALL
    assert sum(e.call_id.startswith("9.") for e in rejected) == REJECTED_PER_CALL
    assert len(rejected) == 2 * REJECTED_PER_CALL + 3  # under REJECTED_KEPT: unreadable ones still kept
    assert book.uncounted == {"1.1": 5, UNKNOWN_CALL: REJECTED_KEPT + 50 - REJECTED_PER_CALL}
    # And the real decision still counts, and is audited whole.
    right = decision(arguments_hash=book.pending["1.1"].arguments_hash, reason="checked " * 200)
    assert book.decide(right, NOW).event == "approved" and book.audit[-1].reason == right.reason


def test_the_book_handed_over_is_bounded_whatever_an_earlier_version_audited() -> None:
    book = waiting()
    huge = AuditEntry.model_construct(
        call_id="1.1",
        tool="refund",
        event="rejected",
        approver="x" * 1000,
        at=NOW,
        arguments_hash="0" * 64,
        reason="R" * 1_500_000,
        rejection="the arguments hash does not match the pending call's arguments",
        signed=False,
        client=None,
    )
    book.audit = [huge] * (REJECTED_PER_CALL + 2)
    handed = book.bounded()
    assert len(handed.audit) == REJECTED_PER_CALL and handed.uncounted == {"1.1": 2}
    assert len(handed.model_dump_json()) < 50_000
    assert handed.pending == book.pending and len(book.audit) == REJECTED_PER_CALL + 2  # a copy


def test_rejections_of_many_calls_are_capped_in_all_not_only_per_call() -> None:
    book = ApprovalBook(run_id="r1")
    calls = [ToolCall(id=f"c{n}", name="refund", arguments={"order_id": str(n)}, uid=f"{n}.1") for n in range(15)]
    for call in calls:
        book.request("r1", call, NOW, 3600)
    for call in calls:
        for _ in range(REJECTED_PER_CALL):
            book.decide(decision(call_id=call.identity), NOW)  # the wrong hash, each call's share
    rejected = [e for e in book.audit if e.event == "rejected"]
    assert len(rejected) == REJECTED_KEPT
    assert sum(book.uncounted.values()) == 15 * REJECTED_PER_CALL - REJECTED_KEPT


def test_unreadable_decisions_count_toward_the_caps() -> None:
    book = waiting()
    for _ in range(500):
        book.unreadable(NOW, "not JSON")
    assert len([e for e in book.audit if e.event == "rejected"]) == REJECTED_PER_CALL
    assert book.uncounted == {UNREADABLE: 500 - REJECTED_PER_CALL}
