"""The runs API over Temporal, through `AgentClient` / `RunHandle` only: visibility lists runs, the history
gives the step list, the `progress` / `approvals` queries (or the result, once closed) the rest.

Decisions are `RunHandle.decide` with the caller's token identity as the approver; where workers require
signed decisions (AGENT_APPROVER_KEYS), this process signs for the approvers whose private keys it holds
(`AGENT_API_APPROVER_KEYS`, duragent/_config/approver_keys.py) — and only for them: a token identity without a key gets
the workflow's rejection ("not signed"), 409.
"""

from __future__ import annotations

import time
import uuid
from collections import OrderedDict
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import timedelta
from typing import Any

from pydantic import ValidationError
from temporalio.client import WorkflowExecutionDescription, WorkflowExecutionStatus
from temporalio.service import RPCError

from agentic import Agent
from agentic.agent import InvalidOptions
from agentic.approvals import AuditEntry, PendingApproval
from agentic.progress import percent
from agentic.signing import ApproverKey
from duragent._activities.inputs import AgentResult
from duragent._client import AgentClient, RunHandle
from duragent._config.webhook_signing import redact_url, url_problem
from duragent._errors import (
    ApprovalRejected,
    NoPendingApproval,
    RunAlreadyExists,
    RunClosed,
    RunFailed,
    TemporalUnavailable,
    UnknownRun,
    WorkerUnavailable,
)
from duragent._ops.http.auth import Principal
from duragent._ops.http.conversations import Conversations
from duragent._ops.http.engine import StreamEvent
from duragent._ops.http.errors import Conflict, EngineUnavailable, InvalidRequest, RunNotFound
from duragent._ops.http.feeds import Feeds
from duragent._ops.http.history import StepLog
from duragent._ops.http.live import merged
from duragent._ops.http.views import (
    AuditView,
    CompensationView,
    Consumption,
    DecisionRequest,
    InboxItem,
    PendingView,
    ProgressView,
    RunListItem,
    RunView,
    StartRequest,
    WebhookView,
)
from duragent._workflows.inputs import Progress
from duragent._workflows.names import WORKFLOW_TYPE

# `GET /runs/{id}` of an open run asks its worker once (the `progress` query; the `approvals` query only once that
# answered), and waits this long for an answer: a worker answers in milliseconds (review 4, U6).
LIVE_QUERY_TIMEOUT = timedelta(seconds=2)
# After no worker answered a run, its next reads within this long do not ask again: they show what the server
# knows (the history, what the run last published), at once.
SILENT_SECONDS = 15.0
_SILENT_KEPT = 1024  # runs remembered as silent, at most

TERMINAL = ("completed", "abandoned", "compensated", "compensation_failed", "failed", "terminated", "timed_out")


