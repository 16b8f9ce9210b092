"""`bench-noop`: the smallest agent — N steps of a no-op read-only tool, then an answer. An agents module:
the bench serves it in its own processes, and a worker serves it with `--agents bench.agents`.

`records` (the demo agents' option) is the number of steps. Each step is one model call (a scripted
`FakeModel`) and one `noop` call: what is measured is the engine, never the model or the tool.
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence

from agentic import Agent, Budget, FakeModel, Message, Registry, ToolContext, tool, tool_call
from examples.effects import options_of, tool_results
from examples.options import DemoOptions

NAME = "bench-noop"
_DONE = re.compile(r"^ok (\d+) of (\d+)$")


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
    return f"ok {i} of {options_of(ctx).records}"


def next_move(messages: Sequence[Message]) -> object:
    if StepClock.marks is not None:
        StepClock.marks.append(time.perf_counter())
    results = tool_results(messages)
    done = _DONE.match(results[-1]) if results else None
    if done is None:
        return tool_call("noop", {"i": 1})
    step, steps = (int(g) for g in done.groups())
    if step < steps:
        return tool_call("noop", {"i": step + 1})  # distinct arguments: the repeat guard stays quiet
    return f"Did {steps} no-op steps."


agent = Agent(
    FakeModel.replying(next_move, name="bench-noop-script"),
    Registry([noop]),
    system="Call noop once per step, then answer.",
    budget=Budget(max_steps=100_000),
    name=NAME,
    description="N no-op read-only steps (`--option records=N`), then an answer: the engine's own cost per step.",
    task="Run the no-op steps.",
    options=DemoOptions,
    estimate=lambda options: 2 * options.records + 1,
)

agents = [agent]
