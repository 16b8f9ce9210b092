"""The argument types and builders both command lines are made of (`starter.py` for Temporal, `job` for the
checkpoint engine), so that one flag means one thing, takes the same values, has the same default and gets
the same one-line message in both, at parse time, before anything is connected to or started.

Types: a run id (not blank, at most 1,000 characters: Temporal's limit on a workflow id); who decides
(`--by`: not blank, surrounding spaces stripped, as it is recorded in the audit trail); an arguments hash
prefix (`--hash`); a TCP port; whole numbers and numbers that must be positive or not negative.

Shapes, each written once: `Commands` (every command takes `--json` and `--debug`), a run id as `RUN_ID` or
`--id RUN_ID`, an agent as `AGENT` or `--agent AGENT` (`--scenario`, its old name), `--agents MODULE`, and a
decision (`RUN --by NAME --hash H`). `resolve` merges what was given either way once parsing is done (the
parser in duragent/_ops/cli/boundary.py calls it); `resolve_agents` names the agents modules once the settings are read.
"""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Callable, Sequence
from typing import Any

from duragent._config.agent_modules import module_names
from duragent._config.settings import API_TOKENS_ENV, Settings

MAX_RUN_ID = 1000  # Temporal refuses longer workflow ids
HASH_MIN = 8  # characters of an arguments hash a person must copy for `--hash`
NEEDS_A_NAME = "needs a name: it is recorded in the audit trail"

# The runs API's port (`starter.py serve`, `job serve`): here, so parsing a command line imports no HTTP stack.
DEFAULT_PORT = 8765


# -- types ------------------------------------------------------------------------------------------------


def run_id(text: str) -> str:
    if not text.strip():
        raise argparse.ArgumentTypeError("a run id cannot be empty")
    if len(text) > MAX_RUN_ID:
        raise argparse.ArgumentTypeError(f"a run id is at most {MAX_RUN_ID} characters, got {len(text)}")
    return text


def approver(text: str) -> str:
    name = text.strip()
    if not name:
        raise argparse.ArgumentTypeError(NEEDS_A_NAME)
    return name


def hash_prefix(text: str) -> str:
    given = text.strip().lower()
    if len(given) < HASH_MIN:
        raise argparse.ArgumentTypeError(f"give at least {HASH_MIN} characters of the hash you reviewed")
    return given


def port_number(text: str) -> int:
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a port number, got {text!r}") from None
    if not 1 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"a port is 1-65535, got {port}")
    return port


def positive_int(text: str) -> int:
    value = _number(text, int, "a whole number")
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {text}")
    return value


def non_negative_int(text: str) -> int:
    value = _number(text, int, "a whole number")
    if value < 0:
        raise argparse.ArgumentTypeError(f"must not be negative, got {text}")
    return value


def positive_float(text: str) -> float:
    value = _number(text, float, "a number")
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be more than 0, got {text}")
    return value


def non_negative_float(text: str) -> float:
    value = _number(text, float, "a number")
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"must not be negative, got {text}")
    return value


def _number(text: str, kind: type, what: str) -> Any:
    try:
        value = kind(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}") from None
    if kind is float and value != value:  # NaN
        raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}")
    return value


# -- shapes -----------------------------------------------------------------------------------------------


class Commands:
    """A command line's subcommands. Each takes `--json` and `--debug`, plus what `common` adds (`job`: its
    store and ledger), and names its handler."""

    def __init__(
        self, root: argparse.ArgumentParser, common: Callable[[argparse.ArgumentParser], None] | None = None
    ) -> None:
        self._commands = root.add_subparsers(dest="command", required=True)
        self._common = common

    def add(self, name: str, handler: Callable[..., object], help: str) -> argparse.ArgumentParser:
        sub = self._commands.add_parser(name, help=help, description=help)
        sub.add_argument("--json", action="store_true", help="machine-readable output")
        sub.add_argument("--debug", action="store_true", help="show the traceback of an unexpected error")
        if self._common is not None:
            self._common(sub)
        sub.set_defaults(handler=handler, command_parser=sub)  # its errors name it: `see job run --help`
        return sub


def handler_in(module: str, name: str) -> Callable[[argparse.Namespace, Settings], object]:
    """A command's handler, imported when that command runs: the demo's module brings the OpenAI client and
    the HTTP servers bring FastAPI, a second of imports that every other command would pay at each start."""

    def run(args: argparse.Namespace, settings: Settings) -> object:
        return getattr(importlib.import_module(module), name)(args, settings)

    return run


def add_run_id(parser: argparse.ArgumentParser, *, help: str = "the run id", required: bool = True) -> None:
    """`RUN_ID` or `--id RUN_ID`: the same run, either way (the two command lines grew up with one each)."""
    parser.add_argument("run_id_positional", nargs="?", type=run_id, metavar="RUN_ID", help=help)
    parser.add_argument("--id", dest="run_id", type=run_id, help=f"{help} (the same as RUN_ID)")
    parser.set_defaults(merge_run_id=(parser, required))  # the (sub)command's parser: its errors name it


