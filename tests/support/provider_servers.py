"""Loopback servers speaking the providers' wire formats, standard library only: real HTTP on 127.0.0.1, so the
provider SDK, the model layer (pydantic-ai) and our model class are all exercised as against the real service.

Tests queue the exact responses (status, headers, JSON body or server-sent events) in order, and read back what
each request carried and when it arrived (the server's clock: a retry's spacing is measured where it happened).
The response shapes are those the providers document:

- Anthropic Messages API (`POST /v1/messages`): `content` blocks `text`, `thinking` (with `signature`), `tool_use`;
  `usage` with `cache_read_input_tokens`; errors `{"type": "error", "error": {"type", "message"}}`; streaming as
  `message_start`, `content_block_start/delta/stop`, `message_delta`, `message_stop` events.
- Gemini API (`POST /v1beta/models/{model}:generateContent`, `:streamGenerateContent?alt=sse`): `candidates[0]
  .content.parts` with `text`, `thought`, `functionCall` and `thoughtSignature`; `usageMetadata` with
  `cachedContentTokenCount`; errors `{"error": {"code", "message", "status"}}`.
"""

from __future__ import annotations

import base64
import json
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class Scripted:
    status: int = 200
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    events: tuple[bytes, ...] = ()  # server-sent events, sent one by one
    hold: threading.Event | None = None  # wait for it before answering (a call a worker dies in the middle of)
    echo_key: bool = False  # `{key}` in the body becomes the key the request carried
    reply: Any = None  # a reply the server renders as the request asks: one JSON body, or streamed (`render`)


@dataclass(frozen=True)
class Received:
    path: str
    headers: dict[str, str]
    raw_body: bytes
    at: float  # time.time() when the request arrived, on the server

    @property
    def json(self) -> Any:
        return json.loads(self.raw_body)


class ProviderServer:
    """Serves queued responses to any POST; an empty queue answers 599. `key_header` is where the provider's SDK
    sends its key (`x-api-key`, `x-goog-api-key`), else `authorization` (anthropic 2.x sends a bearer)."""

    key_header = "authorization"

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._queue: deque[Scripted] = deque()
        self._closing = threading.Event()
        self.requests: list[Received] = []
        self.echoed: list[bytes] = []  # the bodies sent quoting the key (the attack happened)
        self.arrived = threading.Condition(self._lock)
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
        self._thread.start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    def queue(self, scripted: Scripted) -> None:
        with self._lock:
            self._queue.append(scripted)

    def queue_json(self, body: Any, *, status: int = 200, headers: dict[str, str] | None = None, **kw: Any) -> None:
        all_headers = {"Content-Type": "application/json", **(headers or {})}
        self.queue(Scripted(status, json.dumps(body).encode(), all_headers, **kw))

    def queue_events(self, events: list[Any], **kw: Any) -> None:
        self.queue(
            Scripted(200, b"", {"Content-Type": "text/event-stream"}, events=tuple(self.sse(e) for e in events), **kw)
        )

    def sse(self, event: Any) -> bytes:
        return f"data: {json.dumps(event)}\n\n".encode()

    def queue_reply(self, reply: Any, **kw: Any) -> None:
        """A reply sent whole or streamed, as the request asks (SDKs stream a request they were not asked to)."""
        self.queue(Scripted(reply=reply, **kw))

    def render(self, request: Received, scripted: Scripted) -> Scripted:
        raise NotImplementedError

    def key_of(self, request: Received) -> str:
        """The key the request carried, as an echoing gateway would quote it."""
        key = request.headers.get(self.key_header) or request.headers.get("authorization", "")
        return key.removeprefix("Bearer ")

    def wait_for_requests(self, count: int, timeout: float = 60.0) -> list[Received]:
        with self.arrived:
            if not self.arrived.wait_for(lambda: len(self.requests) >= count, timeout):
                raise AssertionError(f"{len(self.requests)} requests arrived, not {count}")
            return list(self.requests)

    def close(self) -> None:
        self._closing.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> ProviderServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _next(self, request: Received) -> Scripted:
        with self.arrived:
            self.requests.append(request)
            self.arrived.notify_all()
            if self._queue:
                return self._queue.popleft()
        return Scripted(
            599, b'{"error": {"message": "no scripted response queued"}}', {"Content-Type": "application/json"}
        )

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                received = Received(self.path, {k.lower(): v for k, v in self.headers.items()}, raw, time.time())
                scripted = server._next(received)
                if scripted.reply is not None:
                    scripted = server.render(received, scripted)
                if scripted.hold is not None:
                    while not scripted.hold.wait(0.05):
                        if server._closing.is_set():
                            return
                body = scripted.body
                if scripted.echo_key:
                    body = body.replace(b"{key}", server.key_of(received).encode())
                    server.echoed.append(body)
                try:
                    self.send_response(scripted.status)
                    for name, value in scripted.headers.items():
                        self.send_header(name, value)
                    if scripted.events:
                        self.send_header("Connection", "close")
                        self.end_headers()
                        for event in scripted.events:
                            self.wfile.write(event)
                            self.wfile.flush()
                        self.close_connection = True
                        return
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client is gone (a worker killed mid-call)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        return Handler


