"""Approver key entries (`agentic.signing`): what is accepted, what is refused and how — never echoing key
material; and what a signature covers. The decisions they sign in a run: tests/temporal/test_signed_decisions.py."""

from __future__ import annotations

import base64
from datetime import UTC, datetime

import pytest

from agentic import ToolCall
from agentic.approvals import ApprovalBook, Decision, arguments_hash
from agentic.signing import ApproverKey, ApproverKeyError, parse_public_keys, signature_problem

MARIA = ApproverKey.generate("maria")
PUBLIC = MARIA.public_entry().split("=", 1)[1]


def test_entries_comments_and_blank_lines() -> None:
    text = f"# approvers\n\nmaria={PUBLIC}\n  # ops = later\n"
    assert parse_public_keys(text) == {"maria": PUBLIC}
    assert parse_public_keys(None) == {} == parse_public_keys("")


def test_an_entry_without_a_key_is_named_by_its_position() -> None:
    with pytest.raises(ApproverKeyError, match=r"^approver key entry 2: expected NAME=PUBLIC_KEY$"):
        parse_public_keys(f"maria={PUBLIC},bob")


@pytest.mark.parametrize("name", ["", "-x", "a b", "x" * 65, "ü"])
def test_names_are_plain(name: str) -> None:
    with pytest.raises(ApproverKeyError, match="an approver name is 1-64"):
        parse_public_keys(f"{name}={PUBLIC}")
    with pytest.raises(ApproverKeyError):
        ApproverKey.generate(name)


def test_keys_must_be_strict_base64_of_32_bytes() -> None:
    with pytest.raises(ApproverKeyError, match="is not base64"):
        parse_public_keys(f"maria={PUBLIC[:-4]}!{PUBLIC[-4:]}")  # a stray character is not skipped
    short = base64.b64encode(b"k" * 16).decode()
    with pytest.raises(ApproverKeyError, match="is 16 bytes; Ed25519 needs 32"):
        parse_public_keys(f"maria={short}")
    with pytest.raises(ApproverKeyError, match="is 16 bytes"):
        ApproverKey.parse(f"maria:{short}")


def test_a_signature_or_key_with_stray_characters_is_refused() -> None:
    text = b"decision"
    signature = MARIA.sign(text)
    assert signature_problem({"maria": PUBLIC}, signature, "maria", text) is None
    assert signature_problem({"maria": PUBLIC}, "*" + signature, "maria", text) is not None
    assert signature_problem({"maria": "*" + PUBLIC}, signature, "maria", text) is not None


def test_a_signed_decision_changed_in_what_it_decides_is_no_longer_the_approvers() -> None:
    """The attacker holds maria's signed decisions and edits them: a decline turned into an approval, a decision
    moved to another call with the same arguments, or an approval she signed over arguments she reviewed moved
    onto the (different) arguments now pending. None of them is maria's any more, and none changes anything."""
    now = datetime(2026, 11, 30, tzinfo=UTC)
    book = ApprovalBook(run_id="r1", approver_keys=parse_public_keys(MARIA.public_entry()))
    small, large = {"order_id": "4471", "cents": 500}, {"order_id": "4471", "cents": 90_000}
    for uid, arguments in (("1.1", small), ("1.2", small), ("1.3", large)):
        book.request("r1", ToolCall(id=uid, name="refund", arguments=arguments, uid=uid), now, 3600)
    small_hash = book.pending["1.1"].arguments_hash

    declined = Decision(call_id="1.1", approve=False, approver="maria", arguments_hash=small_hash).signed("r1", MARIA)
    reviewed = arguments_hash(ToolCall(id="x", name="refund", arguments=small))
    approved_small = Decision(call_id="1.3", approve=True, approver="maria", arguments_hash=reviewed).signed(
        "r1", MARIA
    )
    assert book.rejection(declined, now) is None  # as signed, each is maria's
    assert "does not match the pending call's arguments" in (book.rejection(approved_small, now) or "")

    flipped = declined.model_copy(update={"approve": True})
    moved = declined.model_copy(update={"call_id": "1.2"})
    rehashed = approved_small.model_copy(update={"arguments_hash": book.pending["1.3"].arguments_hash})
    for tampered in (flipped, moved, rehashed):
        assert "not maria's" in (book.rejection(tampered, now) or ""), tampered
        assert book.decide(tampered, now).event == "rejected"
    assert sorted(book.pending) == ["1.1", "1.2", "1.3"] and book.outcomes == {}