class TemporalEngine:
    name = "temporal"

    def __init__(
        self,
        agents: AgentClient,
        served: Sequence[Agent],
        signing_keys: Mapping[str, ApproverKey] | None = None,
        *,
        allow_loopback: bool = False,
    ) -> None:
        """`allow_loopback`: the operator's opt-in to webhooks on this machine (AGENT_WEBHOOK_ALLOW_LOOPBACK), which
        the workers that deliver check again with their own."""
        self.agents = agents
        self.allow_loopback = allow_loopback
        self.served = {a.name: a for a in served if a.name}
        self.signing_keys = dict(signing_keys or {})
        self.feeds = Feeds(agents, self._end_of)
        self.conversations = Conversations(agents, served)  # served at /conversations (duragent/_ops/http/app.py)
        self._silent: OrderedDict[str, float] = OrderedDict()  # run id -> when no worker last answered it

    # -- reading ----------------------------------------------------------------------------------------

    async def list_runs(self, *, status: str | None, agent: str | None, limit: int) -> list[RunListItem]:
        with _translated():
            try:
                found = await self.agents.list(status=status, agent=agent, limit=limit)
            except ValueError as exc:
                raise InvalidRequest(str(exc), "status" if str(exc).endswith(repr(status)) else "agent") from None
        return [
            RunListItem(
                run_id=r.run_id,
                agent=r.agent,
                status=r.status,
                stop=r.stop,
                created_at=_iso(r.started_at),
                finished_at=_iso(r.closed_at),
                step=r.step,
                pending_approvals=r.pending_approvals,
            )
            for r in found
        ]

    async def require(self, run_id: str) -> None:
        await self._handle(run_id)

    async def get_run(self, run_id: str) -> RunView:
        handle, description = await self._described(run_id)
        with _translated(run_id):
            log = StepLog(self.agents.client.data_converter)
            for history in await handle.histories():
                for event in history.events:
                    await log.add(event)
        started = log.started_input or {}
        view: dict[str, Any] = {
            "engine": "temporal",
            "run_id": run_id,
            "agent": started.get("agent"),
            "created_at": log.started_at,
            "finished_at": _iso(description.close_time),
            "steps": log.steps,
            "cancel_requested": log.cancel_requested,
            "options": started.get("options") or {},
            "webhooks": await self._webhooks(run_id, started.get("webhook")),
        }
        if description.status == WorkflowExecutionStatus.RUNNING:
            view |= await self._live(handle, log, description)
        elif description.status == WorkflowExecutionStatus.COMPLETED:
            view |= _finished(await handle.result(), log)
        else:
            with _translated(run_id):
                ended = await handle.progress()  # failed, terminated, timed out: from visibility and the failure
            view |= _ended(ended, log)
        return RunView(**view)

    async def _live(self, handle: RunHandle, log: StepLog, description: WorkflowExecutionDescription) -> dict[str, Any]:
        with _translated(handle.run_id):
            try:
                if (silent := self._silent_since(handle.run_id)) is not None:
                    raise WorkerUnavailable(f"no worker answered this run {time.monotonic() - silent:.0f}s ago")
                progress = await handle.live(LIVE_QUERY_TIMEOUT)
                audit = (await handle.queried_approvals(LIVE_QUERY_TIMEOUT)).audit
            except WorkerUnavailable as exc:  # the steps (history) and what the run last published are known
                self._went_silent(handle.run_id)
                progress = await handle.last_known(str(exc.__cause__ or exc), description, ask=False)
                audit = []
        answered = progress.worker_answered
        in_flight = log.in_flight
        return {
            # Finished but not yet closed (handlers finishing, the webhook handed over): its result is moments
            # away; a terminal status is only ever shown with the result.
            "status": "running" if progress.status in TERMINAL else progress.status,
            "stop": progress.stop,
            "percent_complete": percent(log.done, _total(progress.total, log.done), False),
            "progress": ProgressView(
                step=log.done,
                total=_total(progress.total, log.done),
                label=in_flight.label if in_flight is not None and answered else progress.label,
            ),
            "consumption": Consumption(
                steps=progress.step,
                input_tokens=progress.input_tokens,
                output_tokens=progress.output_tokens,
                cost=progress.cost,
            ),
            "pending_approvals": [_pending(p) for p in progress.pending_approvals],
            "audit": [_audit(e) for e in audit],
            "remaining_compensations": progress.compensations_remaining,
            "compensations": [c for c in _undos(log) if c.status != "pending"],
            "worker_answered": answered,
        }

    async def _webhooks(self, run_id: str, url: str | None) -> list[WebhookView]:
        if not url:
            return []
        notifier = self.agents.client.get_workflow_handle(f"{run_id}/webhook")
        try:
            description = await notifier.describe()
        except RPCError:
            return [WebhookView(url=redact_url(url), status="pending", attempts=0)]
        status = description.status
        info = description.raw_description
        if status == WorkflowExecutionStatus.RUNNING:
            attempts = max((a.attempt for a in info.pending_activities), default=0)
            last = [a.last_failure.message for a in info.pending_activities if a.HasField("last_failure")]
            history = [{"attempt": attempts, "error": last[0]}] if last else []
            return [WebhookView(url=redact_url(url), status="pending", attempts=attempts, history=history)]
        delivered = status == WorkflowExecutionStatus.COMPLETED
        attempts = 0
        if delivered:
            result = await notifier.result()
            attempts = int(result.get("attempt", 1)) if isinstance(result, dict) else 1
        return [
            WebhookView(
                url=redact_url(url),
                status="delivered" if delivered else "failed",
                attempts=attempts,
                delivered_at=_iso(description.close_time) if delivered else None,
            )
        ]

    async def pending(self) -> list[InboxItem]:
        with _translated():
            waiting = await self.agents.pending()
            agents = {r.run_id: r.agent for r in await self.agents.list(status="awaiting_approval", limit=1000)}
        return [_inbox_item(p.in_tree(), agents.get(p.run_id)) for p in waiting]

    def events(self, run_id: str, after: int | None = None) -> AsyncIterator[StreamEvent]:
        return merged(self.feeds.stream(run_id), self.agents.client, run_id, after, self._end_of)

    async def _end_of(self, run_id: str) -> dict[str, Any]:
        handle = self.agents.handle(run_id)
        try:
            result = await handle.result()
            return {"run_id": run_id, "status": result.status, "stop": result.stop.value, "output": result.output}
        except RunFailed:
            ended = await handle.progress()
            return {"run_id": run_id, "status": ended.status, "stop": ended.stop, "output": None, "error": ended.error}

    # -- acting -----------------------------------------------------------------------------------------

    async def start(self, request: StartRequest) -> str:
        agent = self.served.get(request.agent)
        if agent is None:
            served = ", ".join(sorted(self.served)) or "none"
            raise InvalidRequest(f"unknown agent {request.agent!r}; served: {served}", "agent")
        try:
            agent.parse_options(request.options)
        except InvalidOptions as exc:
            raise InvalidRequest(str(exc), "options") from None
        if request.webhook is not None and (
            problem := url_problem(request.webhook, allow_loopback=self.allow_loopback)
        ):
            raise InvalidRequest(problem, "webhook")
        run_id = request.run_id or f"{agent.name}-{uuid.uuid4().hex[:8]}"
        with _translated():
            try:
                handle = await self.agents.start(
                    agent,
                    request.task,
                    run_id=run_id,
                    options=request.options,
                    model=request.model,
                    webhook=request.webhook,
                    stream=request.stream,
                )
            except RunAlreadyExists as exc:
                raise Conflict(str(exc)) from None
            except ValidationError as exc:
                raise InvalidRequest(exc.errors()[0]["msg"], ".".join(map(str, exc.errors()[0]["loc"]))) from None
        return handle.run_id

    async def cancel(self, run_id: str, by: Principal) -> None:
        handle = await self._handle(run_id)
        with _translated(run_id):
            try:
                await handle.cancel(f"cancelled over HTTP by {by.name}")
            except RunClosed as exc:
                raise Conflict(str(exc)) from None

    async def decide(self, run_id: str, call_id: str, request: DecisionRequest, by: Principal) -> AuditView:
        # Not `_handle`: `decide` describes the run itself (UnknownRun when there is none), and a second
        # describe per decision is a server call each of thousands of decisions pays for nothing.
        handle = self.agents.handle(run_id)
        with _translated(run_id):
            try:
                outcome = await handle.decide(
                    request.approve,
                    call_id,
                    by=by.name,
                    reason=request.reason,
                    arguments_hash=request.arguments_hash,
                    key=self.signing_keys.get(by.name),
                )
            except ApprovalRejected as exc:  # the workflow's validator said why (raised there as a ValueError)
                raise Conflict(exc.reason.removeprefix("ValueError: ")) from None
            except (RunClosed, NoPendingApproval) as exc:
                raise Conflict(await self._not_waiting(handle, call_id, str(exc))) from None
        if outcome.entry is None:  # no worker answered: sent as a signal, applied when one picks the run up
            return AuditView(call_id=call_id, outcome="queued", approver=by.name, reason=request.reason, at="")
        return _audit(outcome.entry)

    async def _not_waiting(self, handle: RunHandle, call_id: str, why: str) -> str:
        """Say what became of the call when the run says nothing waits for it (decided, expired, ended)."""
        try:
            audit = (await handle.approvals()).audit
        except Exception:
            return why
        final = [e for e in audit if e.call_id == call_id and e.event != "rejected"]
        if not final:
            return why
        entry = final[-1]
        by = f" by {entry.approver}" if entry.approver else ""
        return f"call {call_id} was already {entry.event}{by}; nothing was changed"

    async def _handle(self, run_id: str) -> RunHandle:
        return (await self._described(run_id))[0]

    async def _described(self, run_id: str) -> tuple[RunHandle, WorkflowExecutionDescription]:
        """The run and the server's description of it (one call), if it is an agents' run on this API's task
        queue: anything else — a stranger's `AgentWorkflow` on a queue no worker of ours polls — is not found,
        before anything is asked of a worker."""
        handle = self.agents.handle(run_id)
        with _translated(run_id):
            description = await handle.describe()
        info = description.raw_description.workflow_execution_info
        if info.type.name != WORKFLOW_TYPE or info.task_queue != self.agents.task_queue:
            raise RunNotFound(run_id)
        return handle, description

    def _silent_since(self, run_id: str) -> float | None:
        since = self._silent.get(run_id)
        if since is not None and time.monotonic() - since > SILENT_SECONDS:
            del self._silent[run_id]
            return None
        return since

    def _went_silent(self, run_id: str) -> None:
        self._silent.setdefault(run_id, time.monotonic())
        self._silent.move_to_end(run_id)
        while len(self._silent) > _SILENT_KEPT:
            self._silent.popitem(last=False)

    async def close(self) -> None:
        await self.feeds.close()


