"""`python -m bench conversations`, end to end with small numbers: ours and the peers' way (the message history
carried in the user's workflow) at the same turns, idle conversations parked past a tiny worker cache, one restart.
No speed goal is asserted (numbers live in the bench); what is checked is that every figure was measured and
means what it says, so the command cannot rot."""

from __future__ import annotations

import json
import sys

import pytest

from tests.support.processes import run_to_end

# Processes of its own (a dev server, worker processes, the command line): tests/support/cost_markers.py.
pytestmark = pytest.mark.system

TURNS = 6
IDLE = 30
CACHE = 5  # far under IDLE: most idle conversations are evicted from the worker's cache


def test_bench_conversations_measures_every_figure(tmp_path):
    command = [
        *(sys.executable, "-m", "bench", "conversations", "--turns", str(TURNS), "--peer-turns", str(TURNS)),
        *("--idle", str(IDLE), "--idle-cache", str(CACHE), "--restarts", "1", "--resent-turns", "2"),
        *("--out", str(tmp_path)),
    ]
    done = run_to_end(command, timeout=400)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    results = json.loads((tmp_path / "conversations.json").read_text())

    ours = results["ours"][str(TURNS)]
    assert ours["conversation_executions"] == 1 and ours["conversation_bytes"] > 0
    assert ours["conversation_bytes_per_turn"] == pytest.approx(ours["conversation_bytes"] / (TURNS + 1))
    assert ours["turn_run_events"] > 0 and ours["turn_run_bytes"] > 0

    # The peers' way: one execution holding every model and tool call of every turn — it finished at this size,
    # and its history is several times a turn's run (each model call carries the whole history so far).
    peers = results["peers"][str(TURNS)]
    assert (peers["finished"], peers["answered"], peers["stopped"]) == (True, TURNS, None)
    assert peers["events"] > TURNS * 7 * 3  # 4 model and 3 tool calls a turn, each at least 3 events
    assert 0 < peers["largest_payload_bytes"] < peers["bytes"]

    # Idle conversations: memory and storage read at N/2 and N, the storage grown with each conversation.
    assert results["idle_conversations"] == IDLE and results["idle_worker_cache"] == CACHE
    points = results["idle_points"]
    assert [p["conversations"] for p in points] == [0, IDLE // 2, IDLE]
    assert all(p["rss_mb"] > 0 for p in points)
    assert points[0]["db_rows"] < points[1]["db_rows"] < points[2]["db_rows"]
    assert results["idle_server_bytes_per_conversation"] > 0 and results["idle_server_rows_per_conversation"] > 0

    assert results["first_answer_after_restart_ms"]["n"] == 1
    assert "the peers' way" in done.stdout and f"{TURNS} | 1 executions" in done.stdout
