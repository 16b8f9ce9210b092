"""A transcript reference handed to a store (a message's `content_ref`, from a run's input or an activity's answer)
is checked against the text it names; one that holds characters no reference of ours has — non-ASCII, a lone
surrogate — is simply not a match, never a TypeError that would fail the activity as a retryable error."""

from __future__ import annotations

import pytest

from duragent._config.codec import KeyRing, new_key
from duragent._stores.encrypted import KeyedRefs
from duragent._stores.transcripts import ContentRefs

TEXT = "the refund of order A-1"
FORGED = ["sha256:" + "é" * 64, "sha256:\udcff", "hmac:k1:" + "é" * 64, "hmac:k1:\ud800" + "0" * 63]


@pytest.mark.parametrize("ref", FORGED, ids=range(len(FORGED)))
def test_a_reference_with_characters_no_reference_has_is_no_match(ref: str) -> None:
    plain, keyed = ContentRefs(), KeyedRefs(KeyRing.parse(f"k1:{new_key()}"))
    assert plain.matches(ref, TEXT) is False and keyed.matches(ref, TEXT) is False
    assert plain.matches(plain.of(TEXT), TEXT) and keyed.matches(keyed.of(TEXT), TEXT)  # the genuine ones still do