@contextmanager
def _translated(run_id: str = "") -> Iterator[None]:
    try:
        yield
    except UnknownRun:
        raise RunNotFound(run_id) from None
    except (TemporalUnavailable, WorkerUnavailable) as exc:
        raise EngineUnavailable(str(exc)) from None


def _finished(result: AgentResult, log: StepLog) -> dict[str, Any]:
    return {
        "status": result.status,
        "stop": result.stop.value,
        "stop_detail": result.stop_detail,
        "output": result.output,
        "percent_complete": 100.0,
        "progress": ProgressView(step=log.done, total=log.done, label=_final_label(result.status, result.stop.value)),
        "consumption": Consumption(**result.usage.model_dump()),
        "pending_approvals": [],
        "audit": [_audit(e) for e in result.audit],
        "compensations": [CompensationView(tool=c.tool, status=c.status, key=c.key) for c in result.compensations],
        "remaining_compensations": [s.call.name for s in result.compensations_remaining],
        "not_compensable": result.not_compensable,
    }


def _ended(progress: Progress, log: StepLog) -> dict[str, Any]:
    return {
        "status": progress.status,
        "stop": progress.stop,
        "error": progress.error,
        "percent_complete": 100.0,
        "progress": ProgressView(step=log.done, total=log.done, label=_final_label(progress.status, progress.stop)),
        "consumption": Consumption(steps=progress.step, input_tokens=progress.input_tokens, cost=progress.cost),
        "pending_approvals": [],
        "audit": [],
        "compensations": [c for c in _undos(log) if c.status != "pending"],
    }


