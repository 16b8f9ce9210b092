"""`run`, `status`, `result`: start an agent run, look at it, wait for it — through `AgentClient`."""

from __future__ import annotations

import argparse
from typing import Any

from ops.agent_modules import find, load_agents, module_names
from ops.cli.connection import agent_client
from ops.cli.output import CliError, emit, printable
from ops.cli.run_options import add_run_option_arguments, positive_float, run_request
from ops.settings import Settings
from workflows.client import RunHandle
from workflows.inputs import AgentResult, Progress, Timeouts


def add_run_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "agent", help="the agent to run, by name (the demo agents: billing, courier, migration, refund, trip)"
    )
    parser.add_argument("--id", dest="run_id", help="the run id (the workflow id); generated when omitted")
    parser.add_argument("--wait", action="store_true", help="wait for the result and print it")
    add_run_option_arguments(parser)
    parser.add_argument(
        "--heartbeat-timeout", type=positive_float, default=10.0, help="seconds before a silent tool is retried"
    )
    parser.add_argument("--agents", action="append", metavar="MODULE", help="agents module(s) to find the agent in")


async def start(args: argparse.Namespace, settings: Settings) -> RunHandle:
    """Validate what can be validated here (the agent exists in the agents modules, its options parse),
    then start the run."""
    request = run_request(args)
    agent = find(load_agents(module_names(args.agents)), args.agent)
    agent.parse_options(request.options)
    budget = agent.budget.model_copy(update={"max_steps": request.max_steps}) if request.max_steps else None
    client = await agent_client(settings)
    handle = await client.start(
        agent,
        request.task,
        run_id=args.run_id,
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
    return printable(f"{summary['run_id']}: {summary['status']} ({summary['stop']}) — {what}")


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
    summary = result_summary(await handle.result()) | {"url": url}
    emit(args.json, summary, result_line(summary))
    return 0


async def cmd_result(args: argparse.Namespace, settings: Settings) -> int:
    handle = await (await agent_client(settings)).get(args.run_id)
    summary = result_summary(await handle.result())
    emit(args.json, summary, result_line(summary))
    return 0


async def cmd_status(args: argparse.Namespace, settings: Settings) -> int:
    handle = await (await agent_client(settings)).get(args.run_id)
    progress = await handle.progress()
    emit(args.json, progress.model_dump(mode="json"), status_line(progress))
    return 0


def status_line(progress: Progress) -> str:
    if progress.error:
        return printable(f"{progress.run_id}: {progress.status} — {progress.error}")
    return printable(
        f"{progress.run_id}: {progress.status}, step {progress.step}, {progress.label}, "
        f"tokens {progress.input_tokens}+{progress.output_tokens}, cost ${progress.cost:.6f}"
    )


def require_run_id(value: str) -> str:
    if not value.strip():
        raise CliError("a run id cannot be empty", code=2)
    return value
