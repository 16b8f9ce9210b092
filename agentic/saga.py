"""Which effects an abandoned run must undo, in which order, under which keys — pure rules, shared by
every runner (the Temporal workflow and the SQLite checkpoint runner execute them).

A run is abandoned when it stops without an answer. Its completed mutating calls are undone newest
first, each by its tool's declared compensation, under a key derived from the original's so the undo
itself happens at most once. A call interrupted mid-flight (cancelled) may or may not have made its
effect: it is planned too, and its compensation must treat "no effect under that key" as nothing to do.

`not_compensable` names each tool that may have changed something and declares no inverse, once: which
of its calls made an effect is the ledger's to say (`effects --run ID`). Listing it per call counted an
interrupted call that never made its effect (four names for three effects).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pydantic import BaseModel, ConfigDict, PositiveFloat, PositiveInt

from agentic.budget import Stop, Usage
from agentic.delegation import Delegated, owned
from agentic.handoffs import Role
from agentic.loop import GIVE_UP, ToolRecord, idempotency_key
from agentic.omit_defaults import OmitDefaults
from agentic.results import ToolStatus
from agentic.tools import ToolSpec
from agentic.undo import CompensationStep, undo_key

__all__ = [
    "CompensationPlan",
    "CompensationRecord",
    "CompensationStep",
    "SagaPolicy",
    "abandons",
    "compensation_plan",
    "delegated",
    "undo_key",
    "undo_plan",
]

# A mutating call in these states may have changed the world.
_MAY_HAVE_EFFECT = (ToolStatus.OK, ToolStatus.CANCELLED)


class SagaPolicy(OmitDefaults):
    """How hard to try each compensation before declaring the run `compensation_failed`."""

    model_config = ConfigDict(frozen=True)

    max_attempts: PositiveInt = 5
    initial_interval_seconds: PositiveFloat = 1.0
    maximum_interval_seconds: PositiveFloat = 30.0


def abandons(stop: Stop) -> bool:
    """Every stop but an answer abandons the run: budgets, give-up, failures, declines, cancellation."""
    return stop is not Stop.ANSWERED


class CompensationPlan(BaseModel):
    model_config = ConfigDict(frozen=True)

    steps: list[CompensationStep]
    not_compensable: list[str]  # tools that may have changed something and declare no inverse, each once


def compensation_plan(
    run_id: str,
    records: Sequence[ToolRecord],
    specs: Mapping[str, ToolSpec],
    team: Mapping[str, Role] | None = None,
) -> CompensationPlan:
    """The undos of an abandoned run, newest first. A delegation is undone as a unit at the position of its
    call: the child's own planned undos (its effects newest first, its children's at their positions),
    recorded when it answered; a child that stopped without an answer undid its effects itself. A call made
    after a handoff is judged by its agent's tools (`team`), and its undo names that agent."""
    steps: list[CompensationStep] = []
    not_compensable: list[str] = []
    for record in records:
        role = team.get(record.agent) if team and record.agent is not None else None
        spec = (role.tools if role is not None else specs).get(record.call.name)
        if record.delegation is not None or (spec is not None and spec.delegate is not None):
            # No outcome: the call never reached a child, or was cut short while it started one (that child
            # was cancelled with it, and undid its own effects).
            if record.delegation is not None:
                steps.extend(reversed(record.delegation.undo))  # reversed twice: the child's order is kept
                not_compensable += record.delegation.not_compensable
            continue
        if not record.mutating or record.status not in _MAY_HAVE_EFFECT or record.call.name == GIVE_UP:
            continue
        if spec is None or not spec.compensable:
            if record.call.name not in not_compensable:
                not_compensable.append(record.call.name)
            continue
        key = idempotency_key(run_id, record.call.identity)
        steps.append(
            CompensationStep(
                call=record.call,
                result=record.content,
                result_ref=record.content_ref,
                original_key=key,
                key=undo_key(key),
                uncertain=record.status is ToolStatus.CANCELLED,
                agent=record.agent if role is not None else None,
            )
        )
    return CompensationPlan(steps=steps[::-1], not_compensable=not_compensable)


def undo_plan(
    run_id: str,
    agent: str,
    options: dict[str, object],
    records: Sequence[ToolRecord],
    specs: Mapping[str, ToolSpec],
    team: Mapping[str, Role] | None = None,
) -> CompensationPlan:
    """What undoing a delegated run that answered would take, should its parent be abandoned later: its
    compensation plan, each step naming this run, agent and options (so the parent executes them with the
    child's tools, under the child's keys)."""
    plan = compensation_plan(run_id, records, specs, team)
    return plan.model_copy(update={"steps": owned(plan.steps, run_id, agent, options)})


def delegated(run_id: str, agent: str, stop: Stop, usage: Usage, undo: CompensationPlan | None) -> Delegated:
    """A child run's outcome as its parent records it. Only a child that answered leaves undos to its
    parent: one that stopped without an answer was abandoned, and undid its own effects."""
    keep = undo is not None and stop is Stop.ANSWERED
    return Delegated(
        run_id=run_id,
        agent=agent,
        stop=stop,
        usage=usage,
        undo=undo.steps if keep and undo is not None else [],
        not_compensable=undo.not_compensable if keep and undo is not None else [],
    )


class CompensationRecord(BaseModel):
    """What became of one planned undo."""

    model_config = ConfigDict(frozen=True)

    tool: str
    original_key: str
    key: str
    status: str  # "compensated" | "failed"
    result: str
