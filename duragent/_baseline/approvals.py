"""Durable approvals in the store: the request (with its deadline) is written before the wait starts, the
waiting worker polls the row, and decisions from any process go through `agentic.approvals`' rules.

`pending`, `approved`, `declined` and `expired` are distinct; `withdrawn` means the run was cancelled
while it waited. A decision that does not fit changes nothing and is recorded in `approval_audit`.

Signed decisions, as on Temporal (agentic/signing.py): where approver keys are configured
(`AGENT_APPROVER_KEYS`), a decision counts only when signed by the approver it names, over this run, this call,
the verdict, the reason and the arguments hash — and over the request it answers: the run's execution (the
`runs.execution` of this row: a run id is free again once its run is pruned, an execution never recurs) and
the request's deadline, so a signature cannot be replayed onto a new run under a reused id. The
decision to sign is `decision_on`'s; the process that records a decision checks it with its keys
(`job approve --key-file` signs; `job serve` signs for its logged-in approvers); and the runner — the process
about to act — checks the recorded decision again with its own keys before it acts, so a row written by
anyone who can write the store, or by a process configured without keys, moves nothing: it is audited as
rejected and the call waits on.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from pydantic import ValidationError

from agentic import ToolCall
from agentic.approvals import (
    APPROVER_MAX,
    REASON_MAX,
    ApprovalBook,
    ApprovalPolicy,
    AuditEntry,
    Decision,
    Outcome,
    PendingApproval,
    arguments_hash,
)
from agentic.signing import signature_problem
from duragent._baseline.errors import BadInput, DecisionRejected, UnknownRun
from duragent._baseline.lease import LeaseKeeper
from duragent._baseline.schema import TERMINAL
from duragent._baseline.store import Progress, Store, iso

_DECIDED = {o.value for o in Outcome}


@dataclass(frozen=True)
class Answer:
    outcome: Outcome | None  # None: the run was cancelled while waiting
    reason: str
    timeout: float
    cancel_detail: str = ""


def await_decision(
    store: Store,
    run_id: str,
    owner: str,
    call: ToolCall,
    *,
    declared_timeout: float | None,
    policy: ApprovalPolicy,
    poll: float,
    lease: LeaseKeeper | None,
    progress: Progress,
    ancestors: Sequence[str] = (),
    approver_keys: Mapping[str, str] | None = None,
) -> Answer:
    """Wait for the call's decision. `approver_keys` (the runner's own): a recorded decision is acted on only
    when it verifies under them; one that does not is audited as rejected and the call waits on."""
    timeout = policy.timeout_for(call.name, declared_timeout)
    _open(store, run_id, owner, call, timeout, progress)
    while True:
        if lease is not None:
            lease.check()
        row = _row(store.query("SELECT * FROM approvals WHERE run_id = ? AND call_id = ?", (run_id, call.identity)))
        if row["status"] in _DECIDED and approver_keys and not _verified(store, run_id, call, row, approver_keys):
            continue  # refused and reopened: read it again
        if row["status"] in _DECIDED:
            break
        cancel = store.pending_cancel(run_id, *ancestors)  # a delegated run's wait ends with its parent's
        if row["status"] == "withdrawn":  # also found on resume, if the worker died right after withdrawing
            detail = cancel["detail"] if cancel is not None else ""
            return Answer(None, "", row["timeout_s"], cancel_detail=detail or "cancelled by request")
        now = datetime.now(UTC)
        deadline = datetime.fromisoformat(row["deadline"])
        if now >= deadline:
            _expire(store, run_id, call.identity, now)
            continue
        if cancel is not None:
            _withdraw(store, run_id, call.identity)  # unless a decision landed first: then the decision stands
            continue
        time.sleep(min(poll, max((deadline - now).total_seconds(), 0.01)))
    store.set_status(run_id, owner, "running")
    return Answer(Outcome(row["status"]), row["reason"], row["timeout_s"])


def _open(store: Store, run_id: str, owner: str, call: ToolCall, timeout: float, progress: Progress) -> None:
    """Record the request and its deadline (once: a resumed wait keeps the original deadline)."""
    with store.owned(run_id, owner) as db:
        row = db.execute(
            "SELECT status FROM approvals WHERE run_id = ? AND call_id = ?", (run_id, call.identity)
        ).fetchone()
        if row is None:
            pending = ApprovalBook().request(run_id, call, datetime.now(UTC), timeout)
            _insert(db, pending, timeout)
        elif row[0] != "pending":
            return
        db.execute(
            "UPDATE runs SET status = 'awaiting_approval', progress_step = ?, progress_total = ?,"
            " progress_label = ? WHERE run_id = ?",
            (progress.step, progress.total, progress.label, run_id),
        )


def _insert(db: sqlite3.Connection, pending: PendingApproval, timeout: float) -> None:
    db.execute(
        "INSERT INTO approvals(run_id, call_id, tool, arguments, arguments_hash, status, timeout_s,"
        " requested_at, deadline) VALUES (?, ?, ?, ?, ?, 'pending', ?, ?, ?)",
        (
            pending.run_id,
            pending.call_id,
            pending.tool,
            json.dumps(pending.arguments, sort_keys=True),
            pending.arguments_hash,
            timeout,
            pending.requested_at.isoformat(timespec="milliseconds"),
            pending.deadline.isoformat(timespec="milliseconds"),
        ),
    )


def _verified(store: Store, run_id: str, call: ToolCall, row: sqlite3.Row, keys: Mapping[str, str]) -> bool:
    """Whether the recorded decision is one a configured approver signed for exactly this call (its hash
    recomputed from the call the runner is about to make); if not, audit it as rejected and reopen the call."""
    if row["status"] == Outcome.EXPIRED.value:
        return True  # nobody's decision: the deadline's, noticed by whoever passed it
    decision = Decision(  # what the runner knows itself: the call it is about to make, its own run and request
        call_id=call.identity,
        approve=row["status"] == Outcome.APPROVED.value,
        # Cut to the bounds a decision has now: a longer one recorded before cannot verify anyway.
        approver=(row["decided_by"] or "?")[:APPROVER_MAX],
        reason=row["reason"][:REASON_MAX],
        arguments_hash=arguments_hash(call),
        signature=row["signature"],
        execution=_execution(store.query("SELECT execution FROM runs WHERE run_id = ?", (run_id,))),
        deadline=datetime.fromisoformat(row["deadline"]),
    )
    problem = signature_problem(keys, decision.signature, decision.approver, decision.signed_text(run_id))
    if problem is None:
        return True
    with store.transaction() as db:
        reopened = db.execute(
            "UPDATE approvals SET status = 'pending', decided_by = NULL, reason = '', decided_at = NULL,"
            " signature = NULL WHERE run_id = ? AND call_id = ? AND status = ? AND decided_by IS ?"
            " AND signature IS ?",
            (run_id, call.identity, row["status"], row["decided_by"], row["signature"]),
        ).rowcount
        if reopened:  # (else it changed meanwhile: it is read again)
            entry = _rejected(decision, row, datetime.now(UTC), f"the recorded decision does not verify: {problem}")
            _persist(db, run_id, entry)
    return False


def _expire(store: Store, run_id: str, call_id: str, now: datetime) -> None:
    with store.transaction() as db:
        book, _ = _book(db, run_id)
        if call_id in book.pending:
            _persist(db, run_id, book.expire(call_id))


def _withdraw(store: Store, run_id: str, call_id: str) -> None:
    with store.transaction() as db:
        changed = db.execute(
            "UPDATE approvals SET status = 'withdrawn', decided_at = ? WHERE run_id = ? AND call_id = ?"
            " AND status = 'pending'",
            (iso(), run_id, call_id),
        ).rowcount
        if changed:
            db.execute(
                "INSERT INTO approval_audit(run_id, call_id, event, at, reason) VALUES (?, ?, 'withdrawn', ?, ?)",
                (run_id, call_id, iso(), "the run was cancelled while waiting"),
            )


def decision_on(
    store: Store,
    run_id: str,
    *,
    approve: bool,
    approver: str,
    call_id: str | None = None,
    reason: str = "",
    arguments_hash: str | None = None,
) -> Decision:
    """The decision `approver` makes on call `call_id` (default: the run's only pending call), bound to the
    request it answers — this run's execution and the request's deadline — as a signature must cover them
    (`.signed(run_id, key)`); `arguments_hash`: the hash the approver reviewed (default: the request's)."""
    with store.transaction() as db:  # one consistent read
        run = db.execute("SELECT execution FROM runs WHERE run_id = ?", (run_id,)).fetchone()
        if run is None:
            raise UnknownRun(f"unknown run id {run_id!r}")
        rows = {r["call_id"]: r for r in db.execute("SELECT * FROM approvals WHERE run_id = ?", (run_id,))}
    call_id = call_id or _only_call(run_id, rows)
    row = rows.get(call_id)
    try:
        return Decision(
            call_id=call_id,
            approve=approve,
            approver=approver,
            reason=reason,
            arguments_hash=arguments_hash or (row["arguments_hash"] if row else ""),
            execution=run["execution"],
            deadline=datetime.fromisoformat(row["deadline"]) if row else None,
        )
    except ValidationError as exc:
        raise BadInput(f"invalid decision: {exc.errors()[0]['msg']}") from None


def decide(
    store: Store,
    run_id: str,
    *,
    approve: bool,
    approver: str,
    call_id: str | None = None,
    reason: str = "",
    arguments_hash: str | None = None,
    approver_keys: Mapping[str, str] | None = None,
) -> AuditEntry:
    """Apply an unsigned decision (`decision_on`, then `record`): what counts where no approver keys are
    configured; with `approver_keys` it is recorded as rejected."""
    decision = decision_on(
        store,
        run_id,
        approve=approve,
        approver=approver,
        call_id=call_id,
        reason=reason,
        arguments_hash=arguments_hash,
    )
    return record(store, run_id, decision, approver_keys)


def record(store: Store, run_id: str, decision: Decision, approver_keys: Mapping[str, str] | None = None) -> AuditEntry:
    """Apply a human's decision, or record why it was rejected (and raise DecisionRejected). With
    `approver_keys` (this process's), only a decision signed by its approver, over this execution and the
    pending request, counts."""
    now = datetime.now(UTC)
    with store.transaction() as db:
        run = db.execute("SELECT status FROM runs WHERE run_id = ?", (run_id,)).fetchone()
        if run is None:
            raise UnknownRun(f"unknown run id {run_id!r}")
        row = db.execute(
            "SELECT * FROM approvals WHERE run_id = ? AND call_id = ?", (run_id, decision.call_id)
        ).fetchone()
        book, _ = _book(db, run_id, approver_keys)
        if decision.call_id in book.pending and now >= book.pending[decision.call_id].deadline:
            _persist(db, run_id, book.expire(decision.call_id))  # whoever notices the deadline first records it
        why = _outside_the_book(run["status"], row)
        entry = _rejected(decision, row, now, why) if why else book.decide(decision, now)
        if entry.tool is None and row is not None:
            entry = entry.model_copy(update={"tool": row["tool"]})
        _persist(db, run_id, entry, decision.signature)
    if entry.event == "rejected":
        raise DecisionRejected(f"decision rejected: {entry.rejection}")
    return entry


def rejection(
    store: Store, run_id: str, decision: Decision, approver_keys: Mapping[str, str] | None = None
) -> str | None:
    """Why `decision` would be rejected now, without recording anything (the HTTP API answers 409 and
    changes nothing, as Temporal's update validator does); None if `decide` would apply it."""
    with store.transaction() as db:  # one consistent read
        run = db.execute("SELECT status FROM runs WHERE run_id = ?", (run_id,)).fetchone()
        if run is None:
            raise UnknownRun(f"unknown run id {run_id!r}")
        row = db.execute(
            "SELECT * FROM approvals WHERE run_id = ? AND call_id = ?", (run_id, decision.call_id)
        ).fetchone()
        book, _ = _book(db, run_id, approver_keys)
    if run["status"] in TERMINAL and (row is None or row["status"] == "pending"):
        return f"run {run_id} has already ended ({run['status']}); nothing waits for this decision"
    return _outside_the_book(run["status"], row) or book.rejection(decision, datetime.now(UTC))


def _outside_the_book(run_status: str, row: sqlite3.Row | None) -> str | None:
    """Rejections the pure rules cannot know: the run stopped waiting."""
    if row is not None and row["status"] == "withdrawn":
        return f"the run was cancelled before a decision on call {row['call_id']}"
    if row is not None and row["status"] == "pending" and run_status in TERMINAL:
        return f"the run already ended ({run_status}); nothing waits for this decision"
    return None


def _rejected(decision: Decision, row: sqlite3.Row | None, now: datetime, why: str) -> AuditEntry:
    return AuditEntry(
        call_id=decision.call_id,
        tool=row["tool"] if row else None,
        event="rejected",
        approver=decision.approver,
        at=now,
        arguments_hash=decision.arguments_hash,
        reason=decision.reason,
        rejection=why,
    )


def _only_call(run_id: str, rows: dict[str, sqlite3.Row]) -> str:
    pending = [c for c, r in rows.items() if r["status"] == "pending"]
    candidates = pending or list(rows)
    if len(candidates) == 1:
        return candidates[0]
    if not candidates:
        raise DecisionRejected(f"run {run_id} has requested no approval; nothing to decide")
    raise BadInput(f"run {run_id} has several approvals ({', '.join(candidates)}); pass --call")


def _book(
    db: sqlite3.Connection, run_id: str, approver_keys: Mapping[str, str] | None = None
) -> tuple[ApprovalBook, list[sqlite3.Row]]:
    """The run's approvals as agentic's ApprovalBook, so its rules decide (signatures too, with keys)."""
    rows = db.execute("SELECT * FROM approvals WHERE run_id = ?", (run_id,)).fetchall()
    execution = _execution(db.execute("SELECT execution FROM runs WHERE run_id = ?", (run_id,)).fetchall())
    book = ApprovalBook(run_id=run_id, approver_keys=dict(approver_keys or {}), execution=execution)
    for r in rows:
        if r["status"] == "pending":
            book.pending[r["call_id"]] = PendingApproval(
                run_id=run_id,
                call_id=r["call_id"],
                tool=r["tool"],
                arguments=json.loads(r["arguments"]),
                arguments_hash=r["arguments_hash"],
                requested_at=datetime.fromisoformat(r["requested_at"]),
                deadline=datetime.fromisoformat(r["deadline"]),
                execution=execution or None,
            )
        elif r["status"] in _DECIDED:
            book.outcomes[r["call_id"]] = Outcome(r["status"])
    return book, rows


def _persist(db: sqlite3.Connection, run_id: str, entry: AuditEntry, signature: str | None = None) -> None:
    if entry.event != "rejected":
        db.execute(
            "UPDATE approvals SET status = ?, decided_by = ?, reason = ?, decided_at = ?, signature = ?"
            " WHERE run_id = ? AND call_id = ?",
            (
                entry.event,
                entry.approver,
                entry.reason,
                entry.at.isoformat(timespec="milliseconds"),
                signature,
                run_id,
                entry.call_id,
            ),
        )
    db.execute(
        "INSERT INTO approval_audit(run_id, call_id, tool, event, approver, at, arguments_hash, reason, rejection,"
        " signed) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            run_id,
            entry.call_id,
            entry.tool,
            entry.event,
            entry.approver,
            entry.at.isoformat(timespec="milliseconds"),
            entry.arguments_hash,
            entry.reason,
            entry.rejection,
            int(entry.signed),
        ),
    )


def _execution(rows: Sequence[sqlite3.Row]) -> str:
    """The run's execution (`runs.execution`), or "" when the run is gone: a decision then binds to nothing."""
    return str(rows[0]["execution"] or "") if rows else ""


def _row(rows: list[sqlite3.Row]) -> sqlite3.Row:
    if not rows:
        raise LookupError("the approval request vanished")
    return rows[0]


def view(store: Store, run_id: str) -> dict[str, Any]:
    approvals = [
        dict(r) | {"arguments": json.loads(r["arguments"])}
        for r in store.query("SELECT * FROM approvals WHERE run_id = ? ORDER BY requested_at", (run_id,))
    ]
    audit = [dict(r) for r in store.query("SELECT * FROM approval_audit WHERE run_id = ? ORDER BY id", (run_id,))]
    return {"approvals": approvals, "audit": audit}
