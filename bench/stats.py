"""Summaries of repeated measurements: median and p99, and ratios between engines measured in one run."""

from __future__ import annotations

import itertools
import math
import statistics
from collections.abc import Sequence
from typing import Any


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0..100) with linear interpolation between closest ranks (numpy's default)."""
    if not values:
        raise ValueError("percentile of no values")
    if not 0 <= q <= 100:
        raise ValueError(f"q must be within 0..100, got {q}")
    ordered = sorted(values)
    rank = (len(ordered) - 1) * q / 100
    low, high = math.floor(rank), math.ceil(rank)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def summarize(values: Sequence[float]) -> dict[str, Any]:
    """`{n, median, p99, min, max}`; an empty sample summarizes to n=0 and None elsewhere."""
    if not values:
        return {"n": 0, "median": None, "p99": None, "min": None, "max": None}
    return {
        "n": len(values),
        "median": statistics.median(values),
        "p99": percentile(values, 99),
        "min": min(values),
        "max": max(values),
    }


def ratio(numerator: float | None, denominator: float | None) -> float | None:
    """numerator / denominator, or None when either is missing or the denominator is not positive."""
    if numerator is None or denominator is None or denominator <= 0:
        return None
    return numerator / denominator


def intervals(marks: Sequence[float]) -> list[float]:
    """Differences between consecutive time marks: step durations from step-start marks."""
    return [b - a for a, b in itertools.pairwise(marks)]
