"""Who decides an approval, in both command lines (`starter.py` and `job`): `approve`/`deny`'s arguments and
the approver's key that signs the decision. Engine-neutral: `job` imports it without loading Temporal's client."""

from __future__ import annotations

import argparse
from pathlib import Path

from agentic.signing import ApproverKey
from duragent._config.approver_keys import load_private_key
from duragent._config.settings import Settings
from duragent._ops.cli.arguments import NEEDS_A_NAME, add_decision_arguments
from duragent._ops.cli.output import CliError


def signer(args: argparse.Namespace, settings: Settings) -> ApproverKey | None:
    """The approver's key (`--key-file`, else the settings' AGENT_APPROVER_KEY_FILE; None without either), with
    `args.by` set to who decides: `--by`, else the key's name. Both command lines' `approve`/`deny` take them so."""
    path = Path(args.key_file) if args.key_file else settings.approver_key_file
    key = load_private_key(path) if path else None
    by = args.by if args.by is not None else (key.name if key else "")
    if not by.strip():
        raise CliError(f"--by {NEEDS_A_NAME}", code=2)
    if key is not None and key.name != by:
        raise CliError(f"the key file is {key.name}'s, not {by}'s: a decision is signed by its approver", code=2)
    args.by = by
    return key


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """`approve`/`deny`'s arguments in both command lines (duragent/_ops/cli/arguments.py), and the key that signs a
    decision."""
    add_decision_arguments(parser)
    parser.add_argument(
        "--key-file",
        help="your approver key (`name:base64`; or AGENT_APPROVER_KEY_FILE): signs the decision; --by defaults "
        "to its name",
    )
