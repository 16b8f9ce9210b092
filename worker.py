"""The repository's worker: its application's workflow (`workflows/`), that workflow's activities (`activities/`)
and the agents on one plain Temporal `Worker` — the agents by `DurableAgentsPlugin`, the way you serve agents
next to workflows of your own. Serves until SIGINT/SIGTERM, then drains and exits.

    python worker.py                              # the application and the demo agents (examples/)
    python worker.py --agents my_pkg.agents       # your agents instead of the demo's (repeatable; or AGENT_MODULES)
    python worker.py --deployment agents --build-id v2   # Worker Versioning: serve build v2 (docs/operations.md)

The command line (flags, settings, one-line startup errors, the `worker ready` line) is the installed
`duragent-worker`'s (duragent/_ops/cli/worker.py), which serves agents alone; here its name in messages is
`worker.py`. The orders service the application calls is at ORDERS_URL (examples/orders_service.py).
"""

from __future__ import annotations

import dataclasses
import os
import sys
from collections.abc import Sequence
from typing import Any

from temporalio.client import Client
from temporalio.common import VersioningBehavior
from temporalio.worker import Worker

from activities import OrderActivities
from duragent import Agent, DurableAgentsPlugin, Settings
from duragent._ops.cli import worker as cli
from duragent._ops.cli.boundary import exit_now
from duragent._worker import agent_worker_options
from workflows import OrderRefund

PROG = "worker.py"
# The agents served when neither --agents nor AGENT_MODULES names a module: the repository's demo agents.
DEMO_AGENTS = ("examples",)
ORDERS_URL = "http://127.0.0.1:8090"  # examples/orders_service.py's default port


def application_worker(client: Client, settings: Settings, agents: list[Agent], deps: Any, **serving: Any) -> Worker:
    """`OrderRefund` and the orders service's activities next to the agents, on one worker — the agent its
    workflow runs (`orders`, examples/orders.py) among them, whichever others are served. `deps`: one object for
    all agents, or a mapping by agent name; `serving`: the plugin's stores and keys as the command line loaded
    them."""
    import httpx  # here: the other commands sharing this module's start-up import no HTTP stack

    from examples import orders as refund_desk

    if refund_desk.agent.name not in {a.name for a in agents}:
        agents = [*agents, refund_desk.agent]
        deps = {**deps, refund_desk.agent.name: refund_desk.make_deps(settings)} if isinstance(deps, dict) else deps
    # The agents' worker options from the settings: workflow cache, sticky queues, graceful shutdown, versioning.
    options = agent_worker_options(settings)
    if options["deployment_config"] is not None:  # the application's workflow stays on its build, as the agents' do
        options["deployment_config"] = dataclasses.replace(
            options["deployment_config"], default_versioning_behavior=VersioningBehavior.PINNED
        )
    orders = OrderActivities(httpx.AsyncClient(base_url=os.environ.get("ORDERS_URL", ORDERS_URL), timeout=30))
    return Worker(
        client,
        task_queue=settings.task_queue,
        workflows=[OrderRefund, *options.pop("workflows")],
        activities=orders.all(),
        plugins=[DurableAgentsPlugin(settings, agents=agents, deps=deps, **serving), *options.pop("plugins")],
        **options,
    )


def parser():
    return cli.parser(PROG, DEMO_AGENTS)


def main(argv: Sequence[str]) -> int:
    return cli.main(argv, prog=PROG, default_agents=DEMO_AGENTS, make_worker=application_worker)


if __name__ == "__main__":
    exit_now(main(sys.argv[1:]))  # releases the Temporal runtimes before exiting (sdk-python issue 300)
