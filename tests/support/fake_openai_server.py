"""A scripted OpenAI-compatible chat-completions server on loopback, standard library only.

Tests queue the exact responses (status, headers, raw body, delay) the server will send, in order, and
read back the request bodies it received. Real HTTP, so the adapter, the SDK and the socket layer are
all exercised, including timeouts and dropped connections.
"""

from __future__ import annotations

import json
import threading
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

CHAT_PATH = "/v1/chat/completions"


@dataclass(frozen=True)
class ScriptedResponse:
    status: int = 200
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    echo_key: bool = False  # `{key}` in the body becomes the bearer the request sent
    pieces: tuple[bytes, ...] = ()  # a streamed body: written one piece at a time, `piece_delay` apart
    piece_delay: float = 0.0
    gate: threading.Event | None = None  # a streamed body stops after its second piece until this is set


@dataclass(frozen=True)
class ReceivedRequest:
    path: str
    headers: dict[str, str]
    raw_body: bytes

    @property
    def json(self) -> Any:
        return json.loads(self.raw_body)


def chat_completion(
    content: str | None = "",
    *,
    tool_calls: list[dict[str, Any]] | None = None,
    prompt_tokens: int | None = 0,
    completion_tokens: int | None = 0,
    model: str = "fake-model",
) -> dict[str, Any]:
    """A well-formed chat-completions body; `None` token counts leave `usage` out."""
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls is not None:
        message["tool_calls"] = tool_calls
    body: dict[str, Any] = {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if tool_calls else "stop"}],
    }
    if prompt_tokens is not None and completion_tokens is not None:
        body["usage"] = {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        }
    return body


