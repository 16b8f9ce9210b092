"""Request limits every route shares: a bounded body (413 past it, before any parsing), and JSON-only POSTs
(415 otherwise) — a cross-site page can send a form or `text/plain` without a CORS preflight, never
`application/json`, and this server grants no preflight."""

from __future__ import annotations

import json
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse

from ops.http.errors import ApiError

MAX_BODY_BYTES = 64 * 1024


class UnsupportedMediaType(ApiError):
    status_code = 415


def require_json(request: Request) -> None:
    """A FastAPI dependency for POSTs that change something."""
    media_type = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    if media_type != "application/json":
        raise UnsupportedMediaType("POST needs Content-Type: application/json")


class BodyLimit:
    """ASGI middleware: reads at most `max_bytes` of a request body, answering 413 past that (by the declared
    Content-Length at once, or as a chunked body grows); the app then reads the body as usual."""

    def __init__(self, app: Any, max_bytes: int = MAX_BODY_BYTES) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["method"] in ("GET", "HEAD", "OPTIONS"):
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or [])
        declared = headers.get(b"content-length", b"").decode("latin-1").strip()
        if declared.isdigit() and int(declared) > self.max_bytes:
            await self._too_large(scope, receive, send)
            return
        body, more = b"", True
        while more:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            body += message.get("body", b"")
            more = message.get("more_body", False)
            if len(body) > self.max_bytes:
                await self._too_large(scope, receive, send)
                return
        replayed = False

        async def replay() -> Any:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)

    async def _too_large(self, scope: Any, receive: Any, send: Any) -> None:
        error = {"error": f"the request body is larger than {self.max_bytes} bytes"}
        await JSONResponse(error, status_code=413, headers={"connection": "close"})(scope, receive, send)


def field_errors(errors: list[Any]) -> dict[str, Any]:
    """A 422 body naming each field: `{"error": "body.agent: Field required", "fields": [...]}`."""
    fields = []
    for error in errors:
        location = [str(part) for part in error.get("loc", ())]
        message = error.get("msg", "invalid")
        if error.get("type") == "json_invalid":  # loc is (body, position): say so instead of naming a field
            position = location[1] if len(location) > 1 else "?"
            location, message = (
                ["body"],
                f"malformed JSON at character {position} ({error.get('ctx', {}).get('error', message)})",
            )
        fields.append({"field": ".".join(location), "message": message})
    summary = "; ".join(f"{f['field']}: {f['message']}" for f in fields) or "invalid request"
    return json.loads(json.dumps({"error": summary, "fields": fields}, default=str))


def unreadable_body(cause: BaseException) -> dict[str, Any]:
    """A 422 body for a JSON body the parser gave up on before any field (the framework's bare 400 "There
    was an error parsing the body"): bytes that are not UTF-8, nesting too deep, a number too long."""
    if isinstance(cause, UnicodeDecodeError):
        why = f"not UTF-8 (byte {cause.start})"
    elif isinstance(cause, RecursionError):
        why = "nested too deeply"
    else:
        why = str(cause).split("; use sys.set_int_max_str_digits", 1)[0] or type(cause).__name__
    message = f"malformed JSON: {why}"
    return {"error": f"body: {message}", "fields": [{"field": "body", "message": message}]}
