"""kill -9 proofs for the SQLite checkpoint runner: a `job run` process dies (externally, or by the crash
hook at each injection point), `job resume` finishes the run from the store alone, and the effects
ledger shows every effect exactly once."""

from __future__ import annotations

import dataclasses
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from duragent._baseline.runner import transcript
from duragent._stores.ledger import EffectsLedger
from examples.options import DemoDeps
from tests.conftest import agent_named
from tests.support.baseline_helpers import Job, agents_recording_to, eventually, finish, open_job

# Processes of its own: `job` command lines, killed and resumed.
pytestmark = pytest.mark.system

RECORDS = [f"rec-{n}" for n in range(1, 6)]


@pytest.fixture
def job(tmp_path: Path) -> Iterator[Job]:
    yield from open_job(tmp_path)


def test_lesson_004_kill_after_step_two_then_resume(job: Job) -> None:
    worker = job.spawn(
        "run", "--id", "mig", "--scenario", "migration", "--option", "step_delay=1", "--lease-seconds", "1"
    )

    def step_two_done() -> bool:
        done = [s for s in job.steps("mig") if s.step_name == "tool:migrate_record" and s.status == "completed"]
        return len(job.effects("mig")) >= 2 and len(done) >= 2

    eventually(step_two_done, what="record 2 migrated and checkpointed")
    job.kill(worker)
    assert worker.returncode == -signal.SIGKILL

    effects_at_kill = job.effects("mig")
    steps_at_kill = job.steps("mig")
    assert 2 <= len(effects_at_kill) < 5, "the kill must land mid-run"
    completed_at_kill = [s for s in steps_at_kill if s.status == "completed"]
    assert job.status("mig")["status"] == "running"

    job.wait_lease_expired("mig")
    resumed = job.run("resume", "--id", "mig")
    assert resumed.returncode == 0, resumed.stderr

    effects = job.effects("mig")
    steps = job.steps("mig")
    # Steps 1-2 not re-executed: their rows and their effects are exactly as they were at the kill.
    assert effects[: len(effects_at_kill)] == effects_at_kill
    for before in completed_at_kill:
        assert steps[before.step - 1] == before
    # Finished through step 5, exactly one effect per record, each under its step's key.
    assert [e.args["record"] for e in effects] == RECORDS
    tool_steps = [s for s in steps if s.step_name == "tool:migrate_record"]
    assert [s.status for s in tool_steps] == ["completed"] * 5
    assert [s.idempotency_key for s in tool_steps] == [e.key for e in effects]
    # One execution per completed step; only a step caught in flight by the kill ran a second time.
    assert sum(s.attempts for s in tool_steps) <= 6
    status = job.status("mig")
    assert status["status"] == "completed"
    assert status["output"] == "Migrated 5 records."
    assert status["attempts"] == 2
    assert status["percent_complete"] == 100.0

    # One loop, many runners: the resumed run's transcript is the in-process agent's.
    # (The step delay changes timing, never the transcript.)
    local_deps = DemoDeps(EffectsLedger(job.tmp / "local.db"))
    local = dataclasses.replace(agent_named("migration"), deps=local_deps).run(run_id="mig")
    replayed = transcript(job.store, agents_recording_to(EffectsLedger(job.ledger_path)), "mig")
    assert replayed.messages == local.messages
    assert replayed.loop.state.consumed == local.usage == job.store.require("mig").consumed


# Migration of 3 records: step 1 model, 2 migrate rec-1, 3 model, 4 migrate rec-2, 5 model, ...
@pytest.mark.parametrize(
    ("point", "step", "rows_at_crash", "records_at_crash", "step_attempts"),
    [
        ("before_intent", 4, ["completed"] * 3, ["rec-1"], 1),
        ("after_effect", 4, ["completed"] * 3 + ["in_progress"], ["rec-1", "rec-2"], 2),
        ("after_complete", 4, ["completed"] * 4, ["rec-1", "rec-2"], 1),
        ("after_effect", 3, ["completed"] * 2, ["rec-1"], 1),  # a model call made, not checkpointed
    ],
    ids=["before_intent", "after_effect", "after_complete", "after_model_call"],
)
def test_kill_at_each_injection_point(
    job: Job, point: str, step: int, rows_at_crash: list[str], records_at_crash: list[str], step_attempts: int
) -> None:
    crashed = job.run(
        "run",
        "--id",
        "r",
        "--scenario",
        "migration",
        "--option",
        "records=3",
        "--lease-seconds",
        "1",
        crash=f"{point}:{step}",
    )
    assert crashed.returncode == -signal.SIGKILL
    assert [s.status for s in job.steps("r")] == rows_at_crash
    at_crash = job.effects("r")
    assert [e.args["record"] for e in at_crash] == records_at_crash

    job.wait_lease_expired("r")
    resumed = job.run("resume", "--id", "r")
    assert resumed.returncode == 0, resumed.stderr

    effects = job.effects("r")
    assert [e.args["record"] for e in effects] == ["rec-1", "rec-2", "rec-3"]  # no duplicate, none skipped
    assert effects[: len(at_crash)] == at_crash  # the effect that landed before the crash was not redone
    steps = job.steps("r")
    assert all(s.status == "completed" for s in steps)
    assert steps[step - 1].attempts == step_attempts
    if steps[step - 1].idempotency_key:
        assert steps[step - 1].idempotency_key == effects[1].key  # re-executed under the SAME key
    assert job.status("r")["status"] == "completed"


def test_kill_after_the_charge_before_the_tool_returns(job: Job) -> None:
    """The classic double-charge window, hit by an external kill: the effect committed, the step did not."""
    worker = job.spawn(
        "run", "--id", "bill", "--scenario", "billing", "--option", "after_effect_delay=2", "--lease-seconds", "1"
    )
    eventually(lambda: len(job.effects("bill")) == 1, what="the charge")
    job.kill(worker)
    assert [s.status for s in job.steps("bill")] == ["completed", "in_progress"]

    job.wait_lease_expired("bill")
    code, _, err = finish(job.spawn("resume", "--id", "bill"))
    assert code == 0, err
    assert len(job.effects("bill")) == 1
    status = job.status("bill")
    assert status["output"] == "Invoice inv-9 is settled."
    assert status["steps"][1]["attempts"] == 2
