"""Loopback servers for the providers whose API is chat completions in their own dialect (Groq, Mistral), on
`ProviderServer` (tests/support/provider_servers.py): real HTTP on 127.0.0.1, responses queued in order.

- Groq (`POST /openai/v1/chat/completions`): OpenAI's shape; usage in the body, and in a streamed reply on the
  last chunk's `x_groq.usage`; errors `{"error": {"message", "type", "code"}}` (a 429 is type `tokens` or
  `requests`, code `rate_limit_exceeded`, with `retry-after`).
- Mistral (`POST /v1/chat/completions`): tool call ids of 9 letters and digits, arguments as a JSON string, a
  streamed tool call in one delta; errors `{"object": "error", "message", "type", "param", "code"}` with
  Mistral's numeric codes as strings, and a 401 as `{"message": "Unauthorized", "request_id"}`.

A reply is `(text or None, [chat_call(...), ...])`, sent whole or streamed as the request asks (`stream`).
"""

from __future__ import annotations

import json
from typing import Any

from tests.support.provider_servers import ProviderServer, Received, Scripted

Reply = tuple[str | None, list[dict[str, Any]]]


def chat_call(call_id: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}


class ChatServer(ProviderServer):
    model = ""
    usage: dict[str, Any] = {"prompt_tokens": 1000, "completion_tokens": 100, "total_tokens": 1100}

    def queue_message(self, content: str | None, tool_calls: list[dict[str, Any]] | None = None, **kw: Any) -> None:
        self.queue_reply((content, tool_calls or []), **kw)

    def render(self, request: Received, scripted: Scripted) -> Scripted:
        content, calls = scripted.reply
        if request.json.get("stream"):
            chunks = [*self.chunks(content, calls), "[DONE]"]
            events = tuple(f"data: {c if isinstance(c, str) else json.dumps(c)}\n\n".encode() for c in chunks)
            return Scripted(200, b"", {"Content-Type": "text/event-stream"}, events=events)
        message: dict[str, Any] = {"role": "assistant", "content": content}
        if calls:
            message["tool_calls"] = calls
        body = {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "created": 1733443200,
            "model": self.model,
            "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if calls else "stop"}],
            "usage": self.usage,
        }
        return Scripted(200, json.dumps(body).encode(), {"Content-Type": "application/json"})

    def chunk(self, delta: dict[str, Any], finish: str | None = None, **extra: Any) -> dict[str, Any]:
        return {
            "id": "chatcmpl-1",
            "object": "chat.completion.chunk",
            "created": 1733443200,
            "model": self.model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
            **extra,
        }

    def chunks(self, content: str | None, calls: list[dict[str, Any]]) -> list[Any]:
        raise NotImplementedError


class GroqServer(ChatServer):
    model = "llama-3.3-70b-versatile"
    usage = {
        "queue_time": 0.01,
        "prompt_tokens": 1000,
        "prompt_time": 0.02,
        "completion_tokens": 100,
        "completion_time": 0.05,
        "total_tokens": 1100,
        "total_time": 0.07,
    }

    def chunks(self, content: str | None, calls: list[dict[str, Any]]) -> list[Any]:
        out: list[Any] = [self.chunk({"role": "assistant", "content": ""}, x_groq={"id": "req_01"})]
        if content:
            half = len(content) // 2
            out += [self.chunk({"content": piece}) for piece in (content[:half], content[half:])]
        for index, call in enumerate(calls):
            arguments = call["function"]["arguments"]
            half = len(arguments) // 2
            started = {"index": index, "id": call["id"], "type": "function"}
            out.append(
                self.chunk(
                    {"tool_calls": [{**started, "function": {"name": call["function"]["name"], "arguments": ""}}]}
                )
            )
            for piece in (arguments[:half], arguments[half:]):
                out.append(self.chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]}))
        finish = "tool_calls" if calls else "stop"
        out.append(self.chunk({}, finish, x_groq={"id": "req_01", "usage": self.usage}))
        return out

    def queue_error(self, status: int, kind: str, message: str, *, code: str | None = None, **kw: Any) -> None:
        self.queue_json({"error": {"message": message, "type": kind, "code": code}}, status=status, **kw)

    def queue_key_echo(self) -> None:
        self.queue_error(401, "invalid_request_error", "Invalid API Key: {key}", code="invalid_api_key", echo_key=True)


class MistralServer(ChatServer):
    model = "mistral-large-latest"

    def chunks(self, content: str | None, calls: list[dict[str, Any]]) -> list[Any]:
        out: list[Any] = [self.chunk({"role": "assistant", "content": ""})]
        if content:
            half = len(content) // 2
            out += [self.chunk({"content": piece}) for piece in (content[:half], content[half:])]
        if calls:  # Mistral streams each tool call whole, in one delta
            out.append(self.chunk({"tool_calls": [{**c, "index": i} for i, c in enumerate(calls)]}))
        out.append(self.chunk({}, "tool_calls" if calls else "stop", usage=self.usage))
        return out

    def queue_error(self, status: int, kind: str, message: str, *, code: str | None = None, **kw: Any) -> None:
        body = {"object": "error", "message": message, "type": kind, "param": None, "code": code}
        self.queue_json(body, status=status, **kw)

    def queue_key_echo(self) -> None:
        self.queue_json({"message": "Unauthorized: {key}", "request_id": "6a1f0c2e"}, status=401, echo_key=True)
