"""The PostgreSQL the throughput benchmark's PostgreSQL-stores row runs against: a scratch database in the server
at `--postgres-url`, or one started here from Debian's binaries when they are installed — durable like the
SQLite stores it is compared with (fsync on; `synchronous_commit=off` is SQLite's WAL + `synchronous=NORMAL`:
a killed process loses nothing committed, a power cut may lose the last moments), with `pg_stat_statements`
loaded so the stores' statements can be counted. Neither available: no row, and the output says why."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Callable, Iterator

import psycopg
from psycopg import sql
from psycopg.conninfo import make_conninfo

from duragent._ops.devstack.local_postgres import LocalPostgres, find_binaries
from duragent._stores.postgres import describe

SETTINGS = {"synchronous_commit": "off", "shared_preload_libraries": "pg_stat_statements"}


@contextlib.contextmanager
def bench_database(server_url: str | None, say: Callable[[str], None]) -> Iterator[str | None]:
    """A fresh database for the PostgreSQL stores, dropped afterwards; None when there is no server to use."""
    server: LocalPostgres | None = None
    if server_url is None:
        bin_dir = find_binaries()
        if bin_dir is None:
            say("  no PostgreSQL (--postgres-url, or Debian's postgresql package): no PostgreSQL-stores row")
            yield None
            return
        server = LocalPostgres(bin_dir, settings=SETTINGS)
        server_url = server.url
    name = f"bench_{uuid.uuid4().hex[:12]}"
    created = False
    try:
        with psycopg.connect(server_url, autocommit=True) as db:
            db.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        created = True
        url = make_conninfo(server_url, dbname=name)
        with contextlib.suppress(psycopg.Error), psycopg.connect(url, autocommit=True) as db:
            db.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")  # counts writes where it can
        say(f"  PostgreSQL stores at {describe(url)}" + (" (started here)" if server else ""))
        yield url
    finally:
        if created:
            with contextlib.suppress(psycopg.Error), psycopg.connect(server_url, autocommit=True) as db:
                db.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
        if server is not None:
            server.close()
