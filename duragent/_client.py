"""`AgentClient` and `RunHandle`: the one way to start, inspect, approve, cancel and wait for durable agent
runs. The command line, the runs API, the demo, the bench and the chaos harness all go through here; what they
show of a run is built in duragent/_views.py.

    agents = await AgentClient.connect(settings)           # or AgentClient(client, task_queue=...)
    run = await agents.start("refund", "Refund order 4471")
    [waiting] = await run.pending()
    await run.approve(waiting.call_id, by="maria", arguments_hash=waiting.arguments_hash)
    result = await run.result()

Every failure a caller can act on is a typed error from `duragent._errors`, with a readable message.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Sequence
from datetime import timedelta
from typing import Any

from pydantic import BaseModel
from temporalio.client import (
    Client,
    WorkflowExecutionDescription,
    WorkflowExecutionStatus,
    WorkflowFailureError,
    WorkflowHandle,
    WorkflowHistory,
    WorkflowUpdateFailedError,
    WorkflowUpdateRPCTimeoutOrCancelledError,
)
from temporalio.common import WorkflowIDReusePolicy
from temporalio.exceptions import WorkflowAlreadyStartedError
from temporalio.service import RPCError, RPCStatusCode

from agentic import Agent, Budget, Message, ModelSettings, Usage
from agentic.approvals import ApprovalPolicy, AuditEntry, Decision, PendingApproval
from agentic.conversation import ConversationLimits
from agentic.live import LiveEvent
from agentic.saga import SagaPolicy
from agentic.signing import ApproverKey
from duragent._activities.inputs import AgentResult
from duragent._config.settings import DEFAULT_TASK_QUEUE, DEFAULT_UI_URL, Settings, run_url
from duragent._connection import connect
from duragent._conversations import ConversationHandle
from duragent._errors import (
    AmbiguousApproval,
    ApprovalRejected,
    NoPendingApproval,
    RunAlreadyExists,
    TemporalUnavailable,
    TranscriptUnavailable,
    UnknownRun,
    WorkerUnavailable,
    closed,
    from_rpc,
    refused,
    run_failed,
)
from duragent._live import live_events
from duragent._plugin import plugin_of
from duragent._reported import decidable_pending, is_agents_run, published_pending, reported_pending, shown
from duragent._stores.configured import TRANSCRIPTS_FILE, transcripts_for
from duragent._stores.transcripts import TranscriptNotFound, Transcripts
from duragent._views import RunSummary, ended_progress, final_progress, no_worker, summary, with_retries
from duragent._workflows import search_attributes as sa
from duragent._workflows.agent import AgentWorkflow
from duragent._workflows.conversation_inputs import ConversationInput
from duragent._workflows.inputs import AgentInput, ApprovalsView, Progress, Timeouts
from duragent._workflows.names import CONVERSATION_WORKFLOW_TYPE, DECISION_SIGNAL, WORKFLOW_TYPE

PENDING_QUERY = f'WorkflowType = "{WORKFLOW_TYPE}" AND ExecutionStatus = "Running" AND AgentPendingApprovals > 0'
QUERY_TIMEOUT = timedelta(seconds=5)
UPDATE_TIMEOUT = timedelta(seconds=10)


class DecisionOutcome(BaseModel):
    """What became of an approve/deny: applied now (`via="update"`, with its audit entry) or queued as a
    signal because no worker answered (`via="signal"`; applied when a worker picks the run up)."""

    run_id: str
    call_id: str
    tool: str
    arguments: dict[str, object] | str
    decision: str  # approved | declined | queued
    via: str  # update | signal
    entry: AuditEntry | None = None


class AgentClient:
    """Starts durable agent runs and finds them again: `start(agent, task, ...)` returns a `RunHandle`;
    `handle(run_id)`/`get(run_id)` reopen one; `list()` and `pending()` read what is running and what waits
    for a decision, across runs, from Temporal's visibility. `AgentClient.connect()` connects as configured
    (docs/operations.md); `AgentClient(client)` uses a client connected with `DurableAgentsPlugin`."""

    def __init__(self, client: Client, *, task_queue: str | None = None, ui_url: str | None = None) -> None:
        """`client` should be connected with `DurableAgentsPlugin` (pydantic payloads, the codec). The runs it
        starts and lists are on `task_queue`; `ui_url` is the Temporal Web UI its links point into. Neither
        given: the settings of the client's plugin (`TEMPORAL_TASK_QUEUE`, `TEMPORAL_UI_URL`), else
        `durable-agents` and http://localhost:8233. The namespace is the client's."""
        configured = plugin_of(client)
        settings = configured.settings if configured is not None else None
        self.client = client
        self.task_queue = task_queue or (settings.task_queue if settings else DEFAULT_TASK_QUEUE)
        self.ui_url = ui_url or (settings.ui_url if settings else DEFAULT_UI_URL)

    @classmethod
    async def connect(cls, settings: Settings | None = None) -> AgentClient:
        """`connect(settings)` (duragent/_connection.py; none: the environment's), and a client on its task
        queue. TemporalUnavailable says where it tried and why it failed."""
        return cls(await connect(settings))

    # -- runs -----------------------------------------------------------------------------------------

    async def start(
        self,
        agent: Agent | str,
        task: str | None = None,
        *,
        run_id: str | None = None,
        history: Sequence[Message] = (),
        consumed: Usage | None = None,
        budget: Budget | None = None,
        system: str | None = None,
        options: dict[str, Any] | BaseModel | None = None,
        model: str | None = None,
        model_settings: ModelSettings | None = None,
        approvals: ApprovalPolicy | None = None,
        saga: SagaPolicy | None = None,
        timeouts: Timeouts | None = None,
        webhook: str | None = None,
        search_attributes: bool = True,
        stream: bool = False,
    ) -> RunHandle:
        """Start a run of `agent` (an `Agent` the workers serve, or its name). `model` names a model the
        worker declares; `options` are the agent's per-run options. `webhook` is POSTed once when the run ends
        (signed with the worker's AGENT_WEBHOOK_SECRET); `search_attributes=False` publishes none (cheaper;
        visibility filters then do not find the run: docs/benchmarks.md, the price list). `stream=True`: the
        model's text goes to the run's live events as it is written (`RunHandle.events`; a signal in history per
        batch). Raises RunAlreadyExists."""
        name = agent.name if isinstance(agent, Agent) else agent
        if not name:
            raise ValueError("a durable run needs a named agent: Agent(..., name='billing')")
        if isinstance(agent, Agent):
            agent.parse_options(options)  # bad options fail here, before anything is started
        raw_options = options.model_dump(mode="json", exclude_defaults=True) if isinstance(options, BaseModel) else {}
        input = AgentInput(
            agent=name,
            task=task,
            system=system,
            budget=budget,
            history=list(history),
            consumed=consumed or Usage(),
            options=raw_options or dict(options or {}),  # type: ignore[arg-type]
            model=model,
            model_settings=model_settings,
            approvals=approvals,
            saga=saga,
            timeouts=timeouts or Timeouts(),
            webhook=webhook,
            search_attributes=search_attributes,
            stream=stream,
        )
        shown_task = task or (agent.task if isinstance(agent, Agent) else None)
        run = await self._start_input(input, run_id=run_id, description=_description(agent), shown_task=shown_task)
        run.agent = agent if isinstance(agent, Agent) else None  # it knows the answer's type
        return run

    async def _start_input(
        self, input: AgentInput, *, run_id: str | None = None, description: str = "", shown_task: str | None = None
    ) -> RunHandle:
        """Start a run from a complete `AgentInput` (what `start` builds). `description` and `shown_task`
        only label the run in the Web UI (the worker's agent supplies the default task itself).

        Not public: the tests start runs from a whole input this way (an older client's, to record its history);
        a program uses `start`, and the engine's knobs are the worker's (`EngineOptions`)."""
        run_id = run_id or f"{input.agent}-{uuid.uuid4().hex[:8]}"
        task = input.task or shown_task or ""
        try:
            handle = await self.client.start_workflow(
                AgentWorkflow.run,
                input,
                id=run_id,
                task_queue=self.task_queue,
                # A run id is forever: reusing one would make new tool calls collide with old idempotency keys.
                id_reuse_policy=WorkflowIDReusePolicy.REJECT_DUPLICATE,
                static_summary=f"{input.agent}: {task}" if task else input.agent,
                static_details=f"agent **{input.agent}**" + (f" — {description}" if description else ""),
                # What the run's first publish would write, written with the start: an event and a visibility
                # write fewer per run, and the run knows it need not write an empty approvals memo.
                search_attributes=sa.at_start(input.agent, input.consumed) if input.search_attributes else None,
            )
        except WorkflowAlreadyStartedError:
            raise RunAlreadyExists(f"a run with id {run_id!r} already exists; run ids are never reused") from None
        except RPCError as exc:
            raise from_rpc(exc, f"cannot start run {run_id!r}") from exc
        return RunHandle(self, handle)

    def conversation(
        self,
        agent: Agent | str,
        conversation_id: str,
        *,
        budget: Budget | None = None,
        turn_budget: Budget | None = None,
        options: dict[str, Any] | BaseModel | None = None,
        model: str | None = None,
        idle_days: float | None = None,
        limits: ConversationLimits | None = None,
        timeouts: Timeouts | None = None,
        search_attributes: bool = True,
        stream: bool = True,
    ) -> ConversationHandle:
        """A durable conversation with `agent` (docs/conversations.md): nothing is sent until the first
        `send`, which starts it if it does not exist (update-with-start). `budget` bounds the whole
        conversation; each turn gets `turn_budget` (default: the agent's) capped by what it has left. It closes
        after `idle_days` without a message (default 30). `stream` (default): each turn's model text goes to its
        live events as it is written (`ConversationHandle.events`)."""
        name = agent.name if isinstance(agent, Agent) else agent
        if not name:
            raise ValueError("a durable conversation needs a named agent: Agent(..., name='billing')")
        if isinstance(agent, Agent):
            agent.parse_options(options)  # bad options fail here, before anything is sent
        raw_options = options.model_dump(mode="json", exclude_defaults=True) if isinstance(options, BaseModel) else {}
        extra: dict[str, Any] = {"idle_days": idle_days} if idle_days is not None else {}
        input = ConversationInput(
            agent=name,
            budget=budget,
            turn_budget=turn_budget,
            options=raw_options or dict(options or {}),  # type: ignore[arg-type]
            model=model,
            limits=limits or ConversationLimits(),
            timeouts=timeouts or Timeouts(),
            search_attributes=search_attributes,
            stream=stream,
            **extra,
        )
        return ConversationHandle(self, conversation_id, input)

    async def conversations(
        self, *, status: str | None = None, agent: str | None = None, limit: int = 100
    ) -> list[Any]:
        """Conversations from visibility, newest first, optionally by status (open, closing, closed) and agent."""
        clauses = [f'WorkflowType = "{CONVERSATION_WORKFLOW_TYPE}"', f"TaskQueue = {_quoted(self.task_queue)}"]
        if status:
            clauses.append(f"AgentStatus = {_quoted(status)}")
        if agent:
            clauses.append(f"AgentName = {_quoted(agent)}")
        try:
            return [e async for e in self.client.list_workflows(" AND ".join(clauses), limit=limit)]
        except RPCError as exc:
            raise from_rpc(exc, "cannot list conversations") from exc

    def handle(self, run_id: str) -> RunHandle:
        """A handle without checking that the run exists (see `get`)."""
        return RunHandle(self, self.client.get_workflow_handle(run_id, result_type=AgentResult))

    async def get(self, run_id: str) -> RunHandle:
        """A handle to an existing run; raises UnknownRun."""
        handle = self.handle(run_id)
        await handle.describe()
        return handle

    async def list(self, *, status: str | None = None, agent: str | None = None, limit: int = 100) -> list[RunSummary]:
        """Runs from visibility, newest first, optionally by our status (`AgentStatus`) and agent name."""
        clauses = [f'WorkflowType = "{WORKFLOW_TYPE}"']
        if status:
            clauses.append(f"AgentStatus = {_quoted(status)}")
        if agent:
            clauses.append(f"AgentName = {_quoted(agent)}")
        found: list[RunSummary] = []
        try:
            async for execution in self.client.list_workflows(" AND ".join(clauses), limit=limit):
                found.append(summary(execution))
        except RPCError as exc:
            raise from_rpc(exc, "cannot list runs") from exc
        return found

    async def pending(self, *, root: str | None = None) -> list[PendingApproval]:
        """Every approval waiting, across the agents' runs on this client's task queue: visibility finds the
        runs that wait, and each one's calls are as the run itself reports them (`duragent._reported`;
        with no worker up, as its workflow last published them). A delegated run's approvals name their root
        run and the path to it; `root` keeps one tree's."""
        query = f"{PENDING_QUERY} AND TaskQueue = {_quoted(self.task_queue)}"
        try:
            waiting = [(e.id, e.run_id) async for e in self.client.list_workflows(query)]
            reported = await asyncio.gather(*(reported_pending(self.client, run_id, run) for run_id, run in waiting))
        except RPCError as exc:
            raise from_rpc(exc, "cannot list pending approvals") from exc
        found = [p for each in reported for p in each]
        return sorted((p for p in found if root is None or p.root_run_id == root), key=lambda p: p.deadline)

    def run_url(self, run_id: str) -> str:
        """The run `run_id` in the Temporal Web UI (`ui_url`)."""
        return run_url(self.ui_url, self.client.namespace, run_id)


