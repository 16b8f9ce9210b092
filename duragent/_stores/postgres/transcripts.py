"""The transcript store on PostgreSQL: the four methods of `TranscriptStore`, shared by hosts, and `release`.

Rows are immutable and content-addressed, so every write is `INSERT ... ON CONFLICT DO NOTHING` — a retry,
or two hosts writing the same message, change nothing. Each write is one statement over arrays, in key order
so two concurrent writers of overlapping rows cannot deadlock.

Owners (`transcript_owners`, see duragent/_stores/transcripts.py) are written in the same transaction as the rows.
That alone is not enough under READ COMMITTED: `release`'s "delete the rows nobody owns" reads owners as of its
statement's start, while `ON CONFLICT DO NOTHING` takes no lock on the row it finds — so a writer could find
a row, record its owner and commit while the release deletes that row. Hence one advisory lock: every write
holds it *shared* (writers never wait for each other), `release` holds it *exclusively* (for one run's few
statements). A release then sees every owner committed before it, and a write waiting behind it inserts
afresh whatever it deleted.
"""

from __future__ import annotations

from collections.abc import Sequence

import psycopg

from duragent._stores.postgres.pool import Database
from duragent._stores.transcripts import UNOWNED, Released, check_releasable, require_all

OWNERS_LOCK = 0x5C4E_0003  # advisory lock id: "transcript owners", arbitrary and fixed


class PostgresTranscriptStore:
    def __init__(self, database: Database) -> None:
        self.database = database

    def put_blobs(self, blobs: dict[str, str], owner: str | None = None) -> None:
        self.put_messages(blobs, [], owner)

    def get_blobs(self, refs: Sequence[str]) -> dict[str, str]:
        with self.database.connection() as db:
            rows = db.execute(
                "SELECT ref, body FROM transcript_blobs WHERE ref = ANY(%s)", (list(dict.fromkeys(refs)),)
            ).fetchall()
        return require_all(refs, {ref: bytes(body).decode() for ref, body in rows})

    def put_messages(
        self, blobs: dict[str, str], nodes: Sequence[tuple[str, str, str]], owner: str | None = None
    ) -> None:
        """Blobs, then the nodes pointing at them, in one transaction (one pipelined round trip)."""
        if not blobs and not nodes:
            return
        refs = sorted(blobs)
        ordered = sorted(set(nodes))
        with self.database.connection() as db, db.pipeline(), db.transaction():
            _share_lock(db)
            if refs:
                db.execute(
                    "INSERT INTO transcript_blobs (ref, body) SELECT * FROM unnest(%s::text[], %s::bytea[])"
                    " ON CONFLICT DO NOTHING",
                    (refs, [blobs[r].encode() for r in refs]),
                )
            if ordered:
                db.execute(
                    "INSERT INTO transcript_nodes (ref, previous, message)"
                    " SELECT * FROM unnest(%s::text[], %s::text[], %s::text[]) ON CONFLICT DO NOTHING",
                    tuple(list(column) for column in zip(*ordered, strict=True)),
                )
            # Owners in key order over both tables' refs, so two writers cannot deadlock on them either.
            _own(db, sorted({*refs, *(node for node, _, _ in ordered)}), owner)

    def get_nodes(self, refs: Sequence[str]) -> dict[str, tuple[str, str]]:
        with self.database.connection() as db:
            rows = db.execute(
                "SELECT ref, previous, message FROM transcript_nodes WHERE ref = ANY(%s)", (list(refs),)
            ).fetchall()
        return {ref: (previous, message) for ref, previous, message in rows}

    def owned_blobs(self, owner: str) -> list[str]:
        with self.database.connection() as db:
            rows = db.execute(
                "SELECT o.ref FROM transcript_owners o JOIN transcript_blobs b ON b.ref = o.ref"
                " WHERE o.run_id = %s ORDER BY o.ref",
                (owner,),
            ).fetchall()
        return [ref for (ref,) in rows]

    def owners_of(self, ref: str) -> set[str]:
        with self.database.connection() as db:
            rows = db.execute("SELECT run_id FROM transcript_owners WHERE ref = %s", (ref,)).fetchall()
        return {run for (run,) in rows}

    def release(self, owner: str) -> Released:
        check_releasable(owner)
        with self.database.transaction() as db:
            db.execute("SELECT pg_advisory_xact_lock(%s)", (OWNERS_LOCK,))
            refs = [
                ref
                for (ref,) in db.execute(
                    "DELETE FROM transcript_owners WHERE run_id = %s RETURNING ref", (owner,)
                ).fetchall()
            ]
            if not refs:
                return Released()
            row = db.execute(
                "SELECT count(DISTINCT ref) FROM transcript_owners WHERE ref = ANY(%s)", (refs,)
            ).fetchone()
            unowned = "ref = ANY(%s) AND NOT EXISTS (SELECT 1 FROM transcript_owners o WHERE o.ref = {table}.ref)"
            nodes = db.execute(
                f"DELETE FROM transcript_nodes WHERE {unowned.format(table='transcript_nodes')}",  # type: ignore[arg-type]
                (refs,),
            ).rowcount
            blobs = db.execute(
                f"DELETE FROM transcript_blobs WHERE {unowned.format(table='transcript_blobs')}",  # type: ignore[arg-type]
                (refs,),
            ).rowcount
        return Released(nodes=nodes, blobs=blobs, shared=int(row[0]) if row else 0)


def _share_lock(db: psycopg.Connection) -> None:
    """Every write holds the owners' lock shared until it commits (see the module's doc)."""
    db.execute("SELECT pg_advisory_xact_lock_shared(%s)", (OWNERS_LOCK,))


def _own(db: psycopg.Connection, refs: list[str], owner: str | None) -> None:
    db.execute(
        "INSERT INTO transcript_owners (ref, run_id) SELECT r, %s FROM unnest(%s::text[]) AS r ON CONFLICT DO NOTHING",
        (owner or UNOWNED, refs),
    )
