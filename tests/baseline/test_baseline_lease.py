"""Leases, takeover, dead letters, checkpoint mismatches and the recovery sweep — with real processes."""

from __future__ import annotations

import signal
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from duragent._baseline.errors import LeaseLost
from duragent._baseline.lease import acquire, new_owner
from duragent._baseline.store import Progress, StepSpec
from tests.support.baseline_helpers import Job, eventually, finish, one_line_error, open_job

# Processes of its own: `job` command lines, killed and resumed.
pytestmark = pytest.mark.system


@pytest.fixture
def job(tmp_path: Path) -> Iterator[Job]:
    yield from open_job(tmp_path)


def test_resume_is_refused_while_the_lease_is_live_and_allowed_after_expiry(job: Job) -> None:
    worker = job.spawn(
        "run",
        "--id",
        "l",
        "--scenario",
        "migration",
        "--option",
        "records=8",
        "--option",
        "step_delay=1.5",
        "--lease-seconds",
        "1",
    )
    first_expiry = eventually(lambda: job.store.run("l") and job.store.require("l").lease_expires, what="the run")
    # Past the first lease's end, the lease is still live: only the renewer thread can have done that.
    eventually(lambda: time.time() > first_expiry + 0.2, what="the first lease's end")
    assert job.status("l")["lease"]["live"]
    assert job.store.require("l").lease_expires > first_expiry
    refused = job.run("resume", "--id", "l")
    assert refused.returncode == 3
    assert "held by" in one_line_error(refused.stderr)

    job.kill(worker)
    job.wait_lease_expired("l")
    resumed = job.run("resume", "--id", "l")
    assert resumed.returncode == 0, resumed.stderr
    assert [e.args["record"] for e in job.effects("l")] == [f"rec-{i}" for i in range(1, 9)]
    assert job.status("l")["attempts"] == 2


def test_two_concurrent_resumes_exactly_one_wins(job: Job) -> None:
    crashed = job.run(
        "run", "--id", "c", "--scenario", "migration", "--option", "records=3", "--option", "step_delay=1",
        "--lease-seconds", "1", crash="after_complete:2",
    )  # fmt: skip
    assert crashed.returncode == -signal.SIGKILL
    job.wait_lease_expired("c")

    first, second = job.spawn("resume", "--id", "c"), job.spawn("resume", "--id", "c")
    outcomes = sorted([finish(first), finish(second)], key=lambda o: o[0])
    (won, _, won_err), (lost, _, lost_err) = outcomes
    assert won == 0, won_err
    assert lost == 3
    assert "held by" in one_line_error(lost_err)
    assert [e.args["record"] for e in job.effects("c")] == ["rec-1", "rec-2", "rec-3"]
    status = job.status("c")
    assert status["status"] == "completed"
    assert status["attempts"] == 2  # the run, then exactly one takeover


def test_a_run_that_keeps_dying_is_dead_lettered(job: Job) -> None:
    args = ("--id", "d")
    crash = "before_intent:2"
    first = job.run(
        "run", *args, "--scenario", "migration", "--lease-seconds", "0.5", "--max-attempts", "2", crash=crash
    )
    assert first.returncode == -signal.SIGKILL
    job.wait_lease_expired("d")
    second = job.run("resume", *args, crash=crash)
    assert second.returncode == -signal.SIGKILL
    job.wait_lease_expired("d")

    third = job.run("resume", *args, crash=crash)
    assert third.returncode == 1
    assert "dead_letter" in one_line_error(third.stderr)
    status = job.status("d")
    assert status["status"] == "dead_letter"
    assert status["attempts"] == 2
    assert "2 workers" in status["error"]
    assert job.effects("d") == []
    again = job.run("resume", *args)
    assert again.returncode == 1
    assert "already ended (dead_letter)" in one_line_error(again.stderr)


