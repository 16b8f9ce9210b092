"""A PostgreSQL server this process starts from the distribution's binaries, in a directory of its own — for
the tests (which stop and start it under running workers) and the benchmark's PostgreSQL-stores row.

It lives in that directory (data, log, unix socket), listens on 127.0.0.1 on a free port, trusts local
connections, and is stopped by the pid in its `postmaster.pid` — never by name. As root, PostgreSQL refuses
to run, so its commands run as the `postgres` user (`su postgres -c ...`) in a directory that user owns.
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
from collections.abc import Mapping
from pathlib import Path

from duragent._ops.devstack.devserver import free_port


def find_binaries() -> Path | None:
    """The newest Debian PostgreSQL bin directory (/usr/lib/postgresql/N/bin), else where `pg_ctl` on PATH is."""
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/pg_ctl"), key=lambda p: int(p.parent.parent.name))
    if found:
        return found[-1].parent
    on_path = shutil.which("pg_ctl")
    return Path(on_path).parent if on_path else None


class LocalPostgres:
    """A server that may be stopped and started again (the fault tests do). `settings` are server settings
    (`-c name=value`) on top of PostgreSQL's defaults."""

    def __init__(self, bin_dir: Path, *, settings: Mapping[str, str] | None = None, parent: Path | None = None) -> None:
        """`parent`: where its directory goes (default: the temp directory, which the `postgres` user must reach)."""
        self.bin_dir = bin_dir
        self.settings = dict(settings or {})
        self.dir = Path(tempfile.mkdtemp(prefix="pg-local-", dir=parent))
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
        options = f"-p {self.port} -k {self.dir} -c listen_addresses=127.0.0.1"
        options += "".join(f" -c {name}={value}" for name, value in self.settings.items())
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
