"""The model activity: one model call, retried by Temporal (the provider's own retries are off)."""

from __future__ import annotations

import asyncio
import os
from datetime import timedelta

from temporalio import activity
from temporalio.exceptions import ApplicationError

from activities.inputs import ModelCallInput
from agentic import Model, ModelError, ModelReply
from agentic.loop import tool_schemas
from agentic.models.openai_chat import OpenAIChatModel
from scenarios import get_scenario
from workflows.inputs import ModelChoice


class ModelActivities:
    def __init__(self, openai_api_key: str | None = None) -> None:
        self.openai_api_key = openai_api_key or os.environ.get("OPENAI_API_KEY")

    def _model(self, choice: ModelChoice, scenario_name: str, input: ModelCallInput) -> Model:
        if choice.kind == "openai":
            if not choice.name:
                raise ApplicationError("an openai model needs a name", type="ConfigurationError", non_retryable=True)
            return OpenAIChatModel(choice.name, base_url=choice.base_url, api_key=self.openai_api_key)
        return get_scenario(scenario_name).script(input.options)

    @activity.defn(name="call_model")
    async def call_model(self, input: ModelCallInput) -> ModelReply:
        scenario = get_scenario(input.scenario)
        model = self._model(input.model, input.scenario, input)
        schemas = tool_schemas(scenario.registry.specs())
        try:
            # The SDK client is synchronous; a thread keeps the worker's event loop free meanwhile.
            return await asyncio.to_thread(model.complete, input.messages, schemas, call_index=input.call_index)
        except ModelError as exc:
            raise ApplicationError(
                str(exc),
                type=type(exc).__name__,
                non_retryable=not exc.retryable,
                next_retry_delay=timedelta(seconds=exc.retry_after) if exc.retry_after is not None else None,
            ) from exc
