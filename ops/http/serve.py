"""Serving the runs API, for both commands (`python starter.py serve`, `job serve`): the start-up rule (no
tokens → refuse, unless `--insecure-no-auth` on a loopback address), then uvicorn on the given address."""

from __future__ import annotations

import argparse
import socket

import uvicorn
from fastapi import FastAPI

from ops.cli.arguments import port_number
from ops.http.auth import TOKENS_ENV, HttpAuth, check_startup, load_tokens

DEFAULT_PORT = 8765


def add_serve_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--host", default="127.0.0.1", help="the address to listen on (default: loopback only)")
    parser.add_argument("--port", type=port_number, default=DEFAULT_PORT)
    parser.add_argument(
        "--allowed-host", action="append", default=[], help="a Host name besides localhost to answer (repeatable)"
    )
    parser.add_argument(
        "--insecure-no-auth",
        action="store_true",
        help=f"serve without {TOKENS_ENV}: anyone who reaches the port may read, start, cancel and approve "
        "(loopback only)",
    )
    parser.add_argument("--secure-cookie", action="store_true", help="mark the inbox session cookie Secure (HTTPS)")


def auth_from(args: argparse.Namespace, what: str) -> HttpAuth:
    """The token table and Host allowlist, or AuthConfigError (one line naming what to set)."""
    tokens = load_tokens()
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


def server(app: FastAPI, args: argparse.Namespace) -> uvicorn.Server:
    return uvicorn.Server(uvicorn.Config(app, log_level="warning"))


def listening_line(what: str, args: argparse.Namespace, auth: HttpAuth, where: str) -> str:
    host = f"[{args.host}]" if ":" in args.host else args.host
    who = f"{len(auth.tokens)} token(s)" if auth.tokens else "NO AUTHENTICATION (--insecure-no-auth)"
    return f"{what}: listening on http://{host}:{args.port} ({who}; {where}); inbox at /inbox"
