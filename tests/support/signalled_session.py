"""Run only by tests/test_session_signals.py, in a pytest session of its own that it then stops with SIGTERM or
SIGHUP: a session fixture starts a process in a session of its own (as PostgreSQL, the model server and the
dev servers are started) and writes its pid where the outer test reads it; the test waits until stopped."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

pytestmark = pytest.mark.system  # it starts a process of its own


@pytest.fixture(scope="session")
def server_of_its_own() -> Iterator[subprocess.Popen[bytes]]:
    process = subprocess.Popen(["sleep", "600"], start_new_session=True)
    try:
        Path(os.environ["SIGNALLED_SESSION_PID_FILE"]).write_text(str(process.pid))
        yield process
    finally:
        process.kill()
        process.wait()


def test_waits_to_be_stopped(server_of_its_own: subprocess.Popen[bytes]) -> None:
    time.sleep(120)
