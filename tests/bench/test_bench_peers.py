"""`python -m bench peers` at tiny N: the three stacks run the same script on one server, every row is
filled, and the crash row proves what it claims — the killed call ran twice (the kill landed between its
effect and its result) while the provider kept one effect per call, on the key each stack gives its tools."""

from __future__ import annotations

import json
import sys

import pytest

from bench.peers import missing
from tests.support.processes import run_to_end

# Processes of its own: the benchmark, run as a command line (a dev server, three workers, SIGKILLs).
pytestmark = pytest.mark.system

if missing():
    pytest.skip(f"{', '.join(missing())} not installed (make peers)", allow_module_level=True)

STACKS = ["ours", "pydantic-ai", "openai-agents"]


def test_bench_peers_tiny(tmp_path):
    command = [sys.executable, "-m", "bench", "peers", "--steps", "2", "--long-steps", "3", "--reps", "1"]
    command += ["--concurrent", "2", "--kill-steps", "3", "--server-profile", "tuned", "--out", str(tmp_path)]
    done = run_to_end(command, timeout=400)
    assert done.returncode == 0, (done.stdout[-2000:], done.stderr[-2000:])
    row = json.loads((tmp_path / "peers.json").read_text())["results"]["tuned"]
    for stack in STACKS:
        assert row["kill"][stack]["effects"] == 3, (stack, row["kill"][stack])
        assert row["kill"][stack]["executions"] == 4, (stack, row["kill"][stack])  # the killed call, again
        assert row["per_step"][stack]["step_ms"] > 0
        assert row["long"][stack]["events"] > row["per_step"][stack]["events"]  # 3 calls record more than 2
        assert row["throughput"][stack]["runs_per_s"] > 0
    assert row["per_step"]["ours"]["x_ours"] == 1.0
    assert row["approval"]["ours"]["held_across_restart"] is True
    assert row["approval"]["ours"]["effects"] == 1
    assert row["approval"]["pydantic-ai"]["held_across_restart"] is None  # said, not measured
    table = (tmp_path / "peers.md").read_text()
    assert "| | ours | pydantic-ai | openai-agents |" in table
    assert table in done.stdout
