"""`starter.py demo`: the dev server (started if none answers), a worker process, and the demo agents' runs —
scripted (`scripted.py`), or answered by the real local model (`--model local`, `local_model.py`)."""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import sys

from duragent._config.settings import CHECKOUT, DEFAULT_UI_URL, Settings
from duragent._ops.cli.output import CliError, emit
from duragent._ops.demo.scripted import Demo, say
from duragent._ops.devstack import devserver
from duragent._ops.devstack.signals import stops_on_signals


def demo_for(args: argparse.Namespace) -> type[Demo]:
    """`--model local`: the same server and worker, runs answered by the real local model (its client needs the
    `openai` extra: imported only then)."""
    if getattr(args, "model", None) is None:
        return Demo
    from duragent._ops.demo.local_model import LocalModelDemo

    return LocalModelDemo


def _embedded_server(port: int, settings: Settings) -> devserver.DevServer:
    """The embedded dev server, its Web UI on the usual 8233 when free — else, or when another server took 8233
    while this one started (two demos at once), on a free port."""
    log = settings.data_dir / "demo-server.log"
    if devserver.port_free(8233):
        try:
            return devserver.start(port, 8233, devserver.default_db(), log=log)
        except RuntimeError:
            if devserver.port_free(8233):
                raise  # not the UI port: a failure of its own
    return devserver.start(port, devserver.free_port(), devserver.default_db(), log=log)


@stops_on_signals  # SIGTERM/SIGHUP stop the server and worker it started, as Ctrl-C does
async def cmd_demo(args: argparse.Namespace, settings: Settings) -> int:
    if CHECKOUT is None:  # the demo agents (examples/) are the repository's: the wheel ships none
        raise CliError(
            "`demo` runs the repository's demo agents (examples/), which an install does not have: "
            "run `make demo` in a clone of the repository",
            code=2,
        )
    host, port = devserver.split_address(settings.address)
    server = None
    if not devserver.port_open(host, port):
        say(args.json, f"no Temporal server at {settings.address}; starting the embedded dev server…")
        server = _embedded_server(port, settings)
        await devserver.wait_until_serving(settings.address)
        say(args.json, f"Temporal dev server pid {server.process.pid}, database {server.db}")
        if settings.ui_url == DEFAULT_UI_URL:  # no UI chosen (TEMPORAL_UI_URL): link to the server it started
            settings = dataclasses.replace(settings, ui_url=server.ui_url)
    say(args.json, f"Web UI: {settings.ui_url}/namespaces/{settings.namespace}/workflows")
    # The entry point's demo agents, and its own application if it has one (`python starter.py demo`: OrderRefund).
    application = getattr(args, "demo_application", None)
    agents = settings.agent_modules or getattr(args, "default_agents", ())
    demo = demo_for(args)(settings, args.json, agents=agents, application=application)
    try:
        await demo.run()
        emit(args.json, {"runs": demo.results, "ui": settings.ui_url})
        if sys.stdin.isatty() and sys.stdout.isatty() and not args.json:
            print(f"\nThe Web UI stays up at {settings.ui_url} — press Ctrl-C to stop the worker and server.")
            while True:
                await asyncio.sleep(3600)
    finally:
        if demo.worker:
            demo.worker.stop()
        if application is not None:
            application.stop()
        if server:
            server.stop()
    return 0
