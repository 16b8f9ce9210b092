"""The command line, from the repo: `python starter.py demo`, `python starter.py run billing --wait`, ...

The same code as the installed `duragent` command (duragent/_ops/cli/starter.py, where every subcommand is
listed); here its name in messages is `starter.py`. Without `--agents` or AGENT_MODULES it serves and starts
the repo's demo agents (`examples/`).
"""

from __future__ import annotations

import sys

from duragent._ops.cli import starter as cli
from duragent._ops.cli.boundary import exit_now

PROG = "starter.py"


def parser():
    return cli.parser(PROG)


def main(argv: list[str]) -> int:
    return cli.main(argv, prog=PROG)


if __name__ == "__main__":
    exit_now(main(sys.argv[1:]))  # releases the Temporal runtimes before exiting (sdk-python issue 300)
