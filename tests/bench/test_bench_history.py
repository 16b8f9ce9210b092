"""`python -m bench history`, bounded: the command runs end to end, continues as new, and prints the
summary line the issue specifies; by reference the history stays within 3x the transcript."""

from __future__ import annotations

import re
import sys

import pytest

from tests.support.processes import run_to_end

# Processes of its own: the benchmark, run as a command line.
pytestmark = pytest.mark.system

LAST = re.compile(
    r"^history: calls=(?P<calls>\d+) runs=(?P<runs>\d+) max_run_bytes=(?P<max_bytes>\d+) "
    r"max_run_events=(?P<max_events>\d+) total_history_bytes=(?P<total>\d+) transcript_bytes=(?P<transcript>\d+) "
    r"ratio=(?P<ratio>[\d.]+)$"
)


def test_bench_history_bounded(tmp_path):
    command = [
        sys.executable,
        "-m",
        "bench",
        "history",
        "--calls",
        "80",
        "--message-bytes",
        "1000",
        "--naive-calls",
        "40",
        "--continue-as-new-events",
        "250",
        "--out",
        str(tmp_path),
    ]
    done = run_to_end(command, timeout=240)
    assert done.returncode == 0, done.stderr[-2000:]
    last = LAST.match(done.stdout.strip().splitlines()[-1])
    assert last, done.stdout[-1000:]
    assert int(last["calls"]) == 80
    assert int(last["runs"]) >= 3  # it continued as new
    assert int(last["max_events"]) <= 250 + 30
    assert int(last["total"]) == sum(
        int(n.replace(",", "")) for n in re.findall(r"^\| \d+ \| [\d,]+ \| ([\d,]+) \|$", done.stdout, re.M)
    )
    assert float(last["ratio"]) <= 3.0
    assert "naive variant: 40 model calls" in done.stdout
    assert (tmp_path / "history.png").stat().st_size > 10_000
    assert (tmp_path / "history.json").exists()
