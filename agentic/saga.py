"""Which effects an abandoned run must undo, in which order, under which keys — pure rules, shared by
every runner (the Temporal workflow and the SQLite checkpoint runner execute them).

A run is abandoned when it stops without an answer. Its completed mutating calls are undone newest
first, each by its tool's declared compensation, under a key derived from the original's so the undo
itself happens at most once. A call interrupted mid-flight (cancelled) may or may not have made its
effect: it is planned too, and its compensation must treat "no effect under that key" as nothing to do.

`not_compensable` names each tool that may have changed something and declares no inverse, once: which
of its calls made an effect is the ledger's to say (`effects --run ID`). Listing it per call counted an
interrupted call that never made its effect (issue 23: four names for three effects).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pydantic import BaseModel, ConfigDict, PositiveFloat, PositiveInt

from agentic.budget import Stop
from agentic.compact import Compact
from agentic.loop import GIVE_UP, ToolRecord, idempotency_key
from agentic.messages import ToolCall
from agentic.results import ToolStatus
from agentic.tools import ToolSpec

# A mutating call in these states may have changed the world.
_MAY_HAVE_EFFECT = (ToolStatus.OK, ToolStatus.CANCELLED)


class SagaPolicy(Compact):
    """How hard to try each compensation before declaring the run `compensation_failed`."""

    model_config = ConfigDict(frozen=True)

    max_attempts: PositiveInt = 5
    initial_interval_seconds: PositiveFloat = 1.0
    maximum_interval_seconds: PositiveFloat = 30.0


def abandons(stop: Stop) -> bool:
    """Every stop but an answer abandons the run: budgets, give-up, failures, declines, cancellation."""
    return stop is not Stop.ANSWERED


def undo_key(original_key: str) -> str:
    return f"{original_key}:undo"


class CompensationStep(BaseModel):
    model_config = ConfigDict(frozen=True)

    call: ToolCall
    result: str
    result_ref: str | None = None  # the full result, when `result` is a claim-check preview
    original_key: str
    key: str
    uncertain: bool = False  # the original was interrupted: its effect may not exist


class CompensationPlan(BaseModel):
    model_config = ConfigDict(frozen=True)

    steps: list[CompensationStep]
    not_compensable: list[str]  # tools that may have changed something and declare no inverse, each once


def compensation_plan(run_id: str, records: Sequence[ToolRecord], specs: Mapping[str, ToolSpec]) -> CompensationPlan:
    steps: list[CompensationStep] = []
    not_compensable: list[str] = []
    for record in records:
        if not record.mutating or record.status not in _MAY_HAVE_EFFECT or record.call.name == GIVE_UP:
            continue
        spec = specs.get(record.call.name)
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
            )
        )
    return CompensationPlan(steps=steps[::-1], not_compensable=not_compensable)


class CompensationRecord(BaseModel):
    """What became of one planned undo."""

    model_config = ConfigDict(frozen=True)

    tool: str
    original_key: str
    key: str
    status: str  # "compensated" | "failed"
    result: str
