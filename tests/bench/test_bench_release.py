"""`python -m bench release`, bounded: runs left stepping on a real dev server are released from their
sticky queues as a starting worker releases them, and the command says how many and at what cost."""

from __future__ import annotations

import re
import sys

import pytest

from tests.support.processes import run_to_end

# Processes of its own (servers, command lines, Python interpreters): tests/support/cost_markers.py.
pytestmark = pytest.mark.system


LINE = re.compile(r"^release: runs=(\d+) released=(\d+) seconds=([\d.]+) server_cpu_ms_per_run=([\d.]+)$")


def test_bench_release_releases_every_stepping_run():
    command = [sys.executable, "-m", "bench", "release", "--runs", "5", "--reps", "2"]
    done = run_to_end(command, timeout=240)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    measured = [m for line in done.stdout.splitlines() if (m := LINE.match(line))]
    assert len(measured) == 2
    for m in measured:
        assert (int(m[1]), int(m[2])) == (5, 5)  # every stepping run, each time
