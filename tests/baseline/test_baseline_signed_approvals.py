"""The checkpoint engine's approver is authenticated as the Temporal one is: with approver
keys configured (`AGENT_APPROVER_KEYS`), a decision counts only when signed by the approver it names, over this
run, this call, the verdict and the arguments hash, and over the request it answers: the run's execution (its
row's own id) and the request's deadline (agentic/signing.py). `job approve --key-file` signs; `job
serve` signs for its logged-in approvers; and the runner — the process about to refund — verifies the recorded
decision itself. The tests play the attacker: a name without a key, another person's key, a forged key under
the approver's name, a process configured without keys, a row written straight into `baseline.db`, and a
signature taken from a pruned run replayed onto a new run under its id."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from agentic.approvals import Decision
from agentic.signing import ApproverKey, parse_public_keys
from duragent._baseline import approvals
from duragent._baseline.errors import DecisionRejected
from tests.support.baseline_helpers import Job, eventually, finish, open_job
from tests.support.runs_api_stack import APPROVER, OTHER_APPROVER, checkpoint_stack, finished, waiting

# Processes of their own: `job` command lines, servers.
pytestmark = pytest.mark.system

MARIA = ApproverKey.generate("maria")
EVE = ApproverKey.generate("eve")
FORGED_MARIA = ApproverKey.generate("maria")  # maria's name, somebody else's key


@pytest.fixture
def job(tmp_path: Path) -> Iterator[Job]:
    yield from open_job(tmp_path)


def key_file(job: Job, key: ApproverKey, name: str) -> str:
    path = job.tmp / name
    path.write_text(key.entry())
    path.chmod(0o600)
    return str(path)


def start_refund(job: Job, run_id: str) -> Any:
    worker = job.spawn("run", "--id", run_id, "--scenario", "refund", "--poll-interval", "0.05")
    eventually(lambda: job.store.run(run_id) and job.status(run_id)["status"] == "awaiting_approval", what="the wait")
    return worker


def audit(job: Job, run_id: str) -> list[tuple[str, str | None, int, str | None]]:
    return [(a["event"], a["approver"], a["signed"], a["rejection"]) for a in job.status(run_id)["audit"]]


def test_only_a_decision_signed_by_a_configured_approver_refunds(job: Job) -> None:
    job.extra_env["AGENT_APPROVER_KEYS"] = MARIA.public_entry()
    worker = start_refund(job, "signed")
    for attempt, why in (
        (("--by", "maria"), "not signed"),
        (("--key-file", key_file(job, EVE, "eve.key")), "'eve' is not an approver here"),
        (("--key-file", key_file(job, FORGED_MARIA, "forged.key")), "the signature is not maria's"),
    ):
        refused = job.run("approve", "--id", "signed", "--yes", *attempt)
        assert refused.returncode == 1 and why in refused.stderr, (attempt, refused.stderr)
    assert job.effects("signed") == [] and job.status("signed")["status"] == "awaiting_approval"

    approved = job.run("approve", "--id", "signed", "--yes", "--key-file", key_file(job, MARIA, "maria.key"))
    assert approved.returncode == 0, approved.stderr
    assert "approved by maria (signed)" in approved.stdout
    code, _, err = finish(worker)
    assert code == 0, err
    assert len(job.effects("signed")) == 1
    assert [(event, signed) for event, _, signed, _ in audit(job, "signed")] == [
        ("rejected", 0),
        ("rejected", 0),
        ("rejected", 0),
        ("approved", 1),
    ]


def test_the_runner_verifies_a_recorded_decision_before_it_acts(job: Job) -> None:
    job.extra_env["AGENT_APPROVER_KEYS"] = MARIA.public_entry()
    worker = start_refund(job, "verified")  # the runner has maria's public key
    [pending] = job.status("verified")["approvals"]

    # A process configured without keys records an unsigned "approved by maria"...
    del job.extra_env["AGENT_APPROVER_KEYS"]
    unchecked = job.run("approve", "--id", "verified", "--by", "maria", "--yes")
    assert unchecked.returncode == 0, unchecked.stderr
    job.extra_env["AGENT_APPROVER_KEYS"] = MARIA.public_entry()

    def reopened(rejections: int) -> bool:
        rows = [a for a in audit(job, "verified") if a[0] == "rejected"]
        return len(rows) == rejections and job.status("verified")["approvals"][0]["status"] == "pending"

    eventually(lambda: reopened(1), what="the runner to refuse the unsigned decision")
    # ...and one written straight into the store, with a signature over other arguments.
    other = FORGED_MARIA.sign(b"anything")
    with sqlite3.connect(job.db) as db:
        db.execute(
            "UPDATE approvals SET status = 'approved', decided_by = 'maria', signature = ? WHERE run_id = 'verified'",
            (other,),
        )
    eventually(lambda: reopened(2), what="the runner to refuse the forged row")
    assert job.effects("verified") == [], "nothing was refunded"
    rejections = [why for event, _, _, why in audit(job, "verified") if event == "rejected"]
    assert rejections[0].startswith("the recorded decision does not verify: the decision is not signed")
    assert rejections[1].startswith("the recorded decision does not verify: the signature is not maria's")

    prefix = pending["arguments_hash"][:12]
    approved = job.run("approve", "--id", "verified", "--hash", prefix, "--key-file", key_file(job, MARIA, "m.key"))
    assert approved.returncode == 0, approved.stderr
    code, _, err = finish(worker)
    assert code == 0, err
    assert len(job.effects("verified")) == 1
    assert audit(job, "verified")[-1][:3] == ("approved", "maria", 1)


def test_a_signature_cannot_be_replayed_onto_a_new_run_under_a_reused_id(job: Job) -> None:
    """Maria approved refund(4471) in run `reused`; it ran and was pruned, so the id is free again, and a new run
    takes it with the same agent, call and arguments (the same call id and hash). Whoever kept her signed
    decision (from `baseline.db` or the prune archive) replays it: to the recording process as it was signed,
    relabelled with the new run's execution and deadline, and written straight into the store for the runner.
    None moves the new run; a decision maria signs for it does."""
    job.extra_env["AGENT_APPROVER_KEYS"] = MARIA.public_entry()
    keys = parse_public_keys(MARIA.public_entry())
    first = start_refund(job, "reused")
    maria = key_file(job, MARIA, "maria.key")
    assert job.run("approve", "--id", "reused", "--yes", "--key-file", maria).returncode == 0
    assert finish(first)[0] == 0
    [old] = job.status("reused")["approvals"]
    old_run = job.store.require("reused")
    assert old["status"] == "approved" and old["signature"] and old_run.execution
    kept = Decision(
        call_id=old["call_id"],
        approve=True,
        approver="maria",
        reason=old["reason"],
        arguments_hash=old["arguments_hash"],
        execution=old_run.execution,
        deadline=datetime.fromisoformat(old["deadline"]),
        signature=old["signature"],
    )
    assert approvals.rejection(job.store, "reused", kept, keys) == "call 1.1 was already approved"  # it verified
    pruned = job.run("prune", "--all", "--yes", "--archive-dir", str(job.tmp / "archive"))
    assert pruned.returncode == 0 and job.store.run("reused") is None, pruned.stderr

    second = start_refund(job, "reused")
    [pending] = job.status("reused")["approvals"]
    new_run = job.store.require("reused")
    assert (pending["call_id"], pending["arguments_hash"]) == (old["call_id"], old["arguments_hash"])
    assert new_run.execution != old_run.execution

    with pytest.raises(DecisionRejected, match=f"signed for execution {old_run.execution}, not this execution"):
        approvals.record(job.store, "reused", kept, keys)
    relabelled = kept.model_copy(
        update={"execution": new_run.execution, "deadline": datetime.fromisoformat(pending["deadline"])}
    )
    with pytest.raises(DecisionRejected, match="the signature is not maria's"):
        approvals.record(job.store, "reused", relabelled, keys)
    with sqlite3.connect(job.db) as db:
        db.execute(
            "UPDATE approvals SET status = 'approved', decided_by = 'maria', reason = ?, signature = ?"
            " WHERE run_id = 'reused'",
            (kept.reason, kept.signature),
        )

    def refused_by_the_runner() -> bool:
        rejected = [why for event, _, _, why in audit(job, "reused") if event == "rejected"]
        return len(rejected) == 3 and job.status("reused")["approvals"][0]["status"] == "pending"

    eventually(refused_by_the_runner, what="the runner to refuse the replayed row")
    rejections = [why for event, _, _, why in audit(job, "reused") if event == "rejected"]
    assert rejections[2].startswith("the recorded decision does not verify: the signature is not maria's")
    assert not [s for s in job.steps("reused") if s.step_name == "tool:refund"], "the refund step never started"
    assert job.status("reused")["status"] == "awaiting_approval"

    assert job.run("approve", "--id", "reused", "--yes", "--key-file", maria).returncode == 0
    code, _, err = finish(second)
    assert code == 0, err
    assert [s.status for s in job.steps("reused") if s.step_name == "tool:refund"] == ["completed"]
    assert audit(job, "reused")[-1][:3] == ("approved", "maria", 1)


def test_job_serve_signs_for_its_approvers_and_refuses_the_others(tmp_path: Path) -> None:
    env = {"AGENT_APPROVER_KEYS": MARIA.public_entry(), "AGENT_API_APPROVER_KEYS": MARIA.entry()}
    stack = checkpoint_stack(tmp_path, env)
    try:
        maria, jo = stack.client(APPROVER), stack.client(OTHER_APPROVER)  # jo: an approver with no key here
        run_id = maria.post("/runs", json={"agent": "refund"}).json()["run_id"]
        [pending] = waiting(maria, run_id)["pending_approvals"]
        url = f"/runs/{run_id}/approvals/{pending['call_id']}"
        decision = {"approve": True, "arguments_hash": pending["arguments_hash"]}
        refused = jo.post(url, json=decision)
        assert refused.status_code == 409 and "'jo' is not an approver here" in refused.json()["error"]
        assert stack.effects(run_id) == []
        accepted = maria.post(url, json=decision)
        assert accepted.status_code == 200, accepted.text
        assert accepted.json()["signed"] is True and accepted.json()["approver"] == "maria"
        assert finished(maria, run_id)["status"] == "completed"
        assert len(stack.effects(run_id)) == 1
    finally:
        stack.close()


def test_a_store_made_before_signed_decisions_is_upgraded(tmp_path: Path) -> None:
    """A `baseline.db` of the earlier schema (version 1) gets the signature columns and an execution for each
    run (each its own), its rows kept."""
    from duragent._baseline.store import Store

    path = tmp_path / "baseline.db"
    Store(path).close()
    with sqlite3.connect(path) as db:  # back to what version 1 had
        db.execute("ALTER TABLE approvals DROP COLUMN signature")
        db.execute("ALTER TABLE approval_audit DROP COLUMN signed")
        db.execute("ALTER TABLE runs DROP COLUMN execution")
        db.execute(
            "INSERT INTO approval_audit(run_id, call_id, event, at) VALUES ('old', '1.1', 'approved', '2026-01-01')"
        )
        for run_id in ("old", "older"):
            db.execute(
                "INSERT INTO runs(run_id, scenario, status, options, created_at, updated_at)"
                " VALUES (?, 'refund', 'awaiting_approval', '{}', '2026-01-01', '2026-01-01')",
                (run_id,),
            )
        db.execute("PRAGMA user_version = 1")
    store = Store(path)
    try:
        [row] = store.query("SELECT * FROM approval_audit")
        assert (row["run_id"], row["signed"]) == ("old", 0)
        assert "signature" in {r[1] for r in store.query("PRAGMA table_info(approvals)")}
        executions = {store.require(run_id).execution for run_id in ("old", "older")}
        assert len(executions) == 2 and all(e and len(e) == 32 for e in executions)
    finally:
        store.close()
