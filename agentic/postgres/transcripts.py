"""The transcript store on PostgreSQL: the four methods of `TranscriptStore`, shared by hosts.

Rows are immutable and content-addressed, so every write is `INSERT ... ON CONFLICT DO NOTHING` — a retry,
or two hosts writing the same message, change nothing. Each write is one statement over arrays (one round
trip), in key order so two concurrent writers of overlapping rows cannot deadlock.
"""

from __future__ import annotations

from collections.abc import Sequence

from agentic.postgres.pool import Database
from agentic.transcript_store import require_all


class PostgresTranscriptStore:
    def __init__(self, database: Database) -> None:
        self.database = database

    def put_blobs(self, blobs: dict[str, str]) -> None:
        if not blobs:
            return
        refs = sorted(blobs)
        with self.database.connection() as db:
            db.execute(
                "INSERT INTO transcript_blobs (ref, body) SELECT * FROM unnest(%s::text[], %s::bytea[])"
                " ON CONFLICT DO NOTHING",
                (refs, [blobs[r].encode() for r in refs]),
            )

    def get_blobs(self, refs: Sequence[str]) -> dict[str, str]:
        with self.database.connection() as db:
            rows = db.execute(
                "SELECT ref, body FROM transcript_blobs WHERE ref = ANY(%s)", (list(dict.fromkeys(refs)),)
            ).fetchall()
        return require_all(refs, {ref: bytes(body).decode() for ref, body in rows})

    def put_nodes(self, nodes: Sequence[tuple[str, str, str]]) -> None:
        if not nodes:
            return
        ordered = sorted(set(nodes))
        with self.database.connection() as db:
            db.execute(
                "INSERT INTO transcript_nodes (ref, previous, message)"
                " SELECT * FROM unnest(%s::text[], %s::text[], %s::text[]) ON CONFLICT DO NOTHING",
                tuple(list(column) for column in zip(*ordered, strict=True)),
            )

    def get_nodes(self, refs: Sequence[str]) -> dict[str, tuple[str, str]]:
        with self.database.connection() as db:
            rows = db.execute(
                "SELECT ref, previous, message FROM transcript_nodes WHERE ref = ANY(%s)", (list(refs),)
            ).fetchall()
        return {ref: (previous, message) for ref, previous, message in rows}
