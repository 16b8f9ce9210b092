"""An OpenAI-compatible chat-completions model: OpenAI itself, or vLLM, Ollama, llama.cpp via `base_url`.

Provider retries are off (`max_retries=0`): the durable runner owns retries, and an SDK retrying
underneath it would multiply attempts and hide them from the run's accounting. Every failure leaves
`complete` as one of the classified `ModelError`s, never as a raw SDK or transport exception.
"""

from __future__ import annotations

import json
import math
import re
import time
import uuid
from collections.abc import Mapping, Sequence
from email.utils import parsedate_to_datetime
from typing import Any, Literal

from agentic.extras import require_extra

require_extra("openai")  # one line naming the extra, not an ImportError from inside openai

import httpx2
import openai

from agentic.errors import (
    ContextOverflowError,
    ModelError,
    ModelOutputError,
    NonRetryableModelError,
    RetryableModelError,
)
from agentic.messages import Message, ToolCall
from agentic.models.base import TOOL_CHOICE_MODES, ModelReply, ModelSettings, Pricing, ToolSchema
from agentic.scrub import Scrubber

# List prices in dollars per million tokens (input, output).
PRICES: dict[str, Pricing] = {
    name: Pricing(input_per_million=inp, output_per_million=out)
    for name, (inp, out) in {
        "gpt-4o": (2.50, 10.00),
        "gpt-4o-mini": (0.15, 0.60),
        "gpt-4.1": (2.00, 8.00),
        "gpt-4.1-mini": (0.40, 1.60),
        "gpt-4.1-nano": (0.10, 0.40),
        "o3-mini": (1.10, 4.40),
        "o4-mini": (1.10, 4.40),
        "gpt-5": (1.25, 10.00),
        "gpt-5-mini": (0.25, 2.00),
        "gpt-5-nano": (0.05, 0.40),
    }.items()
}

RETRYABLE_STATUSES = frozenset({408, 409, 429})
NO_KEY = "not-needed"  # what a model without a key of its own sends: the SDK insists on sending something
_DATED_SNAPSHOT = re.compile(r"-\d{4}-\d{2}-\d{2}$")


def price_for(model: str) -> Pricing:
    """The list price of `model` (a dated snapshot is priced as its family); unknown models cost 0."""
    return PRICES.get(model) or PRICES.get(_DATED_SNAPSHOT.sub("", model)) or Pricing()