class RunHandle:
    """One run. Cheap to make; every method is one or a few calls to the server."""

    def __init__(
        self, agents: AgentClient, handle: WorkflowHandle[Any, AgentResult], agent: Agent | None = None
    ) -> None:
        self.agents = agents
        self.workflow = handle
        self.run_id = handle.id
        # The run's agent, when the handle was made from the object (`start(agent)`): `result()` decodes a typed
        # answer with its output type. Made by name, the answer stays the JSON its history holds (`output_as`).
        self.agent = agent

    @property
    def url(self) -> str:
        """The run in the Temporal Web UI."""
        return self.agents.run_url(self.run_id)

    async def describe(self) -> WorkflowExecutionDescription:
        """Temporal's description of the run (status, start and close times); UnknownRun if there is none."""
        try:
            return await self.workflow.describe()
        except RPCError as exc:
            if exc.status == RPCStatusCode.NOT_FOUND:
                namespace = self.agents.client.namespace
                raise UnknownRun(f"no run with id {self.run_id!r} in namespace {namespace}") from None
            raise from_rpc(exc, f"cannot look up run {self.run_id!r}") from exc

    async def is_running(self) -> bool:
        """Whether the run is still open."""
        return (await self.describe()).status == WorkflowExecutionStatus.RUNNING

    async def ensure_open(self) -> None:
        """RunClosed (saying how it ended) unless the run is still open."""
        description = await self.describe()
        if description.status != WorkflowExecutionStatus.RUNNING:
            raise closed(self.run_id, description)

    # -- looking -------------------------------------------------------------------------------------

    async def progress(self) -> Progress:
        """Live progress (the `progress` query) while the run is open; from its result once it closed.
        Raises WorkerUnavailable when the run is open and no worker answers (`known_progress` does not)."""
        description = await self.describe()
        if description.status == WorkflowExecutionStatus.RUNNING:
            return with_retries(await self.live(), description)
        if description.status == WorkflowExecutionStatus.COMPLETED:
            return final_progress(await self.result())
        return ended_progress(self.run_id, description, await self._failure())

    async def live(self, timeout: timedelta = QUERY_TIMEOUT) -> Progress:
        """The `progress` query alone, as the workflow answers it (no call but the query). WorkerUnavailable
        when no worker answers within `timeout`; TemporalUnavailable when the server does not."""
        try:
            return await self.workflow.query(AgentWorkflow.progress, rpc_timeout=timeout)
        except RPCError as exc:
            if exc.status == RPCStatusCode.UNAVAILABLE:  # the server, not a worker, is missing
                raise TemporalUnavailable(f"the Temporal server did not answer ({exc.message})") from None
            raise WorkerUnavailable(
                f"run {self.run_id} is running but no worker answered its progress query ({exc.message}); "
                f"is a worker running on task queue {self.agents.task_queue!r}?"
            ) from exc

    def events(self, after: int | None = None) -> AsyncIterator[tuple[int, LiveEvent]]:
        """The run's live events (agentic/live.py) as `(offset, event)`, from the one after offset `after`
        (None: the first), until the run has ended and all are read: the model's text as it is written (runs
        started with `stream=True`), steps, tool calls, approvals, the answer. Resume with the last offset read."""
        return live_events(self.agents.client, self.run_id, after)

    async def known_progress(self) -> Progress:
        """`progress()`, or — while no worker answers — what the server knows without one (`last_known`)."""
        try:
            return await self.progress()
        except WorkerUnavailable as exc:
            return await self.last_known(str(exc.__cause__ or exc))

    async def last_known(
        self, why: str, description: WorkflowExecutionDescription | None = None, *, ask: bool = True
    ) -> Progress:
        """An open run's progress while no worker answers (`why`): its visibility record's counters, and the
        approvals it waits for as it reported them (duragent/_views.py `no_worker`) — `ask=False`: as it last
        published them in its history, without asking a worker first."""
        description = description or await self.describe()
        if not ask and is_agents_run(description, self.agents.task_queue):
            published = await published_pending(self.agents.client, self.run_id, description.run_id or "")
            pending = [shown(p) for p in published if p.run_id == self.run_id]
        else:
            pending = await self._own_pending(description)
        return no_worker(self.run_id, why, attributes=description.typed_search_attributes, pending=pending)

    async def pending(self) -> list[PendingApproval]:
        """The approvals this run waits for, and those of the runs it delegated to, at any depth (each names
        its run, root and path): as each run reports them (`duragent._reported`; with no worker up, as
        its workflow last published them), its delegated runs found in the server's list of its open
        children. Nothing, for a run that is not an agents' run on this client's task queue."""
        return await self._tree_pending(await self.describe())

    async def _own_pending(self, description: WorkflowExecutionDescription, live: bool = True) -> list[PendingApproval]:
        """What the described run reports waiting for, if it is an agents' run on this client's task queue:
        live (its query, or what it published when no worker answers), or, for a decision, what it published
        (`decidable_pending`: no query before the update)."""
        if not is_agents_run(description, self.agents.task_queue):
            return []
        source = reported_pending if live else decidable_pending
        return await source(self.agents.client, description.id, description.run_id)

    async def _tree_pending(
        self, description: WorkflowExecutionDescription, live: bool = True
    ) -> list[PendingApproval]:
        found = await self._own_pending(description, live)
        children = [
            child.workflow_id
            for child in description.raw_description.pending_children
            if child.workflow_type_name == WORKFLOW_TYPE
        ]
        for below in await asyncio.gather(*(self._child_pending(child, live) for child in children)):
            found += below
        return found

    async def _child_pending(self, run_id: str, live: bool) -> list[PendingApproval]:
        try:
            description = await self.agents.client.get_workflow_handle(run_id).describe()
        except RPCError as exc:
            if exc.status == RPCStatusCode.NOT_FOUND:
                return []  # it closed (and was removed) since its parent was described
            raise from_rpc(exc, f"cannot look up run {run_id!r}") from exc
        return await self._tree_pending(description, live)

    async def wait_for_approval(self, timeout: float = 60.0, interval: float = 0.2) -> list[PendingApproval]:
        """The approvals this run (or a run it delegated to) waits for, once there is at least one (polling
        what the runs report). RunClosed if the run ends first; TimeoutError after `timeout` seconds."""
        deadline = asyncio.get_running_loop().time() + timeout
        while True:
            description = await self.describe()
            waiting = await self._tree_pending(description)
            if waiting:
                return waiting
            if description.status != WorkflowExecutionStatus.RUNNING:
                raise closed(self.run_id, description)
            if asyncio.get_running_loop().time() > deadline:
                raise TimeoutError(f"run {self.run_id} asked for no approval within {timeout:g} s")
            await asyncio.sleep(interval)

    async def queried_approvals(self, timeout: timedelta = QUERY_TIMEOUT) -> ApprovalsView:
        """The `approvals` query alone, of a run known to be open (WorkerUnavailable when no worker answers)."""
        try:
            return await self.workflow.query(AgentWorkflow.approvals, rpc_timeout=timeout)
        except RPCError as exc:
            raise WorkerUnavailable(f"no worker answered run {self.run_id}'s approvals query") from exc

    async def approvals(self) -> ApprovalsView:
        """What waits and the audit trail (the `approvals` query; from the result once the run closed)."""
        if await self.is_running():
            try:
                return await self.workflow.query(AgentWorkflow.approvals, rpc_timeout=QUERY_TIMEOUT)
            except RPCError as exc:
                raise WorkerUnavailable(f"no worker answered run {self.run_id}'s approvals query") from exc
        result = await self.result()
        return ApprovalsView(pending=[], audit=result.audit)

    async def result(self) -> AgentResult:
        """Wait for the run to close; its result, or RunFailed (UnknownAgent) with the cause."""
        try:
            result = await self.workflow.result()
        except WorkflowFailureError as exc:
            raise run_failed(self.run_id, exc) from None
        except RPCError as exc:
            if exc.status == RPCStatusCode.NOT_FOUND:
                raise UnknownRun(f"no run with id {self.run_id!r}") from None
            raise from_rpc(exc, f"cannot wait for run {self.run_id!r}") from exc
        return typed(result, self.agent)

    async def messages(self, transcripts: Transcripts | None = None) -> list[Message]:
        """The run's whole transcript (task, model turns, tool results), once the run has ended.

        A durable run keeps its transcript by reference (`AgentResult.transcript_ref`), in the transcript store
        its workers write, so `result().messages` holds only what was not stored yet (usually nothing). This
        reads the rest from `transcripts`, else from the store the settings of this client's `DurableAgentsPlugin`
        name (AGENT_DATABASE_URL, else `transcripts.db` in AGENT_DATA_DIR): TranscriptUnavailable when that store
        does not hold it."""
        result = await self.result()
        if result.transcript_ref is None:
            return result.messages
        if transcripts is None:
            configured = plugin_of(self.agents.client)
            if configured is None:  # no settings to name a store: the environment is read once, by the plugin
                raise TranscriptUnavailable(_elsewhere(self.run_id, "a client without DurableAgentsPlugin"))
            settings = configured.settings
            if not settings.database_url and not (settings.data_dir / TRANSCRIPTS_FILE).is_file():
                raise TranscriptUnavailable(_elsewhere(self.run_id, f"no {settings.data_dir / TRANSCRIPTS_FILE}"))
            transcripts = transcripts_for(settings)
        try:
            return await asyncio.to_thread(result.transcript_messages, transcripts)
        except TranscriptNotFound as exc:
            raise TranscriptUnavailable(_elsewhere(self.run_id, f"not in this store: {exc}")) from None

    async def watch(self, interval: float = 0.5) -> AsyncIterator[Progress]:
        """Progress on every change, until the run closes; the last one comes from the result. While no
        worker answers, the last known progress is repeated with `worker_answered=False`."""
        last: Progress | None = None
        result = asyncio.ensure_future(self.result())
        try:
            while not result.done():
                try:
                    current = with_retries(await self.live(), await self.workflow.describe())
                except WorkerUnavailable as exc:
                    if result.done():
                        break
                    why = exc.__cause__.message if isinstance(exc.__cause__, RPCError) else str(exc)
                    current = no_worker(self.run_id, why, last=last)
                if current != last:
                    last = current
                    yield current
                await asyncio.wait({result}, timeout=max(interval, 0.05))
            final = final_progress(await result, last)
            if final != last:
                yield final
        finally:
            result.cancel()

    # -- acting --------------------------------------------------------------------------------------

    async def decide(
        self,
        approve: bool,
        call_id: str | None = None,
        *,
        by: str,
        reason: str | None = None,
        arguments_hash: str | None = None,
        wait: timedelta = UPDATE_TIMEOUT,
        key: ApproverKey | None = None,
    ) -> DecisionOutcome:
        """Approve or deny one pending call. `arguments_hash` is the hash of the arguments the approver saw
        (`PendingApproval.arguments_hash`); when omitted, the hash of the call as the run shows it now.

        The call may be one a run this run delegated to waits for (any depth): `call_id` is then that call's
        id, or its `address` (`run_id/call_id`) when several runs of the tree have the same one. The decision
        goes to the run that waits, whose own rules (deadline, hash, signatures) judge it.

        Sent as an update, answered at once (ApprovalRejected with the reason); when no worker answers within
        `wait`, sent as a signal that the run applies when a worker picks it up (`via="signal"`). With `key`
        (the approver's private key), the decision is signed: required where workers configure approver keys."""
        if not by.strip():
            raise ValueError("an approver name is required (it goes into the audit trail)")
        description = await self.describe()
        if description.status != WorkflowExecutionStatus.RUNNING:
            raise closed(self.run_id, description)
        # From what the runs published, not their queries: a query just before the update can wedge a worker
        # whose cache is full (duragent/_reported.py, decidable_pending).
        target = choose(await self._tree_pending(description, live=False), self.run_id, call_id)
        if target.run_id != self.run_id:  # routed by its path: the run that waits receives the decision
            waiting = self.agents.handle(target.run_id)
            return await waiting.decide(
                approve, target.call_id, by=by, reason=reason, arguments_hash=arguments_hash, wait=wait, key=key
            )
        # On exactly the request the run shows (its execution and deadline, where it binds signatures to them).
        decision = Decision.answering(target, approve, by, reason or "", client=self.agents.client.identity)
        if arguments_hash is not None:
            decision = decision.model_copy(update={"arguments_hash": arguments_hash})
        if key is not None:
            decision = decision.signed(self.run_id, key)
        outcome = DecisionOutcome(
            run_id=self.run_id,
            call_id=target.call_id,
            tool=target.tool,
            arguments=target.arguments,
            decision="approved" if approve else "declined",
            via="update",
        )
        try:
            entry = await self.workflow.execute_update(AgentWorkflow.decide, decision, rpc_timeout=wait)
            return outcome.model_copy(update={"entry": entry, "decision": entry.event})
        except WorkflowUpdateFailedError as exc:
            raise refused(exc) from None
        except (WorkflowUpdateRPCTimeoutOrCancelledError, RPCError):
            pass  # no worker answered now: fall back to the signal, which the server keeps
        description = await self.describe()
        if description.status != WorkflowExecutionStatus.RUNNING:
            raise closed(self.run_id, description)
        if queued := await self._queued_decision(target.call_id):
            verb = "approve" if queued.approve else "deny"
            raise ApprovalRejected(
                f"another decision for call {target.call_id} is already queued ({verb} by {queued.approver}); "
                "no worker has applied it yet. Nothing was sent: the first decision wins when a worker picks "
                "the run up"
            )
        try:
            await self.workflow.signal(AgentWorkflow.decision, decision)
        except RPCError as exc:
            if exc.status == RPCStatusCode.NOT_FOUND:
                raise closed(self.run_id, await self.describe()) from None
            raise from_rpc(exc, f"cannot send the decision to run {self.run_id}") from exc
        return outcome.model_copy(update={"decision": "queued", "via": "signal"})

    async def approve(
        self,
        call_id: str | None = None,
        *,
        by: str,
        reason: str | None = None,
        arguments_hash: str | None = None,
        wait: timedelta = UPDATE_TIMEOUT,
        key: ApproverKey | None = None,
    ) -> DecisionOutcome:
        """Approve the pending call `call_id` (default: the run's only one) as `by`, recorded in the audit trail.

        Pass the `arguments_hash` of the `PendingApproval` you reviewed: if the call's arguments differ, the run
        refuses the decision (ApprovalRejected). Applied at once when a worker answers within `wait`, else
        queued for the run (`DecisionOutcome.via == "signal"`). `key` signs it where workers require signed
        decisions. The rest as `decide`."""
        return await self.decide(True, call_id, by=by, reason=reason, arguments_hash=arguments_hash, wait=wait, key=key)

    async def deny(
        self,
        call_id: str | None = None,
        *,
        by: str,
        reason: str | None = None,
        arguments_hash: str | None = None,
        wait: timedelta = UPDATE_TIMEOUT,
        key: ApproverKey | None = None,
    ) -> DecisionOutcome:
        """Decline the pending call `call_id` as `by`; `reason` is recorded and told to the model. As `approve`."""
        return await self.decide(
            False, call_id, by=by, reason=reason, arguments_hash=arguments_hash, wait=wait, key=key
        )

    async def _queued_decision(self, call_id: str) -> Decision | None:
        """A `decision` signal for `call_id` that the run received after its last completed workflow task:
        sent while no worker was up, and not yet seen by the workflow. Its payload is decoded with the
        client's data converter (and so through the codec, when payloads are encrypted)."""
        history = await self.workflow.fetch_history()
        waiting: list[Any] = []
        handed = 0  # signals received before the current workflow task started: that task sees them
        for event in history.events:
            if event.HasField("workflow_task_started_event_attributes"):
                handed = len(waiting)
            elif event.HasField("workflow_task_completed_event_attributes"):
                waiting, handed = waiting[handed:], 0  # the workflow has applied those
            elif event.HasField("workflow_execution_signaled_event_attributes"):
                signal = event.workflow_execution_signaled_event_attributes
                if signal.signal_name == DECISION_SIGNAL:
                    waiting.append(signal.input.payloads)
        converter = self.agents.client.data_converter
        for payloads in waiting:
            [earlier] = await converter.decode(payloads, [Decision])
            if earlier.call_id == call_id:
                return earlier
        return None

    async def cancel(self, reason: str | None = None) -> None:
        """A Temporal cancellation: the run stops and its completed effects are compensated. RunClosed if
        the run has already ended."""
        description = await self.describe()
        if description.status != WorkflowExecutionStatus.RUNNING:
            raise closed(self.run_id, description)
        try:
            await self.workflow.cancel(reason=reason or "cancelled")
        except RPCError as exc:
            raise from_rpc(exc, f"cannot cancel run {self.run_id}") from exc

    async def histories(self) -> list[WorkflowHistory]:
        """The run's event histories, oldest first: one per run of its continue-as-new chain."""
        description = await self.describe()
        client = self.agents.client
        run_id, found = description.raw_description.workflow_execution_info.first_run_id, []
        while run_id:
            history = await client.get_workflow_handle(self.run_id, run_id=run_id).fetch_history()
            found.append(history)
            last = history.events[-1]
            continued = last.HasField("workflow_execution_continued_as_new_event_attributes")
            run_id = last.workflow_execution_continued_as_new_event_attributes.new_execution_run_id if continued else ""
        return found

    async def _failure(self) -> str | None:
        try:
            await self.workflow.result()
        except WorkflowFailureError as exc:
            return str(run_failed(self.run_id, exc))
        except RPCError:
            return None
        return None


