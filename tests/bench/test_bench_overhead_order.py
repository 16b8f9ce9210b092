"""The per-step overhead's schedule and the ratio its goal is judged by.

With a fixed rotation each engine always ran right after the same other engine; on the bench's default
server that alone moved `temporal (default)` from 1.00x to 0.32-0.36x the floor, rep after rep. The order is
drawn afresh for every rep, so no engine keeps a neighbour, and each rep's ratio to the floor is recorded."""

from __future__ import annotations

import itertools

from bench import overhead, report
from bench.overhead import Run, interleaved
from bench.stats import summarize

ENGINES = ("in-process", "baseline", "temporal", "temporal-no-sa", "floor", "floor+sa")


def scripted(calls: list[str], step_of: dict[str, list[float]]) -> dict[str, Run]:
    """Engines whose nth run takes step_of[engine][n] a step, logging the order they ran in."""
    runs: dict[str, Run] = {}
    for engine in step_of:

        async def run(steps: int, engine: str = engine) -> tuple[list[float], float, dict[str, list[float]]]:
            nth = calls.count(engine)
            calls.append(engine)
            step = step_of[engine][nth]
            return [step] * steps, step * steps, {}

        runs[engine] = run
    return runs


async def schedule(reps: int, warmup: int, seed: int = 0) -> tuple[list[str], overhead.Samples]:
    calls: list[str] = []
    step_of = {e: [0.01 * (i + 1) + 0.001 * rep for rep in range(reps + warmup)] for i, e in enumerate(ENGINES)}
    samples = await interleaved(scripted(calls, step_of), 3, reps, warmup, lambda _: None, "test", seed)
    return calls, samples


async def test_every_rep_runs_every_engine_once_and_no_engine_keeps_a_neighbour():
    calls, _ = await schedule(reps=15, warmup=2)
    reps = [calls[i : i + len(ENGINES)] for i in range(0, len(calls), len(ENGINES))]
    assert len(reps) == 17 and all(sorted(rep) == sorted(ENGINES) for rep in reps)
    for engine in ENGINES:
        before = {a for a, b in itertools.pairwise(calls) if b == engine}
        assert len(before) >= 3, f"{engine} ran after only {before}"
    again, _ = await schedule(reps=15, warmup=2)
    other, _ = await schedule(reps=15, warmup=2, seed=1)
    assert again == calls and other != calls  # seeded: a rerun repeats the schedule, another seed does not


async def test_each_reps_median_is_kept_after_the_warm_up():
    _, samples = await schedule(reps=4, warmup=2)
    assert samples.rep_medians["floor"] == [0.05 + 0.001 * rep for rep in range(2, 6)]
    assert len(samples.steps["temporal"]) == 4 * 3


def test_the_goal_is_judged_by_the_median_of_the_reps_ratios_with_the_pooled_ratio_beside_it():
    step = summarize([0.03])
    ours = {"step": step, "run_per_step": step, "x_floor": 1.10, "x_floor_reps": [1.0, 1.04, 1.2], "x_in_process": 10.0}
    floor = {"step": step, "run_per_step": step, "x_floor": 1.0, "x_floor_reps": [1.0, 1.0, 1.0], "x_in_process": 9.0}
    results = {"overhead": {"steps": 20, "reps": 15, "warmup": 2, "engines": {"temporal": ours, "floor": floor}}}
    goal = report.goals(results)[1]
    assert goal["met"] and goal["measured"] == "1.04x (median of the reps' ratios; all steps' medians: 1.10x)"
    results["overhead"]["engines"]["temporal"] = ours | {"x_floor_reps": [1.06, 1.0, 1.1], "x_floor": 1.01}
    assert not report.goals(results)[1]["met"]  # the pooled ratio does not rescue a missed goal
    # A results file from before the reps' ratios were recorded is judged by the pooled ratio.
    old = {key: value for key, value in ours.items() if key != "x_floor_reps"}
    results["overhead"]["engines"]["temporal"] = old
    assert report.goals(results)[1]["measured"] == "1.10x" and not report.goals(results)[1]["met"]
    assert "| temporal | 30.00 | 30.00 | 1.10x | 1.10x | 10.00x | 30.00 |" in report.markdown(results)