class OpenAIChatModel:
    """`settings` are how every call asks (sampling, tool choice); `complete(settings=...)` overrides them
    per call. `pricing` defaults to the list price of `model`, and to 0 for a model not in the table (a
    local one)."""

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        pricing: Pricing | None = None,
        timeout: float = 60.0,
        settings: ModelSettings | None = None,
        temperature: float | None = None,
        tool_choice_modes: frozenset[str] = TOOL_CHOICE_MODES,
        tool_result_role: Literal["tool", "user"] = "tool",
        client: openai.OpenAI | None = None,
    ) -> None:
        self.name = model
        # The modes the server implements (a tool's name always works): llama-cpp-python answers
        # `required` with an HTTP 500, which would be retried forever.
        self.tool_choice_modes = tool_choice_modes
        # "user" for a server whose chat template drops `tool` messages (llama-cpp-python's function-calling
        # one does): the result is then sent as a user turn naming the call, or the model never reads it.
        self.tool_result_role = tool_result_role
        self.pricing = pricing if pricing is not None else price_for(model)
        self.settings = settings or ModelSettings()
        if temperature is not None:  # the older spelling of settings=ModelSettings(temperature=...)
            self.settings = self.settings.override(ModelSettings(temperature=temperature))
        # A key goes only where it was given: never one found in the environment, which a model pointed at
        # another endpoint (the local server, a URL anybody can bind) would send along. Local
        # servers (vLLM, Ollama, llama.cpp) ignore the key, but the SDK refuses to start without one.
        key = api_key or NO_KEY
        self._client = client or openai.OpenAI(api_key=key, base_url=base_url, timeout=timeout, max_retries=0)
        # What this model sends as its bearer: masked in every error it raises, so an endpoint or a
        # proxy quoting it back cannot put it into a run's history.
        sent = getattr(self._client, "api_key", None)
        self._hide = Scrubber([sent] if sent != NO_KEY else [])

    @property
    def credentials(self) -> tuple[str, ...]:
        """The secrets this model sends (its API key): what a runner masks in any text about its calls."""
        return self._hide.secrets

    @property
    def temperature(self) -> float | None:
        return self.settings.temperature

    def request(
        self, messages: Sequence[Message], tools: Sequence[ToolSchema] = (), settings: ModelSettings | None = None
    ) -> dict[str, Any]:
        """The chat-completions body `complete` sends for these arguments."""
        chosen = self.settings.override(settings)
        request: dict[str, Any] = {"model": self.name, "messages": self._wire_messages(messages)}
        if tools:
            request["tools"] = [
                {
                    "type": "function",
                    "function": {"name": t.name, "description": t.description, "parameters": t.parameters},
                }
                for t in tools
            ]
            # Always explicit: llama.cpp's server, told nothing, drops the tools from the prompt altogether.
            request["tool_choice"] = self._tool_choice(chosen.tool_choice_for(messages), tools)
        for name in ("temperature", "seed", "max_tokens"):
            if (value := getattr(chosen, name)) is not None:
                request[name] = value
        return request

    def complete(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolSchema] = (),
        *,
        call_index: int | None = None,
        settings: ModelSettings | None = None,
    ) -> ModelReply:
        request = self.request(messages, tools, settings)
        try:
            return self._complete(request, call_index)
        except ModelError as err:
            err.args = tuple(self._hide(a) if isinstance(a, str) else a for a in err.args)
            raise

    def _complete(self, request: dict[str, Any], call_index: int | None) -> ModelReply:
        # The raw response, parsed here: the SDK's own parsing tolerates missing fields and non-JSON
        # bodies silently, which would turn a broken reply into an empty answer.
        try:
            raw = self._client.chat.completions.with_raw_response.create(**request)
            status, text = raw.status_code, raw.text
        except openai.APIStatusError as err:
            raise _status_error(self.name, err) from err
        except openai.APITimeoutError as err:
            raise RetryableModelError(f"{self.name}: request timed out") from err
        except openai.APIConnectionError as err:
            if isinstance(err.__cause__, httpx2.UnsupportedProtocol):  # e.g. base_url="localhost:8000/v1"
                raise NonRetryableModelError(f"{self.name}: bad base_url: {err.__cause__}") from err
            raise RetryableModelError(f"{self.name}: connection failed: {err.__cause__ or err}") from err
        except openai.OpenAIError as err:
            raise NonRetryableModelError(f"{self.name}: {err}") from err
        except (httpx2.HTTPError, httpx2.StreamError, OSError) as err:  # the body broke after the headers
            raise RetryableModelError(f"{self.name}: reading the response failed: {err!r}") from err
        return self._reply(status, text, call_index)

    def _wire_messages(self, messages: Sequence[Message]) -> list[dict[str, Any]]:
        if self.tool_result_role == "tool":
            return [_to_wire(m) for m in messages]
        names = {call.id: call.name for m in messages for call in m.tool_calls}
        return [
            {"role": "user", "content": f"Result of {names.get(m.tool_call_id, 'the tool')}: {m.content}"}
            if m.role == "tool" and m.tool_call_id is not None
            else _to_wire(m)
            for m in messages
        ]

    def _tool_choice(self, choice: str, tools: Sequence[ToolSchema]) -> str | dict[str, Any]:
        if choice in self.tool_choice_modes:
            return choice
        if choice in TOOL_CHOICE_MODES:
            supported = ", ".join(sorted(self.tool_choice_modes))
            raise NonRetryableModelError(
                f"{self.name}: this server does not support tool_choice={choice!r}; use {supported} or a tool's name"
            )
        if not any(t.name == choice for t in tools):
            offered = ", ".join(t.name for t in tools)
            # The same request would fail the same way on every retry: a configuration error, not a blip.
            raise NonRetryableModelError(f"{self.name}: tool_choice names {choice!r}, which is not offered ({offered})")
        return {"type": "function", "function": {"name": choice}}

    def _reply(self, status: int, text: str, call_index: int | None) -> ModelReply:
        def bad(problem: str) -> ModelOutputError:
            return ModelOutputError(f"{self.name}: malformed response ({problem}): {text[:300]!r}", status=status)

        try:
            data = json.loads(text)
        except ValueError:
            raise bad("body is not JSON") from None
        if not isinstance(data, dict):
            raise bad("body is not a JSON object")
        choices = data.get("choices")
        if not isinstance(choices, list) or not choices:
            raise bad("no choices")
        message = choices[0].get("message") if isinstance(choices[0], dict) else None
        if not isinstance(message, dict):
            raise bad("choice has no message")
        content = message.get("content")
        if isinstance(content, list):  # content parts, as some compatible servers send
            content = "".join(p.get("text") or "" for p in content if isinstance(p, dict))
        if content is not None and not isinstance(content, str):
            raise bad("content is not text")
        raw_calls = message.get("tool_calls") or []
        if not isinstance(raw_calls, list):
            raise bad("tool_calls is not a list")
        calls: list[ToolCall] = []
        for i, raw_call in enumerate(raw_calls):
            function = raw_call.get("function") if isinstance(raw_call, dict) else None
            name = function.get("name") if isinstance(function, dict) else None
            if not isinstance(name, str) or not name:
                raise bad(f"tool call {i} has no function name")
            call_id = raw_call.get("id")
            if not isinstance(call_id, str) or not call_id:
                # Some local servers omit ids, but the tool result must point back at its call.
                call_id = f"call_{call_index}_{i}" if call_index is not None else f"call_{uuid.uuid4().hex[:16]}"
            calls.append(ToolCall(id=call_id, name=name, arguments=_parse_arguments(function.get("arguments"))))
        usage = data.get("usage") if isinstance(data.get("usage"), dict) else {}
        input_tokens, output_tokens = (
            _count(usage.get("prompt_tokens")),
            _count(usage.get("completion_tokens")),
        )
        return ModelReply(
            message=Message(role="assistant", content=content or "", tool_calls=calls),
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            cost=self.pricing.cost(input_tokens, output_tokens),
        )


