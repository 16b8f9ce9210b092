"""The saga walk: undo an abandoned run's effects newest first (agentic.saga plans it), each undo a
checkpointed mutating step, so a worker killed mid-walk resumes the walk without repeating an undo."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from agentic import Registry, ToolContext, ToolResult, ToolStatus
from agentic.saga import CompensationStep
from duragent._baseline import steps
from duragent._baseline.journal import Journal
from duragent._baseline.options import RunOptions


@dataclass(frozen=True)
class Undoer:
    """What executes one undo: the run whose effect it is (its key's run), and that agent's tools, services
    and options — the walking run's own, or a delegated run's for the effects of a child it planned."""

    run_id: str
    registry: Registry
    deps: Any
    agent_options: Any


def walk(
    journal: Journal,
    plan: list[CompensationStep],
    undoer: Callable[[CompensationStep], Undoer],
    options: RunOptions,
) -> tuple[list[CompensationStep], str]:
    """Run the plan's undos in order; returns those not done (the failed one and everything after it)
    and why the first of them failed.

    The walk stops at the first undo that keeps failing, like the Temporal runner: later undos are of
    earlier effects, which the failed one's effect may depend on."""
    for index, plan_step in enumerate(plan):
        spec = steps.compensation_step(journal.next_step, plan_step)
        row = journal.match(spec)
        if row is not None and row.status == "completed":
            journal.advance()
            continue
        if row is not None and row.status == "failed":
            journal.advance()
            return plan[index:], journal.output(row)["result"]["content"]
        result = _undo(journal, spec, plan_step, undoer(plan_step), options)
        if not result.ok:
            return plan[index:], result.content
    return [], ""


def _undo(
    journal: Journal,
    spec: steps.StepSpec,
    plan_step: CompensationStep,
    by: Undoer,
    options: RunOptions,
) -> ToolResult:
    started = journal.before(spec)
    context = ToolContext(
        run_id=by.run_id,
        call_id=plan_step.call.identity,
        idempotency_key=plan_step.key,
        deps=by.deps,
        options=by.agent_options,
        compensates=plan_step.original_key,
    )
    result: ToolResult | None = None
    for retry in range(options.compensation_attempts):
        context.attempt = journal.intend(spec)  # attempts are counted in the store, across workers
        result = by.registry.compensate(plan_step.call, plan_step.result, context)
        if result.status is not ToolStatus.RETRYABLE:
            break
        if retry + 1 < options.compensation_attempts:
            time.sleep(options.retry_backoff_seconds * 2**retry)
    assert result is not None
    journal.complete(
        spec,
        {"result": result.model_dump(mode="json")},
        started_at=started,
        status="completed" if result.ok else "failed",
        attempts=context.attempt,
    )
    return result
