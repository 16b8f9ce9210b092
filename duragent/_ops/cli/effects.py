"""`effects [RUN_ID]`: the rows of the effects ledger — what really happened, once per idempotency key. The same
command in both command lines (`job effects` checks first that the run is in its checkpoint store)."""

from __future__ import annotations

import argparse

from duragent._config.settings import Settings
from duragent._ops.cli.arguments import add_run_id, run_id
from duragent._ops.cli.output import CliError, emit, printable
from duragent._stores import configured as stores
from duragent._stores.errors import StoreUnavailable


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_run_id(parser, help="only this run", required=False)
    parser.add_argument("--run", dest="run_id", type=run_id, help="the same as RUN_ID")


def cmd_effects(args: argparse.Namespace, settings: Settings) -> int:
    if not settings.database_url and not settings.ledger_path.exists():
        raise CliError(f"no effects ledger at {settings.ledger_path} (set AGENT_LEDGER to the worker's ledger)")
    try:
        rows = stores.open_ledger(settings.database_url, settings.ledger_path).effects(args.run_id)
    except StoreUnavailable as exc:
        raise CliError(str(exc)) from exc
    data = [
        {
            "key": e.key,
            "tool": e.tool,
            "run_id": e.run_id,
            "at": e.at,
            "compensates": e.compensates,
            "args": e.args,
            "result": e.result,
        }
        for e in rows
    ]
    lines = [
        printable(
            f"{e['at']}  {e['run_id']}  {e['tool']:<16} {e['key']}  {e['result']}"
            + (f"  (undoes {e['compensates']})" if e["compensates"] else ""),
            one_line=True,  # a tool's result is its own text: it cannot forge another effect's line
        )
        for e in data
    ]
    emit(args.json, data, printable("\n".join(lines)) if lines else "no effects")  # tool results: never raw
    return 0
