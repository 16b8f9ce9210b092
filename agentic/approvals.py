"""Durable human approval, as pure rules: pending requests with deadlines, decisions checked against
exactly the arguments the approver saw, outcomes that are distinct and final, and an audit trail.

A yes/no gate cannot tell "declined" from "not answered yet"; here `approved`, `declined` and
`expired` are separate, final outcomes, and a decision that does not match a pending request changes
nothing and is recorded as rejected, with why. Time is passed in, never read: runners give workflow time
(Temporal) or wall-clock time (checkpoints), and the rules stay deterministic.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, PositiveFloat

from agentic.messages import ToolCall, canonical_json
from agentic.omit_defaults import OmitDefaults
from agentic.signing import ApproverKey, signature_problem, signed_text

DEFAULT_TIMEOUT = 24 * 3600.0
UNREADABLE = "(unreadable)"  # the call id audited for a decision that could not be read
UNKNOWN_CALL = "(unknown call)"  # where rejections of calls the run never had are counted

# What one decision may carry: anybody who may signal a run chooses its size, and a run carries its
# audit trail to its continuation, whose input Temporal caps at 2 MB. The runs API allows the same reason.
REASON_MAX = 2000
APPROVER_MAX = 200  # the runs API's names are at most 100
CLIENT_MAX = 200
ID_MAX = 100  # call ids (`3.1`), execution ids (a UUID)
HASH_MAX = 128  # a sha256 in hex is 64
SIGNATURE_MAX = 200  # an Ed25519 signature in base64 is 88
# A rejected decision changed nothing: the audit keeps it cut short, and keeps at most this many per call and
# in all; the rest are counted (`ApprovalBook.uncounted`). Their signals stay in the run's history.
REJECTED_TEXT_MAX = 300
REJECTED_PER_CALL = 10
REJECTED_KEPT = 100


def arguments_hash(call: ToolCall) -> str:
    """What an approver approves: this tool with exactly these arguments (canonical JSON, sha256)."""
    return hashlib.sha256(canonical_json({"tool": call.name, "arguments": call.arguments}).encode()).hexdigest()


class Outcome(StrEnum):
    APPROVED = "approved"
    DECLINED = "declined"
    EXPIRED = "expired"


class ApprovalPolicy(OmitDefaults):
    """Per run: how long to wait, per tool if needed, and whether a decline or an expiry abandons the run.

    The default continues: the model is told the action did not happen and says so, nothing already done
    is undone because a human was busy. `abandon` hands the run to the saga instead.
    """

    model_config = ConfigDict(frozen=True)

    timeout_seconds: PositiveFloat = DEFAULT_TIMEOUT
    tool_timeouts: dict[str, PositiveFloat] = Field(default_factory=dict)
    on_decline: Literal["continue", "abandon"] = "continue"
    on_expire: Literal["continue", "abandon"] = "continue"

    def timeout_for(self, tool: str, declared: float | None = None) -> float:
        """The run's per-tool override, else the tool's declared timeout, else the run's default."""
        return self.tool_timeouts.get(tool) or declared or self.timeout_seconds


class Decision(OmitDefaults):
    """What a human sends: which call, yes or no, who, why, and the hash of the arguments they saw."""

    model_config = ConfigDict(frozen=True)

    # Every field bounded: a decision is what any client that may signal a run sends.
    call_id: str = Field(max_length=ID_MAX)
    approve: bool
    approver: str = Field(min_length=1, max_length=APPROVER_MAX)
    reason: str = Field("", max_length=REASON_MAX)
    arguments_hash: str = Field(max_length=HASH_MAX)
    signature: str | None = Field(
        None, max_length=SIGNATURE_MAX, description="The approver's Ed25519 signature (agentic.signing)."
    )
    client: str | None = Field(
        None, max_length=CLIENT_MAX, description="The sending client's identity, as it states it (unverified)."
    )
    # Which execution and which request the decision answers, as the pending request showed them: signed with
    # the rest, so a signature counts for this request of this execution only (unset on older decisions).
    execution: str | None = Field(
        None, max_length=ID_MAX, description="The run's first execution id (`PendingApproval`)."
    )
    deadline: datetime | None = Field(None, description="The deadline of the request it answers.")

    @classmethod
    def answering(
        cls, pending: PendingApproval, approve: bool, approver: str, reason: str = "", client: str | None = None
    ) -> Decision:
        """A decision on exactly what `pending` shows: the hash of its tool and arguments as shown (never the
        hash it states), and its execution and deadline when the run binds signatures to them."""
        bound = pending.execution is not None
        return cls(
            call_id=pending.call_id,
            approve=approve,
            approver=approver,
            reason=reason,
            arguments_hash=pending.shown_hash,
            client=client,
            execution=pending.execution,
            deadline=pending.deadline if bound else None,
        )

    def signed_text(self, run_id: str) -> bytes:
        return signed_text(
            run_id,
            self.call_id,
            self.approve,
            self.approver,
            self.reason,
            self.arguments_hash,
            execution=self.execution,
            deadline=_instant(self.deadline) if self.deadline is not None else None,
        )

    def signed(self, run_id: str, key: ApproverKey) -> Decision:
        """This decision signed by `key` (its name must be the approver's)."""
        if key.name != self.approver:
            raise ValueError(f"the key is {key.name!r}'s, the decision is {self.approver!r}'s")
        return self.model_copy(update={"signature": key.sign(self.signed_text(run_id))})


