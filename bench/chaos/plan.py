"""Which runs a chaos session starts, and when it strikes — all derived from the seed."""

from __future__ import annotations

import random

from bench.chaos.invariants import RunSpec

MIX = ("billing", "migration", "refund", "trip-none", "trip-car")


def plan(runs: int, seed: int, prefix: str) -> list[RunSpec]:
    """`runs` runs cycling through every demo agent and outcome (any 5 consecutive runs cover them all), shuffled;
    options drawn from the seed: slow migration steps so kills land mid-step, a window after the charge
    (the classic double-charge moment), approvals given after a random delay."""
    rng = random.Random(seed)
    kinds = [MIX[i % len(MIX)] for i in range(runs)]
    rng.shuffle(kinds)
    specs = []
    for i, kind in enumerate(kinds):
        run_id = f"{prefix}-{i:03d}-{kind}"
        if kind == "billing":
            specs.append(RunSpec(run_id, "billing", after_effect_delay=round(rng.uniform(0.2, 0.8), 2)))
        elif kind == "migration":
            specs.append(
                RunSpec(run_id, "migration", records=rng.randint(4, 8), step_delay=round(rng.uniform(0.3, 0.7), 2))
            )
        elif kind == "refund":
            specs.append(RunSpec(run_id, "refund", approve_after=round(rng.uniform(1.0, 6.0), 2)))
        else:
            fail_at = "none" if kind == "trip-none" else "car"
            specs.append(RunSpec(run_id, "trip", fail_at=fail_at, step_delay=round(rng.uniform(0.2, 0.5), 2)))
    return specs


def gaps(rng: random.Random, count: int, low: float, high: float) -> list[float]:
    """Seconds between strikes."""
    return [rng.uniform(low, high) for _ in range(count)]
