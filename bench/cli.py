"""`python -m bench SUBCOMMAND`: a registry of subcommands, each in its own module.

To add one: write a module that calls
`register(Command(name, help, configure, run))` at import, and list it in `COMMAND_MODULES`.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable
from dataclasses import dataclass

from duragent._ops.devstack.signals import stop_on_signals


@dataclass(frozen=True)
class Command:
    name: str
    help: str
    configure: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]


COMMANDS: dict[str, Command] = {}

# Modules whose import registers subcommands, in the order `--help` lists them.
COMMAND_MODULES = [
    "bench.commands",
    "bench.chaos.command",
    "bench.chaos.net_command",
    "bench.history",
    "bench.real_model",
    "bench.eval",
    "bench.delegation",
    "bench.http_progress",
    "bench.live",
    "bench.knobs",
    "bench.profile",
    "bench.release",
    "bench.rpc_counts",
    "bench.peers.command",
    "bench.conversations",
]


def register(command: Command) -> Command:
    if command.name in COMMANDS:
        raise ValueError(f"a bench subcommand named {command.name!r} is already registered")
    COMMANDS[command.name] = command
    return command


def parser() -> argparse.ArgumentParser:
    for module in COMMAND_MODULES:
        importlib.import_module(module)
    root = argparse.ArgumentParser(prog="python -m bench", description=(sys.modules["bench"].__doc__ or "").strip())
    root.formatter_class = argparse.RawDescriptionHelpFormatter
    subcommands = root.add_subparsers(dest="command", required=True)
    for command in COMMANDS.values():
        sub = subcommands.add_parser(command.name, help=command.help, description=command.help)
        command.configure(sub)
        sub.set_defaults(handler=command.run)
    return root


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    # The harnesses start dev servers and workers in their own sessions; SIGTERM/SIGHUP must stop them too.
    try:
        with stop_on_signals():
            return int(args.handler(args))
    except KeyboardInterrupt as exc:
        print(f"bench {args.command}: interrupted ({exc or 'Ctrl-C'}); stopped what it started", file=sys.stderr)
        return 130
