"""`serve`: the runs API over Temporal (duragent/_ops/http/), with the approvals inbox at /inbox.

    AGENT_API_TOKENS="TOKEN1=maria:approver,TOKEN2=ops:viewer" python starter.py serve [--host H] [--port 8765]

It validates `POST /runs` against the agents modules (`--agents`, default: the demo agents) as `run` does,
and reaches Temporal with the usual settings (TEMPORAL_ADDRESS, ...). Where workers require signed decisions,
`AGENT_API_APPROVER_KEYS` gives it the approvers' private keys to sign with (duragent/_config/approver_keys.py).
"""

from __future__ import annotations

import argparse

from duragent._config.agent_modules import load_agents
from duragent._config.approver_keys import api_signing_keys
from duragent._config.settings import Settings
from duragent._ops.cli.connection import agent_client
from duragent._ops.cli.output import CliError
from duragent._ops.http.app import create_app
from duragent._ops.http.auth import AuthConfigError
from duragent._ops.http.serve import auth_from, listen, listening_line, server
from duragent._ops.http.temporal import TemporalEngine
from duragent._stores import configured as stores


async def cmd_serve(args: argparse.Namespace, settings: Settings) -> int:
    try:
        auth = auth_from(args, settings, "starter.py serve")
    except AuthConfigError as exc:
        raise CliError(str(exc), code=2) from None
    agents = load_agents(args.agents)
    engine = TemporalEngine(
        await agent_client(settings),
        agents,
        api_signing_keys(settings),
        allow_loopback=settings.webhook_allow_loopback,
    )
    try:
        listener = listen(args)  # bound before the address is printed: connections wait in the backlog
    except OSError as exc:
        raise CliError(f"cannot listen on {args.host}:{args.port}: {exc.strerror}; choose another --port") from None
    where = f"Temporal {settings.address}, namespace {settings.namespace}, task queue {settings.task_queue}"
    print(listening_line("serve", args, auth, where), flush=True)
    app = create_app(
        engine,
        auth,
        secure_cookie=args.secure_cookie,
        facts=lambda: stores.facts_for(settings),
        stream_seconds=args.stream_seconds,
    )
    await server(app, args).serve(sockets=[listener])
    return 0
