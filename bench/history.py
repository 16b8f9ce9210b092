"""`bench history`: how workflow history grows with model calls — by reference (ours) vs the naive way
(the whole transcript handed to every model call, as public Temporal agent integrations do: bench/naive.py).

    python -m bench history --calls 1000 --message-bytes 1000

Each model call asks for a tool whose output is `--message-bytes` of text, so the transcript grows by
about that much per call. For our workflow it prints every run of the continue-as-new chain (events and
bytes), the totals and the transcript size; for the naive variant the same, stopped early if it hits
Temporal's limits. It draws bytes-vs-calls for both into results/history.png and writes
results/history.json. The last line is the summary for our workflow.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import sys
import tempfile
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, NonNegativeInt
from temporalio.client import Client, WorkflowFailureError
from temporalio.worker import Worker

from agentic import Agent, Budget, FakeModel, Message, Registry, ToolContext, tool, tool_call
from bench.cli import Command, register
from bench.naive import NaiveActivities, NaiveAgentWorkflow, NaiveInput
from duragent._activities.inputs import AgentResult, ContinueAsNewPolicy, EngineOptions
from duragent._client import AgentClient
from duragent._errors import RunFailed
from duragent._stores.transcripts import SqliteTranscriptStore, Transcripts, encode
from duragent._worker import build_worker
from duragent.testing import start_dev_server
from examples.effects import tool_results

WARN_BYTES, WARN_EVENTS = 10 * 1024 * 1024, 10_240
_PAGE = re.compile(r"^page (\d+) of (\d+):")


class ArchiveOptions(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    calls: int = Field(10, ge=2, description="Model calls in the run: one per page, then the answer.")
    page_bytes: NonNegativeInt = Field(1000, description="Bytes of text each page returns.")


@tool(description="Read one page of the archive.", page="Page number.")
def read_page(page: int, ctx: ToolContext) -> str:
    options = ctx.options if isinstance(ctx.options, ArchiveOptions) else ArchiveOptions()
    header = f"page {page} of {options.calls - 1}: "
    line = "lorem ipsum dolor sit amet, consectetur adipiscing elit. "
    return header + (line * (options.page_bytes // len(line) + 1))[: max(0, options.page_bytes - len(header))]


def next_move(messages: Sequence[Message]) -> object:
    """The next page until the last one the tool announced, then the answer. Reads only the start of each
    page, which a claim-checked preview keeps."""
    pages = [m for content in tool_results(messages) if (m := _PAGE.match(content))]
    if not pages:
        return tool_call("read_page", {"page": 1})
    page, last = (int(g) for g in pages[-1].groups())
    return tool_call("read_page", {"page": page + 1}) if page < last else "Read it all."


ARCHIVE = Agent(
    FakeModel.replying(next_move, name="bench-history-script"),
    Registry([read_page]),
    system="Read every page.",
    budget=Budget(max_steps=1_000_000),
    name="bench-history",
    description="N model calls, each adding a large tool output (--calls, --message-bytes).",
    task="Read the archive.",
    options=ArchiveOptions,
    estimate=lambda options: 2 * options.calls - 1,
)


def curve(histories: Sequence[Any]) -> list[tuple[int, int]]:
    """(model calls completed, cumulative history bytes) along a chain of runs."""
    points, total, calls = [(0, 0)], 0, 0
    for history in histories:
        model_activities: set[int] = set()
        for event in history.events:
            total += event.ByteSize()
            scheduled = event.activity_task_scheduled_event_attributes
            completed = event.activity_task_completed_event_attributes
            if (
                event.HasField("activity_task_scheduled_event_attributes")
                and scheduled.activity_type.name == "call_model"
            ):
                model_activities.add(event.event_id)
            elif (
                event.HasField("activity_task_completed_event_attributes")
                and completed.scheduled_event_id in model_activities
            ):
                calls += 1
                points.append((calls, total))
        points.append((calls, total))
    return points


async def chain(client: Client, workflow_id: str) -> list[Any]:
    """Every run of a continue-as-new chain, oldest first."""
    description = await client.get_workflow_handle(workflow_id).describe()
    run_id, histories = description.raw_description.workflow_execution_info.first_run_id, []
    while run_id:
        history = await client.get_workflow_handle(workflow_id, run_id=run_id).fetch_history()
        histories.append(history)
        last = history.events[-1]
        continued = last.HasField("workflow_execution_continued_as_new_event_attributes")
        run_id = last.workflow_execution_continued_as_new_event_attributes.new_execution_run_id if continued else ""
    return histories


async def measure(client: Client, task_queue: str, calls: int, size: int, mode: str) -> dict[str, Any]:
    """One run of ARCHIVE: ours (`mode="reference"`, on `task_queue`) or the naive workflow (on its own queue)."""
    workflow_id = f"history-{mode}-{uuid.uuid4().hex[:8]}"
    options = {"calls": calls, "page_bytes": size}
    started = time.perf_counter()
    failure = None
    result: AgentResult | None = None
    try:
        if mode == "naive":
            naive = NaiveInput(spec=ARCHIVE.spec(options), options=options)
            await client.execute_workflow(
                NaiveAgentWorkflow.run, naive, id=workflow_id, task_queue=f"{task_queue}-naive"
            )
        else:
            run = await AgentClient(client, task_queue=task_queue).start(ARCHIVE, run_id=workflow_id, options=options)
            result = await run.result()
    except (RunFailed, WorkflowFailureError) as exc:
        failure = str(exc)
    histories = await chain(client, workflow_id)
    runs = [{"events": len(h.events), "bytes": sum(e.ByteSize() for e in h.events)} for h in histories]
    return {
        "mode": mode,
        "calls_requested": calls,
        "seconds": round(time.perf_counter() - started, 1),
        "runs": runs,
        "curve": curve(histories),
        "result": result,
        "failure": failure,
    }


def transcript_bytes(result: AgentResult, transcripts: Transcripts) -> int:
    return sum(len(encode(m).encode()) for m in result.transcript_messages(transcripts))


def plot(ours: dict[str, Any], naive: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 5))
    for data, label in ((ours, "by reference + continue-as-new (ours)"), (naive, "whole transcript per call (naive)")):
        xs, ys = zip(*data["curve"], strict=True)
        ax.plot(xs, [y / 1e6 for y in ys], label=label)
    ax.axhline(50, color="red", linestyle=":", label="Temporal's 50 MB limit per run")
    ax.set_xlabel("model calls")
    ax.set_ylabel("workflow history, MB (all runs of the chain)")
    ax.set_title(f"History growth, {ours['bytes_per_output']} bytes of new content per call")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)


async def run(args: argparse.Namespace) -> int:
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    env = await start_dev_server()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            transcripts = Transcripts(SqliteTranscriptStore(Path(tmp) / "transcripts.db"))
            engine = EngineOptions(continue_as_new=ContinueAsNewPolicy(max_history_events=args.continue_as_new_events))
            ours_worker = build_worker(
                env.client, task_queue="history", agents=[ARCHIVE], transcripts=transcripts, engine=engine
            )
            naive_activities = NaiveActivities(ARCHIVE)
            naive_worker = Worker(
                env.client,
                task_queue="history-naive",
                workflows=[NaiveAgentWorkflow],
                activities=[naive_activities.call_model, naive_activities.run_tool],
            )
            async with ours_worker, naive_worker:
                ours = await measure(env.client, "history", args.calls, args.message_bytes, "reference")
                naive = await measure(
                    env.client, "history", min(args.calls, args.naive_calls), args.message_bytes, "naive"
                )
            result = ours["result"]
            if result is None:
                print(f"our workflow failed: {ours['failure']}", file=sys.stderr)
                return 1
            ours["transcript_bytes"] = transcript_bytes(result, transcripts)
    finally:
        await env.shutdown()
    ours["bytes_per_output"] = naive["bytes_per_output"] = args.message_bytes
    report(ours, naive)
    plot(ours, naive, out / "history.png")
    (out / "history.json").write_text(
        json.dumps(
            {k: {kk: vv for kk, vv in v.items() if kk != "result"} for k, v in {"ours": ours, "naive": naive}.items()},
            indent=2,
        )
    )
    runs = ours["runs"]
    total = sum(r["bytes"] for r in runs)
    within = all(r["bytes"] < WARN_BYTES and r["events"] < WARN_EVENTS for r in runs)
    print(f"plot: {out / 'history.png'}; every run under 10 MB and 10,240 events: {within}")
    print(
        f"history: calls={result.step_count} runs={len(runs)} max_run_bytes={max(r['bytes'] for r in runs)} "
        f"max_run_events={max(r['events'] for r in runs)} total_history_bytes={total} "
        f"transcript_bytes={ours['transcript_bytes']} ratio={total / ours['transcript_bytes']:.2f}"
    )
    return 0


def report(ours: dict[str, Any], naive: dict[str, Any]) -> None:
    result = ours["result"]
    tokens = ours["transcript_bytes"] // 4
    print(f"our workflow: {result.step_count} model calls in {ours['seconds']} s, {result.continued} continue-as-new")
    print(f"transcript: {ours['transcript_bytes']:,} bytes (~{tokens:,} tokens)")
    print("| run | events | history bytes |")
    print("|---:|---:|---:|")
    for i, r in enumerate(ours["runs"], 1):
        print(f"| {i} | {r['events']:,} | {r['bytes']:,} |")
    naive_calls, naive_bytes = naive["curve"][-1]
    status = f"stopped: {naive['failure']}" if naive["failure"] else "completed"
    print(f"naive variant: {naive_calls} model calls, {naive_bytes:,} history bytes in one run ({status})")
    ours_at = dict(ours["curve"])
    if naive_calls in ours_at:
        print(
            f"at {naive_calls} calls: ours {ours_at[naive_calls]:,} bytes, naive {naive_bytes:,} bytes "
            f"({naive_bytes / max(ours_at[naive_calls], 1):.1f}x)"
        )


def at_least_two(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 2:
        raise argparse.ArgumentTypeError(f"must be at least 2 (one page, then the answer), got {text}")
    return value


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--calls", type=at_least_two, default=1000, help="model calls in the run (at least 2)")
    parser.add_argument("--message-bytes", type=int, default=1000, help="new content per call, bytes")
    parser.add_argument("--naive-calls", type=int, default=300, help="stop the naive variant after this many")
    parser.add_argument(
        "--continue-as-new-events",
        type=int,
        default=ContinueAsNewPolicy().max_history_events,
        help="continue as new at this many events (Temporal may suggest it sooner)",
    )
    parser.add_argument("--out", default=str(Path("results")))


register(
    Command(
        "history",
        "history growth per model call: transcript by reference vs the whole transcript per call",
        add_arguments,
        lambda args: asyncio.run(run(args)),
    )
)
