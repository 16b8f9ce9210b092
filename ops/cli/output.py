"""How commands speak: plain lines for people, one JSON document with `--json`, one clear line on error."""

from __future__ import annotations

import json
import re
import sys
from typing import Any

# C0/C1 control characters (but tab and newline) and the bidi overrides: text from a model or a tool must
# not be able to move the cursor or reorder what an operator reads (an approval prompt above all).
_UNPRINTABLE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


class CliError(Exception):
    """A failure the user can act on: printed as one line, no traceback, non-zero exit."""

    def __init__(self, message: str, code: int = 1) -> None:
        super().__init__(message)
        self.code = code


def printable(text: str) -> str:
    """`text` with control characters shown as escapes (`\\x1b`), never interpreted by the terminal."""
    return _UNPRINTABLE.sub(lambda m: m.group().encode("unicode_escape").decode(), text)


def emit(as_json: bool, data: Any, text: str | None = None) -> None:
    if as_json:
        print(json.dumps(data, indent=2, sort_keys=True, default=str))
    elif text is not None:
        print(text)


def fail(message: str) -> None:
    print(f"error: {message}", file=sys.stderr)
