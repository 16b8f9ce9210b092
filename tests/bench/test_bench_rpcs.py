"""`python -m bench rpcs` at tiny N: the server's own counters, per run, for the floor and ours — counts that
hold on a busy machine. A 2-step run of either is 6 workflow tasks, 5 activities and one start; ours records
the spec's marker and publishes its end (one upsert at least), the floor neither."""

from __future__ import annotations

import json
import sys

import pytest

from tests.support.processes import run_to_end

# Processes of its own: the benchmark, run as a command line (a dev server and two workers).
pytestmark = pytest.mark.system


def test_bench_rpcs_counts_per_run(tmp_path):
    out = tmp_path / "rpcs.json"
    engines = ("--engine", "floor", "--engine", "temporal", "--engine", "temporal-no-sa")
    done = run_to_end([sys.executable, "-m", "bench", "rpcs", "--n", "2", *engines, "--out", str(out)], timeout=300)
    assert done.returncode == 0, (done.stdout[-2000:], done.stderr[-2000:])
    rows = {row["engine"]: row for row in json.loads(out.read_text())}
    for engine in ("floor", "temporal", "temporal-no-sa"):
        per_run = rows[engine]["per_run"]
        assert per_run["service_requests frontend StartWorkflowExecution"] == 1.0, engine
        assert per_run["service_requests frontend RespondWorkflowTaskCompleted"] == 6.0, engine
        assert per_run["service_requests frontend RespondActivityTaskCompleted"] == 5.0, engine
        # The tuned server keeps the search attributes' definitions cached: without it, 9 (floor) to 14 (ours)
        # reads of the cluster metadata per run; a refresh of its own during the batch may add one.
        assert per_run.get("persistence_requests history GetCurrentClusterMetadata", 0) < 2, engine
    assert "upsert_workflow_search_attributes_event_attributes" not in rows["temporal-no-sa"]["events"]
    floor, ours = rows["floor"]["events"], rows["temporal"]["events"]
    assert (
        "marker_recorded_event_attributes" not in floor
        and "upsert_workflow_search_attributes_event_attributes" not in floor
    )
    assert ours["marker_recorded_event_attributes"] >= 1.0  # the recorded spec
    assert ours["upsert_workflow_search_attributes_event_attributes"] >= 1.0  # the end
    assert "| service_requests frontend RespondWorkflowTaskCompleted | 6.00 | 6.00 |" in done.stdout
