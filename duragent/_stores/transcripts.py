"""The transcript store: every message stored once, content-addressed, and a transcript as a hash chain.

Why: an agent that hands its whole transcript to every model call grows its workflow history
quadratically (sdk-python issue 1890: an agent terminated at 50 MB after 53 model calls). Here a durable
runner hands a model call one *head* reference plus the few messages added since; the store resolves the
rest. A head names a whole transcript — `node = sha256(previous node + message ref)` — so the same
transcript always has the same head, every write is idempotent (INSERT OR IGNORE of immutable rows), and
a retry or a replay sees exactly the input the first attempt saw.

Every read is checked against the references (`TranscriptIntegrityError` otherwise): the head comes from the
run's history, so a row rewritten in the store is an error, never a different conversation. References are
plain SHA-256 by default; with the codec keys, `duragent._stores.encrypted` supplies keyed ones (`Refs`), so the refs
in the file do not let anyone confirm a guess of a message.

Large contents are *claim-checked*: a tool output or model reply over a threshold is stored as a blob and
the message carries a preview plus `content_ref`; readers expand it back. The store is an interface:
`SqliteTranscriptStore` is the embedded one (next to the effects ledger); workers on several hosts share
`duragent._stores.postgres.PostgresTranscriptStore` (`AGENT_DATABASE_URL`; duragent/_stores/configured.py chooses).

Rows are shared: two runs that start alike (the same system prompt and task) share their first nodes and
blobs. So a write names its *owner* (the run id) and the store records `(ref, owner)` next to the row, in the
same transaction; `release(owner)` (retention, `starter.py prune`) drops one run's ownerships and deletes only
the rows nobody owns any more. Every node on a run's chain was written by that run (a chain starts at EMPTY
in every run and a continuation keeps its run id), so a run that is kept keeps its whole transcript. Rows
written without an owner — and rows stored before owners were recorded — belong to `UNOWNED` and are never
released: every row has at least one owner row, always.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import sqlite3
import threading
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from agentic.messages import Message, canonical_json
from duragent._stores.sqlite_file import SqliteFile

EMPTY = "empty"  # the head of a transcript with no messages
UNOWNED = ""  # the owner of rows written without one: nobody can release them
PREVIEW_CHARS = 80


class TranscriptStore(Protocol):
    """`owner`: the run the rows are written for (None: `UNOWNED`, never released)."""

    def put_blobs(self, blobs: dict[str, str], owner: str | None = None) -> None: ...
    def get_blobs(self, refs: Sequence[str]) -> dict[str, str]: ...
    def put_messages(  # message bodies and the nodes chaining them, in one transaction
        self, blobs: dict[str, str], nodes: Sequence[tuple[str, str, str]], owner: str | None = None
    ) -> None: ...
    def get_nodes(self, refs: Sequence[str]) -> dict[str, tuple[str, str]]: ...  # node -> (previous, message)


@dataclass(frozen=True)
class Released:
    """What `release(owner)` did: rows deleted (owned by nobody else) and rows kept (another run owns them)."""

    nodes: int = 0
    blobs: int = 0
    shared: int = 0


class ReleasableStore(TranscriptStore, Protocol):
    """A store that records owners, so one run's rows can be deleted without touching another's."""

    def owned_blobs(self, owner: str) -> list[str]: ...
    def owners_of(self, ref: str) -> set[str]: ...  # the runs a row was written for
    def release(self, owner: str) -> Released: ...


def releasable(store: TranscriptStore) -> ReleasableStore:
    """`store`, if it records owners (the SQLite and PostgreSQL stores, and the encrypted wrapper of either)."""
    if not (hasattr(store, "release") and hasattr(store, "owned_blobs")):
        raise TypeError(f"{type(store).__name__} does not record owners: its rows cannot be released by run")
    return store  # type: ignore[return-value]


class PayloadTooLarge(ValueError):
    """Over the hard cap: not stored, not retried — the caller must fail clearly instead."""


class TranscriptNotFound(KeyError):
    """A head, or a message under it, that this store does not hold. Writes are committed before an activity
    returns its head, so the store that wrote it would have it: the head was written to *another* store —
    typically a worker on another host with its own SQLite files. Retrying here cannot help."""

    def __str__(self) -> str:  # KeyError's own str() would quote the message
        return str(self.args[0]) if self.args else "transcript not found"


class TranscriptIntegrityError(ValueError):
    """A stored node or body does not match its reference: the store was written to by someone else."""


SHA256 = "sha256:"


def ref_of(text: str) -> str:
    return SHA256 + hashlib.sha256(text.encode()).hexdigest()


def node_text(previous: str, message_ref: str) -> str:
    return f"{previous}\n{message_ref}"


def node_of(previous: str, message_ref: str) -> str:
    return ref_of(node_text(previous, message_ref))


class Refs(Protocol):
    """How references are made (deterministically, so writes stay idempotent) and checked."""

    def of(self, text: str) -> str: ...
    def matches(self, ref: str, text: str) -> bool: ...


class ContentRefs:
    """Unkeyed SHA-256: the default, and what every store held before keyed refs."""

    def of(self, text: str) -> str:
        return ref_of(text)

    def matches(self, ref: str, text: str) -> bool:
        return ref.startswith(SHA256) and same_text(ref_of(text), ref)


def same_text(expected: str, given: str) -> bool:
    """Constant-time equality of a reference we computed and one we were handed, whatever characters the handed
    one holds (compare_digest refuses non-ASCII text with a TypeError; such a reference is simply not ours)."""
    return hmac.compare_digest(expected.encode(), given.encode("utf-8", "surrogatepass"))


def encode(message: Message) -> str:
    return canonical_json(message.to_dict())


class Transcripts:
    """Appends and reads transcripts on any `TranscriptStore`, with claim checks and a read cache.

    The cache maps heads to message lists; since a head names an immutable transcript, a cached list is
    never stale, and reading the next head only fetches the few nodes added since. A run's transcript only
    grows, so a head extended here gives its place to the longer one: the cache holds one transcript per
    active run (not each run's last few heads), and `cache_size` is how many concurrent runs a worker reads
    without a round trip. A head read again (a retried activity) is fetched from the store: correct, slower.
    Memory: up to `cache_size` transcripts, claim-checked contents held as their previews only.
    """

    def __init__(self, store: TranscriptStore, cache_size: int = 1024, *, refs: Refs | None = None) -> None:
        self.store = store
        # The store may bring its own (the encrypted one's are keyed): then every writer and reader agrees.
        self.refs: Refs = refs or getattr(store, "refs", None) or ContentRefs()
        self._cache: OrderedDict[str, list[Message]] = OrderedDict()
        self._cache_size = cache_size
        self._lock = threading.Lock()

    def claim_check(
        self, text: str, threshold: int, hard_cap: int, what: str, owner: str | None = None
    ) -> tuple[str, str | None]:
        """(text, None) when small; (preview, blob ref) when over `threshold`; PayloadTooLarge over the cap."""
        size = len(text.encode())
        if size > hard_cap:
            raise PayloadTooLarge(f"{what} is {size:,} bytes, over the hard cap of {hard_cap:,} bytes")
        if size <= threshold:
            return text, None
        ref = self.refs.of(text)
        self.store.put_blobs({ref: text}, owner)
        preview = text[:PREVIEW_CHARS] + f"… [{size:,} bytes, stored as {ref[:19]}…]"
        return preview, ref

    def keep(self, text: str, owner: str | None = None) -> str:
        """Store `text` as a blob and return its ref: the same text always has the same ref. Unkeyed SHA-256
        even with keyed refs: the workflow names this document itself (deterministic code holds no key), and
        what it keeps (recorded tool schemas) is not secret."""
        ref = ref_of(text)
        self.store.put_blobs({ref: text}, owner)
        return ref

    def holds(self, text: str) -> bool:
        """Whether this store keeps `text`, as `keep` stored it: a record the worker made, never a claim."""
        ref = ref_of(text)
        try:
            return self.store.get_blobs([ref]).get(ref) == text
        except KeyError:  # TranscriptNotFound: not kept here
            return False

    def append(self, head: str, messages: Sequence[Message], owner: str | None = None) -> str:
        """`head` plus `messages`, stored; returns the new head. `owner`: the run that writes them (it must
        own `head` too: a run only ever appends to its own transcript)."""
        base = head
        blobs: dict[str, str] = {}
        nodes: list[tuple[str, str, str]] = []
        for message in messages:
            body = encode(message)
            message_ref = self.refs.of(body)
            blobs[message_ref] = body
            node = self.refs.of(node_text(head, message_ref))
            nodes.append((node, head, message_ref))
            head = node
        if nodes:
            # One transaction (one write lock, one commit): a node never points at nothing, and appending a
            # message costs one round trip to the store instead of two.
            self.store.put_messages(blobs, nodes, owner)
            self._remember_longer(base, head, messages)
        return head

    def load(self, head: str, *, expand: bool = True) -> list[Message]:
        """The messages of `head`, oldest first; with `expand`, claim-checked contents restored."""
        messages = self._stubs(head)
        return self.expanded(messages) if expand else messages

    def expanded(self, messages: Sequence[Message]) -> list[Message]:
        """`messages` with their claim-checked contents restored from the store."""
        refs = [m.content_ref for m in messages if m.content_ref]
        if not refs:
            return list(messages)
        contents = self._checked_blobs(refs)
        return [
            m.model_copy(update={"content": contents[m.content_ref], "content_ref": None}) if m.content_ref else m
            for m in messages
        ]

    def owners_of(self, head: str) -> set[str] | None:
        """The runs `head`'s node was written for; None from a store that records no owners."""
        owners = getattr(self.store, "owners_of", None)
        return None if owners is None else set(owners(head))

    def require(self, head: str) -> None:
        """`TranscriptNotFound` unless this store holds `head`: one lookup, made before a tool runs, so a run
        whose transcript is elsewhere fails before its effect rather than after."""
        if head == EMPTY:
            return
        with self._lock:
            if head in self._cache:
                return
        if head not in self.store.get_nodes([head]):
            raise TranscriptNotFound(f"transcript head {_short(head)} not found in this worker's store")

    def resolve(self, text: str, ref: str | None) -> str:
        return self._checked_blobs([ref])[ref] if ref else text

    def _checked_blobs(self, refs: Sequence[str]) -> dict[str, str]:
        bodies = self.store.get_blobs(refs)
        for ref in refs:
            if not self.refs.matches(ref, bodies[ref]):
                raise TranscriptIntegrityError(f"transcript body {ref[:24]}… does not match its reference")
        return bodies

    def size(self, head: str) -> int:
        """Bytes of the transcript as a model would read it (expanded contents)."""
        return sum(len(encode(m).encode()) for m in self.load(head))

    def _remember_longer(self, base: str, head: str, messages: Sequence[Message]) -> None:
        """A transcript this process just wrote on top of one it has read: the next activity here (the tool
        after the model call, the model call after the tool) then reads it without a round trip."""
        with self._lock:
            known = [] if base == EMPTY else self._cache.pop(base, None)
            if known is not None:
                self._remember(head, [*known, *messages])

    def _remember(self, head: str, messages: list[Message]) -> None:
        self._cache[head] = messages
        self._cache.move_to_end(head)
        while len(self._cache) > self._cache_size:
            self._cache.popitem(last=False)

    def _stubs(self, head: str) -> list[Message]:
        chain: list[str] = []  # message refs newest first, back to a cached head or the start
        cursor = head
        cached: list[Message] | None = None  # held here: another thread may drop it from the cache meanwhile
        while cursor != EMPTY:
            with self._lock:
                cached = self._cache.get(cursor)
            if cached is not None:
                break
            found = self.store.get_nodes([cursor])
            if cursor not in found:
                raise TranscriptNotFound(
                    f"transcript head {_short(head)} not found in this worker's store"
                    + ("" if cursor == head else f" (its node {_short(cursor)} is missing)")
                )
            previous, message_ref = found[cursor]
            if not self.refs.matches(cursor, node_text(previous, message_ref)):
                raise TranscriptIntegrityError(f"transcript node {cursor[:24]}… does not match its reference")
            chain.append(message_ref)
            cursor = previous
        if not chain:  # `head` itself is cached (or empty)
            with self._lock:
                if head in self._cache:
                    self._cache.move_to_end(head)
            return list(cached or [])
        bodies = self._checked_blobs(chain)
        messages = (cached or []) + [Message.from_dict(json.loads(bodies[r])) for r in reversed(chain)]
        with self._lock:
            self._cache.pop(cursor, None)  # extended: the longer transcript takes its place
            self._remember(head, messages)
        return list(messages)


class SqliteTranscriptStore:
    """The embedded store: one SQLite file next to the effects ledger. Writers and `release` each take the
    file's write lock (`BEGIN IMMEDIATE`), so a release and a write are never interleaved: a write before it
    leaves an owner row the release sees; a write after it inserts again what the release deleted."""

    SCHEMA = (
        "CREATE TABLE IF NOT EXISTS blobs (ref TEXT PRIMARY KEY, body TEXT NOT NULL);"
        "CREATE TABLE IF NOT EXISTS nodes (ref TEXT PRIMARY KEY, previous TEXT NOT NULL, message TEXT NOT NULL);"
        "CREATE TABLE IF NOT EXISTS owners (ref TEXT NOT NULL, run_id TEXT NOT NULL, PRIMARY KEY (ref, run_id))"
        " WITHOUT ROWID;"
        "CREATE INDEX IF NOT EXISTS owners_run ON owners (run_id);"
    )
    OWNERS_VERSION = 1  # PRAGMA user_version once the rows stored before owners existed were given one

    def __init__(self, path: str | Path, busy_timeout: float = 30.0) -> None:
        self.file = SqliteFile(path, self.SCHEMA, busy_timeout)
        with self.file.connect() as db:
            current = db.execute("PRAGMA user_version").fetchone()[0]
        if current < self.OWNERS_VERSION:
            with self.file.transaction() as db:  # once per file: the check is repeated under the write lock
                if db.execute("PRAGMA user_version").fetchone()[0] < self.OWNERS_VERSION:
                    # Rows written before owners were recorded: whose they are is unknown, so they are kept.
                    for table in ("blobs", "nodes"):
                        db.execute(f"INSERT OR IGNORE INTO owners (ref, run_id) SELECT ref, ? FROM {table}", (UNOWNED,))
                    db.execute(f"PRAGMA user_version = {self.OWNERS_VERSION}")

    def put_blobs(self, blobs: dict[str, str], owner: str | None = None) -> None:
        self.put_messages(blobs, [], owner)

    def get_blobs(self, refs: Sequence[str]) -> dict[str, str]:
        found: dict[str, str] = {}
        with self.file.connect() as db:
            for chunk in _chunks(list(dict.fromkeys(refs)), 500):
                marks = ",".join("?" * len(chunk))
                found |= dict(db.execute(f"SELECT ref, body FROM blobs WHERE ref IN ({marks})", chunk).fetchall())
        return require_all(refs, found)

    def put_messages(
        self, blobs: dict[str, str], nodes: Sequence[tuple[str, str, str]], owner: str | None = None
    ) -> None:
        with self.file.transaction() as db:
            db.executemany("INSERT OR IGNORE INTO blobs(ref, body) VALUES (?, ?)", blobs.items())
            db.executemany("INSERT OR IGNORE INTO nodes(ref, previous, message) VALUES (?, ?, ?)", nodes)
            # The bodies' and the nodes' owner rows in one statement (the transaction makes them all or none).
            _own(db, [*blobs, *(node for node, _, _ in nodes)], owner)

    def get_nodes(self, refs: Sequence[str]) -> dict[str, tuple[str, str]]:
        with self.file.connect() as db:
            marks = ",".join("?" * len(refs))
            rows = db.execute(f"SELECT ref, previous, message FROM nodes WHERE ref IN ({marks})", list(refs))
            return {ref: (previous, message) for ref, previous, message in rows.fetchall()}

    def owned_blobs(self, owner: str) -> list[str]:
        with self.file.connect() as db:
            rows = db.execute(
                "SELECT o.ref FROM owners o JOIN blobs b ON b.ref = o.ref WHERE o.run_id = ? ORDER BY o.ref", (owner,)
            )
            return [ref for (ref,) in rows.fetchall()]

    def owners_of(self, ref: str) -> set[str]:
        with self.file.connect() as db:
            return {run for (run,) in db.execute("SELECT run_id FROM owners WHERE ref = ?", (ref,)).fetchall()}

    def release(self, owner: str) -> Released:
        check_releasable(owner)
        with self.file.transaction() as db:
            refs = [ref for (ref,) in db.execute("SELECT ref FROM owners WHERE run_id = ?", (owner,)).fetchall()]
            db.execute("DELETE FROM owners WHERE run_id = ?", (owner,))
            nodes = blobs = shared = 0
            for chunk in _chunks(refs, 500):
                marks = ",".join("?" * len(chunk))
                shared += db.execute(
                    f"SELECT COUNT(DISTINCT ref) FROM owners WHERE ref IN ({marks})", chunk
                ).fetchone()[0]
                unowned = f"ref IN ({marks}) AND NOT EXISTS (SELECT 1 FROM owners o WHERE o.ref = {{table}}.ref)"
                nodes += db.execute(f"DELETE FROM nodes WHERE {unowned.format(table='nodes')}", chunk).rowcount
                blobs += db.execute(f"DELETE FROM blobs WHERE {unowned.format(table='blobs')}", chunk).rowcount
        return Released(nodes=nodes, blobs=blobs, shared=shared)


def _own(db: sqlite3.Connection, refs: Iterable[str], owner: str | None) -> None:
    mine = owner or UNOWNED
    db.executemany("INSERT OR IGNORE INTO owners(ref, run_id) VALUES (?, ?)", ((ref, mine) for ref in refs))


def check_releasable(owner: str) -> None:
    if not owner:
        raise ValueError("rows without an owner are never released: name the run whose rows to release")


def require_all(refs: Sequence[str], found: dict[str, str]) -> dict[str, str]:
    """`found`, or `TranscriptNotFound` naming what is missing: a blob is never silently absent."""
    missing = set(refs) - set(found)
    if missing:
        raise TranscriptNotFound(
            f"{len(missing)} blob(s) missing from the transcript store, e.g. {sorted(missing)[0]}:"
            " not found in this worker's store"
        )
    return found


def _short(ref: str) -> str:
    """Enough of a reference to find it in a log (the whole hash is 71 characters)."""
    return ref[:23] + "…" if len(ref) > 24 else ref


def _chunks(items: list[str], size: int) -> Iterator[list[str]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]
