"""`python -m bench waiting --quick`, end to end: runs parked on an approval on a real dev server with a
worker process of ours, then every one approved — half through `AgentClient`, half through the runs API in its own
process — on the SQLite stores and, when PostgreSQL's binaries are installed, on the PostgreSQL stores. No speed
goal is asserted (numbers live in the bench); what is checked is that each figure was measured and that every
parked run was decided and completed, so the command cannot rot. And that it never hangs: SIGTERM mid-drain
stops it and everything it started, and a drain in which runs stop progressing ends, naming them."""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path

import pytest

from duragent._ops.devstack.local_postgres import find_binaries
from tests.support.processes import Command, alive, descendants, run_to_end, wait_gone

# Processes of its own (servers, command lines, Python interpreters): tests/support/cost_markers.py.
pytestmark = pytest.mark.system


def test_bench_waiting_parks_runs_and_drains_them_both_ways(tmp_path):
    command = [sys.executable, "-m", "bench", "waiting", "--quick", "--out", str(tmp_path)]
    done = run_to_end(command, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    results = json.loads((tmp_path / "waiting.json").read_text())["waiting"]
    expected = ["sqlite", "postgres"] if find_binaries() else ["sqlite"]
    assert [p["stores"] for p in results["phases"]] == expected
    for phase in results["phases"]:
        n = phase["runs"]
        assert phase["all_waiting"]["waiting"] == n and phase["after_drain"]["waiting"] == 0
        assert phase["start_all_s"] > 0 and phase["park_all_s"] >= phase["start_all_s"]
        assert phase["worker_rss_mb"]["all"] > 0 and phase["all_waiting"]["cached"] == n  # all fit in the cache
        assert phase["server_bytes_per_run"] > 0 and phase["stores_bytes_per_run"] > 0
        drains = {d["via"]: d for d in phase["drains"]}
        assert set(drains) == {"client", "http"}
        assert sum(d["runs"] for d in drains.values()) == n
        for d in drains.values():
            assert d["statuses"] == {"COMPLETED": d["runs"]} and d["closed"] == d["runs"]
            assert d["decisions_per_s"] > 0 and d["closed_per_s"] > 0
    report = (tmp_path / "waiting.md").read_text()
    assert "### Waiting runs" in report and "| 20 (sqlite stores) |" in report


def _bench_waiting(tmp_path: Path, *flags: str) -> Command:
    """`python -m bench waiting` on 20 runs, the SQLite stores alone, as a subprocess whose processes are seen."""
    argv = ["-m", "bench", "waiting", "--waiting-runs", "20", "--waiting-postgres-runs", "0", *flags]
    # A bench that does not finish keeps its scratch directory for the logs: in the test's own directory, not
    # in the machine's /tmp, where two of them (5 MB each) were left by every `make test`.
    return Command([*argv, "--out", str(tmp_path / "out")], {"TMPDIR": str(tmp_path)})


def _started(bench: Command, name: str) -> int:
    """The pid of the process below the bench whose command line names `name` (the worker, temporal)."""
    below = descendants(bench.process.pid)
    bench.seen |= below
    [pid] = [p for p in below if name in _command_line(p)]
    return pid


def _command_line(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
    except FileNotFoundError:  # gone since it was listed
        return ""


def test_bench_waiting_stops_on_sigterm_once_parked_and_keeps_what_it_measured(tmp_path):
    bench = _bench_waiting(tmp_path, "--waiting-in-flight", "1")  # one decision at a time: the drain lasts
    try:
        bench.wait_for("all waiting after")  # the runs are parked: the drain (the runs API, then decisions) starts
        worker, server = _started(bench, "duragent._ops.cli.worker"), _started(bench, "start-dev")
        assert bench.signal_and_wait(signal.SIGTERM, timeout=120) == 130
        assert wait_gone(bench.seen) == set(), "left running after SIGTERM"
        assert not alive(worker) and not alive(server)
        out = "".join(bench.out)
        assert "bench waiting: NOT FINISHED — stopped by SIGTERM" in out
        assert f"scratch directory (logs): {tmp_path}/bench-" in out  # kept, with its logs, where the test can see
        results = json.loads((tmp_path / "out" / "waiting.json").read_text())
        assert results["stopped"].startswith("Stopped: SIGTERM")
        [phase] = results["waiting"]["phases"]  # parked and measured before the signal; the drain did not end
        assert phase["all_waiting"]["waiting"] == 20 and phase["start_all_s"] > 0
        assert "after_drain" not in phase
    finally:
        bench.cleanup()


def test_bench_waiting_names_the_runs_a_stalled_drain_leaves_open_and_exits_1(tmp_path):
    # The worker dies once the runs are parked: every decision is queued as a signal no worker applies,
    # and no run closes. The drain gives up after --waiting-stall seconds instead of waiting forever.
    bench = _bench_waiting(tmp_path, "--waiting-in-flight", "10", "--waiting-stall", "3")
    try:
        bench.wait_for("all waiting after")
        os.kill(_started(bench, "duragent._ops.cli.worker"), signal.SIGKILL)
        assert bench.wait(timeout=180) == 1
        assert wait_gone(bench.seen) == set(), "left running after a stalled drain"
        last = bench.out[-1]
        results = json.loads((tmp_path / "out" / "waiting.json").read_text())
        [phase] = results["waiting"]["phases"]
        [drain] = phase["drains"]
        assert drain["via"] == "client" and drain["stalled"]["closed"] == 0
        stalled = drain["stalled"]["runs"]  # those open 3 s after their decision when it gave up: the AgentClient half
        assert last.startswith(f"bench waiting: NOT FINISHED — {len(stalled)} run(s) still open 3 s after"), last
        assert stalled and {int(r["run_id"].rsplit("-", 1)[1]) for r in stalled} <= set(range(10))
        assert all(r["open_s"] >= 3 and r["run_id"] in last for r in stalled)
        described = [r["history"] for r in stalled if r["history"]]
        assert len(described) == min(5, len(stalled))
        assert all("1 decision signal(s)" in h for h in described)  # queued for a worker, never applied
        assert "Drain via client (sqlite stores) stalled" in (tmp_path / "out" / "waiting.md").read_text()
    finally:
        bench.cleanup()
