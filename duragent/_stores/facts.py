"""The durable fact store: the in-process `FactStore` API (agentic/memory.py), kept in SQLite (embedded) or
PostgreSQL (shared by worker hosts), scoped by namespace (a customer, a tenant), with the provenance of every version.

`store.namespace("C-7")` is a `FactNamespace`: `write(Fact)`, `get(key)`, `forget_source(source)`, `keys()`,
iteration, `len`, `in`, `dump()` — the in-process `FactStore`'s methods, with the same refusals — plus what only a
durable store can say: `record(key)` (who wrote the fact, in which run and tool call, when), `history(key)`
and `audit()`.

Design, and why:

- **Versions are kept.** Each write adds a version row; the current fact for a key is its newest version
  that has not been forgotten. Forgetting a source therefore *reverts* a key another source wrote earlier
  (what the untainted source taught still stands) instead of deleting the key outright.
- **One version per tool call.** A write made by a tool carries the call's idempotency key (`write_key`,
  unique within its namespace): a retried, replayed or resumed call finds its version and adds none. What it
  finds is returned only if it is the same fact (namespace, key, value); a different fact under the same key
  — a run id reused after a prune, writing something else — fails loudly (`WriteKeyConflict`), and a write
  key is never looked up in another namespace (that returned another customer's fact).
- **Forgetting erases, and leaves a tombstone.** The forgotten versions' values are erased and the rows marked
  `forgotten_at`/`forgotten_by`: memory no longer holds what the source taught, and a late retry of the very
  call that wrote it finds its row and cannot bring the value back.
- **Refusals are recorded.** A write to a `FactStore.PROTECTED` key raises `ProtectedFactError`, as the seed's
  store does, after an audit row (one per call, again by `write_key`) says who tried, from which run, what.
- **Provenance the model cannot forge.** `source` is what the writer claims (a ticket, a document); `writer`,
  `run_id`, `call_id` and `at` are set by the runner and the store.

`dump()` is the seed's JSON (version 1: key, value, source of the current facts), so
`FactStore.load(ns.dump())` works, and `ns.load(text)` writes a dump's facts into a namespace.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, JsonValue

from agentic.errors import ProtectedFactError
from agentic.memory import Fact, FactStore
from duragent._stores.ledger import now, timestamp
from duragent._stores.sqlite_file import SqliteFile

MAX_NAMESPACE = 200
MAX_KEY = 200
MAX_SOURCE = 500
MAX_VALUE_BYTES = 16_384  # a fact is a fact, not a document: memory is read back into every later run

OPERATOR = "operator"  # the writer of a fact, or the forgetter of a source, when no one else is named


class WriteKeyConflict(ValueError):
    """The write key already wrote a different fact in this namespace: this is not a retry of that write
    (a run id reused after its run was pruned, say). Nothing is written, and the other fact is not shown."""


class FactRecord(BaseModel):
    """One version of a fact, with its provenance."""

    model_config = ConfigDict(frozen=True)

    seq: int
    namespace: str
    key: str
    value: JsonValue
    source: str
    writer: str
    run_id: str | None = None
    call_id: str | None = None
    write_key: str | None = None
    at: str
    forgotten_at: str | None = None
    forgotten_by: str | None = None

    @property
    def fact(self) -> Fact:
        return Fact(self.key, self.value, self.source)

    @property
    def origin(self) -> str:
        """`written by X in run R, call C, at T`: the part of the provenance the runner vouches for."""
        where = [f"in run {self.run_id}"] if self.run_id else []
        where += [f"call {self.call_id}"] if self.call_id else []
        return f"written by {self.writer}{''.join(f' {part},' for part in where)} at {self.at}"

    def describe(self) -> str:
        """One line for a model or a person: the value and where it came from."""
        return f"{self.key} = {_value_json(self.value)} (source: {self.source}; {self.origin})"


class FactAudit(BaseModel):
    """A refused write or a forgotten source: who, when, what."""

    model_config = ConfigDict(frozen=True)

    seq: int
    namespace: str
    action: Literal["refused", "forgot"]
    key: str | None = None
    value: JsonValue = None
    source: str | None = None
    writer: str
    run_id: str | None = None
    call_id: str | None = None
    write_key: str | None = None
    detail: str
    at: str


class Forgotten(BaseModel):
    """What `forget` removed: how many versions, of which keys, and which keys now show an earlier version."""

    model_config = ConfigDict(frozen=True)

    namespace: str
    source: str
    count: int
    keys: list[str]
    reverted: list[str]


def check_name(what: str, text: str, limit: int) -> str:
    """A namespace, key, source or writer that every backend can store and every reader can trust."""
    if not text.strip():
        raise ValueError(f"{what} must not be blank")
    if len(text) > limit:
        raise ValueError(f"{what} is {len(text)} characters, over the limit of {limit}")
    if "\x00" in text:  # PostgreSQL text cannot hold NUL; refusing it everywhere keeps the backends alike
        raise ValueError(f"{what} must not contain a NUL character")
    return text


def check_namespace(name: str) -> str:
    return check_name("namespace", name, MAX_NAMESPACE)


_COLUMNS = "seq, namespace, key, value, source, writer, run_id, call_id, write_key, at, forgotten_at, forgotten_by"
_AUDIT_COLUMNS = "seq, namespace, action, key, value, source, writer, run_id, call_id, write_key, detail, at"
# The newest version of each key that has not been forgotten.
_CURRENT = (
    f"SELECT {_COLUMNS} FROM facts f WHERE namespace = ? AND forgotten_at IS NULL AND seq = ("
    " SELECT max(seq) FROM facts g WHERE g.namespace = f.namespace AND g.key = f.key AND g.forgotten_at IS NULL)"
)
_CURRENT_ALL = _CURRENT.replace("namespace = ? AND ", "", 1)  # the same, in every namespace


class DurableFactStore:
    """The SQL of both backends, written once with `?` placeholders; a backend supplies connections.

    A backend implements `_reading()` and `_writing()` (context managers yielding a connection whose
    `execute(sql, params)` returns a cursor; `_writing` is one transaction), `_sql(text)` (its placeholder
    style) and `_time(at)` (how it stores a timestamp).
    """

    def namespace(self, name: str) -> FactNamespace:
        return FactNamespace(self, check_namespace(name))

    def namespaces(self) -> dict[str, int]:
        """Every namespace holding a current fact, with how many."""
        with self._reading() as db:
            rows = db.execute(
                self._sql(f"SELECT namespace, count(*) FROM ({_CURRENT_ALL}) c GROUP BY namespace")
            ).fetchall()
        return {name: int(count) for name, count in sorted(rows)}

    # -- writes -----------------------------------------------------------------------------------------

    def write(
        self,
        namespace: str,
        fact: Fact,
        *,
        writer: str,
        run_id: str | None = None,
        call_id: str | None = None,
        write_key: str | None = None,
    ) -> FactRecord:
        """Add a version of `fact` (or, when `write_key` already wrote one, return that version unchanged)."""
        check_namespace(namespace)
        check_name("key", fact.key, MAX_KEY)
        check_name("source", fact.source, MAX_SOURCE)
        check_name("writer", writer, MAX_SOURCE)
        value = _value_json(fact.value)
        try:
            FactStore.refuse_protected(fact)
        except ProtectedFactError as refusal:
            self._audit_refusal(namespace, fact, value, writer, run_id, call_id, write_key, str(refusal))
            raise
        if len(value.encode()) > MAX_VALUE_BYTES:
            raise ValueError(
                f"the value of {fact.key!r} is {len(value.encode()):,} bytes as JSON, over the limit of "
                f"{MAX_VALUE_BYTES:,}: memory holds facts, not documents"
            )
        with self._writing() as db:
            row = db.execute(
                self._sql(
                    "INSERT INTO facts (namespace, key, value, source, writer, run_id, call_id, write_key, at)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (namespace, write_key) DO NOTHING"
                    f" RETURNING {_COLUMNS}"
                ),
                (namespace, fact.key, value, fact.source, writer, run_id, call_id, write_key, self._time(now())),
            ).fetchone()
            if row is None:  # this call wrote its version already: a retry, a replay, a resumed run
                row = db.execute(
                    self._sql(f"SELECT {_COLUMNS} FROM facts WHERE namespace = ? AND write_key = ?"),
                    (namespace, write_key),
                ).fetchone()
                _same_fact(_record(row), fact, value, write_key)
        return _record(row)

    def forget(self, namespace: str, source: str, *, by: str = OPERATOR) -> Forgotten:
        """Erase every version `source` taught in `namespace`; keys another source wrote earlier revert to it."""
        check_namespace(namespace)
        check_name("source", source, MAX_SOURCE)
        check_name("who forgets", by, MAX_SOURCE)
        at = self._time(now())
        with self._writing() as db:
            keys = sorted(
                {
                    key
                    for (key,) in db.execute(
                        self._sql("SELECT key FROM facts WHERE namespace = ? AND source = ? AND forgotten_at IS NULL"),
                        (namespace, source),
                    ).fetchall()
                }
            )
            count = db.execute(
                self._sql(
                    "UPDATE facts SET value = 'null', forgotten_at = ?, forgotten_by = ?"
                    " WHERE namespace = ? AND source = ? AND forgotten_at IS NULL"
                ),
                (at, by, namespace, source),
            ).rowcount
            still_known = {row[2] for row in db.execute(self._sql(_CURRENT), (namespace,)).fetchall()}
            detail = f"forgot {count} version(s) of {', '.join(keys) or 'no key'}"
            db.execute(
                self._sql(
                    "INSERT INTO fact_audit (namespace, action, source, writer, detail, at)"
                    " VALUES (?, 'forgot', ?, ?, ?, ?)"
                ),
                (namespace, source, by, detail, at),
            )
        return Forgotten(
            namespace=namespace, source=source, count=count, keys=keys, reverted=sorted(still_known.intersection(keys))
        )

    def _audit_refusal(
        self,
        namespace: str,
        fact: Fact,
        value: str,
        writer: str,
        run_id: str | None,
        call_id: str | None,
        write_key: str | None,
        reason: str,
    ) -> None:
        # Committed on its own, before the refusal is raised; one row per call however often it is retried.
        with self._writing() as db:
            db.execute(
                self._sql(
                    "INSERT INTO fact_audit"
                    " (namespace, action, key, value, source, writer, run_id, call_id, write_key, detail, at)"
                    " VALUES (?, 'refused', ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING"
                ),
                (
                    namespace,
                    fact.key,
                    _kept(value),
                    fact.source,
                    writer,
                    run_id,
                    call_id,
                    write_key,
                    reason,
                    self._time(now()),
                ),
            )

    # -- reads ------------------------------------------------------------------------------------------

    def current(self, namespace: str, key: str | None = None) -> list[FactRecord]:
        """The current facts of `namespace` (or only `key`'s), by key."""
        sql, params = _CURRENT, (namespace,)
        if key is not None:
            sql, params = sql + " AND key = ?", (namespace, key)
        with self._reading() as db:
            rows = db.execute(self._sql(sql + " ORDER BY key"), params).fetchall()
        return [_record(row) for row in rows]

    def history(self, namespace: str, key: str | None = None) -> list[FactRecord]:
        """Every version, oldest first, forgotten ones included (their values erased)."""
        sql, params = f"SELECT {_COLUMNS} FROM facts WHERE namespace = ?", (namespace,)
        if key is not None:
            sql, params = sql + " AND key = ?", (namespace, key)
        with self._reading() as db:
            rows = db.execute(self._sql(sql + " ORDER BY seq"), params).fetchall()
        return [_record(row) for row in rows]

    def audit(self, namespace: str) -> list[FactAudit]:
        with self._reading() as db:
            rows = db.execute(
                self._sql(f"SELECT {_AUDIT_COLUMNS} FROM fact_audit WHERE namespace = ? ORDER BY seq"), (namespace,)
            ).fetchall()
        return [_audit(row) for row in rows]

    # -- what a backend supplies ------------------------------------------------------------------------

    def _reading(self) -> AbstractContextManager[Any]:
        raise NotImplementedError

    def _writing(self) -> AbstractContextManager[Any]:
        raise NotImplementedError

    def _sql(self, text: str) -> str:
        return text

    def _time(self, at: datetime) -> Any:
        return timestamp(at)


class FactNamespace:
    """One namespace of a durable store, with the seed's `FactStore` API (writes by an operator unless a
    runner says otherwise) and the durable store's provenance, history and audit."""

    def __init__(self, store: DurableFactStore, name: str) -> None:
        self.store = store
        self.name = name

    def write(
        self,
        fact: Fact,
        *,
        writer: str = OPERATOR,
        run_id: str | None = None,
        call_id: str | None = None,
        write_key: str | None = None,
    ) -> FactRecord:
        return self.store.write(self.name, fact, writer=writer, run_id=run_id, call_id=call_id, write_key=write_key)

    def record(self, key: str) -> FactRecord | None:
        found = self.store.current(self.name, key)
        return found[0] if found else None

    def get(self, key: str) -> Fact | None:
        found = self.record(key)
        return found.fact if found is not None else None

    def records(self) -> list[FactRecord]:
        return self.store.current(self.name)

    def history(self, key: str | None = None) -> list[FactRecord]:
        return self.store.history(self.name, key)

    def audit(self) -> list[FactAudit]:
        return self.store.audit(self.name)

    def forget(self, source: str, *, by: str = OPERATOR) -> Forgotten:
        return self.store.forget(self.name, source, by=by)

    def forget_source(self, source: str) -> int:
        """Remove every fact from `source` (e.g. a document found to be poisoned); return how many."""
        return self.forget(source).count

    def keys(self) -> list[str]:
        return [record.key for record in self.records()]

    def __iter__(self) -> Iterator[Fact]:
        return iter([record.fact for record in self.records()])

    def __len__(self) -> int:
        return len(self.records())

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and self.record(key) is not None

    def __repr__(self) -> str:
        return f"FactNamespace({self.name!r}, {len(self)} facts)"

    def dump(self) -> str:
        """The current facts as the seed's JSON: `FactStore.load` reads it, and so does `load` here."""
        return FactStore(self).dump()

    def load(self, text: str | bytes, *, writer: str = "load") -> int:
        """Write the facts of a `dump` into this namespace (validated as `FactStore.load` does); how many."""
        facts = list(FactStore.load(text))
        for fact in facts:
            self.write(fact, writer=writer)
        return len(facts)


class SqliteFactStore(DurableFactStore):
    """The embedded store: one SQLite file (`facts.db` in the data directory), shared by one host's
    processes. The file is created on first use, so an agent that never remembers leaves none behind."""

    def __init__(self, path: str | Path, busy_timeout: float = 30.0) -> None:
        self.path = Path(path)
        self.busy_timeout = busy_timeout
        self._file: SqliteFile | None = None
        self._lock = threading.Lock()

    @property
    def file(self) -> SqliteFile:
        with self._lock:
            if self._file is None:
                self._file = SqliteFile(self.path, SQLITE_SCHEMA, self.busy_timeout)
                _scope_write_keys(self._file)
            return self._file

    def _reading(self) -> AbstractContextManager[Any]:
        return self.file.connect()

    def _writing(self) -> AbstractContextManager[Any]:
        return self.file.transaction()


def schema(*, serial: str, time: str) -> str:
    """The tables, in either backend's words for an auto-numbered key and a timestamp: one definition, so
    the SQLite and PostgreSQL stores cannot drift apart."""
    return f"""
CREATE TABLE IF NOT EXISTS facts (
    seq          {serial},
    namespace    TEXT NOT NULL,
    key          TEXT NOT NULL,
    value        TEXT NOT NULL,
    source       TEXT NOT NULL,
    writer       TEXT NOT NULL,
    run_id       TEXT,
    call_id      TEXT,
    write_key    TEXT,
    at           {time} NOT NULL,
    forgotten_at {time},
    forgotten_by TEXT
);
CREATE INDEX IF NOT EXISTS facts_key ON facts (namespace, key, seq);
CREATE INDEX IF NOT EXISTS facts_source ON facts (namespace, source);
CREATE UNIQUE INDEX IF NOT EXISTS facts_write_key ON facts (namespace, write_key);
CREATE TABLE IF NOT EXISTS fact_audit (
    seq       {serial},
    namespace TEXT NOT NULL,
    action    TEXT NOT NULL,
    key       TEXT,
    value     TEXT,
    source    TEXT,
    writer    TEXT NOT NULL,
    run_id    TEXT,
    call_id   TEXT,
    write_key TEXT,
    detail    TEXT NOT NULL,
    at        {time} NOT NULL
);
CREATE INDEX IF NOT EXISTS fact_audit_namespace ON fact_audit (namespace, seq);
CREATE UNIQUE INDEX IF NOT EXISTS fact_audit_write_key ON fact_audit (namespace, action, write_key);
"""


# Files and databases made before write keys were scoped by namespace had them unique across all
# namespaces, as column and table constraints: `_scope_write_keys` here and in duragent/_stores/postgres/schema.py
# removes those when the store is opened.
FACT_TABLES = ("facts", "fact_audit")


SQLITE_SCHEMA = schema(serial="INTEGER PRIMARY KEY AUTOINCREMENT", time="TEXT")


def _scope_write_keys(file: SqliteFile) -> None:
    """A file made before write keys were scoped by namespace: its tables rebuilt without the old constraints
    (SQLite cannot drop a constraint), rows and numbering kept, in one transaction — once per file."""

    def legacy(db: Any) -> list[str]:
        return [t for t in FACT_TABLES if any(row[3] == "u" for row in db.execute(f"PRAGMA index_list({t})"))]

    with file.connect() as db:
        if not legacy(db):
            return
    with file.transaction() as db:
        tables = legacy(db)  # again, under the write lock: another process may have done it meanwhile
        for table in tables:
            db.execute(f"ALTER TABLE {table} RENAME TO {table}_legacy")
            for (index,) in db.execute(
                "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = ? AND sql IS NOT NULL",
                (f"{table}_legacy",),
            ).fetchall():
                db.execute(f"DROP INDEX {index}")
        for statement in SQLITE_SCHEMA.split(";"):
            if statement.strip():
                db.execute(statement)
        for table in tables:
            columns = _COLUMNS if table == "facts" else _AUDIT_COLUMNS
            db.execute(f"INSERT INTO {table} ({columns}) SELECT {columns} FROM {table}_legacy")
            db.execute(f"DROP TABLE {table}_legacy")


def _same_fact(found: FactRecord, fact: Fact, value: str, write_key: str | None) -> None:
    """The version a write key already wrote must be this fact (its value erased if it was forgotten since)."""
    same_value = found.forgotten_at is not None or _value_json(found.value) == value
    if found.key != fact.key or not same_value:
        raise WriteKeyConflict(
            f"write key {write_key!r} already wrote another fact in {found.namespace} (not {fact.key!r} with this"
            " value): the same key is not a retry of that write; nothing was written"
        )


def _value_json(value: JsonValue) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), allow_nan=False)


def _kept(value: str) -> str:
    """A refused value as the audit keeps it: whole when small, else a note of its size (still JSON)."""
    size = len(value.encode())
    return value if size <= MAX_VALUE_BYTES else _value_json(f"<{size:,} bytes, not kept>")


def _when(at: Any) -> str | None:
    return at if at is None or isinstance(at, str) else timestamp(at)


def _fields(columns: str, row: Sequence[Any]) -> dict[str, Any]:
    """A row as the model's fields: JSON values decoded, times as ISO 8601 text on both backends."""
    fields = dict(zip(columns.split(", "), row, strict=True))
    for name in ("at", "forgotten_at"):
        if name in fields:
            fields[name] = _when(fields[name])
    fields["value"] = json.loads(fields["value"]) if fields["value"] is not None else None
    return fields


def _record(row: Sequence[Any]) -> FactRecord:
    return FactRecord(**_fields(_COLUMNS, row))


def _audit(row: Sequence[Any]) -> FactAudit:
    return FactAudit(**_fields(_AUDIT_COLUMNS, row))
