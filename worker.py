"""The worker, from the repo: serves agents until SIGINT/SIGTERM, then drains and exits.

    python worker.py                              # the demo agents (examples/)
    python worker.py --agents my_pkg.agents       # your agents (repeatable; or AGENT_MODULES=a,b)
    python worker.py --deployment agents --build-id v2   # Worker Versioning: serve build v2 (docs/operations.md)

The same code as the installed `duragent-worker` command (duragent/_ops/cli/worker.py); here its name in
messages is `worker.py`. In Python, `duragent.build_worker` is the whole API.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from duragent._ops.cli import worker as cli
from duragent._ops.cli.arguments import DEMO_AGENTS
from duragent._ops.cli.boundary import exit_now

PROG = "worker.py"


def parser():
    return cli.parser(PROG, DEMO_AGENTS)


def main(argv: Sequence[str]) -> int:
    return cli.main(argv, prog=PROG, default_agents=DEMO_AGENTS)  # the demo agents: the repo's own


if __name__ == "__main__":
    exit_now(main(sys.argv[1:]))  # releases the Temporal runtimes before exiting (sdk-python issue 300)
