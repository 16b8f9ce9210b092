"""`python starter.py migrate`: the stores' tables created in AGENT_DATABASE_URL's PostgreSQL, said in one line
that names host:port/database and never the URL (its password); re-running changes nothing and says so; an
unreachable database or a missing URL is one error line and a non-zero exit. Real subprocesses, a real server."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest
from psycopg.conninfo import make_conninfo

from duragent._config.settings import ROOT
from duragent._ops.devstack.devserver import free_port
from duragent._stores.postgres import describe
from tests.support.backends import POSTGRES_TABLES

# Processes of its own: `starter.py migrate`.
pytestmark = pytest.mark.system

PASSWORD = "s3cret-never-shown"


def migrate(env: dict[str, str], *flags: str) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "starter.py", "migrate", *flags]
    return subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)


def tables(url: str) -> set[str]:
    with psycopg.connect(url) as db:
        return {r[0] for r in db.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")}


def test_migrate_creates_the_tables_once_and_says_what_it_did(postgres_url: str, tmp_path: Path) -> None:
    url = make_conninfo(postgres_url, password=PASSWORD)  # the test server trusts local users and ignores it
    env = {"AGENT_DATABASE_URL": url, "AGENT_DATA_DIR": str(tmp_path), "PATH": "/usr/bin:/bin"}
    assert tables(postgres_url) == set()

    first = migrate(env)
    assert first.returncode == 0, first.stderr
    assert first.stdout == f"created {', '.join(POSTGRES_TABLES)} in PostgreSQL at {describe(url)}\n"
    assert first.stderr == "" and PASSWORD not in first.stdout
    assert tables(postgres_url) == set(POSTGRES_TABLES)

    again = migrate(env, "--json")
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout) == {
        "database": describe(url),
        "created": [],
        "existing": list(POSTGRES_TABLES),
    }
    assert migrate(env).stdout == f"the stores' tables were already in PostgreSQL at {describe(url)}: nothing to do\n"
    assert not list(tmp_path.iterdir()), "no SQLite file was made on the side"


def test_migrate_without_a_reachable_database_is_one_error_line(tmp_path: Path) -> None:
    url = f"postgresql://agent:{PASSWORD}@127.0.0.1:{free_port()}/agents"  # nothing listens there
    down = migrate({"AGENT_DATABASE_URL": url, "AGENT_DATA_DIR": str(tmp_path), "PATH": "/usr/bin:/bin"})
    assert down.returncode == 1 and down.stdout == ""
    assert down.stderr.startswith(f"error: PostgreSQL at {describe(url)} is unavailable: ")
    assert len(down.stderr.splitlines()) == 1 and PASSWORD not in down.stderr


def test_migrate_without_a_database_url_refuses_loudly(tmp_path: Path) -> None:
    unset = migrate({"AGENT_DATA_DIR": str(tmp_path), "PATH": "/usr/bin:/bin"})
    assert unset.returncode == 2 and unset.stdout == ""
    assert unset.stderr.startswith("error: AGENT_DATABASE_URL is not set: nothing to migrate")
    assert len(unset.stderr.splitlines()) == 1
