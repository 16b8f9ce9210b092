"""The tool activity: one tool call, under its idempotency key, heartbeating while it runs."""

from __future__ import annotations

import asyncio
from typing import Any

from temporalio import activity
from temporalio.exceptions import ApplicationError

from activities.heartbeat import heartbeating
from activities.inputs import CompensationInput, PayloadLimits, ToolCallInput, ToolStep
from activities.served import ServedAgent, ServedAgents
from activities.stored_here import stored_here
from agentic import ToolContext, ToolResult, ToolStatus
from stores.transcripts import PayloadTooLarge, Transcripts


class ToolActivities:
    """The worker's agents and their services are injected here once; tools reach the services through
    `ToolContext.deps` and the run's options through `ToolContext.options`."""

    def __init__(self, served: ServedAgents, transcripts: Transcripts | None = None) -> None:
        self.served = served
        self.transcripts = transcripts

    @activity.defn(name="run_tool")
    async def run_tool(self, input: ToolCallInput) -> ToolStep:
        served = self.served.get(input.agent)
        context = self._context(served, input.run_id, input.call.identity, input.idempotency_key, input.options)
        if input.tool is not None and input.tool.mcp is not None:
            # A tool of an MCP server, as the run recorded it: the call carries the key in its `_meta`.
            await asyncio.to_thread(self._require_transcript, input)
            call = asyncio.ensure_future(
                served.agent.dispatch_mcp(input.call, context, input.tool, approved=input.approved)
            )
            result = await heartbeating(call, call.cancel)
            return await asyncio.to_thread(self._finish, input, result)
        # The whole call in one thread: each hop between the event loop and a thread costs the worker a wake-up
        # (about 0.1 ms of CPU), and a call by reference made four of them (issue 20, docs/benchmarks.md).
        return await heartbeating(asyncio.to_thread(self._run_local, served, input, context), context.cancel)

    def _run_local(self, served: ServedAgent, input: ToolCallInput, context: ToolContext) -> ToolStep:
        self._require_transcript(input)
        result = served.agent.registry.dispatch(input.call, context, approved=input.approved)
        if context.cancelled:
            return ToolStep(result=result)  # the workflow records the cancellation, not this result
        return self._finish(input, result)

    def _require_transcript(self, input: ToolCallInput) -> None:
        if input.transcript is not None:
            # Before the effect: a run whose transcript this worker cannot read fails without acting.
            with stored_here():
                self._store().require(input.transcript.head)

    def _finish(self, input: ToolCallInput, result: ToolResult) -> ToolStep:
        if result.status is ToolStatus.RETRYABLE:
            # Raising hands the retry to Temporal's RetryPolicy; the next attempt gets the same key.
            raise ApplicationError(result.content, type="ToolRetry")
        if input.transcript is None:
            return ToolStep(result=result)
        # By reference, the tool's message is stored here, so its content enters history at most once
        # (as this result; as a preview when large) and the next model call carries only a head.
        result = self._claim_checked(result, input.limits or PayloadLimits(), input.run_id)
        head = self._store().append(
            input.transcript.head, [*input.transcript.unsaved, result.to_message()], input.run_id
        )
        return ToolStep(result=result, head=head)

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

    def _store(self) -> Transcripts:
        if self.transcripts is None:
            raise ApplicationError("this worker has no transcript store", type="ConfigurationError", non_retryable=True)
        return self.transcripts

    def _claim_checked(self, result: ToolResult, limits: PayloadLimits, run_id: str) -> ToolResult:
        try:
            content, ref = self._store().claim_check(
                result.content, limits.tool_output_bytes, limits.hard_cap_bytes, f"the output of {result.name}", run_id
            )
        except PayloadTooLarge as exc:
            # The effect (if any) is recorded under its key; retrying would only make the same output again.
            raise ApplicationError(str(exc), type="PayloadTooLarge", non_retryable=True) from exc
        return result if ref is None else result.model_copy(update={"content": content, "content_ref": ref})

    @activity.defn(name="compensate")
    async def compensate(self, input: CompensationInput) -> ToolResult:
        """Undo one earlier effect, under a key derived from the original's: at most once, however often
        this activity is retried or the walk is resumed by a new worker."""
        step = input.step
        served = self.served.get(input.agent)
        registry = served.agent.registry
        context = self._context(
            served, input.run_id, step.call.identity, step.key, input.options, compensates=step.original_key
        )
        original = step.result
        if step.result_ref is not None and self.transcripts is not None:
            with stored_here():
                original = await asyncio.to_thread(self.transcripts.resolve, step.result, step.result_ref)
        result = await heartbeating(
            asyncio.to_thread(registry.compensate, step.call, original, context), context.cancel
        )
        if result.status is ToolStatus.RETRYABLE:
            raise ApplicationError(result.content, type="CompensationRetry")
        if not result.ok:
            raise ApplicationError(result.content, type="CompensationImpossible", non_retryable=True)
        return result
