"""Approver key entries (`agentic.signing`): what is accepted, what is refused and how — never echoing key
material. The decisions they sign: tests/temporal/test_signed_decisions.py."""

from __future__ import annotations

import base64

import pytest

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