# -- OpenAI ---------------------------------------------------------------------------------------------------------


class OpenAIServer(ProviderServer):
    """Chat completions (`POST /v1/chat/completions`): `choices[0].message` with `tool_calls`; errors
    `{"error": {"message", "type", "code"}}`."""

    def queue_message(self, content: str | None, tool_calls: list[dict[str, Any]] | None = None, **kw: Any) -> None:
        message: dict[str, Any] = {"role": "assistant", "content": content}
        if tool_calls:
            message["tool_calls"] = tool_calls
        body = {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "created": 0,
            "model": "gpt-4.1-mini",
            "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if tool_calls else "stop"}],
            "usage": {"prompt_tokens": 1000, "completion_tokens": 100, "total_tokens": 1100},
        }
        self.queue_json(body, **kw)

    def queue_error(self, status: int, kind: str, message: str, **kw: Any) -> None:
        self.queue_json({"error": {"message": message, "type": kind, "code": kind, "param": None}}, status=status, **kw)


def openai_call(call_id: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}


# -- Anthropic --------------------------------------------------------------------------------------------------


class AnthropicServer(ProviderServer):
    key_header = "x-api-key"

    def sse(self, event: Any) -> bytes:
        return f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode()

    def queue_message(self, content: list[dict[str, Any]], **kw: Any) -> None:
        self.queue_reply(content, **kw)

    def render(self, request: Received, scripted: Scripted) -> Scripted:
        if request.json.get("stream"):
            events = tuple(self.sse(e) for e in anthropic_events(scripted.reply))
            return Scripted(200, b"", {"Content-Type": "text/event-stream"}, events=events)
        body = json.dumps(anthropic_message(scripted.reply)).encode()
        return Scripted(200, body, {"Content-Type": "application/json"})

    def queue_error(self, status: int, kind: str, message: str, **kw: Any) -> None:
        self.queue_json({"type": "error", "error": {"type": kind, "message": message}}, status=status, **kw)

    def queue_key_echo(self) -> None:
        self.queue_error(401, "authentication_error", "invalid x-api-key: {key}", echo_key=True)


def anthropic_message(content: list[dict[str, Any]], *, model: str = "claude-sonnet-4-5") -> dict[str, Any]:
    return {
        "id": "msg_01",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": "tool_use" if any(b["type"] == "tool_use" for b in content) else "end_turn",
        "stop_sequence": None,
        "usage": {
            "input_tokens": 1000,
            "output_tokens": 100,
            "cache_read_input_tokens": 2000,
            "cache_creation_input_tokens": 0,
        },
    }


def thinking(text: str, signature: str) -> dict[str, Any]:
    return {"type": "thinking", "thinking": text, "signature": signature}