def function_call(call_id: str, name: str, arguments: str) -> dict[str, Any]:
    """One wire-format tool call; `arguments` is the raw string, as providers send it."""
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def stream_events(
    text: str = "",
    *,
    tool_calls: list[dict[str, Any]] | None = None,
    usage: dict[str, int] | None = None,
    piece: int = 4,
) -> list[bytes]:
    """A streamed reply (`stream: true`) as its server-sent events: the text `piece` characters a chunk, then
    each tool call's id and name and its arguments in pieces, then the usage (if given), then `[DONE]`."""

    def event(delta: dict[str, Any] | None, extra: dict[str, Any] | None = None) -> bytes:
        chunk: dict[str, Any] = {"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 0}
        chunk |= {"model": "fake-model", "choices": [] if delta is None else [{"index": 0, "delta": delta}]}
        return f"data: {json.dumps(chunk | (extra or {}))}\n\n".encode()

    events = [event({"role": "assistant", "content": ""})]
    events += [event({"content": text[i : i + piece]}) for i in range(0, len(text), piece)]
    for index, call in enumerate(tool_calls or []):
        head = {"index": index, "id": call["id"], "type": "function", "function": {"name": call["function"]["name"]}}
        events.append(event({"tool_calls": [head]}))
        arguments = call["function"]["arguments"]
        for i in range(0, len(arguments), piece):
            part = {"index": index, "function": {"arguments": arguments[i : i + piece]}}
            events.append(event({"tool_calls": [part]}))
    if usage is not None:
        events.append(event(None, {"usage": usage}))
    return [*events, b"data: [DONE]\n\n"]


class FakeOpenAIServer:
    """Serves queued responses to `POST /v1/chat/completions`; an empty queue answers 599."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._queue: deque[ScriptedResponse] = deque()
        self._closing = threading.Event()
        self.requests: list[ReceivedRequest] = []
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, name="fake-openai", daemon=True
        )
        self._thread.start()

    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def bodies(self) -> list[Any]:
        """The JSON bodies received so far, oldest first."""
        return [request.json for request in self.requests]

    def queue(
        self,
        body: Any = None,
        *,
        status: int = 200,
        headers: dict[str, str] | None = None,
        raw: bytes | str | None = None,
        delay: float = 0.0,
    ) -> None:
        """Queue one response: `body` is sent as JSON, or `raw` verbatim (as text/plain unless told)."""
        all_headers = dict(headers or {})
        if raw is not None:
            payload = raw.encode() if isinstance(raw, str) else raw
            all_headers.setdefault("Content-Type", "text/plain")
        else:
            payload = json.dumps(body).encode()
            all_headers.setdefault("Content-Type", "application/json")
        with self._lock:
            self._queue.append(ScriptedResponse(status, payload, all_headers, delay))

    def queue_stream(
        self, events: list[bytes], *, piece_delay: float = 0.0, gate: threading.Event | None = None
    ) -> None:
        """Queue a streamed reply (`stream_events(...)`), its events written `piece_delay` apart; with `gate`,
        the rest waits after the first two events until the gate is set (a test proves a piece arrived early)."""
        headers = {"Content-Type": "text/event-stream"}
        response = ScriptedResponse(200, b"", headers, pieces=tuple(events), piece_delay=piece_delay, gate=gate)
        with self._lock:
            self._queue.append(response)

    def queue_error(self, status: int, message: str, *, headers: dict[str, str] | None = None) -> None:
        """Queue an error in OpenAI's shape: `{"error": {"message", "type", "code"}}`."""
        body = {"error": {"message": message, "type": "fake_error", "code": None, "param": None}}
        self.queue(body, status=status, headers=headers)

    def queue_key_echo(self, status: int = 401, *, raw: str | None = None) -> None:
        """Queue a reply quoting the bearer the request sent, as OpenAI-compatible gateways do on a 401:
        OpenAI's JSON error shape, or `raw` text with `{key}` in it."""
        if raw is not None:
            self.queue(raw=raw, status=status)
        else:
            message = "Incorrect API key provided: {key}. You can find your API key at https://platform.openai.com."
            error = {"message": message, "type": "invalid_request_error", "code": "invalid_api_key", "param": None}
            self.queue({"error": error}, status=status)
        with self._lock:
            self._queue[-1] = ScriptedResponse(**{**self._queue[-1].__dict__, "echo_key": True})

    def close(self) -> None:
        self._closing.set()  # wakes handlers sleeping on a `delay`
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> FakeOpenAIServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _next(self, request: ReceivedRequest) -> ScriptedResponse:
        with self._lock:
            self.requests.append(request)
            if self._queue:
                return self._queue.popleft()
        body = json.dumps({"error": {"message": "fake server: no scripted response queued"}}).encode()
        return ScriptedResponse(599, body, {"Content-Type": "application/json"})

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw_body = self.rfile.read(length)
                if self.path != CHAT_PATH:
                    self._send(ScriptedResponse(404, b'{"error": {"message": "not found"}}', {}))
                    return
                request = ReceivedRequest(self.path, dict(self.headers.items()), raw_body)
                response = server._next(request)
                if response.echo_key:
                    key = self.headers.get("Authorization", "").removeprefix("Bearer ")
                    response = ScriptedResponse(
                        response.status, response.body.replace(b"{key}", key.encode()), response.headers
                    )
                if response.delay and server._closing.wait(response.delay):
                    return
                self._send(response)

            def _send(self, response: ScriptedResponse) -> None:
                if response.pieces:
                    self._send_pieces(response)
                    return
                try:
                    self.send_response(response.status)
                    for name, value in response.headers.items():
                        self.send_header(name, value)
                    self.send_header("Content-Length", str(len(response.body)))
                    self.end_headers()
                    self.wfile.write(response.body)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (a timeout test); nothing to report

            def _send_pieces(self, response: ScriptedResponse) -> None:
                try:
                    self.send_response(response.status)
                    for name, value in response.headers.items():
                        self.send_header(name, value)
                    self.send_header("Connection", "close")  # the body ends when the connection does
                    self.end_headers()
                    for i, piece in enumerate(response.pieces):
                        while i == 2 and response.gate is not None and not response.gate.wait(0.05):
                            if server._closing.is_set():
                                return
                        self.wfile.write(piece)
                        self.wfile.flush()
                        if response.piece_delay and server._closing.wait(response.piece_delay):
                            return
                    self.close_connection = True
                except (BrokenPipeError, ConnectionResetError):
                    pass

            def log_message(self, format: str, *args: Any) -> None:
                pass

        return Handler