class PendingApproval(OmitDefaults):
    """A tool call waiting for a person's decision: which run and call, the tool and its arguments, the hash of
    those arguments (a decision carries it, so what was approved is what runs), and when it expires.

    From `RunHandle.pending()` / `wait_for_approval()` or `AgentClient.pending()`; decide it with
    `run.approve(p.call_id, by=..., arguments_hash=p.arguments_hash)` (or `deny`). In a delegation tree
    `root_run_id` and `path` say where it waits, and `address` (`run_id/call_id`) names it uniquely."""

    model_config = ConfigDict(frozen=True)

    run_id: str
    call_id: str
    tool: str
    arguments: dict[str, object] | str
    arguments_hash: str
    requested_at: datetime
    deadline: datetime
    # A delegated run's approvals name the tree they belong to; unset on a run nobody delegated (its own
    # root), so such a run publishes what it always did. Clients fill both in (`in_tree`).
    root_run_id: str | None = Field(None, description="The run at the top.")
    path: list[str] = Field(default_factory=list, description="Run ids from the root down to this run.")
    execution: str | None = Field(
        None,
        description="The run's first execution id, where signatures are bound to it: a decision signs it, and "
        "this request's deadline, with the rest.",
    )

    @property
    def shown_hash(self) -> str:
        """The hash of the tool and arguments exactly as this request shows them: what a decision on it carries."""
        return arguments_hash(ToolCall(name=self.tool, arguments=self.arguments))

    def in_tree(self) -> PendingApproval:
        """With `root_run_id` and `path` filled in: a run nobody delegated is its own root."""
        if self.path:
            return self
        return self.model_copy(update={"root_run_id": self.run_id, "path": [self.run_id]})

    @property
    def address(self) -> str:
        """`run_id/call_id`: names this approval among all those of a delegation tree."""
        return f"{self.run_id}/{self.call_id}"


class AuditEntry(BaseModel):
    """One decision received (accepted or rejected) or one expiry, in the order they happened."""

    model_config = ConfigDict(frozen=True)

    call_id: str
    tool: str | None
    event: Literal["approved", "declined", "expired", "rejected"]
    approver: str | None
    at: datetime
    arguments_hash: str | None
    reason: str = ""
    rejection: str | None = None
    signed: bool = False  # verified against the approver's public key
    client: str | None = None  # the client the decision came from, as it says (unverified)


