"""`python -m bench report --readme`: the README's comparison table rendered from one results file, so
every row comes from the same `bench all` run. Synthetic results with known figures; each row says what it
measured and whether its goal was met."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from bench.readme import TIMES as X
from bench.readme import readme_table
from bench.stats import summarize
from duragent._config.settings import ROOT


def _engine(median: float, floor: float) -> dict[str, Any]:
    step = summarize([median])
    return {"step": step, "run_per_step": step, "x_floor": median / floor, "x_in_process": median / 0.0001}


def _batch(engine: str, n: int, rate: float, worker: float, server: float) -> dict[str, Any]:
    return {
        "engine": engine,
        "n": n,
        "profile": "tuned",
        "rep": 0,
        "runs_per_s": rate,
        "completed": n,
        "latency": summarize([1.0]),
        "worker_cpu_per_run_ms": worker,
        "server_cpu_per_run_ms": server,
    }


RESULTS: dict[str, Any] = {
    "overhead": {
        "steps": 20,
        "profiles": ["tuned"],
        "primary": "tuned",
        "engines": {
            "in-process": _engine(0.0001, 0.02),
            "baseline": _engine(0.0005, 0.02),
            "temporal": _engine(0.0208, 0.02),
            "temporal-no-sa": _engine(0.0202, 0.02),
            "floor": _engine(0.02, 0.02),
        },
    },
    "throughput": {
        "steps": 2,
        "profiles": ["tuned"],
        "rows": [
            _batch("floor", 100, 20.0, 30.0, 50.0),
            _batch("temporal", 100, 19.0, 33.0, 52.5),
            {"engine": "baseline-threads", "n": 1000, "runs_per_s": 150.0, "completed": 1000, "lock_errors": 0},
        ],
    },
    "recovery": {
        "config": {"detect_seconds": 2.0, "retry_interval": 0.25, "release_sticky_runs": True, "sticky_timeout_s": 5},
        "temporal": {
            "summary": {"resumed_step_done_s": {"median": 2.8}, "next_step_done_s": {"median": 3.9}},
        },
        "baseline": {
            "summary": {"resumed_step_done_s": {"median": 3.4}, "next_step_done_s": {"median": 4.4}},
        },
    },
    "waiting": {
        "phases": [
            {
                "stores": "sqlite",
                "runs": 10000,
                "start_all_s": 120.4,
                "park_all_s": 400.2,
                "worker_rss_mb": {"tenth": 150.0, "half": 260.0, "all": 262.0, "max": 270.0},
                "all_waiting": {"cached": 1000.0},
                "server_bytes_per_run": 30 * 1024,
                "drains": [{"via": "client", "decisions_per_s": 30.0}, {"via": "http", "decisions_per_s": 25.5}],
            }
        ]
    },
}


def test_each_row_comes_from_its_section_with_its_goal():
    table = readme_table(RESULTS)
    lines = table.splitlines()
    assert lines[0] == "|  | in-process | baseline (SQLite checkpoints) | ours (Temporal) | bare Temporal floor |"
    assert "| step, median / p99 (ms) | 0.10 / 0.1 | 0.50 / 0.5 | **20.80 / 20.8** (goal ≤ 50 ms: met) |" in table
    assert f"**1.04{X}** (goal ≤ 1.05{X}: met; started with `search_attributes=False`: 1.01{X})" in table
    assert "| runs/s at N = 100 concurrent |  | 150.0 at 1,000 threads, **1,000/1,000 completed, 0" in table
    assert "19.0 (**95%** of the floor; goal ≥ 90%: met) | 20.0 |" in table
    assert f"| worker / server CPU per run at N = 100 |  |  | 33.0 / 52.5 ms (1.10{X} / 1.05{X} the floor) |" in table
    assert "| 3.40 / 4.40 (2 s lease) | 2.80 / 3.90 (2 s heartbeat, 0.25 s first retry, released at once;" in table
    assert "goal ≤ 5 s: met) |" in table
    assert "120 / 400; 260 / 262 (1000 cached: `max_cached_workflows`); 30.0; 30.0 / 25.5 |" in table


def test_a_missed_goal_says_so_and_an_unmeasured_section_adds_no_row():
    slow = json.loads(json.dumps(RESULTS))
    slow["overhead"]["engines"]["temporal"] = _engine(0.0234, 0.02)
    slow["recovery"]["temporal"]["summary"]["next_step_done_s"]["median"] = 9.6
    del slow["waiting"], slow["throughput"]
    table = readme_table(slow)
    assert f"**1.17{X}** (goal ≤ 1.05{X}: **missed**" in table and "goal ≤ 5 s: **missed**" in table
    assert "runs/s" not in table and "waiting for approval" not in table


@pytest.mark.system  # `python -m bench report`
def test_the_report_command_prints_it(tmp_path: Path):
    saved = tmp_path / "bench.json"
    saved.write_text(json.dumps(RESULTS))
    command = [sys.executable, "-m", "bench", "report", "--from", str(saved), "--readme"]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout == readme_table(RESULTS)
