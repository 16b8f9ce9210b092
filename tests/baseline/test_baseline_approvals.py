"""Durable approvals in the checkpoint runner (refund scenario): pending, approved, declined, expired —
distinct and final — and every decision that does not fit rejected with a reason and recorded."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from tests.support.baseline_helpers import Job, eventually, finish, one_line_error, open_job

# Processes of its own: `job` command lines.
pytestmark = pytest.mark.system

DECLINED = "Error: the user declined this action."


@pytest.fixture
def job(tmp_path: Path) -> Iterator[Job]:
    yield from open_job(tmp_path)


def start_refund(job: Job, run_id: str, *extra: str) -> Any:
    worker = job.spawn("run", "--id", run_id, "--scenario", "refund", "--poll-interval", "0.05", *extra)
    eventually(lambda: job.store.run(run_id) and job.status(run_id)["status"] == "awaiting_approval", what="the wait")
    return worker


def transcript(job: Job, run_id: str) -> list[dict[str, Any]]:
    shown = job.run("status", "--id", run_id, "--messages", "--json")
    assert shown.returncode == 0, shown.stderr
    return json.loads(shown.stdout)["messages"]


def test_approve_after_rejected_decisions_refunds_once(job: Job, capsys: pytest.CaptureFixture[str]) -> None:
    worker = start_refund(job, "ok", "--approval-timeout", "60", "--lease-seconds", "1")
    [pending] = job.status("ok")["approvals"]
    # The request and its deadline are durable before anyone decides.
    assert pending["status"] == "pending" and pending["deadline"] > pending["requested_at"]
    call = pending["call_id"]

    assert job.cli("approve", "--id", "ok", "--by", "alice", "--hash", "0" * 64) == 1
    assert job.cli("approve", "--id", "ok", "--by", "alice", "--call", "call_404", "--yes") == 1
    prefix = pending["arguments_hash"][:12]
    assert job.cli("approve", "--id", "ok", "--by", "alice", "--reason", "customer eligible", "--hash", prefix) == 0
    assert job.cli("approve", "--id", "ok", "--by", "bob", "--yes") == 1
    assert job.cli("deny", "--id", "ok", "--by", "bob", "--call", call) == 1
    errors = [line for line in capsys.readouterr().err.splitlines() if line]
    assert len(errors) == 4 and all(line.startswith("error: decision rejected: ") for line in errors)

    code, _, err = finish(worker)
    assert code == 0, err
    [refund] = job.effects("ok")
    assert refund.tool == "refund" and refund.key == f"ok:{call}"
    status = job.status("ok")
    assert status["status"] == "completed" and status["output"] == "Refunded order 4471."
    assert status["approvals"][0]["status"] == "approved"
    assert status["approvals"][0]["decided_by"] == "alice"
    audit = [(a["event"], a["approver"], a["rejection"]) for a in status["audit"]]
    assert [event for event, _, _ in audit] == ["rejected", "rejected", "approved", "rejected", "rejected"]
    assert "hash does not match" in audit[0][2]
    assert "no approval is pending for call call_404" in audit[1][2]
    assert "already approved" in audit[3][2] and "already approved" in audit[4][2]


@pytest.mark.parametrize(
    ("policy", "status", "stop"), [("continue", "completed", "answered"), ("abandon", "abandoned", "approval_declined")]
)
def test_deny_makes_no_effect_and_tells_the_model(job: Job, policy: str, status: str, stop: str) -> None:
    # The expiry policy is set the other way: a runner confusing the two would give the other outcome.
    other = "abandon" if policy == "continue" else "continue"
    worker = start_refund(job, "no", "--on-decline", policy, "--on-expire", other)
    denied = job.run("deny", "--id", "no", "--by", "carol", "--reason", "not eligible")
    assert denied.returncode == 0, denied.stderr
    code, _, err = finish(worker)
    assert code == 0, err

    assert job.effects("no") == []
    shown = job.status("no")
    assert (shown["status"], shown["stop"]) == (status, stop)
    assert shown["approvals"][0]["status"] == "declined"
    tool_messages = [m["content"] for m in transcript(job, "no") if m["role"] == "tool"]
    assert tool_messages == [f"{DECLINED} Reason given: not eligible"]
    if policy == "continue":
        assert shown["output"] == "The refund of order 4471 was declined; nothing was refunded."


def test_expiry_performs_nothing_and_a_late_decision_is_rejected(job: Job) -> None:
    worker = start_refund(job, "late", "--approval-timeout", "0.5", "--on-decline", "abandon")
    code, _, err = finish(worker)
    assert code == 0, err
    assert job.effects("late") == []
    status = job.status("late")
    assert (status["status"], status["stop"]) == ("completed", "answered")  # expiry continues, whatever declines do
    assert status["approvals"][0]["status"] == "expired"
    assert "expired" in status["output"]
    assert any("within 0.5 s" in m["content"] for m in transcript(job, "late") if m["role"] == "tool")

    late = job.run("approve", "--id", "late", "--by", "dave", "--yes")
    assert late.returncode == 1
    assert "already expired" in one_line_error(late.stderr)
    assert [a["event"] for a in job.status("late")["audit"]] == ["expired", "rejected"]


def test_expiry_under_abandon_abandons_even_when_declines_continue(job: Job) -> None:
    worker = start_refund(
        job, "gone", "--approval-timeout", "0.5", "--on-expire", "abandon", "--on-decline", "continue"
    )
    code, _, err = finish(worker)
    assert code == 0, err
    status = job.status("gone")
    assert (status["status"], status["stop"]) == ("abandoned", "approval_expired")
    assert job.effects("gone") == []


def test_a_decision_made_while_no_worker_runs_is_applied_on_resume(job: Job) -> None:
    worker = start_refund(job, "dead", "--lease-seconds", "0.5", "--approval-timeout", "600")
    deadline = job.status("dead")["approvals"][0]["deadline"]
    job.kill(worker)
    assert job.run("approve", "--id", "dead", "--by", "erin", "--yes").returncode == 0
    job.wait_lease_expired("dead")

    resumed = job.run("resume", "--id", "dead")
    assert resumed.returncode == 0, resumed.stderr
    assert [e.tool for e in job.effects("dead")] == ["refund"]
    status = job.status("dead")
    assert status["approvals"][0]["deadline"] == deadline  # the resumed wait did not restart the clock
    assert status["output"] == "Refunded order 4471."


def test_a_deadline_that_passed_while_no_worker_ran_expires_the_request(job: Job) -> None:
    worker = start_refund(job, "gone", "--lease-seconds", "0.5", "--approval-timeout", "1")
    deadline = job.status("gone")["approvals"][0]["deadline"]
    job.kill(worker)
    eventually(lambda: datetime.now(UTC) > datetime.fromisoformat(deadline), what="the deadline")
    late = job.run("approve", "--id", "gone", "--by", "frank", "--yes")
    assert late.returncode == 1
    assert "already expired" in one_line_error(late.stderr)
    assert job.status("gone")["approvals"][0]["status"] == "expired"
    assert job.status("gone")["approvals"][0]["deadline"] == deadline

    job.wait_lease_expired("gone")
    assert job.run("resume", "--id", "gone").returncode == 0
    assert job.effects("gone") == []
    assert "expired" in job.status("gone")["output"]


def test_cancel_while_waiting_withdraws_the_request(job: Job) -> None:
    worker = start_refund(job, "cx")
    assert job.run("cancel", "--id", "cx").returncode == 0
    code, _, err = finish(worker)
    assert code == 0, err
    status = job.status("cx")
    assert (status["status"], status["stop"]) == ("abandoned", "cancelled")  # nothing was done, nothing to undo
    assert status["approvals"][0]["status"] == "withdrawn"
    late = job.run("approve", "--id", "cx", "--by", "gina", "--yes")
    assert late.returncode == 1
    assert "cancelled before a decision" in one_line_error(late.stderr)
    assert job.effects("cx") == []


def test_a_worker_that_died_right_after_withdrawing_is_resumed_as_cancelled(job: Job) -> None:
    worker = start_refund(job, "wd", "--lease-seconds", "0.5")
    job.kill(worker)
    assert job.run("cancel", "--id", "wd").returncode == 0
    with sqlite3.connect(job.db) as db:  # the state a worker leaves when killed between withdraw and stop step
        db.execute("UPDATE approvals SET status = 'withdrawn' WHERE run_id = 'wd'")
    job.wait_lease_expired("wd")
    resumed = job.run("resume", "--id", "wd")
    assert resumed.returncode == 0, resumed.stderr
    status = job.status("wd")
    assert (status["status"], status["stop"]) == ("abandoned", "cancelled")
    assert job.effects("wd") == []


def test_a_reused_provider_call_id_asks_again_and_gets_its_own_key(job: Job) -> None:
    """On the checkpoint runner: `pay(s-2)` reuses the provider id of the approved
    `pay(s-1)`; it is a new request under its own identity, and denying it leaves only s-1's effect."""
    worker = job.spawn(
        "run",
        "--id",
        "r",
        "--scenario",
        "t-reused-ids",
        "--agents",
        "tests.support.agents_for_tests",
        "--poll-interval",
        "0.05",
    )

    def pending() -> list[dict[str, Any]]:
        if job.store.run("r") is None:
            return []
        return [a for a in job.status("r")["approvals"] if a["status"] == "pending"]

    eventually(lambda: [a["call_id"] for a in pending()] == ["1.1"], what="the first payment's request")
    assert job.cli("approve", "--id", "r", "--by", "maria", "--call", "1.1", "--yes") == 0
    eventually(lambda: [a["call_id"] for a in pending()] == ["2.1"], what="the second payment's own request")
    assert pending()[0]["arguments"] == {"supplier": "s-2"}
    assert job.cli("deny", "--id", "r", "--by", "maria", "--call", "2.1") == 0
    code, _, err = finish(worker)
    assert code == 0, err
    assert [(e.args["supplier"], e.key) for e in job.effects("r")] == [("s-1", "r:1.1")]
    statuses = {a["call_id"]: a["status"] for a in job.status("r")["approvals"]}
    assert statuses == {"1.1": "approved", "2.1": "declined"}


