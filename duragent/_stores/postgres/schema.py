"""The tables of the stores (transcripts, effects, the prune journal, facts), created on first use or by
`Database.migrate`.

`CREATE ... IF NOT EXISTS` alone is not safe when two workers start at once (both may try to create the
same catalog rows and one fails), so creation runs in a transaction holding an advisory lock.
Bodies and results are `bytea`: PostgreSQL text cannot hold a NUL character, which a tool output may. A fact's
value is JSON (NUL escaped) and its names refuse NUL (duragent/_stores/facts.py), so they are text.
"""

from __future__ import annotations

import psycopg
from psycopg import sql

from duragent._stores.facts import schema as facts_schema
from duragent._stores.transcripts import UNOWNED

SCHEMA_LOCK = 0x5C4E_0001  # advisory lock id: "schema", arbitrary and fixed

SCHEMA = """
CREATE TABLE IF NOT EXISTS transcript_blobs (
    ref  TEXT PRIMARY KEY,
    body BYTEA NOT NULL
);
CREATE TABLE IF NOT EXISTS transcript_nodes (
    ref      TEXT PRIMARY KEY,
    previous TEXT NOT NULL,
    message  TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS transcript_owners (
    ref    TEXT NOT NULL,
    run_id TEXT NOT NULL,
    PRIMARY KEY (ref, run_id)
);
CREATE INDEX IF NOT EXISTS transcript_owners_run ON transcript_owners (run_id);
CREATE TABLE IF NOT EXISTS effects (
    seq         BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    key         TEXT NOT NULL UNIQUE,
    run_id      TEXT NOT NULL,
    tool        TEXT NOT NULL,
    args        TEXT NOT NULL,
    result      BYTEA NOT NULL,
    at          TIMESTAMPTZ NOT NULL,
    compensates TEXT
);
CREATE INDEX IF NOT EXISTS effects_run ON effects (run_id, seq);
CREATE TABLE IF NOT EXISTS prune_journal (
    run_id     TEXT PRIMARY KEY,
    executions TEXT NOT NULL,
    archive    TEXT NOT NULL,
    at         TEXT NOT NULL
);
""" + facts_schema(serial="BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY", time="TIMESTAMPTZ")


TABLES = (
    "transcript_blobs",
    "transcript_nodes",
    "transcript_owners",
    "effects",
    "prune_journal",
    "facts",
    "fact_audit",
)


def create(db: psycopg.Connection) -> list[str]:
    """Create what is missing; returns the tables this call created (none when they were all there)."""
    with db.transaction():
        db.execute("SELECT pg_advisory_xact_lock(%s)", (SCHEMA_LOCK,))
        existing = {
            name
            for (name,) in db.execute(
                "SELECT tablename FROM pg_tables WHERE schemaname = current_schema() AND tablename = ANY(%s)",
                (list(TABLES),),
            )
        }
        db.execute(SCHEMA)
        _scope_write_keys(db)
        if "transcript_owners" not in existing:
            # Rows written before owners were recorded: whose they are is unknown, so they are kept forever.
            db.execute(
                "INSERT INTO transcript_owners (ref, run_id) SELECT ref, %(nobody)s FROM transcript_blobs"
                " UNION SELECT ref, %(nobody)s FROM transcript_nodes ON CONFLICT DO NOTHING",
                {"nobody": UNOWNED},
            )
    return [name for name in TABLES if name not in existing]


def _scope_write_keys(db: psycopg.Connection) -> None:
    """Tables made before write keys were scoped by namespace had them unique across namespaces, as
    constraints; now unique indexes per namespace replace them (duragent/_stores/facts.py). Idempotent."""
    legacy = db.execute(
        "SELECT conrelid::regclass::text, conname FROM pg_constraint"
        " WHERE contype = 'u' AND conrelid IN (to_regclass('facts'), to_regclass('fact_audit'))"
    ).fetchall()
    for table, name in legacy:
        db.execute(sql.SQL("ALTER TABLE {} DROP CONSTRAINT {}").format(sql.Identifier(table), sql.Identifier(name)))
