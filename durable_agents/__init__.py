"""Moved: `duragent` is `duragent` since 0.2; this name works from a source checkout until 0.3 (CHANGELOG.md).

Not in the wheel: it adds only `duragent` and `agentic`."""

from duragent._moved import moved_package

moved_package(__name__, "duragent")
