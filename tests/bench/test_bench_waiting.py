"""`python -m bench waiting --quick`, end to end (issue 36): runs parked on an approval on a real dev server with a
worker process of ours, then every one approved — half through `AgentClient`, half through the runs API in its own
process — on the SQLite stores and, when PostgreSQL's binaries are installed, on the PostgreSQL stores. No speed
goal is asserted (numbers live in the bench); what is checked is that each figure was measured and that every
parked run was decided and completed, so the command cannot rot."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from config.settings import ROOT
from ops.devstack.local_postgres import find_binaries

# Processes of its own (servers, command lines, Python interpreters): tests/support/cost_markers.py.
pytestmark = pytest.mark.system


def test_bench_waiting_parks_runs_and_drains_them_both_ways(tmp_path):
    command = [sys.executable, "-m", "bench", "waiting", "--quick", "--out", str(tmp_path)]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300)
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
