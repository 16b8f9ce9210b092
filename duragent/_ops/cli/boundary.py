"""The one error boundary of every command line: `starter.py`, `job`, `worker.py`'s startup,
`python starter.py codec-server`. A known error is one line on stderr (`error: ...`) and the
exit code below; anything else is one line too, plus how to see the traceback (`--debug`, or
`AGENT_DEBUG=1` for a command without the flag).

Exit codes, the same for every command:

    0    done (for `job`: a run that ended completed, compensated or abandoned)
    1    the operation failed: a run failed, Temporal or a store unreachable, a decision rejected,
         a run already ended, a wait timed out (`--timeout`), a port taken
    2    bad input: a flag, an option, an environment variable, an unknown agent, argument bytes that are
         not UTF-8
    3    `job` only: the run's lease is held by another worker, or was lost
    4    `job` only: the checkpoints do not match the code (checkpoint mismatch)
    130  interrupted (Ctrl-C, SIGTERM, SIGHUP)

A known error is one whose class says what it is: `CliError` (with its code), an error carrying an
`exit_code` (the baseline's), or one of the classes mapped below.
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import sys
import traceback
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, NoReturn

from pydantic import ValidationError

from agentic.agent import InvalidOptions
from agentic.signing import ApproverKeyError
from duragent._clean_exit import release_runtimes
from duragent._clean_exit import run as run_to_completion
from duragent._config.agent_modules import AgentModuleError, UnknownAgentName
from duragent._config.codec.keys import KeyConfigError
from duragent._config.connection import ConnectionSettingsError
from duragent._config.settings import Settings
from duragent._errors import AgentClientError, AmbiguousApproval
from duragent._ops.cli.arguments import resolve, resolve_agents, unrecognized
from duragent._ops.cli.output import CliError, fail, printable
from duragent._ops.cli.run_options import RunOptionError
from duragent._stores.errors import StoreUnavailable

BAD_INPUT: tuple[type[BaseException], ...] = (
    RunOptionError,
    InvalidOptions,
    AgentModuleError,
    UnknownAgentName,
    AmbiguousApproval,
    ApproverKeyError,
    ConnectionSettingsError,
    KeyConfigError,
    ValidationError,
)
FAILED: tuple[type[BaseException], ...] = (
    AgentClientError,
    StoreUnavailable,
    sqlite3.Error,
    OSError,
)
DEBUG_ENV = "AGENT_DEBUG"


def explain(exc: BaseException) -> tuple[str, int] | None:
    """(one line, exit code) for a known error; None for anything else (a bug)."""
    if isinstance(exc, CliError):
        return str(exc), exc.code
    code = getattr(exc, "exit_code", None)
    if isinstance(code, int):
        return str(exc), code
    if isinstance(exc, ValidationError):
        first = exc.errors()[0]
        where = ".".join(map(str, first["loc"]))
        return f"invalid input: {where + ': ' if where else ''}{first['msg']}", 2
    if isinstance(exc, BAD_INPUT):
        return str(exc), 2
    if isinstance(exc, OSError) and exc.strerror:
        return (f"{exc.filename}: {exc.strerror}" if exc.filename else exc.strerror), 1
    if isinstance(exc, FAILED):
        return str(exc) or type(exc).__name__, 1
    return None


def run_command(handler: Callable[..., Any], *args: Any, debug: bool = False) -> int:
    """Run a command's handler (sync or async) and turn whatever it raises into one line and an exit code."""
    debug = debug or bool(os.environ.get(DEBUG_ENV))
    try:
        outcome = handler(*args)
        if isinstance(outcome, Awaitable):
            outcome = run_to_completion(outcome)  # type: ignore[arg-type]  # asyncio.run, runtimes released
        return int(outcome)  # type: ignore[call-overload]
    except KeyboardInterrupt:
        return 130
    except SystemExit as exc:  # argparse inside a handler, or an explicit exit
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except Exception as exc:
        known = explain(exc)
        if debug:
            traceback.print_exc()
        if known is not None:
            fail(printable(known[0]))
            return known[1]
        hint = "" if debug else f" (run with --debug, or {DEBUG_ENV}=1, for the traceback)"
        fail(printable(f"unexpected {type(exc).__name__}: {exc}{hint}"))
        return 1


def load_settings(args: argparse.Namespace | None = None) -> Settings:
    """The settings from the environment, read once per command: a malformed variable is bad input (exit 2),
    named in the message. With the parsed `args`, their `--agents` is resolved too: the flags, else
    AGENT_MODULES, else the parser's `default_agents` (the entry point's choice: starter.py, worker.py, job)."""
    try:
        settings = Settings()
    except ValueError as exc:
        raise CliError(str(exc), code=2) from None
    if args is not None:
        resolve_agents(args, settings, getattr(args, "default_agents", ()))
    return settings


def exit_now(code: int) -> NoReturn:
    """Exit with `code`, cleanly: the Temporal runtimes are released first (a command whose handler ran its
    own event loop included), so no SDK thread is left to abort interpreter shutdown (sdk-python issue 300;
    duragent/_clean_exit.py). Every thread of ours is a daemon: none delays the exit."""
    release_runtimes()
    sys.exit(code)


# -- parsing ----------------------------------------------------------------------------------------


class Parser(argparse.ArgumentParser):
    """argparse, with its errors in the boundary's form: one line naming the command's help, exit 2 (argparse
    would print the whole usage first). Arguments that are not UTF-8 are refused here, naming the flag. After
    parsing, what may be given two ways is merged (duragent/_ops/cli/arguments.py); `--agents` falls back to
    AGENT_MODULES
    once the settings are read (`load_settings`), then to `default_agents`: the entry point's choice."""

    def __init__(self, *args: Any, default_agents: Sequence[str] = (), **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.default_agents = tuple(default_agents)

    def error(self, message: str) -> NoReturn:
        print(f"error: {printable(message)} (see {self.prog} --help)", file=sys.stderr)
        raise SystemExit(2)

    def parse_args(self, args: Sequence[str] | None = None, namespace: Any = None) -> Any:  # type: ignore[override]
        argv = list(sys.argv[1:] if args is None else args)
        for index, arg in enumerate(argv):
            if _not_utf8(arg):
                self.error(f"{_what(argv, index)} is not valid UTF-8")
        parsed, extras = self.parse_known_args(argv, namespace)
        if extras:
            getattr(parsed, "command_parser", self).error(unrecognized(extras, parsed))
        resolve(parsed)
        parsed.default_agents = self.default_agents
        return parsed


def _not_utf8(text: str) -> bool:
    """Python hands bytes that are not UTF-8 over as lone surrogates (PEP 383): they cannot be sent anywhere."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _what(argv: list[str], index: int) -> str:
    arg = argv[index]
    if arg.startswith("--"):
        return arg.split("=", 1)[0].encode("utf-8", "replace").decode()
    if index > 0 and argv[index - 1].startswith("--") and "=" not in argv[index - 1]:
        return argv[index - 1]
    return f"argument {index + 1}"
