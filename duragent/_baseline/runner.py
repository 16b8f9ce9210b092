"""`Runner`: the agent loop driven step by step through the journal — the in-process `Agent`'s shape,
plus a checkpoint at every step, approvals, cancellation between steps and the compensation walk.

It owns no agent rule: `AgentLoop` decides every step, `agentic.saga` what to undo, `agentic.approvals`
what a decision means. Resume is this same code over a store that already has rows.
"""

from __future__ import annotations

import contextlib
import time
from typing import Any

from agentic import (
    AgentLoop,
    CallModel,
    Finish,
    Message,
    ModelError,
    ModelReply,
    RunTool,
    Stop,
    ToolContext,
    ToolResult,
    ToolSpec,
    ToolStatus,
)
from agentic.agent import Agent, effective_settings
from agentic.agent_set import AgentSet
from agentic.approvals import Outcome
from agentic.delegation import (
    child_delegation,
    child_run_id,
    invalid_task_text,
    refused_text,
    reserve,
    task_of,
)
from agentic.handoffs import as_seen_by
from agentic.loop import admitted, initial_messages, tool_schemas
from agentic.mcp import MCPToolsError
from agentic.models.base import ask
from agentic.saga import CompensationStep, abandons, compensation_plan
from duragent._baseline import approvals, compensation, steps
from duragent._baseline.crash import CrashHook
from duragent._baseline.delegation import run_child
from duragent._baseline.errors import CheckpointMismatch, RunFailed
from duragent._baseline.journal import Journal
from duragent._baseline.lease import LeaseKeeper
from duragent._baseline.options import RunOptions
from duragent._baseline.store import Progress, RunRow, Store


class ReplayEnd(Exception):
    """Raised in replay-only mode where a live step would begin."""


