"""Details of the loop's and the approval book's state that `python -m tests.mutants sweep` found no test stating:
what survives serialisation (continue-as-new, checkpoints), what a long run slims away, and what stays stable
across versions because histories carry it."""

from __future__ import annotations

import hashlib

import pytest

from agentic import Stop, ToolCall, ToolStatus
from agentic.approvals import ApprovalBook, Decision
from agentic.loop import LoopState, ToolRecord, _repeat_key
from agentic.signing import ApproverKey


def test_records_round_trip_with_their_defaults() -> None:
    """Records are written compactly (defaults left out): what they read back must be what was written, for
    read-only and mutating records alike (a saga decides with `mutating`)."""
    call = ToolCall(id="c", name="t", arguments={"a": 1}, uid="1.1")
    state = LoopState(
        records=[
            ToolRecord(step=1, call=call),
            ToolRecord(step=1, call=call, mutating=True, status=ToolStatus.ERROR, content="x"),
        ]
    )
    assert LoopState.model_validate_json(state.model_dump_json()) == state


def test_slimming_drops_only_the_outputs_of_successful_read_only_calls() -> None:
    call = ToolCall(id="c", name="t", uid="1.1")
    kept = [
        ToolRecord(step=1, call=call, content="effect result", mutating=True),
        ToolRecord(step=1, call=call, content="Error: broke", status=ToolStatus.ERROR),
        ToolRecord(step=1, call=call, content="", content_ref=None),
    ]
    read = ToolRecord(step=1, call=call, content="a long page", content_ref="sha256:x")
    state = LoopState(records=[read, *kept])
    state.slim_records()
    assert state.records == [read.model_copy(update={"content": "", "content_ref": None}), *kept]


def test_repeat_keys_are_stable_across_versions() -> None:
    """Runs carry these digests across continue-as-new (and a deploy in between): a change of form would let a
    continued run repeat a call it had already made."""
    call = ToolCall(id="c", name="refund", arguments={"order_id": "9"})
    expected = hashlib.sha256(b'refund\x00{"order_id":"9"}').hexdigest()[:32]
    assert _repeat_key(call) == expected


def test_only_an_answer_is_answered() -> None:
    assert [s for s in Stop if s.answered] == [Stop.ANSWERED]


def test_a_decision_cannot_be_signed_with_another_approvers_key() -> None:
    decision = Decision(call_id="1.1", approve=True, approver="maria", arguments_hash="h")
    with pytest.raises(ValueError, match="the key is 'eve'"):
        decision.signed("r", ApproverKey.generate("eve"))


def test_expiries_and_unreadable_decisions_are_never_marked_signed() -> None:
    from datetime import UTC, datetime

    maria = ApproverKey.generate("maria")
    book = ApprovalBook(run_id="r", approver_keys={"maria": maria.public_entry().split("=", 1)[1]})
    now = datetime(2026, 1, 1, tzinfo=UTC)
    book.request("r", ToolCall(id="c", name="pay", uid="1.1"), now, 60)
    assert not book.expire("1.1").signed
    assert not book.unreadable(now, "garbage").signed


def test_costs_add_up_to_ten_decimal_places() -> None:
    """Consumption is compared across runners and resumes: sums are rounded to 1e-10 dollars, so the same steps
    add up to the same cost whichever order or process added them."""
    from agentic import Usage

    assert Usage(cost=0.1).plus(Usage(cost=0.2)).cost == 0.3
    assert Usage().plus(Usage(cost=4e-11)).cost == 0.0
    assert Usage().plus(Usage(cost=6e-11)).cost == 1e-10
