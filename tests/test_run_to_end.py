"""`run_to_end` (tests/support/processes.py): a command interrupted by its test, or past its timeout, gets to stop
what it started in sessions of its own. `subprocess.run` SIGKILLed it a quarter of a second after an interrupt,
and a bench's dev servers and workers outlived the test run."""

from __future__ import annotations

import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import FrameType

import pytest

from tests.support.processes import alive, kill_all, run_to_end, run_to_end_async, wait_gone

pytestmark = pytest.mark.system

TIMEOUT = 5  # seconds: the command starts its child in a fraction of one, under load in one or two

# Starts a child in a session of its own (as the bench starts a dev server), writes its pid, and on SIGTERM
# stops it before exiting — what our commands do.
COMMAND = """
import os, signal, subprocess, sys, time
from pathlib import Path
def stop(signum, frame):
    child.terminate()
    child.wait()
    sys.exit(0)
signal.signal(signal.SIGTERM, stop)  # before the pid is written: the test signals only once it is
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"], start_new_session=True)
written = Path(sys.argv[1] + ".tmp")
written.write_text(f"{os.getpid()} {child.pid}")
written.rename(sys.argv[1])  # whole when it appears
time.sleep(600)
"""


@pytest.fixture
def child_pid_file(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "child.pid"
    yield path
    if path.exists():
        kill_all(int(pid) for pid in path.read_text().split())  # the control's survivor, or what a failed test left


def started_child(path: Path) -> int:
    assert path.exists(), f"the command did not start its child within {TIMEOUT} s"
    return int(path.read_text().split()[1])


def test_a_command_past_its_timeout_stops_what_it_started(child_pid_file: Path) -> None:
    argv = [sys.executable, "-c", COMMAND, str(child_pid_file)]
    with pytest.raises(subprocess.TimeoutExpired):
        run_to_end(argv, timeout=TIMEOUT)
    assert wait_gone([started_child(child_pid_file)], timeout=10) == set()


def test_an_interrupted_test_lets_the_command_stop_what_it_started(child_pid_file: Path) -> None:
    def interrupt(signum: int, frame: FrameType | None) -> None:
        if not child_pid_file.exists():  # not started yet: interrupt a little later
            signal.setitimer(signal.ITIMER_REAL, 0.2)
            return
        raise KeyboardInterrupt  # what the session's SIGTERM/SIGHUP handler raises (tests/conftest.py)

    previous = signal.signal(signal.SIGALRM, interrupt)
    signal.setitimer(signal.ITIMER_REAL, 0.5)
    try:
        with pytest.raises(KeyboardInterrupt):
            run_to_end([sys.executable, "-c", COMMAND, str(child_pid_file)], timeout=60)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    assert wait_gone([started_child(child_pid_file)], timeout=10) == set()


async def test_an_async_test_s_command_past_its_timeout_stops_what_it_started(child_pid_file: Path) -> None:
    """The same for async tests (`tests/ops/test_cli.py`'s `starter`: the demo starts a server and a worker)."""
    with pytest.raises(TimeoutError):
        await run_to_end_async([sys.executable, "-c", COMMAND, str(child_pid_file)], timeout=TIMEOUT)
    assert wait_gone([started_child(child_pid_file)], timeout=10) == set()


def test_the_control_subprocess_run_leaves_the_child_running(child_pid_file: Path) -> None:
    """Without the grace: the same command under `subprocess.run`'s timeout is SIGKILLed and its child lives on —
    the test above would pass for nothing if it did not."""
    with pytest.raises(subprocess.TimeoutExpired):
        subprocess.run([sys.executable, "-c", COMMAND, str(child_pid_file)], capture_output=True, timeout=TIMEOUT)
    assert alive(started_child(child_pid_file))
