"""`LayerModel`: any of pydantic-ai's model classes (Anthropic, Google, Bedrock, Groq, Mistral, ...) as a `Model`,
called through `pydantic_ai.direct` — one request, no agent loop of theirs: the loop is ours.

Why that layer (docs/models.md has the comparison): it keeps what each provider asks to get back across tool turns
(Anthropic's thinking signatures, Gemini's thought signatures), classifies every provider's errors the same way
(rate limit, overloaded, rejected, ...) with the `Retry-After` it was given, and reports cached tokens. The
transcript stays ours: messages are converted at this boundary (agentic/models/layer_messages.py), so an upgrade
of the library never changes what a run recorded.

The provider SDK's own retries are off: the durable runner owns retries (a 429's `Retry-After` becomes the
activity's next retry delay), and an SDK retrying underneath would multiply attempts and hide them. Errors leave
`complete` as the classified `ModelError`s, their text the status and the provider's error type and code, never
the provider's free text (an echoing gateway quotes the key whole).
"""

from __future__ import annotations

import asyncio
import json
import queue
import threading
from collections.abc import Callable, Coroutine, Mapping, Sequence
from typing import Any, cast

from agentic.extras import require_extra

require_extra("pydantic-ai")  # one line naming the extra, not an ImportError from inside pydantic_ai

from pydantic_ai import direct, exceptions
from pydantic_ai.messages import (
    ModelResponse,
    PartDeltaEvent,
    PartStartEvent,
    TextPart,
    TextPartDelta,
    ToolCallPart,
    ToolCallPartDelta,
)
from pydantic_ai.models import Model as LayerModelClass
from pydantic_ai.models import ModelRequestParameters
from pydantic_ai.settings import ModelSettings as LayerSettings
from pydantic_ai.tools import ToolDefinition

from agentic.errors import (
    ContextOverflowError,
    ModelError,
    ModelOutputError,
    NonRetryableModelError,
    RetryableModelError,
)
from agentic.messages import Message
from agentic.models.base import TOOL_CHOICE_MODES, ModelDelta, ModelReply, ModelSettings, OnDelta, Pricing, ToolSchema
from agentic.models.layer_messages import from_layer, to_layer
from agentic.scrub import Scrubber

RETRYABLE_STATUSES = frozenset({408, 409, 429})
# pydantic-ai's categories a later attempt can get past; the rest (rejected, unauthorised, not found, out of
# quota) fail the same way every time.
RETRYABLE = (
    exceptions.ModelRateLimitError,
    exceptions.ModelUnavailableError,
    exceptions.ModelServerError,
    exceptions.ModelConnectionError,
    exceptions.ModelRequestTimeout,
)


