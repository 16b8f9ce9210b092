"""A real PostgreSQL for the tests: the one at `AGENT_TEST_DATABASE_URL`, or one started here from Debian's binaries.

A started server lives in a temporary directory (data, log, unix socket), listens on 127.0.0.1 on a free port,
trusts local connections, skips fsync (a test database need not survive a power cut), and is stopped by the
pid in its `postmaster.pid` — never by name. As root, PostgreSQL refuses to run, so its commands run as the
`postgres` user (`su postgres -c ...`) in a directory that user owns.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shlex
import shutil
import signal
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import psycopg
from psycopg import sql
from psycopg.conninfo import make_conninfo

from ops.devserver import free_port

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
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/pg_ctl"), key=lambda p: int(p.parent.parent.name))
    if found:
        return found[-1].parent
    on_path = shutil.which("pg_ctl")
    return Path(on_path).parent if on_path else None


def with_database(url: str, name: str) -> str:
    """`url` pointing at database `name` instead (libpq URLs and key=value strings alike)."""
    return make_conninfo(url, dbname=name)


class LocalPostgres:
    """A PostgreSQL server this test session started, and so may stop and start again (the fault tests do)."""

    def __init__(self, bin_dir: Path) -> None:
        self.bin_dir = bin_dir
        self.dir = Path(tempfile.mkdtemp(prefix="pg-test-"))
        self.data = self.dir / "data"
        self.log = self.dir / "server.log"
        self.port = free_port()
        self._as_postgres = os.geteuid() == 0
        if self._as_postgres:  # the server's user must own its directory (mkdtemp's is 0700 and root's)
            user = pwd.getpwnam("postgres")
            os.chown(self.dir, user.pw_uid, user.pw_gid)
        self._run(self.bin_dir / "initdb", "-D", self.data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync")
        self.start()

    @property
    def url(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def start(self) -> None:
        options = f"-p {self.port} -k {self.dir} -c listen_addresses=127.0.0.1 -c fsync=off -c full_page_writes=off"
        self._run(self.bin_dir / "pg_ctl", "-D", self.data, "-l", self.log, "-o", options, "-w", "-t", "60", "start")

    def pid(self) -> int | None:
        try:
            return int((self.data / "postmaster.pid").read_text().split()[0])
        except (FileNotFoundError, IndexError, ValueError):
            return None

    def stop(self, timeout: float = 30.0) -> None:
        """Fast shutdown (SIGINT to the postmaster: clients are disconnected) and wait until it is gone."""
        pid = self.pid()
        if pid is None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGINT)
        deadline = time.monotonic() + timeout
        while _alive(pid):
            if time.monotonic() > deadline:
                os.kill(pid, signal.SIGKILL)
                break
            time.sleep(0.05)
        with contextlib.suppress(FileNotFoundError):
            (self.data / "postmaster.pid").unlink()  # left behind only after a SIGKILL

    def close(self) -> None:
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)

    def _run(self, *argv: object) -> None:
        command = [str(a) for a in argv]
        if self._as_postgres:
            command = ["su", "postgres", "-c", shlex.join(command)]
        done = subprocess.run(command, cwd=self.dir, capture_output=True, text=True, timeout=120)
        if done.returncode != 0:
            log = self.log.read_text()[-2000:] if self.log.exists() else ""
            raise RuntimeError(f"{shlex.join(command)} failed ({done.returncode}):\n{done.stdout}{done.stderr}{log}")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie child still "exists"; the postmaster is not our child (pg_ctl daemonizes it), so this is exact.
    return True


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
