"""`starter.py replay`: recorded histories against today's code, before a deploy (duragent/replay.py).

    python starter.py replay --agents my_agents histories/*.json
    python starter.py replay --agents my_agents --query 'WorkflowType = "AgentWorkflow" AND ExecutionStatus = "Running"'
    python starter.py replay --run RUN_ID

Exit 0 when every history replays (and, with `--agents`, every open run still finds its agent and tools);
1 when one does not, each named on its own line."""

from __future__ import annotations

import argparse

from temporalio.client import WorkflowHistory

from duragent._config.agent_modules import load_agents
from duragent._config.settings import Settings
from duragent._ops.cli.output import CliError, emit
from duragent.replay import fetch_histories, load_histories, replay


def add_replay_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("paths", nargs="*", metavar="FILE", help="history JSON files (save_histories, Web UI, CLI)")
    parser.add_argument("--run", action="append", default=[], metavar="RUN_ID", help="fetch this run's histories")
    parser.add_argument(
        "--query", help="fetch every run a visibility query lists, e.g. 'ExecutionStatus = \"Running\"'"
    )
    parser.add_argument(
        "--agents",
        action="append",
        metavar="MODULE",
        help="the agents you are about to deploy (else AGENT_MODULES): open runs must find their agent and tools",
    )


async def cmd_replay(args: argparse.Namespace, settings: Settings) -> int:
    if not (args.paths or args.run or args.query):
        raise CliError("nothing to replay: name history files, --run RUN_ID or --query QUERY", code=2)
    histories: list[tuple[str, WorkflowHistory]] = []
    try:
        histories += load_histories(args.paths)
    except ValueError as exc:
        raise CliError(str(exc), code=2) from None
    if args.run or args.query:
        from duragent._ops.cli.connection import agent_client

        client = (await agent_client(settings)).client
        histories += await fetch_histories(client, run_ids=args.run, query=args.query)
    agents = load_agents(args.agents) if args.agents else None  # the flags, else AGENT_MODULES (load_settings)
    report = await replay(histories, agents=agents, settings=settings)
    data = [
        {
            "source": r.source,
            "run_id": r.run_id,
            "agent": r.agent,
            "events": r.events,
            "open": r.open,
            "problem": r.problem,
        }
        for r in report.replayed
    ]
    emit(args.json, {"ok": report.ok, "replayed": data}, str(report))
    return 0 if report.ok else 1
