"""0.1's `python -m ops....` commands, each now a subcommand of `duragent` (`python starter.py` in the repo)."""

from __future__ import annotations

import sys

from duragent.ops.cli import starter
from duragent.ops.cli.boundary import exit_now


def run_moved(old: str, subcommand: str, argv: list[str]) -> None:
    """Warn in one line, then run the subcommand with the same arguments; exits with its code."""
    print(f"warning: `python -m {old}` is now `duragent {subcommand}`; the old command goes in 0.3", file=sys.stderr)
    exit_now(starter.main([subcommand, *argv]))