class LayerModel:
    """`layer_model` is a pydantic-ai `Model` built with its provider's retries off (see `anthropic_model`,
    `google_model`); `name` is what runs and the catalog call it. `credentials` are the secrets it sends, masked
    in every error. `pricing` replaces the maintained price table (genai-prices) for a model it does not know
    or one you pay differently for. `provider_settings` are pydantic-ai model settings sent on every call
    (`{"thinking": True}`, `{"anthropic_thinking": {...}}`)."""

    def __init__(
        self,
        name: str,
        layer_model: LayerModelClass,
        *,
        credentials: Sequence[str] = (),
        settings: ModelSettings | None = None,
        pricing: Pricing | None = None,
        provider_settings: Mapping[str, Any] | None = None,
    ) -> None:
        self.name = name
        self.layer_model = layer_model
        self.settings = settings or ModelSettings()
        self.pricing = pricing
        self.provider_settings = dict(provider_settings or {})
        self._hide = Scrubber(credentials)
        self._loop = LOOP

    @property
    def credentials(self) -> tuple[str, ...]:
        return self._hide.secrets

    def complete(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolSchema] = (),
        *,
        call_index: int | None = None,
        settings: ModelSettings | None = None,
        on_delta: OnDelta | None = None,
    ) -> ModelReply:
        chosen = self.settings.override(settings)
        history = to_layer(messages)
        layer_settings = self._layer_settings(chosen, chosen.tool_choice_for(messages), tools)
        parameters = ModelRequestParameters(
            function_tools=[
                ToolDefinition(name=t.name, parameters_json_schema=t.parameters, description=t.description)
                for t in tools
            ],
            allow_text_output=True,
        )
        try:
            if on_delta is None:
                response = self._loop.run(
                    lambda: direct.model_request(
                        self.layer_model, history, model_settings=layer_settings, model_request_parameters=parameters
                    )
                )
            else:
                response = self._loop.stream(
                    lambda emit: _streamed(self.layer_model, history, layer_settings, parameters, emit), on_delta
                )
            return self._reply(response, call_index)
        except ModelError as err:
            err.args = tuple(self._hide(a) if isinstance(a, str) else a for a in err.args)
            raise
        except exceptions.ModelAPIError as err:
            raise self._hidden(_classified(self.name, err)) from None
        except exceptions.UnexpectedModelBehavior as err:
            raise self._hidden(ModelOutputError(f"{self.name}: malformed response: {str(err)[:300]}")) from None
        except exceptions.UserError as err:
            raise self._hidden(NonRetryableModelError(f"{self.name}: {err}")) from None

    def _hidden(self, err: ModelError) -> ModelError:
        err.args = tuple(self._hide(a) if isinstance(a, str) else a for a in err.args)
        return err

    def _layer_settings(self, chosen: ModelSettings, choice: str, tools: Sequence[ToolSchema]) -> LayerSettings:
        out: dict[str, Any] = {"max_retries": 0, **self.provider_settings}
        if "max_retries" in getattr(self.layer_model, "unsupported_settings", ()):
            # A model whose SDK client was built with its retries off already (Bedrock's botocore `Config`), and
            # that warns of a setting it ignores on every call.
            del out["max_retries"]
        for name in ("temperature", "seed", "max_tokens"):
            if (value := getattr(chosen, name)) is not None:
                out[name] = value
        if tools:
            if choice in TOOL_CHOICE_MODES:
                out["tool_choice"] = choice
            elif any(t.name == choice for t in tools):
                out["tool_choice"] = [choice]
            else:
                offered = ", ".join(t.name for t in tools)
                raise NonRetryableModelError(
                    f"{self.name}: tool_choice names {choice!r}, which is not offered ({offered})"
                )
        return cast(LayerSettings, out)

    def _reply(self, response: ModelResponse, call_index: int | None) -> ModelReply:
        usage = response.usage
        return ModelReply(
            message=from_layer(response, f"call_{call_index if call_index is not None else 'x'}"),
            input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens,
            cache_read_tokens=usage.cache_read_tokens,
            cache_write_tokens=usage.cache_write_tokens,
            cost=self._cost(response),
        )

    def _cost(self, response: ModelResponse) -> float:
        usage = response.usage
        if self.pricing is not None:
            return self.pricing.cost(usage.input_tokens, usage.output_tokens)
        try:
            return round(float(response.cost().total_price), 10)
        except (LookupError, ValueError, AssertionError):
            return 0.0  # a model the table does not know (pass `pricing=`): free rather than failing the run


async def _streamed(
    model: LayerModelClass,
    history: list[Any],
    settings: LayerSettings,
    parameters: ModelRequestParameters,
    emit: Callable[[ModelDelta], None],
) -> ModelResponse:
    positions: dict[int, int] = {}  # the layer's part index -> the tool call's position (from 1)
    async with direct.model_request_stream(
        model, history, model_settings=settings, model_request_parameters=parameters
    ) as stream:
        async for event in stream:
            for delta in _deltas(event, positions):
                emit(delta)
        return stream.get()


