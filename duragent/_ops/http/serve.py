"""Serving our apps — the runs API (`python starter.py serve`, `job serve`) and the codec endpoint
(`python starter.py codec-server`): the same flags (duragent/_ops/cli/arguments.py), the start-up rule (no tokens →
refuse, unless
`--insecure-no-auth` on a loopback address), then uvicorn on the given address with the same bounds on what
one client may hold (duragent/_ops/http/connections.py)."""

from __future__ import annotations

import argparse
import socket

import uvicorn
from fastapi import FastAPI

from duragent._config.settings import Settings
from duragent._ops.http.auth import TOKENS_ENV, HttpAuth, check_startup, load_tokens
from duragent._ops.http.connections import BoundedH11Protocol

MAX_CONNECTIONS = 64  # open at once; past that, 503
READ_TIMEOUT = 10  # seconds a client may owe us bytes without sending any


def auth_from(args: argparse.Namespace, settings: Settings, what: str) -> HttpAuth:
    """The token table and Host allowlist, or AuthConfigError (one line naming what to set)."""
    tokens = load_tokens(settings)
    check_startup(args.host, tokens is not None, args.insecure_no_auth, what=what, token_env=TOKENS_ENV)
    return HttpAuth(tokens, insecure_no_auth=args.insecure_no_auth, hosts=args.allowed_host)


def listen(args: argparse.Namespace) -> socket.socket:
    """The listening socket, bound now (OSError if the port is taken): from here on connections wait in the
    backlog, so the address printed next works at once. Serve it with `server(...).run(sockets=[it])`."""
    listener = socket.socket(socket.AF_INET6 if ":" in args.host else socket.AF_INET)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        listener.bind((args.host, args.port))
        listener.listen(128)
    except OSError:
        listener.close()
        raise
    return listener


def server(
    app: FastAPI,
    args: argparse.Namespace | None = None,
    *,
    max_connections: int = MAX_CONNECTIONS,
    read_timeout: float = READ_TIMEOUT,
) -> uvicorn.Server:
    config = uvicorn.Config(
        app,
        log_level="warning",
        http=BoundedH11Protocol,
        limit_concurrency=max_connections,
        timeout_keep_alive=read_timeout,  # type: ignore[arg-type]  # a float works: it is a call_later delay
    )
    return uvicorn.Server(config)


def listening_line(what: str, args: argparse.Namespace, auth: HttpAuth, where: str) -> str:
    host = f"[{args.host}]" if ":" in args.host else args.host
    who = f"{len(auth.tokens)} token(s)" if auth.tokens else "NO AUTHENTICATION (--insecure-no-auth)"
    return f"{what}: listening on http://{host}:{args.port} ({who}; {where}); inbox at /inbox"