def _to_wire(message: Message) -> dict[str, Any]:
    row: dict[str, Any] = {"role": message.role, "content": message.content}
    if message.tool_calls:
        row["tool_calls"] = [
            {
                "id": call.id,
                "type": "function",
                "function": {
                    "name": call.name,
                    # A malformed request is sent back exactly as the model wrote it, next to its error.
                    "arguments": call.arguments if isinstance(call.arguments, str) else json.dumps(call.arguments),
                },
            }
            for call in message.tool_calls
        ]
    if message.tool_call_id is not None:
        row["tool_call_id"] = message.tool_call_id
    return row


def _parse_arguments(raw: Any) -> dict[str, Any] | str:
    if isinstance(raw, Mapping):
        return dict(raw)
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return {}  # servers differ in how they spell "no arguments"
    text = raw if isinstance(raw, str) else json.dumps(raw)
    try:
        parsed = json.loads(text)
    except ValueError:
        return text
    return parsed if isinstance(parsed, dict) else text


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def _status_error(model: str, err: openai.APIStatusError) -> ModelError:
    # The status and the provider's error code and type, never its message: the message is free text that may
    # quote what the request carried (an echoing gateway quotes the key whole), and this text becomes
    # the run's failure, in history and in front of viewers.
    status = err.status_code
    message = _provider_message(err)
    if status in (400, 413) and _is_context_overflow(err, message):
        return _context_overflow(model, status, err, message)
    text = f"HTTP {status}{_provider_kind(err)}"
    if status in RETRYABLE_STATUSES or status >= 500:
        return RetryableModelError(text, status=status, retry_after=_retry_after(err.response.headers))
    return NonRetryableModelError(text, status=status)


