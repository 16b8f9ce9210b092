"""How commands speak: plain lines for people, one JSON document with `--json`, one clear line on error."""

from __future__ import annotations

import json
import re
import sys
from typing import Any

# C0/C1 control characters (but tab and newline), the line/paragraph separators and the bidi controls
# (embeddings, overrides, isolates, marks): text from a model or a tool must not be able to move the cursor or
# reorder what an operator reads (an approval prompt above all). One line: tab and newline too.
_UNPRINTABLE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
_UNPRINTABLE_ONE_LINE = re.compile(_UNPRINTABLE.pattern.replace("\x00-\x08\x0b-\x1f", "\x00-\x1f"))


# The name of the command line running, as its user typed it: the installed `duragent`, or the repository's
# `starter.py`. Messages that suggest a next command name it (`command`); set once by the entry point's `main`.
_invoked_as = "duragent"


def invoked_as(prog: str) -> None:
    global _invoked_as
    _invoked_as = prog


def command(rest: str) -> str:
    """`rest` as a command to type: `duragent result RUN`, or `python starter.py result RUN` in the repository."""
    return f"python {_invoked_as} {rest}" if _invoked_as.endswith(".py") else f"{_invoked_as} {rest}"


class CliError(Exception):
    """A failure the user can act on: printed as one line, no traceback, non-zero exit."""

    def __init__(self, message: str, code: int = 1) -> None:
        super().__init__(message)
        self.code = code


def printable(text: object, *, one_line: bool = False) -> str:
    """`text` with control characters shown as escapes (`\\x1b`, `\\u202e`), never interpreted by the
    terminal; with `one_line`, newlines and tabs are escaped too."""
    pattern = _UNPRINTABLE_ONE_LINE if one_line else _UNPRINTABLE
    return pattern.sub(lambda m: m.group().encode("unicode_escape").decode(), str(text))


def emit(as_json: bool, data: Any, text: str | None = None) -> None:
    if as_json:
        print(json.dumps(data, indent=2, sort_keys=True, default=str))
    elif text is not None:
        print(text)


def fail(message: str) -> None:
    print(f"error: {message}", file=sys.stderr)
