"""`python -m bench delegation`, bounded: the command runs end to end on a real dev server and prints the
cost of a delegation next to an inline tool call (no speed goal is asserted: numbers live in the bench)."""

from __future__ import annotations

import json
import re
import sys

import pytest

from tests.support.processes import run_to_end

# Processes of its own: the benchmark, run as a command line.
pytestmark = pytest.mark.system

LAST = re.compile(
    r"^delegation: first_step_ms=(?P<first>[\d.]+) next_step_ms=(?P<next>[\d.]+) bytes=(?P<bytes>\d+) "
    r"inline: next_step_ms=(?P<inline_next>[\d.]+) bytes=(?P<inline_bytes>\d+)$"
)


def test_bench_delegation_reports_a_child_next_to_an_inline_call(tmp_path):
    command = [sys.executable, "-m", "bench", "delegation", "--reps", "2", "--warmup", "0", "--out", str(tmp_path)]
    done = run_to_end(command, timeout=240)
    assert done.returncode == 0, done.stderr[-2000:]
    last = LAST.match(done.stdout.strip().splitlines()[-1])
    assert last, done.stdout[-1000:]
    # A child workflow's history (its start, spec, model call, result) outweighs one activity's three events.
    assert int(last["bytes"]) > int(last["inline_bytes"]) > 0
    results = json.loads((tmp_path / "delegation.json").read_text())
    assert results["delegation"]["events"]["n"] == results["inline"]["events"]["n"] == 2
    assert results["inline"]["events"]["median"] == 3  # scheduled, started, completed
    assert "| the child's start request → its first model call (ms) | — |" in (tmp_path / "delegation.md").read_text()
