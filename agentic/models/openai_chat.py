"""An OpenAI-compatible chat-completions model: OpenAI itself, or vLLM, Ollama, llama.cpp via `base_url`.

Provider retries are off (`max_retries=0`): the durable runner owns retries, and an SDK retrying
underneath it would multiply attempts and hide them from the run's accounting. Every failure leaves
`complete` as one of the classified `ModelError`s, never as a raw SDK or transport exception.
"""

from __future__ import annotations

import contextlib
import json
import math
import re
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
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
from agentic.models.base import (
    TOOL_CHOICE_MODES,
    ModelDelta,
    ModelReply,
    ModelSettings,
    OnDelta,
    Pricing,
    ToolSchema,
)
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
        on_delta: OnDelta | None = None,
    ) -> ModelReply:
        """`on_delta`: the reply is streamed (`stream: true`), each piece of text and of a tool call's arguments
        handed to it as it arrives; the reply returned is the same whole reply either way."""
        request = self.request(messages, tools, settings)
        try:
            if on_delta is not None:
                return self._streamed(request, call_index, on_delta)
            return self._complete(request, call_index)
        except ModelError as err:
            err.args = tuple(self._hide(a) if isinstance(a, str) else a for a in err.args)
            raise

    def _complete(self, request: dict[str, Any], call_index: int | None) -> ModelReply:
        # The raw response, parsed here: the SDK's own parsing tolerates missing fields and non-JSON
        # bodies silently, which would turn a broken reply into an empty answer.
        with self._classified():
            raw = self._client.chat.completions.with_raw_response.create(**request)
            status, text = raw.status_code, raw.text
        return self._reply(status, text, call_index)

    def _streamed(self, request: dict[str, Any], call_index: int | None, on_delta: OnDelta) -> ModelReply:
        """The reply read chunk by chunk (server-sent events), assembled into the body a whole reply would have
        had, and checked by the same rules."""
        assembly = _Assembly(call_index)
        # Usage comes in a last chunk only when asked for; a server that ignores the option sends none.
        body = {**request, "stream": True, "stream_options": {"include_usage": True}}
        with self._classified():
            raw = self._client.chat.completions.with_raw_response.create(**body)
            status = raw.status_code
            for chunk in raw.parse():
                for delta in assembly.add(chunk.model_dump(mode="json", exclude_none=True)):
                    on_delta(delta)
        return self._reply_from(status, assembly.body(), json.dumps(assembly.body())[:300], call_index)

    @contextlib.contextmanager
    def _classified(self) -> Iterator[None]:
        """Every failure of a request (or of reading its answer) as the `ModelError` it is."""
        try:
            yield
        except openai.APIStatusError as err:
            raise _status_error(self.name, err) from err
        except openai.APITimeoutError as err:
            raise RetryableModelError(f"{self.name}: request timed out") from err
        except openai.APIConnectionError as err:
            if isinstance(err.__cause__, httpx2.UnsupportedProtocol):  # e.g. base_url="localhost:8000/v1"
                raise NonRetryableModelError(f"{self.name}: bad base_url: {err.__cause__}") from err
            raise RetryableModelError(f"{self.name}: connection failed: {err.__cause__ or err}") from err
        except openai.APIError as err:
            # An error event in the middle of a stream (the server failed while writing): its kind, not its
            # message (which may quote the request), and worth another try, as a 5xx would be.
            raise RetryableModelError(f"{self.name}: the stream broke off with an error{_kind_of(err.body)}") from err
        except openai.OpenAIError as err:
            raise NonRetryableModelError(f"{self.name}: {err}") from err
        except (httpx2.HTTPError, httpx2.StreamError, OSError) as err:  # the body broke after the headers
            raise RetryableModelError(f"{self.name}: reading the response failed: {err!r}") from err
        except ValueError as err:  # a streamed chunk that is not JSON
            raise ModelOutputError(f"{self.name}: malformed stream ({err})") from err

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
        try:
            data = json.loads(text)
        except ValueError:
            raise ModelOutputError(
                f"{self.name}: malformed response (body is not JSON): {text[:300]!r}", status=status
            ) from None
        return self._reply_from(status, data, text[:300], call_index)

    def _reply_from(self, status: int, data: Any, text: str, call_index: int | None) -> ModelReply:
        def bad(problem: str) -> ModelOutputError:
            return ModelOutputError(f"{self.name}: malformed response ({problem}): {text!r}", status=status)

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


class _Assembly:
    """Streamed chunks put together into the body of a whole reply (`choices[0].message`, `usage`), and the
    deltas each chunk adds. A tool call's pieces are joined by their `index`; one without an id gets the id
    the whole reply would give it."""

    def __init__(self, call_index: int | None) -> None:
        self.call_index = call_index
        self.content: list[str] = []
        self.calls: dict[int, dict[str, Any]] = {}
        self.usage: dict[str, Any] | None = None
        self.pieces = 0  # chunks that carried text or arguments: a server that reports no usage sent one a token

    def add(self, chunk: dict[str, Any]) -> list[ModelDelta]:
        if isinstance(chunk.get("usage"), dict):
            self.usage = chunk["usage"]
        deltas: list[ModelDelta] = []
        choices = chunk.get("choices")
        first = choices[0] if isinstance(choices, list) and choices else None
        delta = first.get("delta") if isinstance(first, dict) else None
        if not isinstance(delta, dict):
            return deltas
        text = delta.get("content")
        if isinstance(text, str) and text:
            self.content.append(text)
            self.pieces += 1
            deltas.append(ModelDelta(kind="text", text=text))
        for raw in delta.get("tool_calls") or []:
            if not isinstance(raw, dict) or not isinstance(raw.get("index", 0), int):
                continue
            index = raw.get("index", 0)
            call = self.calls.setdefault(index, {"id": "", "name": "", "arguments": ""})
            function = raw.get("function") if isinstance(raw.get("function"), dict) else {}
            if isinstance(raw.get("id"), str) and raw["id"]:
                call["id"] = raw["id"]
            if isinstance(function.get("name"), str):
                call["name"] += function["name"]
            piece = function.get("arguments") if isinstance(function.get("arguments"), str) else ""
            call["arguments"] += piece
            self.pieces += 1 if piece else 0
            position = sorted(self.calls).index(index) + 1
            call_id = call["id"] or (f"call_{self.call_index}_{position - 1}" if self.call_index is not None else "")
            deltas.append(
                ModelDelta(kind="tool_call", position=position, call_id=call_id, name=call["name"], arguments=piece)
            )
        return deltas

    def body(self) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": "".join(self.content)}
        if self.calls:
            message["tool_calls"] = [
                {"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": c["arguments"]}}
                for _, c in sorted(self.calls.items())
            ]
        usage = self.usage or {"prompt_tokens": 0, "completion_tokens": self.pieces}
        return {"choices": [{"index": 0, "message": message}], "usage": usage}


def _kind_of(body: Any) -> str:
    body = body if isinstance(body, Mapping) else {}
    kinds = [v for v in (body.get("type"), body.get("code")) if isinstance(v, str) and _KIND.fullmatch(v)]
    return f" ({', '.join(dict.fromkeys(kinds))})" if kinds else ""


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
    return _kind_of(err.body)


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
