"""The content-addressed transcript store: idempotent writes, stable heads, claim checks, a hard cap."""

from __future__ import annotations

import pytest

from agentic import Message, tool_call
from agentic.transcript_store import EMPTY, PayloadTooLarge, SqliteTranscriptStore, Transcripts


@pytest.fixture
def transcripts(tmp_path) -> Transcripts:
    return Transcripts(SqliteTranscriptStore(tmp_path / "t.db"))


MESSAGES = [
    Message("system", "Settle invoices."),
    Message("user", "Settle invoice inv-9"),
    Message("assistant", "", tool_calls=(tool_call("charge", {"invoice": "inv-9"}, id="c1"),)),
    Message("tool", "charged", tool_call_id="c1"),
]


def test_a_transcript_round_trips_and_its_head_names_its_content(transcripts, tmp_path):
    head = transcripts.append(EMPTY, MESSAGES)
    assert transcripts.load(head) == MESSAGES
    # The same messages give the same head, in another store too: a head is the transcript's name.
    other = Transcripts(SqliteTranscriptStore(tmp_path / "other.db"))
    assert other.append(EMPTY, MESSAGES) == head
    assert transcripts.append(EMPTY, MESSAGES[:3]) != head


def test_appending_in_pieces_equals_appending_at_once_and_writes_are_idempotent(transcripts, tmp_path):
    whole = transcripts.append(EMPTY, MESSAGES)
    piecewise = transcripts.append(transcripts.append(EMPTY, MESSAGES[:2]), MESSAGES[2:])
    assert piecewise == whole
    again = transcripts.append(EMPTY, MESSAGES)  # a retried activity writes the same rows again
    assert again == whole
    store = SqliteTranscriptStore(tmp_path / "t.db")
    with store.file.connect() as db:
        assert db.execute("SELECT count(*) FROM nodes").fetchone()[0] == 4
        assert db.execute("SELECT count(*) FROM blobs").fetchone()[0] == 4


def test_a_fresh_reader_without_cache_reads_the_same(transcripts, tmp_path):
    head = transcripts.append(EMPTY, MESSAGES)
    longer = transcripts.append(head, [Message("assistant", "done")])
    fresh = Transcripts(SqliteTranscriptStore(tmp_path / "t.db"))  # a new worker after a crash
    assert fresh.load(longer) == [*MESSAGES, Message("assistant", "done")]
    assert transcripts.load(head) == MESSAGES  # the cache never serves a longer transcript for a shorter head


def test_claim_check_keeps_small_contents_and_stores_large_ones(transcripts):
    assert transcripts.claim_check("small", 100, 1000, "x") == ("small", None)
    body = "y" * 5000
    preview, ref = transcripts.claim_check(body, 100, 10_000, "the output")
    assert ref is not None and len(preview) < 300 and "5,000 bytes" in preview
    assert transcripts.resolve(preview, ref) == body
    stub = Message("tool", preview, tool_call_id="c1", content_ref=ref)
    head = transcripts.append(EMPTY, [stub])
    assert transcripts.load(head) == [Message("tool", body, tool_call_id="c1")]
    assert transcripts.load(head, expand=False) == [stub]


def test_over_the_hard_cap_is_refused_clearly(transcripts):
    with pytest.raises(PayloadTooLarge, match="the output is 2,000 bytes, over the hard cap of 1,000 bytes"):
        transcripts.claim_check("z" * 2000, 100, 1000, "the output")


def test_an_unknown_head_is_a_clear_error(transcripts):
    with pytest.raises(KeyError, match="not in the store"):
        transcripts.load("sha256:nope")
