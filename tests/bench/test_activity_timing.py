"""`bench/activity_timing`: with its directory on PYTHONPATH and BENCH_ACTIVITY_TIMES set, a fresh Python
process records the time of the methods it wraps, leaves them working, and the summary reads the records;
without BENCH_ACTIVITY_TIMES nothing is wrapped."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from bench.activity_timing.__main__ import summary
from duragent._config.settings import ROOT

# Processes of its own: a worker.
pytestmark = pytest.mark.system

# A process as the bench's worker would be: it imports our activity modules, then appends to a transcript.
SCRIPT = """
import sys
from pathlib import Path
import duragent._activities.model, duragent._activities.tools
from agentic import Message
from duragent._stores.transcripts import EMPTY
from duragent._stores.transcripts import SqliteTranscriptStore
from duragent._stores.transcripts import Transcripts
transcripts = Transcripts(SqliteTranscriptStore(Path(sys.argv[1]) / "t.db"))
head = transcripts.append(EMPTY, [Message("user", "hello"), Message("assistant", "hi")])
assert [m.content for m in transcripts.load(head)] == ["hello", "hi"]
print(duragent._activities.model.ModelActivities.call_model.__wrapped__.__name__
      if hasattr(duragent._activities.model.ModelActivities.call_model, "__wrapped__") else "not wrapped")
"""


def run(tmp_path: Path, times: Path | None) -> str:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "bench" / "activity_timing")}
    env.pop("BENCH_ACTIVITY_TIMES", None)
    if times is not None:
        env["BENCH_ACTIVITY_TIMES"] = str(times)
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(tmp_path)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_records_the_wrapped_methods_and_leaves_them_working(tmp_path: Path) -> None:
    times = tmp_path / "times"
    times.mkdir()
    assert run(tmp_path, times) == "call_model"
    table = summary(times)
    assert "| transcript append (a store transaction when not empty) | 1 |" in table
    assert "| transcript load | 1 |" in table


def test_off_without_the_variable(tmp_path: Path) -> None:
    assert run(tmp_path, None) == "not wrapped"


def test_summary_of_nothing_says_why(tmp_path: Path) -> None:
    with pytest.raises(SystemExit, match="BENCH_ACTIVITY_TIMES"):
        summary(tmp_path)


def test_the_floors_worker_records_under_its_own_names_and_the_sdk_is_timed(tmp_path: Path) -> None:
    """A process started as the floor's worker (`python -m bench.floor_worker`) prefixes its records with
    `floor: `, so one directory holds both workers' times; the SDK's handling of an activity task is wrapped."""
    times = tmp_path / "times"
    times.mkdir()
    script = tmp_path / "floor_worker.py"  # the name `-m bench.floor_worker` leaves in sys.argv[0]
    script.write_text(
        "import sitecustomize, temporalio.worker._activity as sdk\n"
        "assert hasattr(sdk._ActivityWorker._handle_start_activity_task, '__wrapped__')\n"
        "sitecustomize._record('probe', 0.002)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT / "bench" / "activity_timing"), "BENCH_ACTIVITY_TIMES": str(times)}
    done = subprocess.run([sys.executable, str(script)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "| floor: probe | 1 | 2.000 |" in summary(times)
