"""The demo agents: ordinary `Agent`s, served by `python worker.py` and run by `starter.py run NAME`.

A module a worker serves (`python worker.py --agents pkg.module`) exports `agents` (a list of `Agent`)
and, optionally, `make_deps(settings)` returning the services its tools get as `ToolContext.deps`. This
one is such a module; the engine never imports it.
"""

from __future__ import annotations

from duragent._config.settings import Settings
from examples import billing, courier, migration, refund, support, trip
from examples.options import DemoDeps, DemoOptions

agents = [billing.agent, migration.agent, refund.agent, trip.agent, courier.agent, *support.agents]


def make_deps(settings: Settings) -> DemoDeps:
    """The effects ledger and the fact store: PostgreSQL with `AGENT_DATABASE_URL` (shared by worker hosts),
    else SQLite in the data directory (`AGENT_LEDGER` overrides the ledger's path)."""
    from duragent._stores import configured as stores

    return DemoDeps(
        ledger=stores.open_ledger(settings.database_url, settings.ledger_path),
        facts=stores.open_facts(settings.database_url, settings.data_dir),
    )


__all__ = ["DemoDeps", "DemoOptions", "agents", "make_deps"]
