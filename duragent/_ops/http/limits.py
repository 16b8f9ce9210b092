"""Request limits: a bounded body for every app we serve (`BodyLimit`, installed by duragent/_ops/http/base.py),
JSON-only POSTs for the runs API (415 otherwise) — a cross-site page can send a form or `text/plain`
without a CORS preflight, never `application/json`, and the runs API grants no preflight — and the 422
bodies for input that is malformed or mistyped."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from starlette.datastructures import Headers
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse

from duragent._ops.http.errors import ApiError

MAX_BODY_BYTES = 64 * 1024


class UnsupportedMediaType(ApiError):
    status_code = 415


def require_json(request: Request) -> None:
    """A FastAPI dependency for POSTs that change something."""
    media_type = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    if media_type != "application/json":
        raise UnsupportedMediaType("POST needs Content-Type: application/json")


class BodyTooLarge(HTTPException):
    """An HTTPException, so the framework's own body reading passes it on as it is, to the one error shape."""

    def __init__(self, max_bytes: int) -> None:
        # The rest is never read: the connection cannot carry another request.
        super().__init__(413, f"the request body is larger than {max_bytes} bytes", {"connection": "close"})


class BodyLimit:
    """ASGI middleware: a request body of at most `max_bytes` (`paths`: a smaller bound for a path). Past
    it, 413 — at once by the declared Content-Length, or as a chunked body grows. Nothing is read ahead:
    the app reads the body when it asks for it (the codec endpoint only after the token check)."""

    def __init__(self, app: Any, max_bytes: int = MAX_BODY_BYTES, paths: Mapping[str, int] | None = None) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.paths = dict(paths or {})

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = self.paths.get(scope["path"], self.max_bytes)
        declared = Headers(scope=scope).get("content-length", "").strip()
        if declared.isdigit() and int(declared) > limit:
            too_large = BodyTooLarge(limit)
            answer = JSONResponse({"error": too_large.detail}, status_code=413, headers=too_large.headers)
            await answer(scope, receive, send)
            return
        received = 0

        async def bounded() -> Any:
            nonlocal received
            message = await receive()
            received += len(message.get("body", b""))
            if received > limit:
                raise BodyTooLarge(limit)
            return message

        await self.app(scope, bounded, send)


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
