"""The command line, from the repo: `python starter.py demo`, `python starter.py run billing --wait`, ...

The same code as the installed `duragent` command (duragent/_ops/cli/starter.py, where every subcommand is
listed); here its name in messages is `starter.py`. Without `--agents` or AGENT_MODULES it serves and starts
the repo's demo agents (`examples/`).
"""

from __future__ import annotations

import sys

from duragent._ops.cli import starter as cli
from duragent._ops.cli.arguments import DEMO_AGENTS
from duragent._ops.cli.boundary import exit_now

PROG = "starter.py"


def parser():
    return cli.parser(PROG, DEMO_AGENTS)


def main(argv: list[str]) -> int:
    return cli.main(argv, prog=PROG, default_agents=DEMO_AGENTS)  # the demo agents: the repo's own


if __name__ == "__main__":
    exit_now(main(sys.argv[1:]))  # releases the Temporal runtimes before exiting (sdk-python issue 300)
