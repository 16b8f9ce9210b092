"""The retention flags of both command lines, `starter.py prune` (Temporal runs, duragent/_ops/cli/prune.py) and `job
prune`
(checkpoints), checked the same way: nothing is deleted without `--yes` (a typo in a retention must not delete a
history), a retention is more than 0 days, and `--all` (every closed run, whatever its age) needs `--yes`.

A module of its own so that `job` reads them without importing the Temporal prune (and with it the client).
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from duragent._ops.cli.arguments import positive_float
from duragent._ops.cli.output import CliError
from duragent._ops.retention.policy import COMPLETED_DAYS, FAILED_DAYS, Policy


def add_prune_arguments(parser: argparse.ArgumentParser) -> None:
    """The retention flags of both command lines (`starter.py prune`, `job prune`)."""
    parser.add_argument("--archive-dir", type=Path, help="where archives go (default: AGENT_DATA_DIR/archive)")
    parser.add_argument(
        "--completed-days",
        type=positive_float,
        default=COMPLETED_DAYS,
        help=f"days a run that answered, or was undone, is kept ({COMPLETED_DAYS:g})",
    )
    parser.add_argument(
        "--failed-days", type=positive_float, default=FAILED_DAYS, help=f"days any other run is kept ({FAILED_DAYS:g})"
    )
    parser.add_argument("--all", action="store_true", help="every finished run, whatever its age (needs --yes)")
    parser.add_argument("--yes", action="store_true", help="archive and delete (without it: only list them)")
    parser.add_argument("--dry-run", action="store_true", help="only list them (the default without --yes)")
    parser.add_argument("--now", help="ISO time to prune as of (default: now)")


@dataclass(frozen=True)
class PruneRequest:
    now: datetime
    policy: Policy
    dry_run: bool


def prune_request(args: argparse.Namespace) -> PruneRequest:
    """The flags checked together: a dry run unless --yes, and --all only with --yes."""
    if args.dry_run and args.yes:
        raise CliError("--dry-run and --yes contradict each other: choose one", code=2)
    if args.all and not args.yes:
        raise CliError("--all prunes every finished run, whatever its age: add --yes to do it", code=2)
    policy = Policy(0.0, 0.0) if args.all else Policy(args.completed_days, args.failed_days)
    return PruneRequest(_now(args.now), policy, dry_run=not args.yes)


def _now(text: str | None) -> datetime:
    if not text:
        return datetime.now(UTC)
    try:
        at = datetime.fromisoformat(text)
    except ValueError:
        raise CliError(f"--now: not an ISO time: {text!r}", code=2) from None
    return at if at.tzinfo else at.replace(tzinfo=UTC)
