"""The worker: serves agents — their workflow, model calls and tool calls — until SIGINT/SIGTERM, then
drains and exits.

    duragent-worker --agents my_pkg.agents       # your agents (repeatable; or AGENT_MODULES=a,b)
    duragent-worker --agents my_pkg.agents --deployment agents --build-id v2   # Worker Versioning (operations.md)

An agents module exports `agents` (a list of `Agent`) and, optionally, `make_deps(settings)` returning
the services its tools get as `ToolContext.deps`. Connection: TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE,
TEMPORAL_TASK_QUEUE and the rest of docs/operations.md. In Python, `duragent.build_worker` is the whole API.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from collections.abc import Callable, Sequence
from typing import Any

from temporalio.client import Client
from temporalio.worker import Worker

from agentic import Agent
from agentic.signing import ApproverKeyError
from duragent._config import observability
from duragent._config.agent_modules import load_agents_and_deps
from duragent._config.approver_keys import approver_public_keys
from duragent._config.settings import Settings
from duragent._config.worker_keys import WorkerKeyError, load_worker_keys
from duragent._connection import connect
from duragent._ops.cli.arguments import add_agents_modules
from duragent._ops.cli.boundary import Parser, exit_now, load_settings, run_command
from duragent._ops.cli.connection import require_namespace
from duragent._ops.cli.output import CliError, invoked_as
from duragent._ops.devstack.signals import serve_until_stopped
from duragent._stores import configured as stores
from duragent._stores.configured import transcripts_for
from duragent._versioning import WorkerVersioningError, worker_deployment
from duragent._worker import build_worker

# What makes the worker, once the agents, their services and the keys are loaded and the client connected:
# `(client, settings, agents, deps, **serving)`, `serving` being the plugin's `transcripts`, `approver_keys` and
# `worker_keys`. The installed command serves the agents alone (`build_worker`); the repository's worker.py
# serves its application's workflow next to them, on a `Worker` of its own.
MakeWorker = Callable[..., Worker]


def agents_only(client: Client, settings: Settings, agents: list[Agent], deps: Any, **serving: Any) -> Worker:
    return build_worker(client, task_queue=settings.task_queue, agents=agents, deps=deps, settings=settings, **serving)


async def serve(args: argparse.Namespace, settings: Settings, make_worker: MakeWorker = agents_only) -> int:
    """Start serving, or say in one line why it cannot (the boundary in `main` turns errors into that line)."""
    try:
        observability.configure_logging(settings.log_format, settings.log_level)
    except ValueError as exc:  # AGENT_LOG_FORMAT or LOG_LEVEL, named in the message
        raise CliError(str(exc), code=2) from None
    try:
        worker_deployment(settings.deployment_name, settings.build_id)  # checked before anything connects
    except WorkerVersioningError as exc:  # half a version, or one the server would refuse
        raise CliError(str(exc), code=2) from None
    try:
        agents, deps = load_agents_and_deps(args.agents, settings)
    except ValueError as exc:  # a module that does not load, or a make_deps that refuses its settings
        raise CliError(str(exc), code=2) from None
    try:  # before connecting: a keys file that is missing or empty must not start a worker that signs nothing
        approver_keys = approver_public_keys(settings)
    except ApproverKeyError as exc:
        raise CliError(str(exc), code=2) from None
    try:  # the same for the workers' own key: a bad one stops the worker here, not at its first activity
        worker_keys = load_worker_keys(settings)
    except WorkerKeyError as exc:
        raise CliError(str(exc), code=2) from None
    # The SDK core's log lines go through the logging just configured; with AGENT_METRICS_ADDRESS, the SDK's
    # metrics are served for Prometheus at http://ADDRESS/metrics.
    client = await connect(settings, runtime=observability.worker_runtime(settings.metrics_address))
    await require_namespace(client, settings)
    stores.check(settings.database_url)  # an unreachable shared database: one clear line, non-zero exit
    serving = {"transcripts": transcripts_for(settings), "approver_keys": approver_keys, "worker_keys": worker_keys}
    worker = make_worker(client, settings, agents, deps, **serving)
    ready = (
        f"worker ready: {settings.address} namespace={settings.namespace} queue={settings.task_queue} "
        f"agents={','.join(sorted(a.name or '' for a in agents))}"
        + (f" build={settings.deployment_name}:{settings.build_id}" if settings.build_id else "")
        + (f" metrics=http://{settings.metrics_address}/metrics" if settings.metrics_address else "")
    )
    await serve_until_stopped(worker, ready)
    observability.shutdown_tracing()
    print("worker stopped", flush=True)
    return 0


def parser(prog: str = "duragent-worker", default_agents: Sequence[str] = ()) -> Parser:
    parser = Parser(prog=prog, description=__doc__.split("\n\n")[0], default_agents=default_agents)
    add_agents_modules(parser)
    parser.add_argument(
        "--deployment", metavar="NAME", help="Worker Versioning: the deployment (TEMPORAL_DEPLOYMENT_NAME)"
    )
    parser.add_argument("--build-id", metavar="ID", help="Worker Versioning: this build (TEMPORAL_WORKER_BUILD_ID)")
    parser.add_argument("--debug", action="store_true", help="show the traceback of a startup error")
    return parser


def main(
    argv: Sequence[str],
    *,
    prog: str = "duragent-worker",
    default_agents: Sequence[str] = (),
    make_worker: MakeWorker = agents_only,
) -> int:
    """`duragent-worker`: startup errors (Temporal down, an unknown namespace, a bad log setting, an agents
    module that does not load or none named, the database down) are one line on stderr and a non-zero exit
    (duragent/_ops/cli/boundary.py); `--debug` shows the traceback. `default_agents`: the agents modules served
    when neither `--agents` nor AGENT_MODULES names one (the installed command has none)."""
    try:
        invoked_as("starter.py" if prog.endswith(".py") else "duragent")  # the command its messages suggest
        args = parser(prog, default_agents).parse_args(list(argv))
    except SystemExit as exc:
        return int(exc.code or 0)
    return run_command(lambda: serve(args, with_build(load_settings(args), args), make_worker), debug=args.debug)


def with_build(settings: Settings, args: argparse.Namespace) -> Settings:
    """The settings with the command line's deployment and build id, which win over the environment's."""
    given = {"deployment_name": args.deployment, "build_id": args.build_id}
    return dataclasses.replace(settings, **{k: v for k, v in given.items() if v is not None})


def console() -> None:
    """The installed `duragent-worker` script (`python worker.py` in the repo runs the same code)."""
    exit_now(main(sys.argv[1:]))  # releases the Temporal runtimes before exiting (sdk-python issue 300)


if __name__ == "__main__":
    console()