def add_agent(parser: argparse.ArgumentParser) -> None:
    """`AGENT` or `--agent AGENT` (or `--scenario AGENT`, the name `job` used first): the agent, by name."""
    parser.add_argument(
        "agent_positional",
        nargs="?",
        metavar="AGENT",
        help="the agent, by name (found in --agents MODULE)",
    )
    parser.add_argument("--agent", "--scenario", dest="agent", metavar="AGENT", help="the same as AGENT")
    parser.set_defaults(merge_agent=(parser, True))


def add_agents_modules(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--agents",
        action="append",
        metavar="MODULE",
        help="a module exporting `agents` (repeatable; default: AGENT_MODULES)",
    )


def add_decision_arguments(parser: argparse.ArgumentParser) -> None:
    """`approve`/`deny RUN --by NAME [--hash H | --yes] [--call ID] [--reason TEXT]`."""
    add_run_id(parser)
    parser.add_argument("--call", help="the call to decide, when several wait (default: the run's only one)")
    parser.add_argument("--by", type=approver, help="who decides (recorded in the audit trail)")
    parser.add_argument("--reason", help="why (recorded, and told to the model on a denial)")
    parser.add_argument(
        "--hash", type=hash_prefix, help=f"the arguments hash you reviewed (at least its first {HASH_MIN} characters)"
    )
    parser.add_argument("--yes", action="store_true", help="approve the arguments printed, without --hash")


# -- after parsing ----------------------------------------------------------------------------------------


def resolve(args: argparse.Namespace) -> None:
    """Merge what may be given two ways, naming the subcommand in an error."""
    _merge(args, "merge_run_id", "run_id", "run_id_positional", two="two run ids: {!r} and --id {!r}; give one")
    _merge(args, "merge_agent", "agent", "agent_positional", two="two agents: {!r} and --agent {!r}; give one")
    if hasattr(args, "command_parser"):
        del args.command_parser


def resolve_agents(args: argparse.Namespace, settings: Settings, default: Sequence[str]) -> None:
    """A command's `--agents`: the flags, else the settings' AGENT_MODULES, else the entry point's `default`."""
    if hasattr(args, "agents"):
        args.agents = module_names(args.agents, settings.agent_modules, default=default)


_REQUIRED = {
    "run_id": "the run id is required: RUN_ID or --id RUN_ID",
    "agent": "which agent? give its name: `run AGENT` or `run --agent AGENT`",
}


def _merge(args: argparse.Namespace, marker: str, flag_dest: str, positional_dest: str, *, two: str) -> None:
    if getattr(args, marker, None) is None:
        return
    parser, required = getattr(args, marker)
    given, flagged = getattr(args, positional_dest), getattr(args, flag_dest)
    if given is not None and flagged is not None and given != flagged:
        parser.error(two.format(given, flagged))
    setattr(args, flag_dest, flagged or given)
    if required and getattr(args, flag_dest) is None:
        parser.error(_REQUIRED[flag_dest])
    delattr(args, positional_dest)
    delattr(args, marker)


def unrecognized(extras: list[str], args: argparse.Namespace) -> str:
    """argparse's message, with the way to pass an agent's own option where the command takes `--option`
    (`--batch-size 3` is `--option batch_size=3`)."""
    message = f"unrecognized arguments: {' '.join(extras)}"
    flag = next((extra for extra in extras if extra.startswith("--")), None)
    if flag is not None and hasattr(args, "option"):
        key = flag[2:].split("=", 1)[0].replace("-", "_")
        message += f" (an option of the agent? --option {key}=VALUE)"
    return message


def add_serve_arguments(
    parser: argparse.ArgumentParser,
    *,
    port: int = DEFAULT_PORT,
    token_env: str = API_TOKENS_ENV,
    without_auth: str = "anyone who reaches the port may read, start, cancel and approve",
) -> None:
    parser.add_argument("--host", default="127.0.0.1", help="the address to listen on (default: loopback only)")
    parser.add_argument("--port", type=port_number, default=port)
    parser.add_argument(
        "--allowed-host", action="append", default=[], help="a Host name besides localhost to answer (repeatable)"
    )
    parser.add_argument(
        "--insecure-no-auth",
        action="store_true",
        help=f"serve without {token_env}: {without_auth} (loopback only)",
    )
    parser.add_argument("--secure-cookie", action="store_true", help="mark the session cookie Secure (HTTPS)")


def add_stream_arguments(parser: argparse.ArgumentParser) -> None:
    """The runs API's event streams (duragent/_ops/http/streams.py: None there means its default, 300 s)."""
    parser.add_argument(
        "--stream-seconds",
        type=positive_float,
        help="how long an event stream lasts before its client opens it again (default 300)",
    )


def add_codec_server_arguments(parser: argparse.ArgumentParser) -> None:
    add_serve_arguments(
        parser, port=8081, token_env="AGENT_CODEC_AUTH_TOKEN", without_auth="anyone who reaches the port decrypts"
    )
    parser.add_argument(
        "--cors-origin", action="append", help="an origin the Web UI is served from (repeatable)", default=None
    )
    parser.add_argument(
        "--namespace", help="the namespace of requests that name none (default: TEMPORAL_NAMESPACE, else default)"
    )
