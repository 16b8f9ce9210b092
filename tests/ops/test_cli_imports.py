"""The command lines start on what their commands need: the demo's OpenAI client, FastAPI and httpx (with
the libraries of its own command line) and jsonschema are imported by the commands that use them, not by
every `starter.py status` or worker start (a second of CPU each; the suite starts hundreds of them). The checkpoint
runner's `job` loads none of the Temporal engine: not Temporal's worker, not the workflows, not the activities."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.system  # an interpreter of its own: the test's own has imported everything

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ("openai", "fastapi", "httpx", "jsonschema", "rich")


@pytest.mark.parametrize("entry", ["starter", "worker", "duragent._ops.cli.job"])
def test_starting_a_command_line_imports_none_of_the_heavy_libraries(entry: str) -> None:
    probe = f"import sys, {entry}; print(' '.join(m for m in {HEAVY!r} if m in sys.modules))"
    done = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == []


def test_the_checkpoint_runner_loads_none_of_the_temporal_engine() -> None:
    engine = ("temporalio.worker", "duragent._workflows.agent", "activities", "duragent._worker", "duragent._client")
    probe = f"import sys, duragent._ops.cli.job; print(' '.join(m for m in {engine!r} if m in sys.modules))"
    done = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == []
