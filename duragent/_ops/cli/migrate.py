"""`migrate`: create the shared stores' tables in AGENT_DATABASE_URL's PostgreSQL before workers start (a deploy
step; workers would create them on first use too). Says what it did in one line, never the URL."""

from __future__ import annotations

import argparse

from duragent._config.settings import Settings
from duragent._ops.cli.output import CliError, emit
from duragent._stores import configured as stores
from duragent._stores.errors import StoreUnavailable


def cmd_migrate(args: argparse.Namespace, settings: Settings) -> int:
    if not settings.database_url:
        # Loud, not a quiet success: a deploy that meant to share one database would otherwise go on with
        # a SQLite file per worker host.
        raise CliError(
            "AGENT_DATABASE_URL is not set: nothing to migrate (the SQLite stores in one host's data directory"
            " create their tables on first use)",
            code=2,
        )
    try:
        done = stores.migrate(settings.database_url)
    except StoreUnavailable as exc:
        raise CliError(str(exc)) from exc
    emit(args.json, {"database": done.where, "created": done.created, "existing": done.existing}, str(done))
    return 0
