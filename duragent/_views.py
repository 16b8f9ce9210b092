"""What a caller sees of a run, built from what the server has: the `progress` query (with the retries only the
server sees), the result of a closed run, its visibility record, or — while no worker answers — what the run
last published. `RunHandle` (duragent/_client.py) asks; this turns the answers into `Progress` and
`RunSummary`.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from pydantic import BaseModel
from temporalio.client import WorkflowExecutionDescription
from temporalio.common import TypedSearchAttributes

from agentic.approvals import PendingApproval
from duragent._activities.inputs import AgentResult
from duragent._workflows import search_attributes as sa
from duragent._workflows.inputs import Progress


class RunSummary(BaseModel):
    """One run as visibility lists it: no worker needed."""

    run_id: str
    agent: str | None
    status: str
    temporal_status: str
    started_at: datetime | None
    closed_at: datetime | None
    step: int | None
    tokens: int | None
    cost: float | None
    pending_approvals: int
    stop: str | None


def summary(execution: Any) -> RunSummary:
    """A `list_workflows` entry as a `RunSummary`."""
    attributes = execution.typed_search_attributes
    ended = execution.status.name.lower() if execution.status else "unknown"
    return RunSummary(
        run_id=execution.id,
        agent=attributes.get(sa.AGENT_NAME),
        status=attributes.get(sa.AGENT_STATUS) or ended,
        temporal_status=ended,
        started_at=execution.start_time,
        closed_at=execution.close_time,
        step=attributes.get(sa.AGENT_STEP),
        tokens=attributes.get(sa.AGENT_TOKENS),
        cost=attributes.get(sa.AGENT_COST),
        pending_approvals=attributes.get(sa.AGENT_PENDING_APPROVALS) or 0,
        stop=attributes.get(sa.AGENT_STOP) or None,
    )


def with_retries(progress: Progress, description: WorkflowExecutionDescription) -> Progress:
    """The workflow cannot see its activities' retries; the server can. A model call that failed and waits for
    its next attempt (the provider down, rate limits) shows as `waiting_model`, saying which attempt failed
    and why; any other activity being retried keeps its status and says so in the label."""
    if progress.status not in ("running", "compensating"):
        return progress
    for pending in description.raw_description.pending_activities:
        if pending.attempt <= 1 or not pending.HasField("last_failure"):
            continue
        failure = pending.last_failure.message.splitlines()[0][:200] if pending.last_failure.message else "failed"
        retry = f"attempt {pending.attempt - 1} failed ({failure}); retrying with backoff"
        if pending.activity_type.name == "call_model":
            return progress.model_copy(update={"status": "waiting_model", "label": f"{progress.label}: {retry}"})
        return progress.model_copy(update={"label": f"{progress.label}: {retry}"})
    return progress


def final_progress(result: AgentResult, last: Progress | None = None) -> Progress:
    """A closed run's progress, from its result (the last poll's `max_steps` kept)."""
    stop = result.stop.value
    return Progress(
        run_id=result.run_id,
        agent=result.agent,
        status=result.status,
        step=result.step_count,
        max_steps=last.max_steps if last else None,
        label=f"finished: {stop}" if result.status == "completed" else f"{result.status}: {stop}",
        input_tokens=result.input_tokens,
        output_tokens=result.output_tokens,
        cost=result.cost,
        trajectory=result.trajectory(),
        stop=stop,
        compensations_done=len([c for c in result.compensations if c.status == "compensated"]),
        compensations_remaining=[s.call.name for s in result.compensations_remaining],
    )


def no_worker(
    run_id: str,
    why: str,
    *,
    last: Progress | None = None,
    attributes: TypedSearchAttributes | None = None,
    pending: Sequence[PendingApproval] | None = None,
) -> Progress:
    """An open run's progress while no worker answers its query (`worker_answered=False`): the last progress a
    worker gave (`last`), else the counters its visibility record holds (`attributes`). Its status is what it
    waits for as the run itself reported it (`pending`, duragent/_reported.py), never the status in its
    search attributes, which whoever started it may have written."""
    label = f"waiting for a worker: none answered the progress query ({why})"
    base = last or Progress(
        run_id=run_id,
        agent=(attributes.get(sa.AGENT_NAME) if attributes else None) or "",
        status="running",
        step=(attributes.get(sa.AGENT_STEP) if attributes else None) or 0,
        max_steps=None,
        label=label,
        input_tokens=(attributes.get(sa.AGENT_TOKENS) if attributes else None) or 0,
        output_tokens=0,
        cost=(attributes.get(sa.AGENT_COST) if attributes else None) or 0.0,
        trajectory=[],
    )
    update: dict[str, Any] = {"worker_answered": False, "label": label}
    if pending is not None:
        update |= {"pending_approvals": list(pending), "status": "awaiting_approval" if pending else "running"}
    return base.model_copy(update=update)


def ended_progress(run_id: str, description: WorkflowExecutionDescription, error: str | None) -> Progress:
    """A run that did not complete normally (failed, terminated, timed out): what visibility says."""
    attributes = description.typed_search_attributes
    ended = description.status.name.lower() if description.status else "unknown"
    status = attributes.get(sa.AGENT_STATUS)
    tokens = attributes.get(sa.AGENT_TOKENS) or 0
    return Progress(
        run_id=run_id,
        agent=attributes.get(sa.AGENT_NAME) or "",
        status="compensation_failed" if status == "compensation_failed" else ended,  # type: ignore[arg-type]
        step=attributes.get(sa.AGENT_STEP) or 0,
        max_steps=None,
        label=f"ended: {ended}" + (f" — {error}" if error else ""),
        input_tokens=tokens,
        output_tokens=0,
        cost=attributes.get(sa.AGENT_COST) or 0.0,
        trajectory=[],
        stop=attributes.get(sa.AGENT_STOP) or None,
        error=error,
    )