def tool_use(call_id: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"type": "tool_use", "id": call_id, "name": name, "input": arguments}


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def anthropic_events(content: list[dict[str, Any]], *, model: str = "claude-sonnet-4-5") -> list[dict[str, Any]]:
    """The Messages API's streaming events for a reply of these blocks, each block's body in two deltas."""
    start = anthropic_message([], model=model)
    start["usage"] = {"input_tokens": 1000, "output_tokens": 1, "cache_read_input_tokens": 2000}
    start["stop_reason"] = None
    events: list[dict[str, Any]] = [{"type": "message_start", "message": start}]
    for index, block in enumerate(content):
        kind = block["type"]
        if kind == "text":
            events.append(
                {"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}}
            )
            half = len(block["text"]) // 2
            for piece in (block["text"][:half], block["text"][half:]):
                events.append(
                    {"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": piece}}
                )
        elif kind == "thinking":
            empty = {"type": "thinking", "thinking": "", "signature": ""}
            events.append({"type": "content_block_start", "index": index, "content_block": empty})
            events.append(
                {
                    "type": "content_block_delta",
                    "index": index,
                    "delta": {"type": "thinking_delta", "thinking": block["thinking"]},
                }
            )
            events.append(
                {
                    "type": "content_block_delta",
                    "index": index,
                    "delta": {"type": "signature_delta", "signature": block["signature"]},
                }
            )
        elif kind == "tool_use":
            started = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
            events.append({"type": "content_block_start", "index": index, "content_block": started})
            arguments = json.dumps(block["input"])
            half = len(arguments) // 2
            for piece in (arguments[:half], arguments[half:]):
                events.append(
                    {
                        "type": "content_block_delta",
                        "index": index,
                        "delta": {"type": "input_json_delta", "partial_json": piece},
                    }
                )
        events.append({"type": "content_block_stop", "index": index})
    stop = "tool_use" if any(b["type"] == "tool_use" for b in content) else "end_turn"
    events.append(
        {
            "type": "message_delta",
            "delta": {"stop_reason": stop, "stop_sequence": None},
            "usage": {"output_tokens": 100},
        }
    )
    events.append({"type": "message_stop"})
    return events


# -- Gemini -----------------------------------------------------------------------------------------------------


class GeminiServer(ProviderServer):
    key_header = "x-goog-api-key"

    def queue_content(self, parts: list[dict[str, Any]], **kw: Any) -> None:
        self.queue_reply(parts, **kw)

    def render(self, request: Received, scripted: Scripted) -> Scripted:
        parts = scripted.reply
        if ":streamGenerateContent" in request.path:
            # Each part in a chunk of its own; the usage on the last one, as the API sends it.
            chunks = [gemini_response([part], usage=i == len(parts) - 1) for i, part in enumerate(parts)]
            return Scripted(200, b"", {"Content-Type": "text/event-stream"}, events=tuple(self.sse(c) for c in chunks))
        return Scripted(200, json.dumps(gemini_response(parts)).encode(), {"Content-Type": "application/json"})

    def queue_error(self, status: int, code: str, message: str, **kw: Any) -> None:
        self.queue_json({"error": {"code": status, "message": message, "status": code}}, status=status, **kw)

    def queue_key_echo(self) -> None:
        self.queue_error(401, "UNAUTHENTICATED", "API key not valid: {key}", echo_key=True)


def signature(value: str) -> str:
    """A thought signature as the API sends it: base64 of opaque bytes."""
    return base64.b64encode(value.encode()).decode()


def gemini_response(
    parts: list[dict[str, Any]], *, usage: bool = True, model: str = "gemini-2.5-flash"
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}],
        "modelVersion": model,
        "responseId": "resp-1",
    }
    if usage:
        body["usageMetadata"] = {
            "promptTokenCount": 3000,
            "candidatesTokenCount": 100,
            "totalTokenCount": 3100,
            "cachedContentTokenCount": 2000,
        }
    return body


def function_call(name: str, arguments: dict[str, Any], *, thought_signature: str | None = None) -> dict[str, Any]:
    part: dict[str, Any] = {"functionCall": {"name": name, "args": arguments}}
    if thought_signature is not None:
        part["thoughtSignature"] = signature(thought_signature)
    return part
