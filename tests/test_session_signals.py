"""A test session stopped with SIGTERM or SIGHUP (a CI timeout, `kill` of a `make test`, a closed terminal) stops
what its fixtures started in sessions of their own, as Ctrl-C does (tests/conftest.py runs the session under
`stop_on_signals`): played for real on a nested `pytest -n 1` — its controller and worker in one process group,
signalled together as a shell's kill of the job would — whose session fixture started a process of its own."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.system  # a pytest session of its own, with an xdist worker

ROOT = Path(__file__).resolve().parents[1]


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"  # a zombie has stopped; only its parent has not collected it yet


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
def test_a_signalled_session_stops_the_processes_its_fixtures_started(tmp_path: Path, signum: int) -> None:
    pid_file = tmp_path / "server.pid"
    session = subprocess.Popen(
        [sys.executable, "-m", "pytest", "-n", "1", "-p", "no:cacheprovider", "tests/support/signalled_session.py"],
        cwd=ROOT,
        env=os.environ | {"SIGNALLED_SESSION_PID_FILE": str(pid_file)},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    server = None
    try:
        deadline = time.monotonic() + 60
        while not pid_file.exists() or not pid_file.read_text():
            assert session.poll() is None and time.monotonic() < deadline, "the nested session never started"
            time.sleep(0.1)
        server = int(pid_file.read_text())
        assert alive(server) and session.poll() is None
        os.killpg(session.pid, signum)
        output, _ = session.communicate(timeout=60)
    finally:
        if session.poll() is None:
            os.killpg(session.pid, signal.SIGKILL)
            session.wait()
    left = alive(server)
    if left:
        os.kill(server, signal.SIGKILL)  # the test's own cleanup: the process must not outlive a failure either
    assert session.returncode != 0 and signal.Signals(signum).name in output, output[-2000:]
    assert not left, "the session's fixture left its process running"
