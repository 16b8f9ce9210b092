"""`python -m tests.mutants audit|sweep`: see tests/mutants/__init__.py."""

from __future__ import annotations

import argparse
import sys

import tests.mutants
from duragent._ops.devstack.signals import stop_on_signals
from tests.mutants import audit, sweep


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.mutants", description=(tests.mutants.__doc__ or "").strip())
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    commands = parser.add_subparsers(dest="command", required=True)
    raw = argparse.RawDescriptionHelpFormatter
    audit.configure(
        commands.add_parser(
            "audit", help="the mutation audits' mutants", description=audit.__doc__, formatter_class=raw
        )
    )
    sweep.configure(
        commands.add_parser("sweep", help="single-token mutants", description=sweep.__doc__, formatter_class=raw)
    )
    args = parser.parse_args(argv)
    return int(args.handler(args))


if __name__ == "__main__":
    with stop_on_signals():
        sys.exit(main())
