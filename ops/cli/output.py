"""How commands speak: plain lines for people, one JSON document with `--json`, one clear line on error."""

from __future__ import annotations

import json
import sys
from typing import Any


class CliError(Exception):
    """A failure the user can act on: printed as one line, no traceback, non-zero exit."""

    def __init__(self, message: str, code: int = 1) -> None:
        super().__init__(message)
        self.code = code


def emit(as_json: bool, data: Any, text: str | None = None) -> None:
    if as_json:
        print(json.dumps(data, indent=2, sort_keys=True, default=str))
    elif text is not None:
        print(text)


def fail(message: str) -> None:
    print(f"error: {message}", file=sys.stderr)
