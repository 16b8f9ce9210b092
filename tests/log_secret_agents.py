"""Scenarios whose failures carry planted secrets, for tests/test_log_redaction.py. A worker process imports
this module (AGENT_EXTRA_SCENARIOS) so the scenarios are registered there."""

from __future__ import annotations

import itertools
from collections.abc import Sequence

from agentic import Budget, FakeModel, Message, Registry, ToolContext, tool, tool_call
from agentic.errors import NonRetryableModelError, RetryableModelError, ToolRetry
from scenarios import Scenario, ScenarioOptions, register_scenario

TOOL_SECRET = "4111-1111-1111-1111-TOOL-SECRET"
MODEL_SECRET = "sk-PROVIDER-ECHO-MODEL-SECRET"
FATAL_SECRET = "PII-FATAL-MODEL-SECRET"
SECRETS = (TOOL_SECRET, MODEL_SECRET, FATAL_SECRET)

_model_calls = itertools.count()  # per worker process: the first model call fails, its retry answers


@tool(description="Query the upstream.", q="The query.")
def leaky(q: str, ctx: ToolContext) -> str:
    if ctx.attempt == 1:
        raise ToolRetry(f"upstream echoed card {TOOL_SECRET} for {q}")
    return f"found {q}"


def _first_reply(messages: Sequence[Message]) -> object:
    if next(_model_calls) == 0:
        raise RetryableModelError(f"HTTP 503 from the provider: {MODEL_SECRET}", status=503)
    return tool_call("leaky", {"q": "order 4471"})


def _leaky_script(options: ScenarioOptions) -> FakeModel:
    return FakeModel([_first_reply, "Done."])


def _fatal_script(options: ScenarioOptions) -> FakeModel:
    def fail(messages: Sequence[Message]) -> object:
        raise NonRetryableModelError(f"HTTP 400: the provider quoted the prompt: {FATAL_SECRET}", status=400)

    return FakeModel([fail])


register_scenario(
    Scenario("t-leaky", "failures with secrets", "", "Look up.", Registry([leaky]), _leaky_script, Budget(max_steps=4)),
    replace=True,
)
register_scenario(
    Scenario("t-fatal", "a fatal model error", "", "Go.", Registry([leaky]), _fatal_script, Budget(max_steps=2)),
    replace=True,
)
