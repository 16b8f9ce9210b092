"""Per-step overhead: `bench-noop` (fake model, no-op tool) on every engine, interleaved rep by rep so
background load hits all engines alike, reported as ratios to the bare Temporal floor and to in-process.

A step's time is the interval between the starts of two consecutive model calls: in-process and baseline
from `perf_counter` marks taken as the scripted model is called; on Temporal from the history (the
scheduling times of consecutive model activities, server clock). Each run of N steps gives N samples.

With several server profiles (`--server-profile both`) each Temporal engine runs on each profile's server,
named `temporal (tuned)`, `floor (default)`...; its ratio to the floor is to the floor on the same server.
Long runs (200 steps by default, fewer reps) repeat the measurement for in-process, the baseline and, on the
last profile's server, ours and the floor: a step that costs more as the run grows shows there.
"""

from __future__ import annotations

import statistics
import time
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentic.agent_set import AgentSet
from bench import agents as noop
from bench.agents import StepClock
from bench.served import agent_set
from bench.stack import Stack
from bench.stats import intervals, ratio, summarize
from bench.temporal_runs import run_floor, run_ours
from bench.turns import turns
from duragent._baseline import jobs
from duragent._baseline.options import RunOptions
from duragent._baseline.store import Store

LOCAL_ENGINES = ("in-process", "baseline")
# floor+sa: the floor plus our per-step search attribute upsert (bench/floor.py), to price visibility;
# temporal-no-sa: ours started with `search_attributes=False`, the switch that price is for.
TEMPORAL_ENGINES = ("temporal", "temporal-no-sa", "floor", "floor+sa")
LONG_TEMPORAL_ENGINES = ("temporal", "floor")

# steps -> (step times, the whole run's wall time, where a Temporal step's time went: `PHASES` durations)
Run = Callable[[int], Awaitable[tuple[list[float], float, dict[str, list[float]]]]]


@dataclass(frozen=True)
class OverheadConfig:
    steps: int = 20
    reps: int = 15
    warmup: int = 2
    long_steps: int = 200
    long_reps: int = 3  # 0: no long runs


def engine_name(kind: str, profile: str, profiles: Sequence[str]) -> str:
    """`temporal` when the bench runs one server profile; `temporal (tuned)` when it compares several."""
    return kind if len(profiles) == 1 else f"{kind} ({profile})"


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


def runners(stacks: dict[str, Stack], store: Store, agents: AgentSet) -> dict[str, Run]:
    async def in_process(steps: int) -> tuple[list[float], float, dict[str, list[float]]]:
        return *run_in_process(steps), {}

    async def baseline(steps: int) -> tuple[list[float], float, dict[str, list[float]]]:
        return *run_baseline(steps, store, agents), {}

    def temporal(stack: Stack, kind: str) -> Run:
        async def run(steps: int) -> tuple[list[float], float, dict[str, list[float]]]:
            if kind in ("temporal", "temporal-no-sa"):
                done = await run_ours(
                    stack.agents,
                    f"ovh-t-{uuid.uuid4().hex[:10]}",
                    noop.agent,
                    {"records": steps},
                    search_attributes=kind == "temporal",
                )
            else:
                workflow = "BenchFloorWorkflow" if kind == "floor" else "BenchFloorVisibleWorkflow"
                done = await run_floor(
                    stack.client, stack.floor_queue, f"ovh-f-{uuid.uuid4().hex[:10]}", steps, workflow
                )
            return done.step_seconds, done.wall, done.phases

        return run

    profiles = list(stacks)
    found: dict[str, Run] = {"in-process": in_process, "baseline": baseline}
    for profile, stack in stacks.items():
        for kind in TEMPORAL_ENGINES:
            found[engine_name(kind, profile, profiles)] = temporal(stack, kind)
    return found


