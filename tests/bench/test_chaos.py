"""`python -m bench chaos` as a person runs it: workers (and, on Temporal, the dev server) SIGKILLed at
random, then no run lost and no effect made twice. Bounded here; `-m slow` runs the long sessions."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from bench.commands import LAST_LINE
from tests.support.processes import run_to_end

# Processes of its own: the chaos benchmark's servers and workers, SIGKILLed.
pytestmark = pytest.mark.system


def chaos(engine: str, runs: int, seed: int, out: Path, *extra: str, timeout: float) -> dict[str, object]:
    done = run_to_end(
        [
            *(sys.executable, "-m", "bench", "chaos", "--engine", engine),
            *("--runs", str(runs), "--seed", str(seed), "--out", str(out), *extra),
        ],
        timeout=timeout,
        env=os.environ | {"TMPDIR": str(out)},  # should a failed run keep its scratch directory, it is the test's
    )
    lines = done.stdout.strip().splitlines()
    assert lines, done.stderr[-3000:]
    match = LAST_LINE.match(lines[-1])
    assert match, f"last line {lines[-1]!r} is not the summary:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    result = {k: (v if k == "engine" else int(v)) for k, v in match.groupdict().items()}
    assert result["engine"] == engine and result["runs"] == runs
    assert result["lost"] == 0, done.stdout[-3000:]
    assert result["duplicate_effects"] == 0, done.stdout[-3000:]
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    # Every run of the mix reached its scenario's end: 1 in 5 runs is the trip whose car fails.
    assert result["completed"] + result["compensated"] == runs
    assert result["compensated"] == sum(1 for i in range(runs) if i % 5 == 4)
    record = json.loads((out / f"chaos-{engine}.json").read_text())
    assert record["kills"] == result["kills"] and record["seed"] == seed
    assert all(run["status"] in ("completed", "compensated") for run in record["runs"])
    return result


def test_bounded_chaos_on_the_baseline(tmp_path: Path):
    result = chaos("baseline", 6, 7, tmp_path, "--kills", "3", timeout=120)
    assert result["kills"] >= 2  # kills land only mid-run; all of them fit in a 6-run session


def test_bounded_chaos_on_temporal(tmp_path: Path):
    result = chaos("temporal", 6, 7, tmp_path, "--kills", "2", "--server-restarts", "1", timeout=150)
    assert result["kills"] >= 1
    record = json.loads((tmp_path / "chaos-temporal.json").read_text())
    assert record["kills"] + record["server_restarts"] >= 2


@pytest.mark.slow
@pytest.mark.timeout(1500)
@pytest.mark.parametrize("engine", ["baseline", "temporal"])
def test_long_chaos(engine: str, tmp_path: Path):
    result = chaos(engine, 50, 2024, tmp_path, timeout=1400)
    assert result["kills"] >= 10
