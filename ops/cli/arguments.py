"""Argument types and shapes both command lines share (`starter.py`, `job`), so a bad value gets the same
one-line message in both, at parse time, before anything is connected to or started.

- a run id: not blank, at most 1,000 characters (Temporal's limit on a workflow id);
- who decides (`--by`): not blank, surrounding spaces stripped (it is recorded in the audit trail);
- a TCP port: 1-65535;
- a run id given positionally (`status RUN`) or as `--id RUN`, either way, in every command that takes one.
"""

from __future__ import annotations

import argparse

MAX_RUN_ID = 1000  # Temporal refuses longer workflow ids


def run_id(text: str) -> str:
    if not text.strip():
        raise argparse.ArgumentTypeError("a run id cannot be empty")
    if len(text) > MAX_RUN_ID:
        raise argparse.ArgumentTypeError(f"a run id is at most {MAX_RUN_ID} characters, got {len(text)}")
    return text


def approver(text: str) -> str:
    name = text.strip()
    if not name:
        raise argparse.ArgumentTypeError("needs a name: it is recorded in the audit trail")
    return name


def port_number(text: str) -> int:
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a port number, got {text!r}") from None
    if not 1 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"a port is 1-65535, got {port}")
    return port


def add_run_id(parser: argparse.ArgumentParser, *, help: str = "the run id") -> None:
    """`RUN_ID` or `--id RUN_ID`: the same run, either way (the two command lines grew up with one each).
    `resolve_run_id` merges them after parsing; `Parser` calls it."""
    parser.add_argument("run_id_positional", nargs="?", type=run_id, metavar="RUN_ID", help=help)
    parser.add_argument("--id", dest="run_id", type=run_id, help=f"{help} (the same as RUN_ID)")
    parser.set_defaults(merge_run_id=parser)  # the (sub)command's parser: its errors name it


def resolve_run_id(args: argparse.Namespace) -> None:
    parser = getattr(args, "merge_run_id", None)
    if parser is None:
        return
    given = args.run_id_positional
    if given is not None and args.run_id is not None and given != args.run_id:
        parser.error(f"two run ids: {given!r} and --id {args.run_id!r}; give one")
    args.run_id = args.run_id or given
    if args.run_id is None:
        parser.error("the run id is required: RUN_ID or --id RUN_ID")
    del args.run_id_positional, args.merge_run_id