class Runner:
    def __init__(
        self,
        store: Store,
        agents: AgentSet,
        run: RunRow,
        owner: str,
        lease: LeaseKeeper | None = None,
        crash: CrashHook | None = None,
        *,
        replay_only: bool = False,
        history: list[Message] | None = None,
    ) -> None:
        self.store, self.run_id, self.owner, self.lease = store, run.run_id, owner, lease
        self.stored_usage = run.consumed
        self.options = RunOptions.model_validate_json(run.options)
        served = agents.get(run.scenario)  # the runs table calls the agent's name `scenario`
        agent = served.agent
        self.agent_options = agents.options(served, self.options.options)
        self.approval_policy = self.options.approvals or agent.approvals
        budget = self.options.budget or agent.budget  # a delegated run's whole budget is its reservation
        if self.options.max_steps:
            budget = budget.model_copy(update={"max_steps": self.options.max_steps})
        self.agents = agents
        self.delegation = self.options.delegation
        # The runs above this one (a delegated run stops when any of them is cancelled).
        self.ancestors = self.delegation.path if self.delegation is not None else []
        self.agent = agent
        self.registry = agent.registry
        # The agents the run may be handed to: this worker's, by name (never what a run says).
        self.team = agent.team(agents.agent)
        roles = {name: member.role() for name, member in self.team.items()}
        self.loop = AgentLoop(budget, agent.tool_specs(), role=agent.role(), team=roles)
        task = self.options.task or agent.task
        if task is None:
            raise RunFailed(f"agent {agent.label} has no default task: start the run with one")
        if history is None and self.options.history_from:  # a conversation's turn: `history` given, or rebuilt
            history = _history(store, agents, self.options.history_from)
        self.messages: list[Message] = initial_messages(agent.system, task, history)
        self.schemas = agent.schemas()
        self.transcript_hash = steps.TranscriptHash()
        self.model = agents.model(served, self.options.model)
        self.model_settings = effective_settings(agent.model_settings, self.options.model_settings)
        self.deps = served.deps
        total = agent.spec(self.agent_options, lookup=agents.agent).estimated_actions
        self.journal = Journal(store, self.run_id, owner, lease, crash or CrashHook(), total)
        self.replay_only = replay_only
        self._usage_checked = False

    # -- the loop phase -----------------------------------------------------------------------------

    def run(self) -> None:
        """Drive the run to its end and record the end. Raises CheckpointMismatch, LeaseLost, RunFailed."""
        self.drive()
        self._conclude()

    def drive(self) -> None:
        self._mcp_tools()
        while True:
            self._replay_stops()
            action = self.loop.next_step()
            if isinstance(action, Finish):
                return
            if self.journal.live and self._cancel_requested():
                continue
            if isinstance(action, CallModel):
                self._model_step(action)
            elif isinstance(action, RunTool):
                self._tool_step(action)

    def _mcp_tools(self) -> None:
        """The agent's MCP tools, listed once, as the run's first step: a resume reads them from that step,
        never from what the servers list by then."""
        if not self.agent.mcp or self.journal.cursor > 0:
            return
        spec = steps.mcp_tools_step(self.journal.next_step, [server.name for server in self.agent.mcp])
        row = self.journal.match(spec)
        if row is not None and row.status == "completed":
            body = self.journal.output(row)
            tools = {name: ToolSpec.model_validate(t) for name, t in body["tools"].items()}
            self.journal.advance()
        else:
            self._going_live()
            started = self.journal.before(spec)
            try:
                tools = self.agent.list_mcp_tools()
            except MCPToolsError as exc:
                raise RunFailed(f"run {self.run_id} cannot start: {exc}") from exc
            body = {"tools": {name: t.model_dump(mode="json") for name, t in tools.items()}}
            self.journal.complete(spec, body, started_at=started)
        self.loop.specs.update(tools)
        self.loop.own.tools.update(tools)
        self.schemas = tool_schemas(self.loop.specs, (), self.loop.own.output)

    def _going_live(self) -> None:
        if self.replay_only:
            raise ReplayEnd()
        if not self._usage_checked:
            # Everything before this step was replayed: the consumption it adds up to must be the stored one.
            if self.loop.state.consumed != self.stored_usage:
                raise CheckpointMismatch(
                    f"checkpoint mismatch in run {self.run_id}: the replayed steps consumed "
                    f"{self.loop.state.consumed}, the run row says {self.stored_usage}; refusing to guess"
                )
            self._usage_checked = True

    def _replay_stops(self) -> None:
        """Stops that came from outside the loop (a cancellation) are steps too; replay puts them back."""
        row = self.journal.peek()
        while row is not None and row.step_name.startswith("stop:") and not self.loop.finished:
            body = self.journal.output(row)
            spec = steps.stop_step(row.step, Stop(body["stop"]), body["detail"])
            self.journal.match(spec)
            self.messages += self.loop.stop_with(Stop(body["stop"]), body["detail"])
            self.journal.advance()
            row = self.journal.peek()

    def _cancel_requested(self) -> bool:
        event = self.store.pending_cancel(self.run_id, *self.ancestors)
        if event is None:
            return False
        self._going_live()
        self._stop(Stop.CANCELLED, event["detail"] or "cancelled by request")
        return True

    def _stop(self, stop: Stop, detail: str) -> None:
        spec = steps.stop_step(self.journal.next_step, stop, detail)
        started = self.journal.before(spec)
        body = {"stop": stop.value, "detail": detail}
        self.journal.complete(spec, body, started_at=started, handles_cancel=stop is Stop.CANCELLED)
        self.messages += self.loop.stop_with(stop, detail)

    def _model_step(self, action: CallModel) -> None:
        spec = steps.model_step(self.journal.next_step, self.transcript_hash.of(self.messages), action.step)
        row = self.journal.match(spec)
        if row is not None and row.status == "completed":
            self.messages += self.loop.model_replied(ModelReply.model_validate(self.journal.output(row)))
            self.journal.advance()
            return
        # Read-only: nothing is written before the call; a crash during it just calls the model again.
        self._going_live()
        started = self.journal.before(spec)
        reply = self._complete(action)
        self.messages += self.loop.model_replied(reply)
        self.journal.complete(
            spec, reply.model_dump(mode="json"), started_at=started, consumed=self.loop.state.consumed
        )

    @property
    def active(self) -> Agent:
        """The agent whose turn it is: the run's own, or the one it was handed to."""
        name = self.loop.state.agent
        return self.team[name] if name is not None else self.agent

    def _complete(self, action: CallModel) -> ModelReply:
        attempts = self.options.model_attempts
        active = self.active
        if active is self.agent:
            model, messages, schemas, settings = self.model, self.messages, self.schemas, self.model_settings
        else:  # handed over: that agent's model, prompt, tools and settings, on the one transcript
            model, messages = active.model, as_seen_by(self.messages, active.system)
            schemas, settings = active.schemas(), active.model_settings
        for attempt in range(1, attempts + 1):
            try:
                # Admitted and judged (the agent's answer type and checks) before it is checkpointed: a reply over
                # the per-reply limits is stored cut short, and a resume reads the verdicts instead of judging again.
                return active.judge(
                    admitted(ask(model, messages, schemas, call_index=action.call_index, settings=settings))
                )
            except ModelError as exc:
                if not exc.retryable or attempt == attempts:
                    raise RunFailed(f"model call {action.step} failed: {exc}") from exc
                wait = exc.retry_after if exc.retry_after is not None else self._backoff(attempt - 1)
                time.sleep(min(wait, 30.0))
        raise AssertionError("unreachable")

    def _tool_step(self, action: RunTool) -> None:
        call = action.call
        spec = steps.tool_step(self.journal.next_step, self.run_id, call)
        row = self.journal.match(spec)
        if row is not None and row.status == "completed":
            body = self.journal.output(row)
            self.journal.advance()
            self._apply(ToolResult.model_validate(body["result"]), body.get("stop"))
            return
        self._going_live()
        approved: bool | None = None
        if action.needs_approval:
            answer = approvals.await_decision(
                self.store,
                self.run_id,
                self.owner,
                call,
                declared_timeout=action.spec.approval_timeout if action.spec else None,
                policy=self.approval_policy,
                poll=self.options.poll_seconds,
                lease=self.lease,
                progress=self.journal.progress(spec.step, f"awaiting approval: {spec.label}"),
                ancestors=self.ancestors,
                approver_keys=self.agents.approver_keys,  # verified here, where the tool is about to act
            )
            if answer.outcome is None:
                self._stop(Stop.CANCELLED, answer.cancel_detail)
                return
            if answer.outcome is not Outcome.APPROVED:
                self._refuse(spec, call, answer)
                return
            approved = True
        if action.spec is not None and action.spec.delegate is not None:
            self._delegate(spec, action)
            return
        mutating = action.spec is not None and action.spec.mutating
        self._execute(spec, action, approved, mutating)

    def _delegate(self, spec: steps.StepSpec, action: RunTool) -> None:
        """Another agent answers this call: a run of its own in this store, driven inline, its budget
        reserved out of this run's; its consumption is charged here, in the same step."""
        call, ref = action.call, action.spec.delegate if action.spec else None
        assert ref is not None
        started = self.journal.before(spec)
        task = task_of(call)
        reservation = reserve(self.loop.budget, self.loop.state.consumed, ref.limit)
        if task is None:
            result = ToolResult.of(call, ToolStatus.INVALID_ARGUMENTS, invalid_task_text(call.name))
        elif isinstance(reservation, str):
            result = ToolResult.of(call, ToolStatus.ERROR, refused_text(call.name, reservation))
        else:
            # The intent (and the key the child's id derives from) is durable before the child starts: a
            # resumed run comes back here and finds the child instead of starting another.
            attempts = self.journal.intend(spec)
            child_id = child_run_id(self.run_id, call.identity)
            where = child_delegation(self.delegation, self.run_id, call)
            result = run_child(self.store, self.agents, call, child_id, ref, task, reservation, where, self.options)
            consumed = self.loop.state.consumed.plus(result.delegation.usage) if result.delegation else None
            body = {"result": result.model_dump(mode="json"), "stop": None}
            self.journal.complete(spec, body, started_at=started, attempts=attempts, consumed=consumed)
            self._apply(result, None)
            return
        self.journal.complete(spec, {"result": result.model_dump(mode="json"), "stop": None}, started_at=started)
        self._apply(result, None)

    def _execute(self, spec: steps.StepSpec, action: RunTool, approved: bool | None, mutating: bool) -> None:
        call = action.call
        started = self.journal.before(spec)
        assert spec.key is not None
        active = self.active
        context = ToolContext(
            run_id=self.run_id,
            call_id=call.identity,
            idempotency_key=spec.key,
            deps=self.deps if active is self.agent else self.agents.get(active.label).deps,
            options=self.agent_options
            if active is self.agent
            else self.agents.options(self.agents.get(active.label), self.options.options),
        )
        earlier = row.attempts if (row := self.journal.peek()) is not None else 0
        result: ToolResult | None = None
        for retry in range(self.options.tool_attempts):
            # A mutating step's intent (with its key) is durable before the tool runs; each attempt counts.
            context.attempt = self.journal.intend(spec) if mutating else earlier + retry + 1
            result = active.dispatch(call, context, spec=action.spec, approved=approved)
            if result.status is not ToolStatus.RETRYABLE:
                break
            if retry + 1 < self.options.tool_attempts:
                time.sleep(self._backoff(retry))
        assert result is not None
        body = {"result": result.model_dump(mode="json"), "stop": None}
        self.journal.complete(spec, body, started_at=started, attempts=context.attempt)
        self._apply(result, None)

    def _refuse(self, spec: steps.StepSpec, call: Any, answer: approvals.Answer) -> None:
        policy = self.approval_policy
        if answer.outcome is Outcome.DECLINED:
            result = ToolResult.declined(call, answer.reason or None)
            stop = {"stop": Stop.APPROVAL_DECLINED.value, "detail": f"{call.name} was declined"}
            abandon = policy.on_decline == "abandon"
        else:
            result = ToolResult.expired(call, answer.timeout)
            stop = {"stop": Stop.APPROVAL_EXPIRED.value, "detail": f"approval for {call.name} expired"}
            abandon = policy.on_expire == "abandon"
        # The result and the policy's stop are one step, so a crash cannot separate them.
        body = {"result": result.model_dump(mode="json"), "stop": stop if abandon else None}
        started = self.journal.before(spec)
        self.journal.complete(spec, body, started_at=started)
        self._apply(result, body["stop"])

    def _apply(self, result: ToolResult, stop: dict[str, str] | None) -> None:
        self.messages += self.loop.tool_finished(result)
        if stop:
            self.messages += self.loop.stop_with(Stop(stop["stop"]), stop["detail"])

    def _backoff(self, retry: int) -> float:
        return self.options.retry_backoff_seconds * 2**retry

    # -- the end ------------------------------------------------------------------------------------

    def _conclude(self) -> None:
        state = self.loop.state
        assert state.stop is not None
        result: dict[str, Any] = {"stop": state.stop.value, "stop_detail": state.stop_detail, "output": state.output}
        if not abandons(state.stop):
            return self._finish("completed", result)
        plan = compensation_plan(self.run_id, state.records, self.loop.own.tools, self.loop.team)
        result["not_compensable"] = plan.not_compensable
        if not plan.steps:
            return self._finish("abandoned", result)
        journal = self.journal
        journal.estimate = max(journal.estimate or 0, journal.cursor + len(plan.steps))
        if journal.live:
            self._going_live()
            journal.store.set_status(
                self.run_id, self.owner, "compensating", journal.progress(journal.cursor, "compensating")
            )
        remaining, why = compensation.walk(journal, plan.steps, self._undoer, self.options)
        if remaining:
            result["remaining"] = [f"{s.call.name} ({s.original_key})" for s in remaining]
            result["error"] = f"compensation of {remaining[0].call.name} kept failing: {why}"
            return self._finish("compensation_failed", result)
        return self._finish("compensated", result)

    def _undoer(self, step: CompensationStep) -> compensation.Undoer:
        """Whose tools undo `step`: this run's, or — a delegated run's effect — that agent's, with its options."""
        if step.agent is None:
            return compensation.Undoer(self.run_id, self.registry, self.deps, self.agent_options)
        served = self.agents.get(step.agent)
        if step.run_id is None:  # an effect of this run, made after it was handed to that agent
            return compensation.Undoer(
                self.run_id, served.agent.registry, served.deps, self.agents.options(served, self.options.options)
            )
        return compensation.Undoer(
            step.run_id or self.run_id,
            served.agent.registry,
            served.deps,
            self.agents.options(served, step.options),
        )

    def _finish(self, status: str, result: dict[str, Any]) -> None:
        self.journal.leftover()
        self._going_live()
        done = self.journal.cursor
        label = f"finished: {status} ({result['stop']})"
        self.store.finish(self.run_id, self.owner, status, progress=Progress(done, done, label), **result)


