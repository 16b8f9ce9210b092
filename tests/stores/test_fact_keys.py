"""A fact's write key (a tool call's idempotency key, `run_id:call`) is unique within its namespace, not across
them. A run id reused after a prune — `POST /runs` takes one — once made `remember` answer with
whatever row held that key, in any namespace: another customer's fact. Now a write key is looked up only in
the run's own namespace, and a different fact under the same key there fails loudly. On both backends, and for
files and databases made before this change (their constraints are migrated away, their rows kept)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import psycopg
import pytest

from agentic import Stop
from agentic.memory import Fact
from duragent._stores.facts import SqliteFactStore, WriteKeyConflict
from duragent._stores.postgres import Database, PostgresFactStore
from examples import courier
from tests.stores.test_memory_tools import served, tool_messages
from tests.support.backends import Backend

SECRET_TICKET = "Ticket T-9: customer C-SECRET prefers SecretCourier"
ATTACKER_TICKET = "Ticket T-1: customer C-ATTACKER prefers Anyone"


def test_a_reused_run_id_never_reads_another_namespaces_fact(tmp_path: Path) -> None:
    agent, facts = served(courier.agent, tmp_path)
    agent.run(SECRET_TICKET, options={"namespace": "C-SECRET"}, run_id="courier-1")
    # The run id again (its run pruned), in a namespace of the attacker's choosing: the same write key.
    again = agent.run(ATTACKER_TICKET, options={"namespace": "C-ATTACKER"}, run_id="courier-1")
    [answer] = tool_messages(again.messages)
    assert answer.startswith('Remembered in C-ATTACKER: preferred_courier = "Anyone" (source: ticket T-1;')
    assert not [m for m in again.messages if "SecretCourier" in m.content or "C-SECRET" in m.content]
    assert facts.namespace("C-ATTACKER").get("preferred_courier") == Fact("preferred_courier", "Anyone", "ticket T-1")
    assert facts.namespace("C-SECRET").get("preferred_courier") == Fact(
        "preferred_courier", "SecretCourier", "ticket T-9"
    )


def test_another_fact_under_a_used_write_key_stops_the_run_and_writes_nothing(tmp_path: Path) -> None:
    agent, facts = served(courier.agent, tmp_path)
    agent.run("Ticket T-1: customer C-7 prefers BlueDart", options={"namespace": "C-7"}, run_id="courier-2")
    reused = agent.run("Ticket T-2: customer C-7 prefers DTDC", options={"namespace": "C-7"}, run_id="courier-2")
    assert reused.stop is Stop.TOOL_FAILED, reused.stop
    assert "already wrote another fact in C-7" in (reused.stop_detail or "")
    assert "BlueDart" not in (reused.stop_detail or "")  # the other fact is not shown either
    [version] = facts.namespace("C-7").history("preferred_courier")
    assert version.value == "BlueDart"


def test_write_keys_are_scoped_by_namespace_on_both_backends(backend: Backend) -> None:
    store = backend.fact_store()
    secret = store.write("C-SECRET", Fact("k", "secret", "s"), writer="w", write_key="run-1:1.1")
    mine = store.write("C-ATTACKER", Fact("k", "mine", "s"), writer="w", write_key="run-1:1.1")
    assert (mine.namespace, mine.value) == ("C-ATTACKER", "mine") and mine.seq != secret.seq
    # A retry of the very write finds its version; a different fact under the key is refused.
    assert store.write("C-ATTACKER", Fact("k", "mine", "s"), writer="w", write_key="run-1:1.1").seq == mine.seq
    for other in (Fact("k", "changed", "s"), Fact("other_key", "mine", "s")):
        with pytest.raises(WriteKeyConflict, match="already wrote another fact in C-ATTACKER"):
            store.write("C-ATTACKER", other, writer="w", write_key="run-1:1.1")
    assert backend.rows("facts") == 2
    # Refusals are audited once per call and namespace, not once per key across namespaces.
    for namespace in ("C-SECRET", "C-ATTACKER", "C-ATTACKER"):
        with pytest.raises(Exception, match="protected"):
            store.write(namespace, Fact("is_admin", True, "s"), writer="w", write_key="run-1:2.1")
    assert backend.rows("fact_audit") == 2


# What main's schema made: write keys unique across namespaces, as a column and a table constraint.
LEGACY = """
CREATE TABLE facts (seq {serial}, namespace TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL,
    source TEXT NOT NULL, writer TEXT NOT NULL, run_id TEXT, call_id TEXT, write_key TEXT UNIQUE,
    at {time} NOT NULL, forgotten_at {time}, forgotten_by TEXT);
CREATE INDEX facts_key ON facts (namespace, key, seq);
CREATE INDEX facts_source ON facts (namespace, source);
CREATE TABLE fact_audit (seq {serial}, namespace TEXT NOT NULL, action TEXT NOT NULL, key TEXT, value TEXT,
    source TEXT, writer TEXT NOT NULL, run_id TEXT, call_id TEXT, write_key TEXT, detail TEXT NOT NULL,
    at {time} NOT NULL, UNIQUE (action, write_key));
CREATE INDEX fact_audit_namespace ON fact_audit (namespace, seq);
INSERT INTO facts (namespace, key, value, source, writer, write_key, at)
    VALUES ('C-SECRET', 'k', '"secret"', 's', 'w', 'run-1:1.1', {now});
INSERT INTO fact_audit (namespace, action, key, writer, write_key, detail, at)
    VALUES ('C-SECRET', 'refused', 'is_admin', 'w', 'run-1:2.1', 'protected', {now});
"""


def test_a_file_made_before_is_migrated_with_its_rows(tmp_path: Path) -> None:
    path = tmp_path / "facts.db"
    with sqlite3.connect(path) as db:
        db.executescript(
            LEGACY.format(serial="INTEGER PRIMARY KEY AUTOINCREMENT", time="TEXT", now="'2026-01-01T00:00:00Z'")
        )
    store = SqliteFactStore(path)
    assert store.namespace("C-SECRET").get("k") == Fact("k", "secret", "s")
    mine = store.write("C-ATTACKER", Fact("k", "mine", "s"), writer="w", write_key="run-1:1.1")
    assert mine.value == "mine" and mine.seq == 2  # numbering goes on after the old rows
    SqliteFactStore(path).namespace("C-SECRET").get("k")  # opening it again changes nothing
    with sqlite3.connect(path) as db:
        tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        assert not [t for t in tables if t.endswith("_legacy")]
        assert [r[1] for r in db.execute("PRAGMA index_list(facts)") if r[3] == "u"] == []


def test_a_database_made_before_is_migrated_with_its_rows(postgres_url: str) -> None:
    with psycopg.connect(postgres_url, autocommit=True) as db:
        db.execute(
            LEGACY.format(serial="BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY", time="TIMESTAMPTZ", now="now()")
        )
    database = Database(postgres_url, timeout=3.0)
    try:
        store = PostgresFactStore(database)
        mine = store.write("C-ATTACKER", Fact("k", "mine", "s"), writer="w", write_key="run-1:1.1")
        assert mine.value == "mine"
        assert store.namespace("C-SECRET").get("k") == Fact("k", "secret", "s")
    finally:
        database.close()
