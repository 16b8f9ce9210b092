"""The PostgreSQL cut of `bench chaos-net` strikes at a transcript append by the bytes it sees on the wire
(`bench.chaos.network.APPEND`). Here every append a real store makes through a capturing proxy is recognised —
also once psycopg prepared its statements (from a connection's fifth run on, only names and parameters go: that
once left the cut waiting 240 s for an append it could not see) — and a read never is."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator

import pytest
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from agentic.messages import Message
from bench.chaos.network import APPEND
from duragent._stores.postgres import PostgresTranscriptStore
from duragent._stores.postgres.pool import Database
from duragent._stores.transcripts import EMPTY, Transcripts


class Tap:
    """A TCP proxy on loopback that keeps what the client sends."""

    def __init__(self, host: str, port: int) -> None:
        self.sent: list[bytes] = []
        self.server = socket.create_server(("127.0.0.1", 0))
        self.port = self.server.getsockname()[1]
        self.target = (host, port)
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.server.accept()
            except OSError:
                return
            upstream = socket.create_connection(self.target)
            threading.Thread(target=self._pump, args=(client, upstream, True), daemon=True).start()
            threading.Thread(target=self._pump, args=(upstream, client, False), daemon=True).start()

    def _pump(self, source: socket.socket, target: socket.socket, keep: bool) -> None:
        try:
            while data := source.recv(65536):
                if keep:
                    self.sent.append(data)
                target.sendall(data)
        except OSError:
            pass

    def take(self) -> bytes:
        taken, self.sent = b"".join(self.sent), []
        return taken


@pytest.fixture
def tapped(postgres_url: str) -> Iterator[tuple[Tap, Database]]:
    parts = conninfo_to_dict(postgres_url)
    tap = Tap(str(parts.get("host") or "127.0.0.1"), int(parts.get("port") or 5432))
    database = Database(make_conninfo(postgres_url, host="127.0.0.1", port=tap.port), max_size=1)
    try:
        yield tap, database
    finally:
        database.close()
        tap.server.close()


def test_every_append_is_seen_prepared_or_not_and_no_read_is(tapped: tuple[Tap, Database]):
    tap, database = tapped
    transcripts = Transcripts(PostgresTranscriptStore(database))
    head = EMPTY
    for i in range(12):  # one pooled connection: psycopg prepares the append's statements on its fifth run
        tap.take()
        head = transcripts.append(head, [Message(role="tool", content=f"result {i}")], owner="run-1")
        sent = tap.take()
        assert any(pattern in sent for pattern in APPEND), (i, sent[-400:])
    for _ in range(6):  # reads (uncached: a fresh reader each time), prepared in their turn
        Transcripts(PostgresTranscriptStore(database)).load(head)
        sent = tap.take()
        assert sent and not any(pattern in sent for pattern in APPEND), sent[-400:]
