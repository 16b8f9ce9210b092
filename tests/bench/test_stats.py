"""The benchmark's judging of goals on paired ratios (bench/stats.py): a goal is met only when the whole 90 %
interval meets it, missed only when none of it does, and undecided — more pairs needed — in between."""

from __future__ import annotations

import math

import pytest

from bench.stats import judged, ratio_interval

pytestmark = pytest.mark.unit


def test_the_interval_is_of_the_geometric_mean_and_widens_with_spread() -> None:
    tight = ratio_interval([0.95, 0.96, 0.94, 0.95])
    loose = ratio_interval([0.7, 1.2, 0.9, 1.05])
    assert tight["n"] == 4 and tight["low"] < tight["mean"] < tight["high"]
    assert math.isclose(ratio_interval([0.5, 2.0])["mean"], 1.0)  # halving and doubling weigh alike
    assert loose["high"] - loose["low"] > 5 * (tight["high"] - tight["low"])


def test_fewer_than_two_ratios_give_no_interval_and_no_verdict() -> None:
    one = ratio_interval([0.93])
    assert one == {"n": 1, "mean": pytest.approx(0.93), "low": None, "high": None}
    assert judged(one, 0.9, at_least=True) is None
    assert ratio_interval([])["mean"] is None


@pytest.mark.parametrize(
    ("low", "high", "at_least", "verdict"),
    [
        (0.91, 0.97, True, True),  # all of it at least the floor
        (0.80, 0.88, True, False),  # none of it
        (0.86, 0.95, True, None),  # straddles: the middle alone would say met, the interval cannot
        (0.84, 0.91, True, None),  # straddles with its middle below
        (1.02, 1.08, False, True),  # at most a ceiling: all of it under
        (1.12, 1.30, False, False),
        (1.05, 1.15, False, None),
    ],
)
def test_a_goal_is_judged_on_the_whole_interval(low: float, high: float, at_least: bool, verdict: bool | None) -> None:
    goal = 0.90 if at_least else 1.10
    assert judged({"low": low, "high": high}, goal, at_least=at_least) is verdict


def test_every_bench_command_prints_its_help() -> None:
    """Each command's `--help` is what a user reads first (a help text's stray `%` broke two of them)."""
    from bench.cli import COMMANDS, parser

    root = parser()
    for name in COMMANDS:
        with pytest.raises(SystemExit) as shown:
            root.parse_args([name, "--help"])
        assert shown.value.code == 0, name
