"""`run`, `status`, `result`: start an agent run, look at it, wait for it — through `AgentClient`."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from duragent._activities.inputs import AgentResult
from duragent._client import RunHandle
from duragent._config.agent_modules import find, load_agents
from duragent._config.settings import Settings
from duragent._ops.cli.arguments import add_agents_modules, positive_float
from duragent._ops.cli.connection import agent_client
from duragent._ops.cli.output import emit, printable
from duragent._ops.cli.run_options import add_run_arguments, run_request
from duragent._ops.cli.waits import add_timeout, stalled, wait_for_result
from duragent._workflows.inputs import Progress, Timeouts


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """`job run`'s arguments (duragent/_ops/cli/run_options.py), and what only a Temporal run has."""
    add_run_arguments(parser)
    parser.add_argument("--wait", action="store_true", help="wait for the result and print it")
    add_timeout(parser)
    parser.add_argument(
        "--heartbeat-timeout", type=positive_float, default=10.0, help="seconds before a silent tool is retried"
    )
    add_agents_modules(parser)


async def start(args: argparse.Namespace, settings: Settings) -> RunHandle:
    """Validate what can be validated here (the agent exists in the agents modules, its options parse),
    then start the run."""
    request = run_request(args)
    agent = find(load_agents(args.agents), request.agent)
    agent.parse_options(request.options)
    budget = agent.budget.model_copy(update={"max_steps": request.max_steps}) if request.max_steps else None
    client = await agent_client(settings)
    handle = await client.start(
        agent,
        request.task,
        run_id=request.run_id,
        budget=budget,
        options=request.options,
        model=request.model,
        model_settings=request.model_settings,
        approvals=request.approvals,
        timeouts=Timeouts(heartbeat_seconds=args.heartbeat_timeout),
    )
    return handle


def result_summary(result: AgentResult) -> dict[str, Any]:
    return {
        "run_id": result.run_id,
        "agent": result.agent,
        "status": result.status,
        "stop": result.stop.value,
        "stop_detail": result.stop_detail,
        "output": result.output,
        "trajectory": result.trajectory(),
        "blocked_tools": result.blocked_tools(),
        "steps": result.step_count,
        "input_tokens": result.input_tokens,
        "output_tokens": result.output_tokens,
        "cost": result.cost,
        "compensations": [c.model_dump(mode="json") for c in result.compensations],
        "not_compensable": result.not_compensable,
        "audit": [a.model_dump(mode="json") for a in result.audit],
    }


def result_line(summary: dict[str, Any]) -> str:
    """`run: status (stop) — output`; an abandoned run says what was undone instead of `None`."""
    what = summary["output"]
    if what is None:
        what = summary.get("stop_detail") or "no answer"
        undone = [c["tool"] for c in summary.get("compensations", []) if c.get("status") == "compensated"]
        if undone:
            what += f"; undone, newest first: {', '.join(undone)}"
    return printable(f"{summary['run_id']}: {summary['status']} ({summary['stop']}) — {what}", one_line=True)


async def cmd_run(args: argparse.Namespace, settings: Settings) -> int:
    handle = await start(args, settings)
    url = handle.url
    if not args.wait:
        emit(args.json, {"run_id": handle.run_id, "url": url}, f"started {handle.run_id}\n  {url}")
        return 0
    if not args.json:  # said first: Ctrl-C while waiting must not lose the id
        print(
            f"started {handle.run_id}; waiting for its result (Ctrl-C stops waiting, not the run)\n  {url}", flush=True
        )
    else:
        print(f"started {handle.run_id}; waiting for its result", file=sys.stderr, flush=True)
    summary = result_summary(await wait_for_result(handle, args.timeout)) | {"url": url}
    emit(args.json, summary, result_line(summary))
    return 0


async def cmd_result(args: argparse.Namespace, settings: Settings) -> int:
    handle = await (await agent_client(settings)).get(args.run_id)
    summary = result_summary(await wait_for_result(handle, args.timeout))
    emit(args.json, summary, result_line(summary))
    return 0


async def cmd_status(args: argparse.Namespace, settings: Settings) -> int:
    """Live progress from the `progress` query; with no worker to answer it, what the server knows (the
    run's search attributes); and, when the run is not moving, why."""
    handle = await (await agent_client(settings)).get(args.run_id)
    progress = await handle.known_progress()
    why = await stalled(handle) if progress.status not in FINISHED else None
    data = progress.model_dump(mode="json") | {"waiting_for": why}
    emit(args.json, data, status_line(progress) + (f"\n  {why}" if why else ""))
    return 0


FINISHED = ("completed", "abandoned", "compensated", "compensation_failed", "failed", "terminated", "timed_out")


def status_line(progress: Progress) -> str:
    """One line; a run that ended in failure says why instead of a step count it never finished."""
    if progress.error:
        return printable(f"{progress.run_id}: {progress.status} — {progress.error}", one_line=True)
    tokens = (
        f"tokens {progress.input_tokens}+{progress.output_tokens}"
        if progress.worker_answered
        else f"tokens {progress.input_tokens}"
    )
    return printable(
        f"{progress.run_id}: {progress.status}, step {progress.step}, {progress.label}, {tokens}, "
        f"cost ${progress.cost:.6f}",
        one_line=True,
    )