class ApprovalBook(OmitDefaults):
    """The approval state of one run; a pydantic model, so it checkpoints and continues-as-new whole."""

    pending: dict[str, PendingApproval] = Field(default_factory=dict)
    outcomes: dict[str, Outcome] = Field(default_factory=dict)
    early: dict[str, Decision] = Field(default_factory=dict)
    audit: list[AuditEntry] = Field(default_factory=list)
    run_id: str = ""
    approver_keys: dict[str, str] = Field(
        default_factory=dict, description="name -> Ed25519 public key; when set, only signed decisions count."
    )
    path: list[str] = Field(
        default_factory=list,
        description="A delegated run: run ids from the root down to it, which its requests carry.",
    )
    execution: str = Field(
        "",
        description="The run's first execution id: when set (with approver keys), a signature counts only over it "
        "and the deadline of the request it answers.",
    )
    decisions: dict[str, Decision] = Field(
        default_factory=dict,
        description="The approvals that took effect, by call: what the tool activity is shown before it acts.",
    )
    uncounted: dict[str, int] = Field(
        default_factory=dict,
        description="Rejected decisions left out of the audit, by call: past the number kept.",
    )

    def use_keys(self, keys: Mapping[str, str], execution: str) -> None:
        """The runner's approver keys as they are now (a run asks again whenever it continues as new). Once
        there are keys, signatures are bound to `execution` — the requests already open included, so the
        approval tooling signs them over it."""
        self.approver_keys = dict(keys)
        if keys and not self.execution:
            self.execution = execution
            self.pending = {uid: p.model_copy(update={"execution": execution}) for uid, p in self.pending.items()}

    def request(self, run_id: str, call: ToolCall, now: datetime, timeout_seconds: float) -> PendingApproval:
        """Open (or return the already open) request for `call`, applying a decision that came early.

        Requests are keyed by the runner's call identity (`ToolCall.identity`), which never repeats within a
        run: an outcome given for one call can never be read as the outcome of another."""
        uid = call.identity
        if uid in self.pending:
            return self.pending[uid]
        pending = PendingApproval(
            run_id=run_id,
            call_id=uid,
            tool=call.name,
            arguments=call.arguments,
            arguments_hash=arguments_hash(call),
            requested_at=now,
            deadline=now + timedelta(seconds=timeout_seconds),
            root_run_id=self.path[0] if self.path else None,
            path=self.path,
            execution=self.execution or None,
        )
        self.pending[uid] = pending
        early = self.early.pop(uid, None)
        if early is not None:
            self.decide(early, now, expected=())
        return pending

    def rejection(self, decision: Decision, now: datetime, expected: Iterable[str] = ()) -> str | None:
        """Why `decision` must change nothing, or None if it is acceptable. `expected` are calls the run
        has requested but not reached yet: decisions for them are kept, not rejected."""
        bound = bool(self.approver_keys and self.execution)
        if self.approver_keys:
            problem = signature_problem(
                self.approver_keys, decision.signature, decision.approver, decision.signed_text(self.run_id)
            )
            if problem is not None:
                return problem
        if bound and decision.execution != self.execution:
            return (
                f"the decision is signed for {_execution(decision.execution)}, not this execution of run "
                f"{self.run_id} ({self.execution}); nothing was decided"
            )
        if decision.call_id in self.outcomes:
            return f"call {decision.call_id} was already {self.outcomes[decision.call_id].value}"
        pending = self.pending.get(decision.call_id)
        if pending is None:
            if decision.call_id in set(expected):
                return None
            return f"no approval is pending for call {decision.call_id}"
        if now >= pending.deadline:
            return f"the approval for call {decision.call_id} expired at {pending.deadline.isoformat()}"
        if decision.arguments_hash != pending.arguments_hash:
            return "the arguments hash does not match the pending call's arguments"
        if bound and decision.deadline != pending.deadline:
            answered = _instant(decision.deadline) if decision.deadline else "none"
            return (
                f"the decision answers another request for call {decision.call_id} (deadline {answered}), "
                "not the one pending; nothing was decided"
            )
        return None

    def decide(self, decision: Decision, now: datetime, expected: Iterable[str] = ()) -> AuditEntry:
        """Apply or reject `decision`; either way the audit trail records it."""
        pending = self.pending.get(decision.call_id)
        why = self.rejection(decision, now, expected)
        if why is None and pending is None:
            self.early[decision.call_id] = decision  # kept until the run reaches this call
            return self._log(decision, "approved" if decision.approve else "declined", None, now, early=True)
        if why is not None:
            return self._log(decision, "rejected", pending.tool if pending else None, now, rejection=why)
        assert pending is not None
        self.outcomes[decision.call_id] = Outcome.APPROVED if decision.approve else Outcome.DECLINED
        if decision.approve:
            self.decisions[decision.call_id] = decision
        del self.pending[decision.call_id]
        return self._log(decision, self.outcomes[decision.call_id].value, pending.tool, now)  # type: ignore[arg-type]

    def unreadable(self, now: datetime, problem: str) -> AuditEntry:
        """A decision that could not even be read (not JSON, the wrong shape, a field too long): it changes
        nothing, and is audited like any other rejected decision (its problem cut short: the sender chose its
        size)."""
        entry = AuditEntry(
            call_id=UNREADABLE,
            tool=None,
            event="rejected",
            approver=None,
            at=now,
            arguments_hash=None,
            rejection=f"the decision could not be read: {problem[:REJECTED_TEXT_MAX]}",
        )
        self._audit_rejected(UNREADABLE, entry)
        return entry

    def bounded(self) -> ApprovalBook:
        """This book with its rejected entries cut short and capped as they are when audited now: what a run
        hands to its continuation, whatever an earlier version audited whole."""
        kept = self.model_copy(update={"audit": [], "uncounted": dict(self.uncounted)})
        for entry in self.audit:
            if entry.event != "rejected":
                kept.audit.append(entry)
            else:
                kept._audit_rejected(kept._counted_as(entry.call_id), _cut(entry))
        return kept

    def _counted_as(self, call_id: str) -> str:
        """Rejections are capped per call the run has (pending, decided or being decided); those naming any
        other call share one count, or a sender would get a cap per call id it invents."""
        known = call_id in self.pending or call_id in self.outcomes or call_id in self.early
        return call_id if known or call_id == UNREADABLE else UNKNOWN_CALL

    def _audit_rejected(self, counted_as: str, entry: AuditEntry) -> None:
        rejected = [e for e in self.audit if e.event == "rejected"]
        same = sum(1 for e in rejected if self._counted_as(e.call_id) == counted_as)
        if same >= REJECTED_PER_CALL or len(rejected) >= REJECTED_KEPT:
            self.uncounted[counted_as] = self.uncounted.get(counted_as, 0) + 1
        else:
            self.audit.append(entry)

    def expire(self, call_id: str) -> AuditEntry:
        """The request expired at its deadline: recorded at the deadline itself, not at whenever a worker
        got round to noticing."""
        pending = self.pending.pop(call_id)
        self.outcomes[call_id] = Outcome.EXPIRED
        entry = AuditEntry(
            call_id=call_id,
            tool=pending.tool,
            event="expired",
            approver=None,
            at=pending.deadline,
            arguments_hash=pending.arguments_hash,
            reason=f"no decision by {pending.deadline.isoformat()}",
        )
        self.audit.append(entry)
        return entry

    def _log(
        self,
        decision: Decision,
        event: str,
        tool: str | None,
        now: datetime,
        *,
        rejection: str | None = None,
        early: bool = False,
    ) -> AuditEntry:
        entry = AuditEntry(
            call_id=decision.call_id,
            tool=tool,
            event=event,  # type: ignore[arg-type]
            approver=decision.approver,
            at=now,
            arguments_hash=decision.arguments_hash,
            reason=decision.reason,
            rejection=rejection,
            signed=bool(self.approver_keys) and rejection is None,
            client=decision.client,
        )
        if rejection is not None:  # it changed nothing: kept cut short, and only so many
            entry = _cut(entry)
            self._audit_rejected(self._counted_as(decision.call_id), entry)
        elif not early:  # an early decision is audited when it takes effect, with its call's tool
            self.audit.append(entry)
        return entry


