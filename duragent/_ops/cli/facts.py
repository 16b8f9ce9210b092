"""`facts`: what agents remember — list it with its sources, see a key's versions and the audit trail, and
forget everything one source taught. The facts live in the workers' fact store (`AGENT_DATABASE_URL`, else
`AGENT_DATA_DIR/facts.db`), not in Temporal, so this needs no server.

    starter.py facts                                        # namespaces, with how many facts each
    starter.py facts --namespace C-7 [--json]               # the facts, each with its source and writer
    starter.py facts history --namespace C-7 [--key K]      # every version, forgotten ones included
    starter.py facts audit --namespace C-7                  # refused writes and forgotten sources
    starter.py facts forget --namespace C-7 --source "ticket T-1" [--by NAME]

`job facts` is the same command (the same store: AGENT_DATA_DIR, or AGENT_DATABASE_URL).
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from duragent._config.settings import Settings
from duragent._ops.cli.output import CliError, emit, printable
from duragent._stores import configured as stores
from duragent._stores.errors import StoreUnavailable
from duragent._stores.facts import DurableFactStore, FactRecord, SqliteFactStore, check_namespace

ACTIONS = ("list", "history", "audit", "forget")


def memory_namespace(text: str) -> str:
    """An argparse type: a namespace the fact store accepts (not blank, no NUL, at most 200 characters)."""
    try:
        return check_namespace(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def add_facts_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("action", nargs="?", choices=ACTIONS, default="list", help="what to do (default: list)")
    parser.add_argument("--namespace", type=memory_namespace, help="whose memory: a customer, a tenant")
    parser.add_argument("--source", help="forget: the source whose facts are removed, e.g. 'ticket T-1'")
    parser.add_argument("--key", help="history: only this key's versions")
    parser.add_argument("--by", default="operator", help="forget: who forgets, for the audit (default: operator)")


def cmd_facts(args: argparse.Namespace, settings: Settings) -> int:
    if args.action != "list" and args.namespace is None:
        raise CliError(f"facts {args.action} needs --namespace", code=2)
    if args.action == "forget" and not (args.source or "").strip():
        raise CliError("facts forget needs --source (the source whose facts are removed)", code=2)
    store = _store(settings)
    try:
        if args.action == "forget":
            forgotten = store.namespace(args.namespace).forget(args.source, by=args.by)
            emit(args.json, forgotten.model_dump(), _forgot_line(forgotten.model_dump()))
        elif args.action == "audit":
            rows = [row.model_dump() for row in store.namespace(args.namespace).audit()]
            emit(args.json, rows, _lines(rows, _audit_line, f"no audit rows in {args.namespace}"))
        elif args.action == "history":
            records = store.namespace(args.namespace).history(args.key)
            emit(args.json, [r.model_dump() for r in records], _lines(records, _version_lines, "no versions"))
        elif args.namespace is None:
            counts = store.namespaces()
            text = "\n".join(f"{name}: {n} fact{'s' * (n != 1)}" for name, n in counts.items()) or "no facts"
            emit(args.json, counts, printable(text))
        else:
            records = store.namespace(args.namespace).records()
            emit(args.json, [r.model_dump() for r in records], _lines(records, _fact_lines, "no facts"))
    except StoreUnavailable as exc:
        raise CliError(str(exc)) from exc
    except ValueError as exc:  # a source or key the store refuses (blank, too long, NUL)
        raise CliError(str(exc), code=2) from exc
    return 0


def _store(settings: Settings) -> DurableFactStore:
    store = stores.open_facts(settings.database_url, settings.data_dir)
    if isinstance(store, SqliteFactStore) and not store.path.exists():
        # Reading must not create an empty store where the user mistyped the data directory.
        raise CliError(f"no fact store at {store.path} (set AGENT_DATA_DIR to the workers' data directory)")
    return store


def _lines(rows: list[Any], render: Any, empty: str) -> str:
    return "\n".join(printable(line, one_line=True) for row in rows for line in render(row)) or empty


def _fact_lines(record: FactRecord) -> list[str]:
    return [f"{record.key} = {_json(record.value)}", f"    source: {record.source}; {record.origin}"]


def _version_lines(record: FactRecord) -> list[str]:
    state = f"forgotten at {record.forgotten_at} by {record.forgotten_by}" if record.forgotten_at else "kept"
    value = "(erased)" if record.forgotten_at else _json(record.value)
    return [f"#{record.seq} {record.key} = {value}  [{state}]", f"    source: {record.source}; {record.origin}"]


def _audit_line(row: dict[str, Any]) -> list[str]:
    run = f" run {row['run_id']} call {row['call_id']}" if row["run_id"] else ""
    return [f"{row['at']}  {row['action']:<7} by {row['writer']}{run}: {row['detail']}"]


def _forgot_line(forgotten: dict[str, Any]) -> str:
    count = forgotten["count"]
    line = f"forgot {count} fact{'s' * (count != 1)} taught by {forgotten['source']!r} in {forgotten['namespace']}"
    if forgotten["keys"]:
        line += f": {', '.join(forgotten['keys'])}"
    if forgotten["reverted"]:
        line += f" (now from an earlier source: {', '.join(forgotten['reverted'])})"
    return printable(line)


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True)
