"""A secret from the environment or from a file: `NAME=value`, or `NAME_FILE=/run/secrets/...` (how container
secrets arrive). One or the other; the messages never contain the value."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path


def env_or_file(env: Mapping[str, str], name: str, file_name: str, error: type[Exception]) -> tuple[str, str] | None:
    """(text, where it came from) — or None when neither variable is set. Raises `error` if both are set
    or the file cannot be read."""
    text = env.get(name, "").strip()
    path = env.get(file_name, "").strip()
    if text and path:
        raise error(f"set {name} or {file_name}, not both")
    if text:
        return text, name
    if path:
        try:
            return Path(path).read_text(), f"{file_name} ({path})"
        except OSError as exc:
            raise error(f"{file_name}: cannot read {path}: {exc.strerror}") from None
    return None
