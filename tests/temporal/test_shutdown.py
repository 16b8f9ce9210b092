"""Commands that start processes stop them when they are stopped: SIGTERM and SIGHUP act like Ctrl-C.

Each test runs a real command as a subprocess, records every process below it, signals the command and
checks that nothing it started is left running (and that its ports are free again).
"""

from __future__ import annotations

import signal
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from duragent._ops.devstack.devserver import free_port, port_free
from tests.support.processes import Command, alive, descendants, wait_gone

# Processes of its own: servers and command lines, stopped by signals.
pytestmark = pytest.mark.system


@pytest.fixture
def run(tmp_path: Path) -> Iterator[type[Command]]:
    started: list[Command] = []

    class Tracked(Command):
        def __init__(self, argv: list[str], env: dict[str, str] | None = None) -> None:
            # TMPDIR: a command stopped by a signal keeps its scratch directory for its logs (bench, chaos);
            # under the test's own directory, not left in the machine's /tmp by every `make test`.
            own = {"AGENT_DATA_DIR": str(tmp_path / "data"), "TMPDIR": str(tmp_path)}
            super().__init__(argv, own | (env or {}))
            started.append(self)

    yield Tracked
    for command in started:
        command.cleanup()


# -- starter.py server ----------------------------------------------------------------------------


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
def test_server_stops_its_temporal_child_and_frees_its_ports(run, tmp_path: Path, sig: int) -> None:
    port, ui_port = free_port(), free_port()
    server = run(
        ["starter.py", "server", "--port", str(port), "--ui-port", str(ui_port), "--db", str(tmp_path / "d.db")]
    )
    banner = server.wait_for("Temporal dev server on")
    child = int(banner.split("(pid ", 1)[1].split(")", 1)[0])
    assert child in server.seen and not port_free(port)

    assert server.signal_and_wait(sig) == 0
    assert wait_gone(server.seen) == set(), f"left running after {signal.Signals(sig).name}"
    assert not alive(child) and port_free(port) and port_free(ui_port)
    assert "Temporal dev server stopped" in "".join(server.out)


@pytest.mark.parametrize("busy", ["port", "ui"])
def test_server_on_a_busy_port_says_which_and_exits_non_zero(run, tmp_path: Path, busy: str) -> None:
    port, ui_port = free_port(), free_port()
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", port if busy == "port" else ui_port))
        holder.listen()
        server = run(
            ["starter.py", "server", "--port", str(port), "--ui-port", str(ui_port), "--db", str(tmp_path / "d.db")]
        )
        assert server.wait(60) == 1
    errors = [line for line in server.err if line.strip()]
    expected = (
        f"error: port {port} is already in use on 127.0.0.1 (another Temporal server?): stop what holds it,"
        " or choose another with --port"
        if busy == "port"
        else f"error: Web UI port {ui_port} is already in use on 127.0.0.1: stop what holds it, or choose another"
        " with --ui-port"
    )
    assert errors == [expected + "\n"]
    assert not any("Temporal dev server on" in line for line in server.out)  # no false success


# -- the other commands that start processes --------------------------------------------------------


def stopped_cleanly(command: Command, sig: int = signal.SIGTERM) -> None:
    """Signal `command`; it exits as after Ctrl-C (130, one line, no traceback) and nothing it started is left."""
    assert command.seen, "the command had started nothing yet"
    assert command.signal_and_wait(sig) == 130
    assert wait_gone(command.seen) == set(), f"left running after {signal.Signals(sig).name}"
    assert "Traceback" not in "".join(command.err)


def test_demo_stops_its_server_and_worker(run) -> None:
    demo = run(["starter.py", "demo"], {"TEMPORAL_ADDRESS": f"127.0.0.1:{free_port()}"})
    demo.wait_for("[billing]")  # printed once the server and a worker are up
    assert len(demo.seen) >= 2  # the temporal server and the worker process (and their children)
    stopped_cleanly(demo)


def test_bench_chaos_temporal_stops_its_server_and_worker(run) -> None:
    bench = run(
        ["-m", "bench", "chaos", "--engine", "temporal", "--runs", "2", "--kills", "0", "--server-restarts", "0"]
    )
    bench.wait_for("started 2 runs on")
    assert len(bench.seen) >= 2
    stopped_cleanly(bench)
    assert "bench chaos: interrupted (SIGTERM); stopped what it started" in "".join(bench.err)


def test_bench_chaos_baseline_stops_its_job_processes(run) -> None:
    bench = run(["-m", "bench", "chaos", "--engine", "baseline", "--runs", "6", "--kills", "0"])
    bench.wait_for("started 6 job processes")
    stopped_cleanly(bench, signal.SIGHUP)


def _effects(path: Path) -> int:
    if not path.exists():
        return 0
    from duragent._stores.ledger import EffectsLedger

    return len(EffectsLedger(path).effects())


def _lease_expired(db: Path, run_id: str) -> bool:
    import sqlite3

    with sqlite3.connect(db) as connection:
        row = connection.execute("SELECT lease_expires FROM runs WHERE run_id = ?", (run_id,)).fetchone()
    return row is not None and row[0] <= time.time()


def test_job_recover_stops_the_workers_it_waits_for(run, tmp_path: Path) -> None:
    common = ["--db", str(tmp_path / "baseline.db"), "--ledger", str(tmp_path / "ledger.db")]
    slow = ["--scenario", "migration", "--option", "records=20", "--option", "step_delay=1", "--lease-seconds", "1"]
    first = run(["-m", "duragent._ops.cli.job", "run", "--id", "slow", *slow, *common])
    deadline = time.monotonic() + 120
    # The run has made its first effect, so its row and lease are stored (the ledger file alone may exist
    # before the run does, on a busy machine).
    while not _effects(tmp_path / "ledger.db") and time.monotonic() < deadline:
        time.sleep(0.1)
    first.process.kill()  # a crash: the run is left with a lease that expires in a second
    first.wait()
    while not _lease_expired(tmp_path / "baseline.db", "slow") and time.monotonic() < deadline:
        time.sleep(0.1)
    recover = run(["-m", "duragent._ops.cli.job", "recover", "--lease-seconds", "1", *common])
    deadline = time.monotonic() + 60
    while not descendants(recover.process.pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    recover.seen |= descendants(recover.process.pid)
    stopped_cleanly(recover)
