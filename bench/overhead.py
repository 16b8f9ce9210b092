"""Per-step overhead: `bench-noop` (fake model, no-op tool) on every engine, interleaved rep by rep so
background load hits all engines alike, reported as ratios to the bare Temporal floor and to in-process.

A step's time is the interval between the starts of two consecutive model calls: in-process and baseline
from `perf_counter` marks taken as the scripted model is called; on Temporal from the history (the
scheduling times of consecutive model activities, server clock). Each run of N steps gives N samples.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentic.agent_set import AgentSet
from baseline import jobs
from baseline.options import RunOptions
from baseline.store import Store
from bench import agents as noop
from bench.agents import StepClock
from bench.served import agent_set
from bench.stack import Stack
from bench.stats import intervals, ratio, summarize
from bench.temporal_runs import run_floor, run_ours

# floor+sa: the floor plus our per-step search attribute upsert (bench/floor.py), to price visibility.
ENGINES = ("in-process", "baseline", "temporal", "floor", "floor+sa")


@dataclass(frozen=True)
class OverheadConfig:
    steps: int = 20
    reps: int = 15
    warmup: int = 2


def run_in_process(steps: int) -> tuple[list[float], float]:
    """The very `Agent` the workers serve, run by its in-process runner."""
    marks = StepClock.record()
    started = time.perf_counter()
    try:
        run = noop.agent.run(options={"records": steps}, run_id=f"inproc-{uuid.uuid4().hex[:8]}")
    finally:
        StepClock.stop()
    wall = time.perf_counter() - started
    assert run.output == f"Did {steps} no-op steps.", run.output
    return intervals(marks), wall


def run_baseline(steps: int, store: Store, agents: AgentSet) -> tuple[list[float], float]:
    options = RunOptions(options={"records": steps})
    marks = StepClock.record()
    started = time.perf_counter()
    try:
        row = jobs.start(store, agents, f"ovh-{uuid.uuid4().hex[:10]}", noop.NAME, options)
    finally:
        StepClock.stop()
    wall = time.perf_counter() - started
    assert row.status == "completed", row
    return intervals(marks), wall


async def measure(stack: Stack, workdir: Path, config: OverheadConfig, say: Callable[[str], None]) -> dict[str, Any]:
    agents = agent_set(workdir / "overhead-ledger.db")
    store = Store(workdir / "overhead-baseline.db")
    samples: dict[str, list[float]] = {e: [] for e in ENGINES}
    per_run: dict[str, list[float]] = {e: [] for e in ENGINES}
    steps = config.steps
    try:
        for rep in range(config.warmup + config.reps):
            shift = rep % len(ENGINES)
            for engine in ENGINES[shift:] + ENGINES[:shift]:
                if engine == "in-process":
                    step_times, wall = run_in_process(steps)
                elif engine == "baseline":
                    step_times, wall = run_baseline(steps, store, agents)
                elif engine == "temporal":
                    run = await run_ours(stack.agents, f"ovh-t-{uuid.uuid4().hex[:10]}", noop.agent, {"records": steps})
                    step_times, wall = run.step_seconds, run.wall
                else:
                    workflow = "BenchFloorWorkflow" if engine == "floor" else "BenchFloorVisibleWorkflow"
                    run = await run_floor(
                        stack.client, stack.floor_queue, f"ovh-f-{uuid.uuid4().hex[:10]}", steps, workflow
                    )
                    step_times, wall = run.step_seconds, run.wall
                if len(step_times) != steps:
                    raise RuntimeError(f"{engine}: expected {steps} step timings, got {len(step_times)}")
                if rep >= config.warmup:
                    samples[engine] += step_times
                    per_run[engine].append(wall / steps)
            if rep >= config.warmup:
                say(f"  overhead rep {rep - config.warmup + 1}/{config.reps}")
    finally:
        store.close()
    result: dict[str, Any] = {"steps": steps, "reps": config.reps, "warmup": config.warmup, "engines": {}}
    floor = summarize(samples["floor"])["median"]
    in_process = summarize(samples["in-process"])["median"]
    for engine in ENGINES:
        step = summarize(samples[engine])
        result["engines"][engine] = {
            "step": step,
            "run_per_step": summarize(per_run[engine]),
            "x_floor": ratio(step["median"], floor),
            "x_in_process": ratio(step["median"], in_process),
        }
    return result
