"""Request limits the runs API's routes share: a bounded body (`MAX_BODY_BYTES`, enforced by FastAPI's
`max_body_size`, set in ops/http/base.py), JSON-only POSTs (415 otherwise) — a cross-site page can send a
form or `text/plain` without a CORS preflight, never `application/json`, and the runs API grants no
preflight — and the 422 bodies for input that is malformed or mistyped."""

from __future__ import annotations

import json
from typing import Any

from starlette.requests import Request

from ops.http.errors import ApiError

MAX_BODY_BYTES = 64 * 1024


class UnsupportedMediaType(ApiError):
    status_code = 415


def require_json(request: Request) -> None:
    """A FastAPI dependency for POSTs that change something."""
    media_type = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    if media_type != "application/json":
        raise UnsupportedMediaType("POST needs Content-Type: application/json")


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
