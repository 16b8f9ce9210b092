"""The tool activity: one tool call, under its idempotency key, heartbeating while it runs."""

from __future__ import annotations

import asyncio
import contextlib

from temporalio import activity
from temporalio.exceptions import ApplicationError

from activities.inputs import CompensationInput, ToolCallInput
from agentic import ToolContext, ToolResult, ToolStatus
from agentic.ledger import EffectsLedger
from scenarios import ScenarioDeps, get_scenario

HEARTBEAT_EVERY = 1.0


class ToolActivities:
    """Services are injected here once per worker; tools reach them through `ToolContext.deps`."""

    def __init__(self, ledger: EffectsLedger) -> None:
        self.ledger = ledger

    @activity.defn(name="run_tool")
    async def run_tool(self, input: ToolCallInput) -> ToolResult:
        registry = get_scenario(input.scenario).registry
        context = ToolContext(
            run_id=input.run_id,
            call_id=input.call.id,
            idempotency_key=input.idempotency_key,
            deps=ScenarioDeps(ledger=self.ledger, options=input.options),
            attempt=activity.info().attempt,
        )
        result = await _heartbeating(
            asyncio.to_thread(registry.dispatch, input.call, context, approved=input.approved), context
        )
        if result.status is ToolStatus.RETRYABLE:
            # Raising hands the retry to Temporal's RetryPolicy; the next attempt gets the same key.
            raise ApplicationError(result.content, type="ToolRetry")
        return result

    @activity.defn(name="compensate")
    async def compensate(self, input: CompensationInput) -> ToolResult:
        """Undo one earlier effect, under a key derived from the original's: at most once, however often
        this activity is retried or the walk is resumed by a new worker."""
        step = input.step
        registry = get_scenario(input.scenario).registry
        context = ToolContext(
            run_id=input.run_id,
            call_id=step.call.id,
            idempotency_key=step.key,
            deps=ScenarioDeps(ledger=self.ledger, options=input.options),
            attempt=activity.info().attempt,
            compensates=step.original_key,
        )
        result = await _heartbeating(asyncio.to_thread(registry.compensate, step.call, step.result, context), context)
        if result.status is ToolStatus.RETRYABLE:
            raise ApplicationError(result.content, type="CompensationRetry")
        if not result.ok:
            raise ApplicationError(result.content, type="CompensationImpossible", non_retryable=True)
        return result


async def _heartbeating(work: object, context: ToolContext) -> ToolResult:
    """Await the tool while heartbeating, so a dead worker is noticed within the heartbeat timeout
    and a cancellation reaches the tool (through its context) instead of being lost."""
    task = asyncio.ensure_future(work)  # type: ignore[arg-type]
    try:
        while True:
            done, _ = await asyncio.wait({task}, timeout=HEARTBEAT_EVERY)
            if done:
                return task.result()
            activity.heartbeat()
    except asyncio.CancelledError:
        context.cancel()
        # Wait for the tool to notice: compensations must not start while the effect may still land.
        with contextlib.suppress(Exception):
            await asyncio.shield(task)
        raise
