"""The order engines (or servers) take turns in, rep by rep.

Every one runs once per rep, in an order drawn afresh for each rep from a seeded generator, so a rerun
repeats it. Not one fixed order rotated: that gives each engine the same predecessor in every rep, and
whatever a run leaves behind — a server still writing visibility, a rate limiter's spent tokens, a worker's
cold caches — then lands on the same neighbour every time (docs/benchmarks.md, "Per-step overhead")."""

from __future__ import annotations

import random
from collections.abc import Iterator, Sequence
from typing import TypeVar

T = TypeVar("T")


def turns(items: Sequence[T], reps: int, seed: int = 0) -> Iterator[tuple[int, list[T]]]:
    """(rep, the order its items run in) for each of `reps` reps."""
    draw = random.Random(seed)
    for rep in range(reps):
        yield rep, draw.sample(list(items), len(items))