def test_approve_shows_the_arguments_and_needs_the_reviewed_hash_or_yes(job: Job) -> None:
    """`job approve` approves what a person saw: it prints the call, and refuses to guess which
    arguments were reviewed — the hash prefix `job status` showed, or an explicit --yes to what it printed."""
    worker = start_refund(job, "seen", "--approval-timeout", "60")
    [pending] = job.status("seen")["approvals"]
    shown = job.run("status", "--id", "seen")
    assert f"refund(order_id='4471') hash {pending['arguments_hash'][:12]}" in shown.stdout

    bare = job.run("approve", "--id", "seen", "--by", "maria")
    assert bare.returncode == 2
    assert f"approving {pending['call_id']}: refund(order_id='4471')" in bare.stdout
    assert "--hash" in one_line_error(bare.stderr) and "--yes" in bare.stderr
    short = job.run("approve", "--id", "seen", "--by", "maria", "--hash", pending["arguments_hash"][:4])
    assert short.returncode == 2 and "at least 8" in short.stderr
    wrong = job.run("approve", "--id", "seen", "--by", "maria", "--hash", "deadbeef00")
    assert wrong.returncode == 1 and "hash does not match" in wrong.stderr
    assert job.status("seen")["approvals"][0]["status"] == "pending"  # nothing approved so far

    yes = job.run("approve", "--id", "seen", "--by", "maria", "--yes")
    assert yes.returncode == 0, yes.stderr
    assert "approving" in yes.stdout and "refund(order_id='4471')" in yes.stdout
    code, _, err = finish(worker)
    assert code == 0, err
    audit = [(a["event"], a["arguments_hash"]) for a in job.status("seen")["audit"]]
    assert audit == [("rejected", "deadbeef00"), ("approved", pending["arguments_hash"])]
