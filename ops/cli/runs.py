"""`run`, `status`, `result`: start an agent run, look at it, wait for it."""

from __future__ import annotations

import argparse
import uuid
from datetime import timedelta
from typing import Any

from temporalio.client import Client, WorkflowExecutionStatus, WorkflowFailureError, WorkflowHandle
from temporalio.common import WorkflowIDReusePolicy
from temporalio.exceptions import WorkflowAlreadyStartedError
from temporalio.service import RPCError

from ops.cli.connection import connect_or_fail, existing_run
from ops.cli.output import CliError, emit
from ops.settings import Settings
from scenarios import SCENARIOS, UnknownScenarioError, get_scenario
from scenarios.run_options import add_run_option_arguments, approval_policy, scenario_options
from workflows import search_attributes
from workflows.agent import AgentWorkflow
from workflows.inputs import AgentInput, AgentResult, ModelChoice, Timeouts


def add_run_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("scenario", help=f"one of: {', '.join(sorted(SCENARIOS))}")
    parser.add_argument("--id", dest="run_id", help="the run id (the workflow id); generated when omitted")
    parser.add_argument("--wait", action="store_true", help="wait for the result and print it")
    add_run_option_arguments(parser)
    parser.add_argument("--model", help="an OpenAI-compatible model name instead of the scripted model")
    parser.add_argument("--base-url", help="the OpenAI-compatible server (default: api.openai.com)")
    parser.add_argument("--heartbeat-timeout", type=float, default=10.0, help="seconds before a silent tool is retried")


def agent_input(args: argparse.Namespace) -> AgentInput:
    try:
        scenario = get_scenario(args.scenario)
    except UnknownScenarioError as exc:
        raise CliError(str(exc), code=2) from None
    try:
        return AgentInput(
            scenario=scenario.name,
            task=args.task,
            budget=scenario.budget.model_copy(update={"max_steps": args.max_steps}) if args.max_steps else None,
            options=scenario_options(args),
            model=ModelChoice(kind="openai", name=args.model, base_url=args.base_url) if args.model else ModelChoice(),
            timeouts=Timeouts(heartbeat_seconds=args.heartbeat_timeout),
            approvals=approval_policy(args),
        )
    except ValueError as exc:
        raise CliError(f"invalid run options: {exc}", code=2) from None


async def start_run(
    client: Client, settings: Settings, input: AgentInput, run_id: str | None = None
) -> WorkflowHandle[Any, AgentResult]:
    run_id = run_id or f"{input.scenario}-{uuid.uuid4().hex[:8]}"
    scenario = get_scenario(input.scenario)
    try:
        return await client.start_workflow(
            AgentWorkflow.run,
            input,
            id=run_id,
            task_queue=settings.task_queue,
            # A run id is forever: reusing one would make new tool calls collide with old idempotency keys.
            id_reuse_policy=WorkflowIDReusePolicy.REJECT_DUPLICATE,
            static_summary=f"{scenario.name}: {input.task or scenario.task}",
            static_details=f"scenario **{scenario.name}** — {scenario.description}",
        )
    except WorkflowAlreadyStartedError:
        raise CliError(f"a run with id {run_id!r} already exists; run ids are never reused") from None


def result_summary(result: AgentResult) -> dict[str, Any]:
    return {
        "run_id": result.run_id,
        "scenario": result.scenario,
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


async def wait_result(handle: WorkflowHandle[Any, AgentResult]) -> AgentResult:
    try:
        return await handle.result()
    except WorkflowFailureError as exc:
        cause = exc.cause
        while getattr(cause, "cause", None) is not None:
            cause = cause.cause  # type: ignore[union-attr]
        raise CliError(f"run {handle.id} failed: {cause or exc}") from None


async def cmd_run(args: argparse.Namespace, settings: Settings) -> int:
    input = agent_input(args)
    client = await connect_or_fail(settings)
    handle = await start_run(client, settings, input, args.run_id)
    url = settings.run_url(handle.id)
    if not args.wait:
        emit(args.json, {"run_id": handle.id, "url": url}, f"started {handle.id}\n  {url}")
        return 0
    summary = result_summary(await wait_result(handle)) | {"url": url}
    emit(args.json, summary, f"{handle.id}: {summary['stop']} — {summary['output']}\n  {url}")
    return 0


async def cmd_result(args: argparse.Namespace, settings: Settings) -> int:
    client = await connect_or_fail(settings)
    handle = await existing_run(client, args.run_id)
    summary = result_summary(await wait_result(handle))
    emit(args.json, summary, f"{summary['run_id']}: {summary['status']} ({summary['stop']}) — {summary['output']}")
    return 0


async def cmd_status(args: argparse.Namespace, settings: Settings) -> int:
    client = await connect_or_fail(settings)
    handle = await existing_run(client, args.run_id)
    status = await run_status(handle)
    emit(
        args.json,
        status,
        f"{status['run_id']}: {status['status']}, step {status['step']}, {status['label']}, "
        f"tokens {status['input_tokens']}+{status['output_tokens']}, cost ${status['cost']:.6f}",
    )
    return 0


async def run_status(handle: WorkflowHandle[Any, AgentResult]) -> dict[str, Any]:
    description = await handle.describe()
    if description.status == WorkflowExecutionStatus.RUNNING:
        try:
            progress = await handle.query(AgentWorkflow.progress, rpc_timeout=timedelta(seconds=5))
        except RPCError as exc:
            raise CliError(f"run {handle.id} is running but no worker answered its query: {exc.message}") from None
        return progress.model_dump(mode="json")
    if description.status == WorkflowExecutionStatus.COMPLETED:
        result = await wait_result(handle)
        summary = result_summary(result)
        return summary | {"step": result.step_count, "label": f"finished: {result.stop.value}"}
    ended = description.status.name.lower() if description.status else "unknown"
    # A run that failed on purpose (e.g. compensation_failed) says so in its search attributes.
    agent_status = description.typed_search_attributes.get(search_attributes.AGENT_STATUS)
    return {
        "run_id": handle.id,
        "status": agent_status if agent_status == "compensation_failed" else ended,
        "temporal_status": ended,
        "step": None,
        "label": f"ended: {ended}",
        "stop": None,
        "trajectory": [],
        "input_tokens": 0,
        "output_tokens": 0,
        "cost": 0.0,
    }
