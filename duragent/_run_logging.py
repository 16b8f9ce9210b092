"""`LoggingInterceptor`: a log line at each run's start and end, and at each model call's, tool call's and
compensation's start and end — with the run's step, the model, the tool and the idempotency key, read from the
workflow's and activities' own input and result types. Never arguments, results or error messages: they are
what the payload codec encrypts (duragent/_config/observability.py: how the lines are written, and `RedactFailures`).

`DurableAgentsPlugin` installs it on every worker of a client connected with it; `build_worker` on a worker
whose client has no plugin.
"""

from __future__ import annotations

import time
from typing import Any

from temporalio import activity, workflow
from temporalio.worker import (
    ActivityInboundInterceptor,
    ExecuteActivityInput,
    ExecuteWorkflowInput,
    Interceptor,
    WorkflowInboundInterceptor,
    WorkflowInterceptorClassInput,
)

from agentic import ToolResult
from agentic.loop import step_of
from duragent._activities.inputs import (
    AgentResult,
    CompensationInput,
    ModelCallInput,
    ModelStep,
    ToolCallInput,
    ToolStep,
)
from duragent._sealed_results import Sealed
from duragent._workflows.inputs import AgentInput

AGENTS_OWN = "(the agent's own)"  # the `model` of a call whose run named none: the agent's own model answers


def _describe(activity_type: str, input: object) -> tuple[str, dict[str, Any]]:
    """What to say about an activity's input: identities only, never arguments or transcripts."""
    if isinstance(input, ModelCallInput):
        return "model call", {"step": input.step, "call_index": input.call_index, "model": input.model or AGENTS_OWN}
    if isinstance(input, ToolCallInput):
        call = input.call
        fields = {"step": step_of(call.identity), "tool": call.name, "call_id": call.identity}
        return "tool call", fields | {"key": input.idempotency_key}
    if isinstance(input, CompensationInput):
        step = input.step
        return "compensation", {"tool": step.call.name, "key": step.key, "compensates": step.original_key}
    return activity_type, {}


def _outcome(result: object) -> dict[str, Any]:
    if isinstance(result, Sealed):  # with worker keys: what the sealed payload encodes
        result = result.value
    if isinstance(result, ModelStep):
        return {"input_tokens": result.reply.input_tokens, "output_tokens": result.reply.output_tokens}
    if isinstance(result, ToolStep):
        return {"status": result.result.status.value}
    if isinstance(result, ToolResult):  # a compensation's
        return {"status": result.status.value}
    if isinstance(result, AgentResult):  # an attached delegated run's
        return {"status": result.status}
    return {}


def _error_fields(exc: BaseException) -> dict[str, Any]:
    return {"error": type(exc).__name__, "error_type": getattr(exc, "type", None)}


class _ActivityLogger(ActivityInboundInterceptor):
    async def execute_activity(self, input: ExecuteActivityInput) -> Any:
        what, fields = _describe(activity.info().activity_type, input.args[0] if input.args else None)
        activity.logger.info(f"{what} started", extra=fields)
        started = time.monotonic()
        try:
            result = await self.next.execute_activity(input)
        except BaseException as exc:
            elapsed = {"duration_ms": round((time.monotonic() - started) * 1000, 1)}
            activity.logger.warning(f"{what} failed", extra=fields | elapsed | _error_fields(exc))
            raise
        elapsed = {"duration_ms": round((time.monotonic() - started) * 1000, 1)}
        activity.logger.info(f"{what} finished", extra=fields | elapsed | _outcome(result))
        return result


class _WorkflowLogger(WorkflowInboundInterceptor):
    async def execute_workflow(self, input: ExecuteWorkflowInput) -> Any:
        # workflow.logger skips records while replaying: each line is written once per run, not per replay.
        arg = input.args[0] if input.args else None
        workflow.logger.info("run started", extra={"agent": arg.agent if isinstance(arg, AgentInput) else None})
        try:
            result = await self.next.execute_workflow(input)
        except GeneratorExit:
            # Not an end: a worker dropped this run from its cache (shut down, evicted) and the coroutine is
            # being closed, often later by the garbage collector, outside the workflow's event loop, where
            # workflow.logger cannot even be asked whether it is replaying. The run goes on elsewhere.
            raise
        except BaseException as exc:
            if isinstance(exc, workflow.ContinueAsNewError):
                workflow.logger.info("run continued as new")
            else:
                workflow.logger.warning("run ended with an error", extra=_error_fields(exc))
            raise
        if isinstance(result, AgentResult):
            ended = {"status": result.status, "stop": result.stop.value, "steps": result.usage.steps}
            workflow.logger.info("run finished", extra=ended)
        else:
            workflow.logger.info("run finished")
        return result


class LoggingInterceptor(Interceptor):
    """Worker interceptor: a log line at each run's start and end, and each activity's start and end."""

    def intercept_activity(self, next: ActivityInboundInterceptor) -> ActivityInboundInterceptor:
        return _ActivityLogger(next)

    def workflow_interceptor_class(
        self, input: WorkflowInterceptorClassInput
    ) -> type[WorkflowInboundInterceptor] | None:
        return _WorkflowLogger
