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


# Two-sided 90 % quantiles of Student's t by degrees of freedom (df 1-30; past 30 the normal's 1.645 is within 2 %).
_T90 = (6.314, 2.920, 2.353, 2.132, 2.015, 1.943, 1.895, 1.860, 1.833, 1.812, 1.796, 1.782, 1.771, 1.761, 1.753)
_T90 += (1.746, 1.740, 1.734, 1.729, 1.725, 1.721, 1.717, 1.714, 1.711, 1.708, 1.706, 1.703, 1.701, 1.699, 1.697)


def ratio_interval(ratios: Sequence[float]) -> dict[str, Any]:
    """A 90 % confidence interval of the typical ratio of paired measurements (ours / the floor's, each pair
    measured back to back): Student's t on the logs of the ratios, so 0.5x and 2x weigh alike and the
    interval is of the geometric mean. Fewer than two ratios give no interval."""
    values = [math.log(r) for r in ratios if r > 0]
    if len(values) < 2:
        only = math.exp(values[0]) if values else None
        return {"n": len(values), "mean": only, "low": None, "high": None}
    mean = statistics.fmean(values)
    half = (_T90[len(values) - 2] if len(values) - 1 <= len(_T90) else 1.645) * statistics.stdev(values)
    half /= math.sqrt(len(values))
    return {"n": len(values), "mean": math.exp(mean), "low": math.exp(mean - half), "high": math.exp(mean + half)}


def judged(interval: dict[str, Any], goal: float, *, at_least: bool) -> bool | None:
    """A goal judged on an interval: True when the whole interval meets it, False when none of it does, None
    (undecided: more pairs are needed) when it straddles the goal or there is no interval."""
    low, high = interval["low"], interval["high"]
    if low is None or high is None:
        return None
    if at_least:
        return True if low >= goal else False if high < goal else None
    return True if high <= goal else False if low > goal else None
