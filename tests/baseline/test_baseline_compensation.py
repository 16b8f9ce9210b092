"""The saga in the checkpoint runner (trip scenario): undo newest first, each undo exactly once — also
across a kill mid-walk — cancellation compensates, and an undo that keeps failing is reported."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from duragent._stores.ledger import Effect
from tests.support.baseline_helpers import Job, eventually, finish, open_job


@pytest.fixture
def job(tmp_path: Path) -> Iterator[Job]:
    yield from open_job(tmp_path)


def by_tool(effects: list[Effect]) -> dict[str, Effect]:
    tools = [e.tool for e in effects]
    assert len(tools) == len(set(tools)), f"an effect happened twice: {tools}"
    return {e.tool: e for e in effects}


def assert_undone_in_reverse(effects: list[Effect], booked: list[str]) -> None:
    """Every booking cancelled exactly once, newest first, each undo pointing at its original's key."""
    done = by_tool(effects)
    assert [e.tool for e in effects] == [f"book_{b}" for b in booked] + [f"cancel_{b}" for b in reversed(booked)]
    for leg in booked:
        original, undo = done[f"book_{leg}"], done[f"cancel_{leg}"]
        assert undo.compensates == original.key
        assert undo.key == f"{original.key}:undo"


def test_a_failed_car_cancels_hotel_then_flight(job: Job) -> None:
    assert job.cli("run", "--id", "trip", "--scenario", "trip") == 0
    assert_undone_in_reverse(job.effects("trip"), ["flight", "hotel"])
    status = job.status("trip")
    assert (status["status"], status["stop"]) == ("compensated", "tool_failed")
    names = [(s["step_name"], s["status"]) for s in status["steps"]]
    assert names[-2:] == [("compensate:book_hotel", "completed"), ("compensate:book_flight", "completed")]


@pytest.mark.system
@pytest.mark.parametrize("how", ["sigkill", "crash_hook"])
def test_a_kill_mid_walk_resumes_without_repeating_an_undo(job: Job, how: str) -> None:
    if how == "sigkill":
        worker = job.spawn(
            "run", "--id", "w", "--scenario", "trip", "--option", "step_delay=0.6", "--lease-seconds", "1"
        )
        eventually(lambda: any(e.tool == "cancel_hotel" for e in job.effects("w")), what="the first undo")
        job.kill(worker)
    else:  # step 7 is the first undo: its effect landed, its step is still in_progress
        crashed = job.run("run", "--id", "w", "--scenario", "trip", "--lease-seconds", "1", crash="after_effect:7")
        assert crashed.returncode == -signal.SIGKILL
        assert [s.status for s in job.steps("w")][-1] == "in_progress"
    at_kill = job.effects("w")
    assert [e.tool for e in at_kill] == ["book_flight", "book_hotel", "cancel_hotel"]
    assert job.status("w")["status"] == "compensating"

    job.wait_lease_expired("w")
    resumed = job.run("resume", "--id", "w")
    assert resumed.returncode == 0, resumed.stderr
    effects = job.effects("w")
    assert effects[:3] == at_kill
    assert_undone_in_reverse(effects, ["flight", "hotel"])
    assert job.status("w")["status"] == "compensated"


@pytest.mark.system
def test_cancel_mid_run_abandons_and_compensates(job: Job) -> None:
    worker = job.spawn(
        "run", "--id", "c", "--scenario", "trip", "--option", "fail_at=none", "--option", "step_delay=0.5"
    )
    eventually(lambda: job.effects("c"), what="the flight booking")
    assert job.cli("cancel", "--id", "c", "--reason", "customer changed plans") == 0
    code, _, err = finish(worker)
    assert code == 0, err

    status = job.status("c")
    assert (status["status"], status["stop"], status["stop_detail"]) == (
        "compensated",
        "cancelled",
        "customer changed plans",
    )
    assert "stop:cancelled" in [s["step_name"] for s in status["steps"]]
    effects = job.effects("c")
    booked = [e.tool.removeprefix("book_") for e in effects if e.tool.startswith("book_")]
    assert booked in (["flight"], ["flight", "hotel"], ["flight", "hotel", "car"])  # whatever landed before it
    assert_undone_in_reverse(effects, booked)
    again = job.run("cancel", "--id", "c")
    assert again.returncode == 1 and "already ended" in again.stderr


def test_an_undo_that_keeps_failing_leaves_compensation_failed(job: Job) -> None:
    assert job.cli("run", "--id", "f", "--scenario", "trip", "--option", "compensation_failures=99") == 1
    status = job.status("f")
    assert status["status"] == "compensation_failed"
    assert [r.split(" ")[0] for r in status["remaining_compensations"]] == ["book_hotel", "book_flight"]
    assert "kept failing" in status["error"]
    last = status["steps"][-1]
    assert (last["step_name"], last["status"], last["attempts"]) == ("compensate:book_hotel", "failed", 3)
    assert [e.tool for e in job.effects("f")] == ["book_flight", "book_hotel"]  # nothing undone, nothing invented


def test_an_undo_that_fails_once_is_retried_under_the_same_key(job: Job) -> None:
    assert job.cli("run", "--id", "once", "--scenario", "trip", "--option", "compensation_failures=1") == 0
    assert_undone_in_reverse(job.effects("once"), ["flight", "hotel"])
    undo_steps = [s for s in job.status("once")["steps"] if s["step_name"].startswith("compensate:")]
    assert [s["attempts"] for s in undo_steps] == [2, 2]
