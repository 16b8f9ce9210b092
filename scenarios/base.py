"""What a built-in scenario is: an agent (system prompt, task, scripted model, tools, budget) that every
runner — in-process, SQLite checkpoints, Temporal — runs identically."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from pydantic import ConfigDict, Field, NonNegativeFloat, NonNegativeInt, PositiveInt

from agentic import Budget, FakeModel, Registry
from agentic.compact import Compact
from agentic.ledger import EffectsLedger


class ScenarioOptions(Compact):
    """Per-run knobs of the demo scenarios; every field has a default so old inputs stay valid."""

    model_config = ConfigDict(frozen=True)

    step_delay: NonNegativeFloat = Field(0.0, description="Simulated work inside each mutating step, seconds.")
    records: PositiveInt = Field(5, description="How many records the migration scenario migrates.")
    fail_at: Literal["none", "flight", "hotel", "car"] = Field(
        "car", description="Which trip booking fails permanently."
    )
    after_effect_delay: NonNegativeFloat = Field(
        0.0, description="Seconds a mutating tool waits after its effect committed, before it returns."
    )
    compensation_failures: NonNegativeInt = Field(
        0, description="Compensations (trip cancellations) fail their first N attempts."
    )
    output_bytes: NonNegativeInt = Field(0, description="Size of generated tool outputs (benchmark scenarios).")
    flaky_attempts: NonNegativeInt = Field(
        0, description="Mutating tools raise a transient error AFTER their effect on this many first attempts."
    )


@dataclass(frozen=True)
class ScenarioDeps:
    """What scenario tools receive as `ToolContext.deps`: the worker's services plus this run's options."""

    ledger: EffectsLedger
    options: ScenarioOptions


@dataclass(frozen=True)
class Scenario:
    name: str
    description: str
    system: str
    task: str
    registry: Registry
    script: Callable[[ScenarioOptions], FakeModel]
    budget: Budget


class UnknownScenarioError(LookupError):
    pass
