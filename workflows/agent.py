"""`AgentWorkflow`: the agent loop made durable. Every model call and every tool call is an activity;
the transcript and the consumption are workflow state, rebuilt by replay after any crash.

The workflow only executes what `AgentLoop` decides; it owns no agent rule of its own.
"""

from __future__ import annotations

from datetime import timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError

with workflow.unsafe.imports_passed_through():
    from pydantic import ValidationError

    from activities.inputs import ModelCallInput, ToolCallInput
    from activities.model import ModelActivities
    from activities.tools import ToolActivities
    from agentic import AgentLoop, CallModel, Finish, LoopState, Message, RunTool, ToolResult, ToolStatus
    from agentic.loop import idempotency_key, initial_messages
    from agentic.messages import ToolCall
    from scenarios import Scenario, UnknownScenarioError, get_scenario
    from workflows.inputs import AgentInput, AgentResult, Progress, RunStatus

MODEL_RETRY = RetryPolicy(
    initial_interval=timedelta(seconds=1),
    backoff_coefficient=2.0,
    maximum_interval=timedelta(seconds=60),
    maximum_attempts=8,
    non_retryable_error_types=["NonRetryableModelError", "ModelOutputError", "ConfigurationError"],
)
TOOL_RETRY = RetryPolicy(
    initial_interval=timedelta(seconds=1),
    backoff_coefficient=2.0,
    maximum_interval=timedelta(seconds=30),
    maximum_attempts=6,
    non_retryable_error_types=["ConfigurationError"],
)


def describe_call(call: ToolCall, limit: int = 80) -> str:
    """`charge(invoice=inv-9, key=...)`: a label a person can read in the Web UI."""
    if isinstance(call.arguments, str):
        args = call.arguments
    else:
        args = ", ".join(f"{k}={v}" for k, v in call.arguments.items())
    text = f"{call.name}({args})"
    return text if len(text) <= limit else text[: limit - 1] + "…"


# Bad input (an unknown scenario, a field that does not validate) fails the workflow at once instead of
# failing workflow tasks that Temporal would retry forever.
@workflow.defn(name="AgentWorkflow", failure_exception_types=[UnknownScenarioError, ValidationError])
class AgentWorkflow:
    @workflow.init
    def __init__(self, input: AgentInput) -> None:
        self.input = input
        self.scenario: Scenario = get_scenario(input.scenario)
        self.budget = input.budget or self.scenario.budget
        self.loop = AgentLoop(self.budget, self.scenario.registry.specs(), LoopState(consumed=input.consumed))
        self.messages: list[Message] = initial_messages(
            self.scenario.system if input.system is None else input.system,
            input.task or self.scenario.task,
            input.history,
        )
        self.status: RunStatus = "running"
        self.label = "starting"

    @workflow.run
    async def run(self, input: AgentInput) -> AgentResult:
        while True:
            step = self.loop.next_step()
            if isinstance(step, Finish):
                break
            if isinstance(step, CallModel):
                await self._call_model(step)
            elif isinstance(step, RunTool):
                await self._run_tool(step)
        self.status = "completed"
        self.label = f"finished: {self.loop.state.stop}"
        return self._result()

    @workflow.query
    def progress(self) -> Progress:
        state = self.loop.state
        return Progress(
            run_id=workflow.info().workflow_id,
            scenario=self.input.scenario,
            status=self.status,
            step=state.consumed.steps,
            max_steps=self.budget.max_steps,
            label=self.label,
            input_tokens=state.consumed.input_tokens,
            output_tokens=state.consumed.output_tokens,
            cost=state.consumed.cost,
            trajectory=[r.call.name for r in state.records if r.status is ToolStatus.OK],
            stop=state.stop.value if state.stop else None,
        )

    async def _call_model(self, step: CallModel) -> None:
        self.label = f"model call {step.step}"
        timeouts = self.input.timeouts
        try:
            reply = await workflow.execute_activity_method(
                ModelActivities.call_model,
                ModelCallInput(
                    run_id=workflow.info().workflow_id,
                    scenario=self.input.scenario,
                    model=self.input.model,
                    messages=self.messages,
                    call_index=step.call_index,
                    options=self.input.options,
                ),
                start_to_close_timeout=timedelta(seconds=timeouts.model_seconds),
                retry_policy=MODEL_RETRY,
                summary=self.label,
            )
        except ActivityError as exc:
            # Retrying cannot fix it (or retries ran out): fail the run visibly instead of looping.
            raise ApplicationError(
                f"{self.label} failed: {_cause(exc)}", type="ModelCallFailed", non_retryable=True
            ) from exc
        self.messages += self.loop.model_replied(reply)

    async def _run_tool(self, step: RunTool) -> None:
        call = step.call
        self.label = describe_call(call)
        timeouts = self.input.timeouts
        tool_timeout = step.spec.timeout if step.spec and step.spec.timeout else timeouts.tool_seconds
        try:
            result = await workflow.execute_activity_method(
                ToolActivities.run_tool,
                ToolCallInput(
                    run_id=workflow.info().workflow_id,
                    scenario=self.input.scenario,
                    call=call,
                    idempotency_key=idempotency_key(workflow.info().workflow_id, call.id),
                    options=self.input.options,
                ),
                start_to_close_timeout=timedelta(seconds=tool_timeout + timeouts.heartbeat_seconds),
                heartbeat_timeout=timedelta(seconds=timeouts.heartbeat_seconds),
                retry_policy=TOOL_RETRY,
                summary=self.label,
            )
        except ActivityError as exc:
            # Out of retries: the model hears about it, as it would from the in-process agent.
            result = ToolResult.of(call, ToolStatus.ERROR, f"Error: {call.name} kept failing: {_cause(exc)}")
        self.messages += self.loop.tool_finished(result)

    def _result(self) -> AgentResult:
        state = self.loop.state
        assert state.stop is not None
        return AgentResult(
            run_id=workflow.info().workflow_id,
            scenario=self.input.scenario,
            status=self.status,
            messages=self.messages,
            stop=state.stop,
            output=state.output,
            stop_detail=state.stop_detail,
            usage=state.consumed,
            records=state.records,
        )


def _cause(exc: BaseException) -> str:
    while exc.__cause__ is not None:
        exc = exc.__cause__
    return str(exc) or type(exc).__name__
