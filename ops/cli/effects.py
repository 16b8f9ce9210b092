"""`effects`: the rows of the effects ledger — what really happened, once per idempotency key."""

from __future__ import annotations

import argparse

from agentic.ledger import EffectsLedger
from ops.cli.output import CliError, emit
from ops.settings import Settings


def cmd_effects(args: argparse.Namespace, settings: Settings) -> int:
    if not settings.ledger_path.exists():
        raise CliError(f"no effects ledger at {settings.ledger_path} (set AGENT_LEDGER to the worker's ledger)")
    rows = EffectsLedger(settings.ledger_path).effects(args.run)
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
    lines = [f"{e['at']}  {e['run_id']}  {e['tool']:<16} {e['key']}  {e['result']}" for e in data]
    emit(args.json, data, "\n".join(lines) if lines else "no effects")
    return 0
