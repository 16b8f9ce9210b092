"""The bare Temporal floor: the least a Temporal workflow can do per agent step — two no-op activities
(standing for our model activity and our tool activity), no state, no search attributes, no memo.

    python -m bench.floor_worker      # a worker for it: TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, TEMPORAL_TASK_QUEUE

A run of N steps executes 2N+1 activities, exactly as many as `AgentWorkflow` running `bench-noop` with
N steps (N model calls that ask for a tool, N tool calls, and the final model call that answers).
`BenchTimerWorkflow` times short durable sleeps, for `bench knobs` (how late the server fires a timer).
This module holds only the workflows and their activities (the workflow sandbox re-imports it).
"""

from __future__ import annotations

from datetime import timedelta

from temporalio import activity, workflow
from temporalio.common import SearchAttributeKey

FLOOR_MODEL = "bench_floor_model"
FLOOR_TOOL = "bench_floor_tool"
TIMEOUT = timedelta(seconds=60)
HEARTBEAT = timedelta(seconds=10)  # ours' default (duragent/_workflows/inputs.py, `Timeouts`)
# Two of our search attributes (the dev server registers them), defined here: the sandbox re-imports
# this module, which must stay free of the project's imports.
STATUS = SearchAttributeKey.for_keyword("AgentStatus")
STEP = SearchAttributeKey.for_int("AgentStep")
# The payload bytes ours carries beyond the floor's, per event, measured on `bench-noop` histories (2 steps,
# `search_attributes=False`; `python -m bench throughput` prints them by event type): the start input +380
# bytes, the recorded agent spec (a local-activity marker) about 1 KB, each activity's input +370 and result
# +245, the workflow's result +480 — 8.6 KB a run against the floor's 3.6 (since the worker's engine options
# left the run input: 9.1 KB before). `BenchFloorPayloadWorkflow` carries the same, so its cost over the floor
# is the price of the bytes alone (the price list, docs/benchmarks.md).
START_PAD = 332
SPEC_PAD = 655
INPUT_PAD = 340
RESULT_PAD = 245
OUTPUT_PAD = 484


@activity.defn(name=FLOOR_MODEL)
async def floor_model(step: int) -> int:
    return step


@activity.defn(name=FLOOR_TOOL)
async def floor_tool(step: int) -> int:
    return step


@activity.defn(name="bench_floor_padded_model")
async def floor_padded_model(step: int, pad: str) -> str:
    return "r" * RESULT_PAD


@activity.defn(name="bench_floor_padded_tool")
async def floor_padded_tool(step: int, pad: str) -> str:
    return "r" * RESULT_PAD


@activity.defn(name="bench_floor_spec")
async def floor_spec() -> str:
    return "s" * SPEC_PAD


@workflow.defn(name="BenchFloorWorkflow")
class FloorWorkflow:
    @workflow.run
    async def run(self, steps: int) -> int:
        for step in range(steps):
            await workflow.execute_activity(floor_model, step, start_to_close_timeout=TIMEOUT)
            await workflow.execute_activity(floor_tool, step, start_to_close_timeout=TIMEOUT)
        await workflow.execute_activity(floor_model, steps, start_to_close_timeout=TIMEOUT)
        return steps


@workflow.defn(name="BenchFloorHeartbeatWorkflow")
class FloorHeartbeatWorkflow:
    """The floor with ours' heartbeat timeout on each activity (`Timeouts.heartbeat_seconds`). The server keeps
    one timeout timer per started activity, for its earliest timeout: 10 s for ours, the floor's 60 s
    start-to-close otherwise, so ours' fire inside a 1,000-run batch's measured window (about 40 s, settled
    10-25 s later) and the bare floor's mostly after it. This floor's fire when ours do: measured beside the bare
    one, it cost the server 1.03x (90 % interval 0.98-1.08x, 6 pairs; docs/benchmarks.md), not ours' extra."""

    @workflow.run
    async def run(self, steps: int) -> int:
        timeouts = {"start_to_close_timeout": TIMEOUT, "heartbeat_timeout": HEARTBEAT}
        for step in range(steps):
            await workflow.execute_activity(floor_model, step, **timeouts)
            await workflow.execute_activity(floor_tool, step, **timeouts)
        await workflow.execute_activity(floor_model, steps, **timeouts)
        return steps


@workflow.defn(name="BenchFloorVisibleWorkflow")
class FloorVisibleWorkflow:
    """The floor plus what `AgentWorkflow` publishes per step that the floor does not: a search attribute
    upsert (the step number; one history event and one visibility write each) and the current details.
    The difference to the floor is the cost of visibility; the rest of ours is the agent's own work."""

    @workflow.run
    async def run(self, steps: int) -> int:
        workflow.upsert_search_attributes([STATUS.value_set("running"), STEP.value_set(0)])
        for step in range(steps):
            workflow.set_current_details(f"step {step}")
            await workflow.execute_activity(floor_model, step, start_to_close_timeout=TIMEOUT)
            workflow.upsert_search_attributes([STEP.value_set(step + 1)])
            await workflow.execute_activity(floor_tool, step, start_to_close_timeout=TIMEOUT)
        await workflow.execute_activity(floor_model, steps, start_to_close_timeout=TIMEOUT)
        workflow.upsert_search_attributes([STATUS.value_set("completed")])
        return steps


@workflow.defn(name="BenchFloorPayloadWorkflow")
class FloorPayloadWorkflow:
    """The floor carrying ours' payload bytes (the module's *_PAD sizes): a larger start input, a recorded
    local-activity result at the start (ours records the agent's spec so), every activity's input and result
    padded, a larger result. No state, no search attributes: the difference to the floor is the price of the
    bytes (server: history and persistence; worker: conversion), and ours minus this is our code's."""

    @workflow.run
    async def run(self, steps: int, pad: str) -> str:
        await workflow.execute_local_activity(floor_spec, start_to_close_timeout=TIMEOUT)
        padding = "i" * INPUT_PAD
        for step in range(steps):
            await workflow.execute_activity(floor_padded_model, args=[step, padding], start_to_close_timeout=TIMEOUT)
            await workflow.execute_activity(floor_padded_tool, args=[step, padding], start_to_close_timeout=TIMEOUT)
        await workflow.execute_activity(floor_padded_model, args=[steps, padding], start_to_close_timeout=TIMEOUT)
        return "o" * OUTPUT_PAD


@workflow.defn(name="BenchTimerWorkflow")
class TimerWorkflow:
    """`sleeps` durable sleeps of `millis` ms each; returns how late each timer fired, in seconds. Workflow time
    is the start of the workflow task that runs the code, so the lateness is the server's timer firing plus
    the dispatch of the workflow task the timer wakes."""

    @workflow.run
    async def run(self, sleeps: int, millis: int = 100) -> list[float]:
        late = []
        for _ in range(sleeps):
            before = workflow.time()
            await workflow.sleep(timedelta(milliseconds=millis))
            late.append(workflow.time() - before - millis / 1000)
        return late
