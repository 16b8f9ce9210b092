"""The demo agents' per-run knobs and services. The engine never sees these types: a run carries its
options as plain JSON, and each agent validates them with its own options model."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, NonNegativeFloat, NonNegativeInt, PositiveInt

from duragent._stores.facts import DurableFactStore
from duragent._stores.ledger import Ledger


class DemoOptions(BaseModel):
    """Knobs that make the demo agents slow, flaky or failing on purpose; every field has a default."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    step_delay: NonNegativeFloat = Field(0.0, description="Simulated work inside each mutating step, seconds.")
    records: PositiveInt = Field(5, description="How many records the migration agent migrates.")
    fail_at: Literal["none", "flight", "hotel", "car"] = Field(
        "car", description="Which trip booking fails permanently."
    )
    after_effect_delay: NonNegativeFloat = Field(
        0.0, description="Seconds a mutating tool waits after its effect committed, before it returns."
    )
    compensation_failures: NonNegativeInt = Field(
        0, description="Compensations (trip cancellations) fail their first N attempts."
    )
    output_bytes: NonNegativeInt = Field(0, description="Size of generated tool outputs (benchmark agents).")
    flaky_attempts: NonNegativeInt = Field(
        0, description="Mutating tools raise a transient error AFTER their effect on this many first attempts."
    )


@dataclass(frozen=True)
class DemoDeps:
    """The demo agents' services: the effects ledger, standing in for a real provider that de-duplicates
    on an idempotency key (a payment API's `Idempotency-Key` header), and the fact store the memory tools
    of `courier` read and write (`facts`, found there by `duragent._stores.memory_tools`)."""

    ledger: Ledger
    facts: DurableFactStore | None = None
