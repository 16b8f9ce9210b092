"""The runs API over the checkpoint baseline: reads the SQLite store (so it works whichever process runs a
run), and starts each new run in a worker process of its own (`job resume`), as `job recover` does.

`POST /runs` records the run leased to nobody, then starts `python -m duragent._ops.cli.job resume --id RUN`; that
worker takes the lease and drives the run. The workers this server started are stopped (SIGTERM: each
releases its lease) when the server stops; `job recover` resumes their runs.

A worker process lives as long as its run, a day if it waits for an approval, at about 80 MB: so this server
runs at most `max_runs` at once (`job serve --max-runs`), and past that answers 429 with `Retry-After`,
having recorded and started nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from agentic.agent_set import AgentSet, UnknownAgent
from agentic.signing import ApproverKey
from duragent._baseline import approvals, jobs
from duragent._baseline.errors import BadInput, DecisionRejected, RunExists, RunNotResumable, UnknownRun
from duragent._baseline.options import RunOptions
from duragent._baseline.schema import ACTIVE
from duragent._baseline.status import run_status
from duragent._baseline.store import Store
from duragent._baseline.webhooks import check_webhook
from duragent._config.settings import CHECKOUT, Settings
from duragent._config.webhook_signing import redact_url, url_problem
from duragent._ops.http.auth import Principal
from duragent._ops.http.engine import StreamEvent
from duragent._ops.http.errors import AtCapacity, Conflict, InvalidRequest, RunNotFound
from duragent._ops.http.views import (
    AuditView,
    CompensationView,
    Consumption,
    DecisionRequest,
    InboxItem,
    LeaseView,
    PendingView,
    ProgressView,
    RunListItem,
    RunView,
    StartRequest,
    StepView,
    WebhookView,
)

RETRY_AFTER_SECONDS = 30


class CheckpointEngine:
    name = "checkpoints"

    def __init__(
        self,
        db: Path,
        agents: AgentSet,
        *,
        ledger: Path,
        settings: Settings,
        agent_modules: list[str] | None = None,
        poll_seconds: float = 0.2,
        max_runs: int = jobs.MAX_SERVED_RUNS,
        signing_keys: Mapping[str, ApproverKey] | None = None,
    ) -> None:
        """`signing_keys`: approvers' private keys (AGENT_API_APPROVER_KEYS), to sign the decisions of the
        logged-in approver of that name — where `agents.approver_keys` make runners require signatures."""
        if max_runs < 1:
            raise ValueError("max_runs must be at least 1")
        self.store = Store(db)
        self.settings = settings  # the webhook secret its workers sign with must be set before a run takes a URL
        self.agents = agents
        self.ledger = ledger
        self.agent_modules = agent_modules or []
        self.poll_seconds = poll_seconds
        self.max_runs = max_runs
        self.signing_keys = dict(signing_keys or {})
        self.workers: list[subprocess.Popen[bytes]] = []
        self._starting = 0  # slots taken by starts between the check and their worker's launch

    # -- reading ----------------------------------------------------------------------------------------

    async def list_runs(self, *, status: str | None, agent: str | None, limit: int) -> list[RunListItem]:
        where, params = [], []
        if status:
            where.append("r.status = ?")
            params.append(status)
        if agent:
            where.append("r.scenario = ?")
            params.append(agent)
        sql = (
            "SELECT r.*, (SELECT count(*) FROM approvals a WHERE a.run_id = r.run_id AND a.status = 'pending')"
            " AS waiting FROM runs r" + (f" WHERE {' AND '.join(where)}" if where else "")
        )
        rows = await asyncio.to_thread(self.store.query, f"{sql} ORDER BY r.created_at DESC LIMIT ?", (*params, limit))
        return [
            RunListItem(
                run_id=r["run_id"],
                agent=r["scenario"],
                status=r["status"],
                stop=r["stop"],
                created_at=r["created_at"],
                finished_at=r["finished_at"],
                step=r["progress_step"],
                pending_approvals=r["waiting"],
            )
            for r in rows
        ]

    async def require(self, run_id: str) -> None:
        if await asyncio.to_thread(self.store.run, run_id) is None:
            raise RunNotFound(run_id)

    async def get_run(self, run_id: str) -> RunView:
        try:
            view = await asyncio.to_thread(run_status, self.store, run_id)
        except UnknownRun:
            raise RunNotFound(run_id) from None
        return run_view(view)

    async def pending(self) -> list[InboxItem]:
        placeholders = ", ".join("?" for _ in ACTIVE)
        rows = await asyncio.to_thread(
            self.store.query,
            "SELECT a.*, r.scenario, r.options AS run_options FROM approvals a JOIN runs r ON r.run_id = a.run_id"
            f" WHERE a.status = 'pending' AND r.status IN ({placeholders}) ORDER BY a.deadline",
            ACTIVE,
        )
        return [
            InboxItem(
                run_id=r["run_id"],
                agent=r["scenario"],
                **_tree(r["run_id"], r["run_options"]),
                **_pending(dict(r)).model_dump(),
            )
            for r in rows
        ]

    async def events(self, run_id: str, after: int | None = None) -> AsyncIterator[StreamEvent]:
        """`progress` whenever the stored progress changes (one local SQLite read per poll), then `end`. (The
        checkpoint runner has no live stream: `after` means nothing here.)"""
        last: dict[str, Any] | None = None
        while True:
            run = await asyncio.to_thread(self.store.run, run_id)
            if run is None:
                yield "end", {"run_id": run_id, "status": "deleted", "stop": None, "output": None, "error": None}
                return
            progress = run.progress.to_dict()
            if progress != last:
                yield "progress", progress
                last = progress
            if run.terminal:
                end = {"run_id": run_id, "status": run.status, "stop": run.stop, "output": run.output}
                yield "end", end | {"error": run.error}
                return
            await asyncio.sleep(self.poll_seconds)

    # -- acting -----------------------------------------------------------------------------------------

    async def start(self, request: StartRequest) -> str:
        try:
            self.agents.get(request.agent)
        except UnknownAgent as exc:
            raise InvalidRequest(str(exc), "agent") from None
        try:
            options = RunOptions(options=request.options, model=request.model, task=request.task)
        except ValidationError as exc:
            first = exc.errors()[0]
            raise InvalidRequest(first["msg"], "options." + ".".join(map(str, first["loc"]))) from None
        if request.webhook is not None:
            if problem := url_problem(request.webhook, allow_loopback=self.settings.webhook_allow_loopback):
                raise InvalidRequest(problem, "webhook")
            try:
                check_webhook(request.webhook, self.settings)
            except BadInput as exc:
                raise InvalidRequest(str(exc).removeprefix("--webhook: "), "webhook") from None
        run_id = request.run_id or f"{request.agent}-{_suffix()}"
        self._take_slot()  # before the first await: concurrent starts cannot all pass the check
        try:
            await asyncio.to_thread(
                jobs.create, self.store, self.agents, run_id, request.agent, options, webhook_url=request.webhook
            )
            self._start_worker(run_id)
        except BadInput as exc:  # the agent is known: its options, model or task are not usable
            raise InvalidRequest(str(exc), "options") from None
        except RunExists as exc:
            raise Conflict(str(exc)) from None
        finally:
            self._starting -= 1
        return run_id

    def _take_slot(self) -> None:
        self.workers = [w for w in self.workers if w.poll() is None]
        if len(self.workers) + self._starting >= self.max_runs:
            raise AtCapacity(
                f"this server already runs {self.max_runs} runs, each in a worker process of its own (--max-runs);"
                " nothing was started: try again when one has ended",
                RETRY_AFTER_SECONDS,
            )
        self._starting += 1

    def _start_worker(self, run_id: str) -> None:
        command = [sys.executable, "-m", "duragent._ops.cli.job", "resume", "--id", run_id]
        command += ["--db", str(self.store.path), "--ledger", str(self.ledger)]
        for module in self.agent_modules:
            command += ["--agents", module]
        self.workers.append(
            subprocess.Popen(command, cwd=CHECKOUT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        )

    async def cancel(self, run_id: str, by: Principal) -> None:
        try:
            await asyncio.to_thread(jobs.cancel, self.store, run_id, f"cancelled over HTTP by {by.name}")
        except UnknownRun:
            raise RunNotFound(run_id) from None
        except RunNotResumable as exc:
            raise Conflict(str(exc)) from None

    async def decide(self, run_id: str, call_id: str, request: DecisionRequest, by: Principal) -> AuditView:
        await self.require(run_id)
        try:
            decision = await asyncio.to_thread(  # bound to this run's execution and the request's deadline
                approvals.decision_on,
                self.store,
                run_id,
                approve=request.approve,
                approver=by.name,
                call_id=call_id,
                reason=request.reason,
                arguments_hash=request.arguments_hash,
            )
        except UnknownRun:
            raise RunNotFound(run_id) from None
        except BadInput as exc:
            raise InvalidRequest(str(exc)) from None
        if (key := self.signing_keys.get(by.name)) is not None:
            decision = decision.signed(run_id, key)
        keys = self.agents.approver_keys
        why = await asyncio.to_thread(approvals.rejection, self.store, run_id, decision, keys)
        if why is not None:
            raise Conflict(why)  # nothing recorded: the same as Temporal's update validator
        try:
            entry = await asyncio.to_thread(approvals.record, self.store, run_id, decision, keys)
        except DecisionRejected as exc:  # it changed between the check and the write
            raise Conflict(str(exc).removeprefix("decision rejected: ")) from None
        return AuditView(
            call_id=entry.call_id,
            outcome=entry.event,
            approver=entry.approver,
            reason=entry.reason,
            at=entry.at.isoformat(timespec="milliseconds"),
            tool=entry.tool,
            arguments_hash=entry.arguments_hash,
            signed=entry.signed,
        )

    async def close(self) -> None:
        for worker in self.workers:
            if worker.poll() is None:
                worker.terminate()
        for worker in self.workers:
            with contextlib.suppress(subprocess.TimeoutExpired):
                await asyncio.to_thread(worker.wait, 15)
        self.store.close()


def run_view(view: dict[str, Any]) -> RunView:
    """`job status --json` as the API's shared shape."""
    steps = [StepView(**{k: s[k] for k in StepView.model_fields}) for s in view["steps"]]
    return RunView(
        engine="checkpoints",
        **{k: view[k] for k in _SAME_NAMES},
        progress=ProgressView(**view["progress"]),
        consumption=Consumption(**view["consumption"]),
        steps=steps,
        pending_approvals=[_pending(a) for a in view["approvals"] if a["status"] == "pending"],
        audit=[
            AuditView(
                call_id=a["call_id"],
                outcome=a["event"],
                approver=a["approver"],
                reason=a["reason"] or "",
                at=a["at"],
                tool=a["tool"],
                arguments_hash=a["arguments_hash"],
                rejection=a["rejection"],
                signed=bool(a.get("signed")),
            )
            for a in view["audit"]
        ],
        compensations=[
            CompensationView(
                tool=s.step_name.removeprefix("compensate:"),
                status="compensated" if s.status == "completed" else s.status,
                key=s.idempotency_key,
            )
            for s in steps
            if s.step_name.startswith("compensate:")
        ],
        lease=LeaseView(**view["lease"]),
        options=view["options"].get("options", {}),  # the agent's own options (RunOptions holds the rest)
        webhooks=[
            WebhookView(
                url=redact_url(h["url"]),
                status=h["status"],
                attempts=h["attempts"],
                delivered_at=h["delivered_at"],
                history=h["history"],
            )
            for h in view["webhooks"]
        ],
    )


_SAME_NAMES = (
    "run_id",
    "agent",
    "status",
    "stop",
    "stop_detail",
    "output",
    "error",
    "created_at",
    "updated_at",
    "finished_at",
    "attempts",
    "percent_complete",
    "cancel_requested",
    "remaining_compensations",
    "not_compensable",
)


def _pending(row: dict[str, Any]) -> PendingView:
    arguments = row["arguments"]
    if isinstance(arguments, str):
        arguments = json.loads(arguments)
    return PendingView(
        call_id=row["call_id"],
        tool=row["tool"],
        arguments=arguments,
        arguments_hash=row["arguments_hash"],
        requested_at=row["requested_at"],
        deadline=row["deadline"],
    )


def _tree(run_id: str, options: str) -> dict[str, Any]:
    """A delegated child's root and path, from the options its parent started it with."""
    delegation = RunOptions.model_validate_json(options).delegation
    path = delegation.lineage(run_id) if delegation is not None else [run_id]
    return {"root_run_id": path[0], "path": path}


def _suffix() -> str:
    return uuid.uuid4().hex[:8]
