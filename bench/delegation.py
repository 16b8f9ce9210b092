"""`bench delegation`: what a delegation costs next to an inline tool call, on a real dev server with our
worker in its own process (the bench's stack, bench/stack.py).

    python -m bench delegation --reps 20

Two agents of one step each, run one after another: `bench-inline` calls a no-op tool; `bench-delegating`
calls `bench-child` (an agent that answers at once) through `Agent.as_tool`, which on Temporal is a child
workflow. From the histories (server timestamps), for each call: from the call (the tool's activity
scheduled; the child's start requested) to its result recorded in the parent, and to the parent's next
model call; for the delegation also the start request → the child's first model call (its
start-to-first-step latency). History bytes and events are the call's own — from its first event to its
completion event in the parent — plus, for a delegation, the child's whole history. Writes
results/delegation.json and results/delegation.md; the last line is the summary.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from temporalio.api.history.v1 import HistoryEvent

from bench.cli import Command, register
from bench.delegation_agents import DELEGATING, INLINE
from bench.stack import temporal_stack
from bench.stats import summarize
from bench.temporal_runs import event_seconds
from duragent._client import AgentClient
from duragent._ops.cli.run_options import positive_int


def _first(events: Sequence[HistoryEvent], field: str, after: int = 0) -> HistoryEvent:
    return next(e for e in events if e.event_id > after and e.HasField(field))


def _segment(events: Sequence[HistoryEvent], first: HistoryEvent, last: HistoryEvent) -> list[HistoryEvent]:
    return [e for e in events if first.event_id <= e.event_id <= last.event_id]


def _size(events: Sequence[HistoryEvent]) -> int:
    return sum(e.ByteSize() for e in events)


def _model_call_after(events: Sequence[HistoryEvent], after: int) -> HistoryEvent:
    return next(
        e
        for e in events
        if e.event_id > after
        and e.HasField("activity_task_scheduled_event_attributes")
        and e.activity_task_scheduled_event_attributes.activity_type.name == "call_model"
    )


def _timings(events: Sequence[HistoryEvent], issued: HistoryEvent, done: HistoryEvent) -> dict[str, float]:
    return {
        "call_ms": (event_seconds(done) - event_seconds(issued)) * 1000,
        "next_step_ms": (event_seconds(_model_call_after(events, done.event_id)) - event_seconds(issued)) * 1000,
    }


def inline_call(events: Sequence[HistoryEvent]) -> dict[str, float]:
    """The tool call's activity, from its scheduling to its completion, and its events."""
    scheduled = next(
        e
        for e in events
        if e.HasField("activity_task_scheduled_event_attributes")
        and e.activity_task_scheduled_event_attributes.activity_type.name == "run_tool"
    )
    completed = _first(events, "activity_task_completed_event_attributes", scheduled.event_id)
    segment = _segment(events, scheduled, completed)
    return _timings(events, scheduled, completed) | {"bytes": _size(segment), "events": len(segment)}


def delegation_call(parent: Sequence[HistoryEvent], child: Sequence[HistoryEvent]) -> dict[str, float]:
    """The child workflow, from the parent's start request to its completion as the parent records it, and
    to the child's first model call (its start-to-first-step latency); the parent's events for it plus the
    child's whole history."""
    initiated = _first(parent, "start_child_workflow_execution_initiated_event_attributes")
    completed = _first(parent, "child_workflow_execution_completed_event_attributes", initiated.event_id)
    first_step = _model_call_after(child, 0)
    segment = _segment(parent, initiated, completed)
    return _timings(parent, initiated, completed) | {
        "first_step_ms": (event_seconds(first_step) - event_seconds(initiated)) * 1000,
        "bytes": _size(segment) + _size(child),
        "events": len(segment) + len(child),
    }


async def measure(agents: AgentClient, reps: int, warmup: int) -> dict[str, Any]:
    samples: dict[str, list[dict[str, float]]] = {"inline": [], "delegation": []}
    for rep in range(warmup + reps):
        stamp = uuid.uuid4().hex[:8]
        inline = await agents.start(INLINE, run_id=f"inline-{stamp}")
        await inline.result()
        delegating = await agents.start(DELEGATING, run_id=f"delegating-{stamp}")
        await delegating.result()
        if rep < warmup:
            continue
        samples["inline"].append(inline_call((await inline.workflow.fetch_history()).events))
        parent = (await delegating.workflow.fetch_history()).events
        child = (await agents.handle(f"delegating-{stamp}~1.1").workflow.fetch_history()).events
        samples["delegation"].append(delegation_call(parent, child))
    return {
        kind: {metric: summarize([s[metric] for s in rows]) for metric in rows[0]} for kind, rows in samples.items()
    }


ROWS = (
    ("first_step_ms", "the child's start request → its first model call (ms)"),
    ("call_ms", "the call → its result recorded in the parent (ms)"),
    ("next_step_ms", "the call → the parent's next model call (ms)"),
    ("bytes", "history bytes of the call (a delegation: + the child's whole history)"),
    ("events", "history events of the call (a delegation: + the child's)"),
)


def markdown(results: dict[str, Any], command: str) -> str:
    inline, delegated = results["inline"], results["delegation"]

    def cell(row: dict[str, Any], metric: str) -> str:
        if metric not in row:
            return "—"
        stats = row[metric]
        if metric.endswith("_ms"):
            return f"{stats['median']:.1f} / {stats['p99']:.1f}"
        return f"{stats['median']:,.0f}"

    lines = [
        f"`{command}`: {results['reps']} runs of each (dev server, our worker in its own process); times median / p99,"
        " from the server's event timestamps",
        "",
        "| | inline tool call | delegation (child workflow) | delegation ÷ inline |",
        "|---|---:|---:|---:|",
    ]
    for metric, label in ROWS:
        ratio = f"{delegated[metric]['median'] / inline[metric]['median']:.1f}x" if metric in inline else ""
        lines.append(f"| {label} | {cell(inline, metric)} | {cell(delegated, metric)} | {ratio} |")
    return "\n".join(lines)


async def run(args: argparse.Namespace) -> int:
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="bench-delegation-") as scratch:
        # The bench's dev server and our worker in its own process, serving bench/delegation_agents.py.
        async with temporal_stack(Path(scratch), floor=False) as stack:
            results = await measure(stack.agents, args.reps, args.warmup)
    results["reps"] = args.reps
    command = "python -m bench delegation " + " ".join(sys.argv[2:])
    text = markdown(results, command.strip())
    (out / "delegation.json").write_text(json.dumps(results | {"command": command.strip()}, indent=2))
    (out / "delegation.md").write_text(text + "\n")
    print(text)
    inline, delegated = results["inline"], results["delegation"]
    print(
        f"delegation: first_step_ms={delegated['first_step_ms']['median']:.1f} "
        f"next_step_ms={delegated['next_step_ms']['median']:.1f} bytes={delegated['bytes']['median']:.0f} "
        f"inline: next_step_ms={inline['next_step_ms']['median']:.1f} bytes={inline['bytes']['median']:.0f}"
    )
    return 0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--reps", type=positive_int, default=20, help="runs of each agent measured")
    parser.add_argument("--warmup", type=int, default=2, help="runs of each first, not measured")
    parser.add_argument("--out", default=str(Path("results")))


register(
    Command(
        "delegation",
        "a delegation (child workflow) vs an inline tool call: start-to-first-step latency and history bytes",
        add_arguments,
        lambda args: asyncio.run(run(args)),
    )
)
