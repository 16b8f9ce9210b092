"""A secret given as a value or as a file: `NAME=value`, or `NAME_FILE=/run/secrets/...` (how container secrets
arrive). `Settings` reads both variables; this checks that at most one is set and reads the file. The messages
never contain the value."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path


def value_or_file(
    value: str | None, path: Path | None, name: str, file_name: str, error: type[Exception]
) -> tuple[str, str] | None:
    """(text, where it came from) — or None when neither is set. Raises `error` (naming the variables) if both
    are set or the file cannot be read."""
    text = (value or "").strip()
    if text and path is not None:
        raise error(f"set {name} or {file_name}, not both")
    if text:
        return text, name
    if path is not None:
        try:
            return path.read_text(), f"{file_name} ({path})"
        except OSError as exc:
            raise error(f"{file_name}: cannot read {path}: {exc.strerror}") from None
    return None


def env_or_file(env: Mapping[str, str], name: str, file_name: str, error: type[Exception]) -> tuple[str, str] | None:
    """`value_or_file` for the two variables as `env` has them (where a setting is read: `Settings`, and libpq's
    own PGPASSWORD convention in duragent/_stores/postgres/pool.py)."""
    path = env.get(file_name, "").strip()
    return value_or_file(env.get(name), Path(path) if path else None, name, file_name, error)