_KIND = re.compile(r"[A-Za-z0-9_.-]{1,64}")  # an identifier, not prose: what a code or a type is


def _provider_kind(err: openai.APIStatusError) -> str:
    """` (type, code)` from the provider's error body, each only if it is an identifier."""
    body = err.body if isinstance(err.body, Mapping) else {}
    kinds = [v for v in (body.get("type"), body.get("code")) if isinstance(v, str) and _KIND.fullmatch(v)]
    return f" ({', '.join(dict.fromkeys(kinds))})" if kinds else ""


def _provider_message(err: openai.APIStatusError) -> str:
    body = err.body  # the SDK has already unwrapped `{"error": ...}`
    if isinstance(body, Mapping) and isinstance(body.get("message"), str):
        return body["message"]
    if isinstance(body, str) and body.strip():
        return body.strip()[:500]
    return err.message


# How servers say it: OpenAI and vLLM ("maximum context length is 4096 tokens. However, you requested 5000
# tokens (4900 in the messages, 100 in the completion)"), llama-cpp-python (the same words), llama.cpp's own
# server ("the request exceeds the available context size", with n_prompt_tokens and n_ctx).
_OVERFLOW_WORDS = re.compile(r"context (length|window|size)|exceed.*context|too many tokens", re.IGNORECASE)
_WINDOW = re.compile(r"maximum context length is (\d+)", re.IGNORECASE)
_TRANSCRIPT = re.compile(r"\((\d+) in the messages|resulted in (\d+) tokens", re.IGNORECASE)


def _is_context_overflow(err: openai.APIStatusError, message: str) -> bool:
    body = err.body if isinstance(err.body, Mapping) else {}
    return body.get("code") == "context_length_exceeded" or bool(_OVERFLOW_WORDS.search(message))


def _context_overflow(model: str, status: int, err: openai.APIStatusError, message: str) -> ContextOverflowError:
    body = err.body if isinstance(err.body, Mapping) else {}
    window = _first_int(_WINDOW.search(message), body.get("n_ctx"))
    tokens = _first_int(_TRANSCRIPT.search(message), body.get("n_prompt_tokens"))
    size = f" ({tokens} tokens)" if tokens is not None else ""
    limit = f" of {window} tokens" if window is not None else ""
    return ContextOverflowError(
        f"{model}: the transcript{size} exceeds the model's context window{limit}; retrying cannot help — "
        f"shorten the transcript or use a model with a longer context (HTTP {status}{_provider_kind(err)})",
        status=status,
        input_tokens=tokens,
        context_window=window,
    )


def _first_int(match: re.Match[str] | None, fallback: Any) -> int | None:
    if match is not None:
        return int(next(group for group in match.groups() if group is not None))
    return fallback if isinstance(fallback, int) and not isinstance(fallback, bool) else None


def _retry_after(headers: Mapping[str, str]) -> float | None:
    """Seconds to wait, from `retry-after-ms` (more precise) or `retry-after` (seconds or HTTP-date)."""
    if (millis := _seconds(headers.get("retry-after-ms"))) is not None:
        return millis / 1000
    value = headers.get("retry-after")
    if value is None:
        return None
    if (seconds := _seconds(value)) is not None:
        return seconds
    try:
        return max(parsedate_to_datetime(value).timestamp() - time.time(), 0.0)
    except (TypeError, ValueError):
        return None


def _seconds(value: str | None) -> float | None:
    try:
        number = float(value) if value is not None else math.nan
    except ValueError:
        return None
    return max(number, 0.0) if math.isfinite(number) else None
