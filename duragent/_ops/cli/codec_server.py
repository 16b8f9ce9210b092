"""`starter.py codec-server`: the remote codec endpoint Temporal's Web UI and CLI decode payloads through
(docs/operations.md, "Encryption at rest"); the app itself is duragent/_ops/http/codec.py."""

from __future__ import annotations

import argparse
import logging
import sys

from duragent._config.codec import AesGcmCodec, KeyConfigError, load_keyring
from duragent._config.secrets import value_or_file
from duragent._config.settings import Settings
from duragent._ops.http.auth import AuthConfigError, check_startup
from duragent._ops.http.codec import DEFAULT_ORIGINS, codec_auth, create_codec_app
from duragent._ops.http.serve import listen, server


def cmd_codec_server(args: argparse.Namespace, settings: Settings) -> int:
    logging.basicConfig(level=settings.log_level, format="%(asctime)s %(levelname)s %(message)s")

    try:
        keyring = load_keyring(settings.codec_keys, settings.codec_key_file)
    except KeyConfigError as exc:
        print(f"codec server: {exc}", file=sys.stderr)
        return 2
    if keyring is None:
        print("codec server: no keys; set AGENT_CODEC_KEYS or AGENT_CODEC_KEY_FILE", file=sys.stderr)
        return 2
    origins = frozenset(args.cors_origin or settings.codec_cors_origins or DEFAULT_ORIGINS)
    try:
        found = value_or_file(
            settings.codec_auth_token,
            settings.codec_auth_token_file,
            "AGENT_CODEC_AUTH_TOKEN",
            "AGENT_CODEC_AUTH_TOKEN_FILE",
            AuthConfigError,
        )
        token = (found[0].strip() or None) if found else None
        check_startup(
            args.host, token is not None, args.insecure_no_auth, what="codec server", token_env="AGENT_CODEC_AUTH_TOKEN"
        )
    except AuthConfigError as exc:
        print(exc, file=sys.stderr)
        return 2
    hosts = args.allowed_host or settings.codec_allowed_hosts
    auth = codec_auth(token, insecure_no_auth=args.insecure_no_auth, hosts=hosts)
    app = create_codec_app(
        AesGcmCodec(keyring, namespace=args.namespace or settings.namespace),
        auth,
        origins=origins,
        secure_cookie=args.secure_cookie,
    )
    listener = listen(args)  # bound before the address is printed: connections wait in the backlog
    who = "bearer token or session" if token else "NONE (--insecure-no-auth: anyone who reaches the port decrypts)"
    host = f"[{args.host}]" if ":" in args.host else args.host
    print(
        f"codec server on http://{host}:{listener.getsockname()[1]} "
        f"(active key {keyring.active}, {len(keyring.keys)} loaded; auth: {who}; "
        f"hosts: {', '.join(sorted(auth.hosts))}; CORS: {', '.join(sorted(origins))})",
        flush=True,
    )
    server(app).run(sockets=[listener])
    return 0