def effect_refusal(
    decision: Decision | None, call: ToolCall, *, run_id: str, execution: str, keys: Mapping[str, str]
) -> str | None:
    """Why a tool that requires confirmation must not act on `call`, shown `decision`; None when it may.

    Checked where the effect happens, against what the server reports about the calling run (`run_id`,
    `execution`) and the runner's own approver keys (`keys`): the workflow's approval book decided already,
    and this holds whatever decided it. With keys, only a decision signed by a configured approver, over
    this run's execution, this call, these arguments and yes, lets the tool act. Without keys nobody's
    decision can be authenticated: it must still be an approval of exactly this call and these arguments."""
    if decision is None:
        return f"{call.name} requires an approval and none was shown for call {call.identity}; nothing was done"
    if decision.call_id != call.identity or not decision.approve:
        verdict = "approval" if decision.approve else "denial"
        return f"the decision shown is a {verdict} of call {decision.call_id}, not an approval of call {call.identity}"
    if decision.arguments_hash != arguments_hash(call):
        return f"the approval shown is for other arguments than {call.name}'s; nothing was done"
    if not keys:
        return None
    problem = signature_problem(keys, decision.signature, decision.approver, decision.signed_text(run_id))
    if problem is not None:
        return problem
    if decision.execution != execution or decision.deadline is None:
        return (
            f"the approval is signed for {_execution(decision.execution)}, not this execution of run {run_id} "
            f"({execution}); nothing was done"
        )
    return None


def _cut(entry: AuditEntry) -> AuditEntry:
    """A rejected entry with each text the sender chose cut short."""

    def short(text: str | None) -> str | None:
        return text[:REJECTED_TEXT_MAX] if text is not None else None

    return entry.model_copy(
        update={
            "call_id": entry.call_id[:ID_MAX],
            "approver": short(entry.approver),
            "reason": entry.reason[:REJECTED_TEXT_MAX],
            "rejection": short(entry.rejection),
            "arguments_hash": entry.arguments_hash[:HASH_MAX] if entry.arguments_hash is not None else None,
            "client": short(entry.client),
        }
    )


def _instant(moment: datetime) -> str:
    """A moment in one spelling, whatever time zone it was parsed in: what a signature covers."""
    return moment.astimezone(UTC).isoformat(timespec="microseconds")


def _execution(execution: str | None) -> str:
    return f"execution {execution}" if execution else "no execution"