@dataclass
class Samples:
    steps: dict[str, list[float]]  # engine -> step durations
    per_run: dict[str, list[float]]  # engine -> each run's wall time ÷ its steps
    phases: dict[str, dict[str, list[float]]]  # engine -> phase -> durations (Temporal engines)
    rep_medians: dict[str, list[float]]  # engine -> its median step in each rep, rep by rep


async def interleaved(
    runs: dict[str, Run], steps: int, reps: int, warmup: int, say: Callable[[str], None], what: str, seed: int = 0
) -> Samples:
    """Every engine once per rep, in the order `bench.turns` draws for that rep."""
    engines = list(runs)
    out = Samples(
        steps={e: [] for e in engines},
        per_run={e: [] for e in engines},
        phases={e: {} for e in engines},
        rep_medians={e: [] for e in engines},
    )
    for rep, order in turns(engines, warmup + reps, seed):
        for engine in order:
            step_times, wall, phases = await runs[engine](steps)
            if len(step_times) != steps:
                raise RuntimeError(f"{engine}: expected {steps} step timings, got {len(step_times)}")
            if rep >= warmup:
                out.steps[engine] += step_times
                out.rep_medians[engine].append(statistics.median(step_times))
                out.per_run[engine].append(wall / steps)
                for phase, durations in phases.items():
                    out.phases[engine].setdefault(phase, []).extend(durations)
        if rep >= warmup:
            say(f"  overhead {what} rep {rep - warmup + 1}/{reps}")
    return out


async def measure(
    stacks: dict[str, Stack], workdir: Path, config: OverheadConfig, say: Callable[[str], None]
) -> dict[str, Any]:
    agents = agent_set(workdir / "overhead-ledger.db")
    store = Store(workdir / "overhead-baseline.db")
    profiles = list(stacks)
    primary = profiles[-1]
    try:
        runs = runners(stacks, store, agents)
        short = await interleaved(runs, config.steps, config.reps, config.warmup, say, f"{config.steps}-step")
        long: Samples | None = None
        if config.long_reps:
            long_engines = [*LOCAL_ENGINES, *(engine_name(k, primary, profiles) for k in LONG_TEMPORAL_ENGINES)]
            long = await interleaved(
                {e: runs[e] for e in long_engines},
                config.long_steps,
                config.long_reps,
                0,
                say,
                f"{config.long_steps}-step",
            )
    finally:
        store.close()

    profile_of = {engine_name(kind, p, profiles): p for p in profiles for kind in TEMPORAL_ENGINES}
    medians = {engine: summarize(values)["median"] for engine, values in short.steps.items()}
    in_process = medians["in-process"]
    result: dict[str, Any] = {
        "steps": config.steps,
        "reps": config.reps,
        "warmup": config.warmup,
        "profiles": profiles,
        "primary": primary,
        "engines": {},
    }
    for engine in runs:
        profile = profile_of.get(engine)
        floor_engine = engine_name("floor", profile or primary, profiles)
        floor = medians[floor_engine]
        # Rep by rep, each engine's median step ÷ the floor's in the same rep (run minutes apart at most, so
        # a drift in the machine's speed cancels); their median is the ratio the goal is judged by
        # (`bench.report.step_x_floor`).
        by_rep = [ratio(a, b) for a, b in zip(short.rep_medians[engine], short.rep_medians[floor_engine], strict=True)]
        result["engines"][engine] = {
            "profile": profile,
            "step": summarize(short.steps[engine]),
            "run_per_step": summarize(short.per_run[engine]),
            "phases": {phase: summarize(durations) for phase, durations in short.phases[engine].items()},
            "x_floor": ratio(medians[engine], floor),
            "x_floor_reps": by_rep,
            "x_in_process": ratio(medians[engine], in_process),
        }
    if long is not None:
        result["long"] = {
            "steps": config.long_steps,
            "reps": config.long_reps,
            "engines": {
                engine: {
                    "step": summarize(values),
                    "x_short": ratio(summarize(values)["median"], medians[engine]),
                }
                for engine, values in long.steps.items()
            },
        }
    return result
