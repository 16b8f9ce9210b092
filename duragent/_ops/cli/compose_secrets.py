"""`python -m duragent._ops.cli.compose_secrets [--dir secrets] [--approver NAME]...` (`make secrets`): the secrets
docker-compose.yml mounts, made once (duragent/_ops/devstack/compose_secrets.py says which and why)."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from agentic.signing import ApproverKeyError
from duragent._ops.devstack.compose_secrets import make_secrets

DEFAULT_APPROVER = "approver"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m duragent._ops.cli.compose_secrets", description="Make the secrets docker-compose.yml mounts."
    )
    parser.add_argument("--dir", type=Path, default=Path("secrets"), help="where (default: secrets/)")
    parser.add_argument(
        "--approver",
        action="append",
        metavar="NAME",
        help=f"an approver to make a key pair for (repeatable; default: {DEFAULT_APPROVER})",
    )
    args = parser.parse_args(argv)
    approvers = args.approver or [DEFAULT_APPROVER]
    try:
        made = make_secrets(args.dir, approvers, os.environ.get("OPENAI_API_KEY"))
    except ApproverKeyError as exc:
        print(f"error: --approver: {exc}", file=sys.stderr)
        return 2
    shown = sorted({str(path) for path in made})
    print(f"wrote {', '.join(shown)}" if shown else f"{args.dir}/ has every secret already: nothing to do")
    for name in approvers:
        print(f"{name}'s private key: {args.dir / 'approvers' / f'{name}.key'} (give it to {name} only)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
