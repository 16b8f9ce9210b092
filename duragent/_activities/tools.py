"""The tool activity: one tool call, under its idempotency key, heartbeating while it runs; and the
compensation activity, which undoes one recorded effect.

Both decide from what the server reports and what the worker holds, never from their input alone: the run and
the key come from `activity.info()`; a tool that requires confirmation acts only
on an approval checked here against the run the server reports and the worker's approver keys; an undo runs
only for an effect the run (or a run it delegated to) recorded, with the arguments it recorded.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from temporalio import activity
from temporalio.exceptions import ApplicationError

from agentic import ToolCall, ToolContext, ToolResult, ToolSpec, ToolStatus
from agentic.approvals import effect_refusal
from agentic.loop import idempotency_key
from agentic.scrub import Scrubber, shaped
from agentic.undo import CompensationStep, undo_key
from duragent._activities.caller import calling_run, descends_from, describe, refused, verified_agent_run
from duragent._activities.heartbeat import heartbeating, in_thread
from duragent._activities.inputs import CompensationInput, PayloadLimits, ToolCallInput, ToolStep
from duragent._activities.recorded import recorded_tool_call
from duragent._activities.records import listing_record, receipt
from duragent._activities.served import ServedAgent, ServedAgents
from duragent._activities.transcripts import claim_checked, require_readable, stored_here
from duragent._activities.worked import timed
from duragent._stores.transcripts import Transcripts

NOT_APPROVED = "NotApproved"  # a tool that requires confirmation was not shown a valid approval: nothing was done


class ToolActivities:
    """The worker's agents and their services are injected here once; tools reach the services through
    `ToolContext.deps` and the run's options through `ToolContext.options`."""

    def __init__(
        self,
        served: ServedAgents,
        transcripts: Transcripts,
        limits: PayloadLimits | None = None,
        credentials: Scrubber | None = None,
    ) -> None:
        self.served = served
        self.transcripts = transcripts
        self.limits = limits or PayloadLimits()
        # The worker's secrets (duragent/_config/credentials.py): out of every result before it is stored.
        self.credentials = credentials or Scrubber(())

    @activity.defn(name="run_tool")
    async def run_tool(self, input: ToolCallInput) -> ToolStep:
        return await timed(self._run_tool(input))

    async def _run_tool(self, input: ToolCallInput) -> ToolStep:
        run_id = calling_run(input.run_id)
        call = input.call
        key = idempotency_key(run_id, call.identity)
        if input.idempotency_key != key:
            raise refused(f"call {call.identity} of run {run_id!r} has the key {key!r}, not {input.idempotency_key!r}")
        served = self.served.get(input.agent)
        mcp = input.tool if input.tool is not None and input.tool.mcp is not None else None
        declared = served.agent.registry.get(call.name)
        if mcp is None and declared is not None and declared.delegate is not None:
            raise refused(f"{call.name} delegates to another agent: that is a child workflow's work, never run_tool's")
        if mcp is not None:
            mcp = await in_thread(self._as_listed, served, run_id, call, mcp)
        gated = (
            mcp.requires_confirmation if mcp is not None else declared is not None and declared.requires_confirmation
        )
        approved: bool | None = None
        if mcp is not None or gated:
            execution = await verified_agent_run()
            if gated:
                keys = self.served.approver_keys
                why = effect_refusal(input.decision, call, run_id=run_id, execution=execution, keys=keys)
                if why is not None:
                    raise ApplicationError(why, type=NOT_APPROVED, non_retryable=True)
                approved = True
        context = self._context(served, run_id, call.identity, key, input.options)
        if mcp is not None:
            # A tool of an MCP server, as the run recorded it: the call carries the key in its `_meta`.
            await in_thread(self._require_transcript, input)
            dispatched = asyncio.ensure_future(served.agent.dispatch_mcp(call, context, mcp, approved=approved))
            result = await heartbeating(dispatched, dispatched.cancel)
            return await in_thread(self._finish, input, result)
        # The whole call in one thread: each hop between the event loop and a thread costs the worker a wake-up
        # (about 0.1 ms of CPU), and a call by reference made four of them (docs/benchmarks.md).
        return await heartbeating(in_thread(self._run_local, served, input, context, approved), context.cancel)

    def _as_listed(self, served: ServedAgent, run_id: str, call: ToolCall, tool: ToolSpec) -> ToolSpec:
        """The MCP tool `call` names, as this worker listed it for this run — its remote name and its gate from that
        record and from the agent's own rules for its server, never from what the run's input says."""
        assert tool.mcp is not None
        with stored_here():
            listed = self.transcripts.holds(listing_record(run_id, tool))
        if not listed or tool.name != call.name:
            raise refused(
                f"{call.name} is not an MCP tool this worker listed for run {run_id!r} as the call says "
                "(server, remote tool, flags): nothing was called"
            )
        server = served.agent.mcp_server(tool.mcp.server)
        if server is None or not server.exposes(tool.mcp.tool):
            raise refused(f"{call.name}: the agent {served.agent.name} exposes no such MCP tool: nothing was called")
        # The agent's own rule (requires_confirmation=True or patterns, trusted_read_only) gates it whatever was listed.
        gated = tool.requires_confirmation or server.needs_confirmation(tool.mcp.tool, destructive=False)
        return tool if gated == tool.requires_confirmation else tool.model_copy(update={"requires_confirmation": True})

    def _run_local(
        self, served: ServedAgent, input: ToolCallInput, context: ToolContext, approved: bool | None
    ) -> ToolStep:
        self._require_transcript(input)
        result = served.agent.registry.dispatch(input.call, context, approved=approved)
        if context.cancelled:
            return ToolStep(result=result)  # the workflow records the cancellation, not this result
        declared = served.agent.registry.get(input.call.name)
        return self._finish(input, result, receipted=declared is not None and declared.compensation is not None)

    def _require_transcript(self, input: ToolCallInput) -> None:
        # Before the effect: a run whose transcript this worker cannot read fails without acting; and a call acts
        # only if a model reply this worker stored proposed it — a stranger's answer to a model call is stored
        # nowhere, so a call it made up (in any history it wrote) is not run.
        call = input.call
        with stored_here():
            require_readable(self.transcripts, input.transcript.head, input.run_id)
            messages = self.transcripts.load(input.transcript.head, expand=False)
        if not any(_proposes(message.tool_calls, call) for message in messages if message.role == "assistant"):
            raise refused(
                f"call {call.identity} ({call.name}) of run {input.run_id!r} is in no model reply the agents' workers "
                "stored for it: nothing was done"
            )

    def _finish(self, input: ToolCallInput, result: ToolResult, *, receipted: bool = False) -> ToolStep:
        result = self._scrubbed(result)  # before the store: the next model call reads the stored copy
        if result.status is ToolStatus.RETRYABLE:
            # Raising hands the retry to Temporal's RetryPolicy; the next attempt gets the same key.
            raise ApplicationError(result.content, type="ToolRetry")
        # The tool's message is stored here, so its content enters history at most once (as this result; as a
        # preview when large) and the next model call carries only a head. Over the hard cap: the effect (if
        # any) is recorded under its key, and retrying would only make the same output again.
        what = f"the output of {result.name}"
        limits = self.limits
        with stored_here():  # a store that cannot be written now: this attempt fails, the retry finds the effect by key
            result = claim_checked(
                self.transcripts, result, limits.tool_output_bytes, limits.hard_cap_bytes, what, input.run_id
            )
            head = self.transcripts.append(
                input.transcript.head, [*input.transcript.unsaved, result.to_message()], input.run_id
            )
            if receipted:  # what its undo may be handed: this result, as the run will record it
                self.transcripts.keep(receipt(input.idempotency_key, result.content, result.content_ref), input.run_id)
        return ToolStep(result=result, head=head)

    def _scrubbed(self, result: ToolResult) -> ToolResult:
        """The result without the worker's secrets — a tool, an MCP server or its gateway may quote the
        credential it was sent — and, when it is an error, without anything shaped like a credential (a tool's
        own key in the URL of the HTTP error it raised)."""
        content = self.credentials(result.content) if self.credentials.holds(result.content) else result.content
        if not result.ok:
            content = shaped(content)
        return result if content == result.content else result.model_copy(update={"content": content})

    def _context(
        self,
        served: ServedAgent,
        run_id: str,
        call_id: str,
        key: str,
        options: dict[str, Any],
        compensates: str | None = None,
    ) -> ToolContext:
        return ToolContext(
            run_id=run_id,
            call_id=call_id,
            idempotency_key=key,
            deps=served.deps,
            options=self.served.options(served, options),
            attempt=activity.info().attempt,
            compensates=compensates,
        )

    @activity.defn(name="compensate")
    async def compensate(self, input: CompensationInput) -> ToolResult:
        """Undo one earlier effect, under a key derived from the original's: at most once, however often
        this activity is retried or the walk is resumed by a new worker. Only an effect the calling run — or a
        run it delegated to — recorded is undone, with the arguments it recorded."""
        step = input.step
        run_id = calling_run()
        await verified_agent_run()
        owner = input.run_id  # whose effect: this run's, or that of a run it delegated to
        if owner != run_id:
            await descends_from(owner, run_id)
        original_key = idempotency_key(owner, step.call.identity)
        if (step.original_key, step.key) != (original_key, undo_key(original_key)):
            raise refused(
                f"the undo of call {step.call.identity} of run {owner!r} is keyed {step.key!r} for "
                f"{step.original_key!r}; its keys are {undo_key(original_key)!r} for {original_key!r}"
            )
        latest = activity.info().workflow_run_id if owner == run_id else (await describe(owner)).run_id
        recorded = await recorded_tool_call(owner, latest or "", step.call.identity)
        if recorded is None or (recorded.call.name, recorded.call.arguments) != (step.call.name, step.call.arguments):
            raise refused(
                f"run {owner!r} recorded no call {step.call.identity} of {step.call.name} with these arguments: "
                "nothing of its to undo"
            )
        served = self.served.get(recorded.agent)
        registry = served.agent.registry
        context = self._context(served, owner, step.call.identity, step.key, recorded.options, compensates=original_key)
        original = await in_thread(self._original, step)
        result = await heartbeating(in_thread(registry.compensate, recorded.call, original, context), context.cancel)
        result = self._scrubbed(result)
        if result.status is ToolStatus.RETRYABLE:
            raise ApplicationError(result.content, type="CompensationRetry")
        if not result.ok:
            raise ApplicationError(result.content, type="CompensationImpossible", non_retryable=True)
        return result

    def _original(self, step: CompensationStep) -> str:
        """The result the undo is handed: one this worker produced for that call (its receipt), or — for a call
        cut short by a cancellation, whose effect is uncertain — the cancellation's own text, never a result that
        whoever answered the call could have chosen."""
        if step.uncertain:
            return ToolResult.cancelled(step.call).content
        with stored_here():
            if not self.transcripts.holds(receipt(step.original_key, step.result, step.result_ref)):
                raise refused(
                    f"no result of call {step.call.identity} ({step.call.name}) was recorded by the agents' workers "
                    "as the one the run holds: nothing to undo from it"
                )
            return self.transcripts.resolve(step.result, step.result_ref)


def _proposes(calls: Sequence[ToolCall], call: ToolCall) -> bool:
    return any((c.id, c.name, c.arguments) == (call.id, call.name, call.arguments) for c in calls)
