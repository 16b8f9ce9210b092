"""A real PostgreSQL for the tests: the one at `AGENT_TEST_DATABASE_URL`, or one started here from Debian's binaries
(`duragent/_ops/devstack/local_postgres.py`), skipping fsync (a test database need not survive a power cut)."""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import psycopg
from psycopg import sql
from psycopg.conninfo import make_conninfo

from duragent._ops.devstack import local_postgres

HOW_TO_GET_ONE = (
    "PostgreSQL tests need a server: set AGENT_TEST_DATABASE_URL=postgresql://user@host:port/db (a role that may"
    " CREATE DATABASE) or install Debian's binaries (`apt-get install postgresql`; .ci/run does) or point"
    " AGENT_TEST_POSTGRES_BIN at a directory with initdb and pg_ctl"
)


def binaries() -> Path | None:
    """`AGENT_TEST_POSTGRES_BIN` when set (a directory holding initdb and pg_ctl), else the newest Debian
    PostgreSQL bin directory, else the one `pg_ctl` on PATH lives in."""
    chosen = os.environ.get("AGENT_TEST_POSTGRES_BIN", "").strip()
    if chosen:
        return Path(chosen) if (Path(chosen) / "pg_ctl").exists() else None
    return local_postgres.find_binaries()


def with_database(url: str, name: str) -> str:
    """`url` pointing at database `name` instead (libpq URLs and key=value strings alike)."""
    return make_conninfo(url, dbname=name)


class LocalPostgres(local_postgres.LocalPostgres):
    """A server this test session started, and so may stop and start again (the fault tests do)."""

    def __init__(self, bin_dir: Path) -> None:
        super().__init__(bin_dir, settings={"fsync": "off", "full_page_writes": "off"})


@contextlib.contextmanager
def scratch_database(admin_url: str) -> Iterator[str]:
    """A fresh, empty database on the server at `admin_url`, dropped afterwards (even with connections left)."""
    name = f"t_{uuid.uuid4().hex[:16]}"
    with psycopg.connect(admin_url, autocommit=True) as db:
        db.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    try:
        yield with_database(admin_url, name)
    finally:
        with contextlib.suppress(psycopg.OperationalError), psycopg.connect(admin_url, autocommit=True) as db:
            db.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