# -- helpers shared by the methods above ------------------------------------------------------------


def choose(waiting: list[PendingApproval], run_id: str, call_id: str | None) -> PendingApproval:
    """The pending approval a decision is for: the named call (its id, or its `address` `run_id/call_id`
    among a delegation tree's), or the only one waiting."""
    if call_id is not None:
        named = [p for p in waiting if call_id in (p.call_id, p.address)]
        if len(named) == 1:
            return named[0]
        if not named:
            raise NoPendingApproval(f"run {run_id} has no pending approval for call {call_id!r}")
        waiting = named
    if not waiting:
        raise NoPendingApproval(f"run {run_id} has no pending approval")
    if len(waiting) > 1:
        ids = [p.call_id if p.run_id == run_id else p.address for p in waiting]
        raise AmbiguousApproval(f"run {run_id} has several pending approvals; choose one: {', '.join(ids)}", ids)
    return waiting[0]


def _elsewhere(run_id: str, why: str) -> str:
    return (
        f"the transcript of run {run_id} is kept by the workers' transcript store, which this process cannot read "
        f"({why}): read it with the workers' AGENT_DATABASE_URL or AGENT_DATA_DIR, or pass their store"
    )


def _quoted(value: str) -> str:
    """A visibility-query string literal; refuses quotes rather than escaping them."""
    if '"' in value or "\\" in value:
        raise ValueError(f"not a valid filter value: {value!r}")
    return f'"{value}"'


def _description(agent: Agent | str) -> str:
    return agent.description if isinstance(agent, Agent) else ""


def typed(result: AgentResult, agent: Agent | None) -> AgentResult:
    """The result with its answer as the answering agent's output (the one the run was last handed to, among
    those `agent` knows as objects); unchanged when that agent is not known here or has no type."""
    if agent is None or not isinstance(result.output, str):
        return result
    answering = result.answered_by or agent.label
    try:
        team = agent.team()
    except ValueError:  # handoffs by name: only the worker knows those agents
        team = {}
    decoder = agent if answering == agent.label else team.get(answering)
    if decoder is None:
        return result
    return result.model_copy(update={"output": decoder.output_of(result.output)})