def transcript(store: Store, agents: AgentSet, run_id: str, history: list[Message] | None = None) -> Runner:
    """The run's loop and messages rebuilt from its completed steps only (nothing executes). `history`: a
    conversation turn's, when the caller has it (else it is rebuilt from the turns before)."""
    runner = Runner(store, agents, store.require(run_id), owner="", replay_only=True, history=history)
    with contextlib.suppress(ReplayEnd):
        runner.drive()
    return runner


def answer(store: Store, agents: AgentSet, run_id: str) -> Any:
    """The run's answer as its answering agent's output — the typed value of a typed agent (the row keeps the
    JSON) — read from its completed steps (the agent it was last handed to decides the type)."""
    row = store.require(run_id)
    if row.output is None:
        return None
    return transcript(store, agents, run_id).active.output_of(row.output)


def _history(store: Store, agents: AgentSet, run_id: str) -> list[Message]:
    """A conversation's transcript up to the end of `run_id` (its previous turn), as `history=` takes it: the
    turns replayed from the first, each on the one before (a loop, not a recursion: conversations are long)."""
    chain = [run_id]
    while (earlier := RunOptions.model_validate_json(store.require(chain[-1]).options).history_from) is not None:
        chain.append(earlier)
    history: list[Message] | None = None
    for turn in reversed(chain):
        history = [m for m in transcript(store, agents, turn, history).messages if m.role != "system"]
    return history or []