def test_a_tampered_step_stops_the_resume_with_a_checkpoint_mismatch(job: Job) -> None:
    crashed = job.run(
        "run", "--id", "t", "--scenario", "migration", "--option", "records=3", "--lease-seconds", "1",
        crash="after_complete:3",
    )  # fmt: skip
    assert crashed.returncode == -signal.SIGKILL
    effects_before = job.effects("t")
    with sqlite3.connect(job.db) as db:
        db.execute("UPDATE steps SET input_hash = 'tampered' WHERE run_id = 't' AND step = 2")
    job.wait_lease_expired("t")

    resumed = job.run("resume", "--id", "t")
    assert resumed.returncode == 4
    line = one_line_error(resumed.stderr)
    assert "checkpoint mismatch" in line
    assert "at step 2" in line
    assert "tool:migrate_record" in line
    assert job.effects("t") == effects_before  # nothing executed on a guess
    status = job.status("t")
    assert status["status"] == "running"  # still resumable once the store or the code is fixed
    assert "checkpoint mismatch" in status["error"]
    assert not status["lease"]["live"]


def test_a_run_row_whose_consumption_differs_from_its_steps_stops_the_resume(job: Job) -> None:
    """The steps replay to a consumption the run row must agree with: a row that says otherwise (a corrupted
    or hand-edited store, or a bug that did not save consumption) stops the resume before anything runs."""
    crashed = job.run(
        "run", "--id", "t", "--scenario", "migration", "--option", "records=3", "--lease-seconds", "1",
        crash="after_complete:3",
    )  # fmt: skip
    assert crashed.returncode == -signal.SIGKILL
    effects_before = job.effects("t")
    with sqlite3.connect(job.db) as db:
        db.execute("UPDATE runs SET used_steps = used_steps + 3 WHERE run_id = 't'")
    job.wait_lease_expired("t")

    resumed = job.run("resume", "--id", "t")
    assert resumed.returncode == 4
    line = one_line_error(resumed.stderr)
    assert "checkpoint mismatch" in line and "the replayed steps consumed" in line
    assert job.effects("t") == effects_before  # nothing executed on a guess
    assert job.status("t")["status"] == "running"


def test_recover_resumes_every_run_whose_lease_expired(job: Job) -> None:
    for run_id in ("a", "b"):
        crashed = job.run(
            "run", "--id", run_id, "--scenario", "migration", "--option", "records=2", "--lease-seconds", "0.5",
            crash="after_complete:2",
        )  # fmt: skip
        assert crashed.returncode == -signal.SIGKILL
    done = job.run("run", "--id", "done", "--scenario", "billing")
    assert done.returncode == 0
    job.wait_lease_expired("a")
    job.wait_lease_expired("b")

    swept = job.run("recover", "--json")
    assert swept.returncode == 0, swept.stderr
    assert '"run_id": "a"' in swept.stdout and '"run_id": "b"' in swept.stdout
    assert '"run_id": "done"' not in swept.stdout
    for run_id in ("a", "b"):
        assert job.status(run_id)["status"] == "completed"
        assert [e.args["record"] for e in job.effects(run_id)] == ["rec-1", "rec-2"]
    assert "nothing to recover" in job.run("recover").stdout


def test_a_worker_that_lost_its_lease_cannot_write(job: Job) -> None:
    """Fencing: the zombie's next checkpoint write is refused once another worker took the run over."""
    zombie = new_owner()
    job.store.create_run(
        "z", "billing", "{}", owner=zombie, lease_seconds=0.05, webhook_url=None, progress=Progress(0, 3, "")
    )
    # The zombie stops renewing; wait until its lease has run out.
    eventually(lambda: job.store.require("z").lease_expires <= time.time(), what="the zombie's lease to expire")
    acquire(job.store, "z", new_owner(), lease_seconds=30, max_attempts=5)
    with pytest.raises(LeaseLost):
        job.store.complete(
            "z", zombie, StepSpec(1, "model_call", "h", "model call 1"), {}, started_at="", progress=Progress(1, 3, "")
        )
    assert job.steps("z") == []
