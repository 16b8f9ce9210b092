"""`bench-noop`: the smallest agent — N steps of a no-op read-only tool, then an answer.

Importing this module registers the scenario (idempotently) — in the bench process, and in a worker
started with `AGENT_EXTRA_SCENARIOS=bench.scenarios`. `ScenarioOptions.records` is the number of steps.
Each step is one model call (the scripted `FakeModel`) and one `noop` call: what is measured is the
engine, never the model or the tool.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from agentic import Budget, FakeModel, Message, Registry, ToolContext, tool, tool_call
from scenarios import SCENARIOS, Scenario, ScenarioOptions, register_scenario
from scenarios.effects import tool_results

NAME = "bench-noop"


class StepClock:
    """Where in-process runners note when each model call (= each step) starts. None: not recording
    (the worker process never records; Temporal steps are timed from the workflow history)."""

    marks: list[float] | None = None

    @classmethod
    def record(cls) -> list[float]:
        cls.marks = []
        return cls.marks

    @classmethod
    def stop(cls) -> None:
        cls.marks = None


@tool(description="Do nothing; read-only.", i="The step number.")
def noop(i: int, ctx: ToolContext) -> str:
    return f"ok {i}"


def script(options: ScenarioOptions) -> FakeModel:
    steps = options.records

    def next_move(messages: Sequence[Message]) -> object:
        if StepClock.marks is not None:
            StepClock.marks.append(time.perf_counter())
        done = len(tool_results(messages))
        if done < steps:
            return tool_call("noop", {"i": done + 1})  # distinct arguments: the repeat guard stays quiet
        return f"Did {steps} no-op steps."

    return FakeModel([next_move] * (steps + 1), name="bench-noop-script")


SCENARIO = Scenario(
    name=NAME,
    description="N no-op read-only steps (--records N), then an answer: the engine's own cost per step.",
    system="Call noop once per step, then answer.",
    task="Run the no-op steps.",
    registry=Registry([noop]),
    script=script,
    budget=Budget(max_steps=100_000),
)

if SCENARIOS.get(NAME) is not SCENARIO:
    register_scenario(SCENARIO, replace=True)