def _deltas(event: Any, positions: dict[int, int]) -> list[ModelDelta]:
    if isinstance(event, PartStartEvent):
        part = event.part
        if isinstance(part, TextPart) and part.content:
            return [ModelDelta(kind="text", text=part.content)]
        if isinstance(part, ToolCallPart):
            position = positions.setdefault(event.index, len(positions) + 1)
            args = part.args if isinstance(part.args, str) else "" if part.args is None else _json(part.args)
            return [
                ModelDelta(
                    kind="tool_call", position=position, call_id=part.tool_call_id, name=part.tool_name, arguments=args
                )
            ]
    elif isinstance(event, PartDeltaEvent):
        delta = event.delta
        if isinstance(delta, TextPartDelta) and delta.content_delta:
            return [ModelDelta(kind="text", text=delta.content_delta)]
        if isinstance(delta, ToolCallPartDelta) and event.index in positions:
            args = delta.args_delta if isinstance(delta.args_delta, str) else _json(delta.args_delta or {})
            return [ModelDelta(kind="tool_call", position=positions[event.index], arguments=args)]
    return []


def _json(value: Any) -> str:
    return json.dumps(value)


def _classified(model: str, err: exceptions.ModelAPIError) -> ModelError:
    status = getattr(err, "status_code", None)
    named = (err.provider_error_type, err.provider_error_code)
    kinds = ", ".join(dict.fromkeys(k for k in named if isinstance(k, str) and _identifier(k)))
    what = f"HTTP {status}" if status is not None else type(err).__name__
    text = f"{model}: {what}{f' ({kinds})' if kinds else ''}"
    if isinstance(err, exceptions.ModelContextWindowExceededError):
        return ContextOverflowError(
            f"{text}: the transcript exceeds the model's context window; retrying cannot help", status=status
        )
    if isinstance(err, exceptions.ModelConnectionError) and status is None:
        phase = getattr(err, "phase", None)
        text = (
            f"{model}: {'request timed out' if isinstance(err, exceptions.ModelTimeoutError) else 'connection failed'}"
        )
        text += f" ({phase})" if phase else ""
    if isinstance(err, RETRYABLE) or (status is not None and (status in RETRYABLE_STATUSES or status >= 500)):
        return RetryableModelError(text, status=status, retry_after=err.retry_after)
    return NonRetryableModelError(text, status=status)


def _identifier(value: str | None) -> bool:
    # A code or a type is an identifier, not prose: prose may quote what the request carried.
    return (
        isinstance(value, str)
        and 0 < len(value) <= 64
        and value.replace("_", "").replace("-", "").replace(".", "").isalnum()
    )


class _LoopThread:
    """One event loop, on a thread of its own, for every layer model's async client: a client's connections belong
    to the loop that opened them, and `complete` is called from many threads (each activity's own). One for all
    models, started on first use: a catalog makes and drops models by name, and a loop per model would leave a
    thread behind with each one dropped. Deltas cross back to the caller's thread through a queue, so `on_delta`
    runs where `complete` does."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None

    def _running(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None:
                loop = asyncio.new_event_loop()
                threading.Thread(target=loop.run_forever, name="model-layer", daemon=True).start()
                self._loop = loop
            return self._loop

    def run(self, make: Callable[[], Coroutine[Any, Any, ModelResponse]]) -> ModelResponse:
        return asyncio.run_coroutine_threadsafe(make(), self._running()).result()

    def stream(
        self, make: Callable[[Callable[[ModelDelta], None]], Coroutine[Any, Any, ModelResponse]], on_delta: OnDelta
    ) -> ModelResponse:
        deltas: queue.SimpleQueue[ModelDelta | None] = queue.SimpleQueue()
        future = asyncio.run_coroutine_threadsafe(make(deltas.put), self._running())
        future.add_done_callback(lambda _: deltas.put(None))
        while (delta := deltas.get()) is not None:
            on_delta(delta)
        return future.result()


LOOP = _LoopThread()