def _undos(log: StepLog) -> list[CompensationView]:
    return [
        CompensationView(
            tool=s.step_name.removeprefix("compensate:"),
            status={"completed": "compensated", "in_progress": "pending"}.get(s.status, s.status),
            key=s.idempotency_key,
        )
        for s in log.steps
        if s.step_name.startswith("compensate:")
    ]


def _final_label(status: str, stop: str | None) -> str:
    finished = "finished" if status == "completed" else status
    return f"{finished}: {stop}" if stop else finished


def _total(estimate: int | None, done: int) -> int | None:
    return max(estimate, done) if estimate else None


def _pending(p: PendingApproval) -> PendingView:
    """As the run reports it, with the hash of exactly the arguments shown: what an approval of it carries."""
    return PendingView(
        call_id=p.call_id,
        tool=p.tool,
        arguments=p.arguments,
        arguments_hash=p.shown_hash,
        requested_at=_iso(p.requested_at) or "",
        deadline=_iso(p.deadline) or "",
    )


def _inbox_item(p: PendingApproval, agent: str | None) -> InboxItem:
    """`p` with its tree filled in (`PendingApproval.in_tree`)."""
    root = p.root_run_id or p.run_id
    return InboxItem(run_id=p.run_id, agent=agent, root_run_id=root, path=p.path, **_pending(p).model_dump())


def _audit(entry: AuditEntry) -> AuditView:
    return AuditView(
        call_id=entry.call_id,
        outcome=entry.event,
        approver=entry.approver,
        reason=entry.reason,
        at=_iso(entry.at) or "",
        tool=entry.tool,
        arguments_hash=entry.arguments_hash,
        rejection=entry.rejection,
        signed=entry.signed,
    )


def _iso(moment: Any) -> str | None:
    return moment.isoformat(timespec="milliseconds") if moment is not None else None
