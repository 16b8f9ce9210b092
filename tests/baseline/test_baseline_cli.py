"""The `job` command line as a user meets it: the installed script, JSON output, one-line errors."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.baseline_helpers import ROOT, Job, one_line_error, open_job

# Processes of its own: `job` command lines.
pytestmark = pytest.mark.system


@pytest.fixture
def job(tmp_path: Path) -> Iterator[Job]:
    yield from open_job(tmp_path)


def test_installed_script_runs_and_reports_json(job: Job) -> None:
    script = Path(sys.executable).parent / "duragent-job"
    common = ["--db", str(job.db), "--ledger", str(job.ledger_path), "--json"]
    ran = subprocess.run([script, "run", "--id", "b", "--scenario", "billing", *common], capture_output=True, text=True)
    assert ran.returncode == 0, ran.stderr
    status = json.loads(ran.stdout)
    assert (status["status"], status["stop"], status["output"]) == (
        "completed",
        "answered",
        "Invoice inv-9 is settled.",
    )
    assert status["percent_complete"] == 100.0
    assert status["progress"] == {"step": 3, "total": 3, "label": "finished: completed (answered)"}
    assert status["consumption"]["steps"] == 2 and status["consumption"]["cost"] > 0
    assert status["lease"] == {"owner": None, "expires_at": None, "live": False}
    step = status["steps"][1]
    assert step["step_name"] == "tool:charge" and step["status"] == "completed"
    assert step["idempotency_key"] == "b:1.1" and step["attempts"] == 1
    assert {"step", "step_name", "status", "input_hash", "output_ref", "started_at", "finished_at"} <= set(step)

    effects = subprocess.run([script, "effects", "--id", "b", *common], capture_output=True, text=True)
    assert effects.returncode == 0
    [row] = json.loads(effects.stdout)
    assert row["tool"] == "charge" and row["run_id"] == "b"


def test_agent_ledger_env_is_the_default_ledger(job: Job, tmp_path: Path) -> None:
    ledger = tmp_path / "elsewhere.db"
    env = job.env(AGENT_LEDGER=str(ledger))
    argv = [
        sys.executable,
        "-m",
        "duragent._ops.cli.job",
        "run",
        "--id",
        "e",
        "--scenario",
        "billing",
        "--db",
        str(job.db),
    ]
    assert subprocess.run(argv, env=env, cwd=ROOT, capture_output=True).returncode == 0
    shown = subprocess.run(
        [sys.executable, "-m", "duragent._ops.cli.job", "effects", "--id", "e", "--db", str(job.db), "--json"],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert [r["tool"] for r in json.loads(shown.stdout)] == ["charge"]
    assert not job.ledger_path.exists()


@pytest.mark.parametrize(
    ("argv", "code", "message"),
    [
        (["status", "--id", "nope"], 1, "unknown run id 'nope'"),
        (["resume", "--id", "nope"], 1, "unknown run id 'nope'"),
        (["cancel", "--id", "nope"], 1, "unknown run id 'nope'"),
        (["approve", "--id", "nope", "--by", "me", "--yes"], 1, "unknown run id 'nope'"),
        (["run", "--id", "s", "--scenario", "nope"], 2, "unknown agent 'nope'"),
        (
            ["run", "--id", "s", "--scenario", "migration", "--option", "records=0"],
            2,
            "records: Input should be greater than 0",
        ),
        (["run", "--scenario"], 2, "expected one argument"),
    ],
)
def test_errors_are_one_line_and_non_zero(job: Job, argv: list[str], code: int, message: str) -> None:
    result = job.run(*argv)
    assert result.returncode == code
    assert message in one_line_error(result.stderr)


def test_run_ids_are_never_reused_and_finished_runs_are_not_resumed(job: Job) -> None:
    assert job.cli("run", "--id", "once", "--scenario", "billing") == 0
    again = job.run("run", "--id", "once", "--scenario", "billing")
    assert again.returncode == 1 and "already exists" in one_line_error(again.stderr)
    resumed = job.run("resume", "--id", "once")
    assert resumed.returncode == 1 and "already ended (completed)" in one_line_error(resumed.stderr)
    assert len(job.effects("once")) == 1


def test_status_says_when_no_live_worker_holds_an_active_run(job: Job, capsys: pytest.CaptureFixture[str]) -> None:
    """A run whose worker died read as `running` in text; only the JSON said
    `live: False`. Also: the run id is accepted positionally, as `starter.py` takes it."""
    from duragent._baseline.store import Progress

    job.store.create_run(
        "orphan", "migration", "{}", owner="gone", lease_seconds=-1, webhook_url=None, progress=Progress(2, 11, "")
    )
    capsys.readouterr()
    assert job.cli("status", "orphan") == 0
    said = capsys.readouterr().out.splitlines()
    assert said[0].startswith("orphan: running")
    assert said[1] == "  no live worker holds it (lease ended); `job resume orphan` continues it"
