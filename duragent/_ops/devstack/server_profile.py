"""How the Temporal server we ship is tuned: the dev server's flags (`duragent/_ops/devstack/devserver.py`) and the
dynamic config
of the compose stack (`deploy/temporal/dynamicconfig.yaml`, checked against `TUNED` by tests/ops/test_compose.py).

Out of the box a Temporal server trades latency for database load in ways that suit a large cluster, not an
agent taking one step after another on a small one. Each knob below, its effect and its cost (measured with
`python -m bench overhead --server-profile both`) is documented in docs/operations.md, "Tuning the server".
`DEFAULT` is `temporal server start-dev` as it comes: the bench compares the two side by side.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class ServerProfile:
    name: str
    # SQLite pragmas of the embedded server's database (`--sqlite-pragma`); the compose stack uses PostgreSQL.
    pragmas: tuple[str, ...] = ()
    # Dynamic config (`--dynamic-config-value KEY=JSON`; the same keys in dynamicconfig.yaml).
    dynamic_config: dict[str, Any] = field(default_factory=dict)
    # Dynamic config of the embedded server only: the compose stack registers its search attributes after its
    # server has started, and keeps the value that suits that (deploy/temporal/dynamicconfig.yaml says why).
    embedded_dynamic_config: dict[str, Any] = field(default_factory=dict)

    def dev_server_flags(self) -> list[str]:
        flags: list[str] = []
        for pragma in self.pragmas:
            flags += ["--sqlite-pragma", pragma]
        for key, value in (self.dynamic_config | self.embedded_dynamic_config).items():
            flags += ["--dynamic-config-value", f"{key}={json.dumps(value)}"]
        return flags


DEFAULT = ServerProfile("default")

TUNED = ServerProfile(
    "tuned",
    pragmas=(
        # A write-ahead log instead of a rollback journal, synced at checkpoints rather than at every commit:
        # a killed server loses nothing it committed (an OS crash or power cut can lose the last commits).
        # Without it every history write waits for several fsyncs.
        "journal_mode=wal",
        "synchronous=normal",
    ),
    dynamic_config={
        # The transfer queue hands new workflow and activity tasks to matching. Its reader is rate-limited
        # to 20 reads a second per shard (the dev server has one shard), which holds every workflow task
        # dispatch for up to 50 ms: 2 of them per agent step.
        "history.transferProcessorMaxPollRPS": 1000,
        # A new timer fires no earlier than now + this (default 1 s: slack for clock skew between the history
        # hosts of a large cluster), so a timer shorter than that fired late: a 100 ms `workflow.sleep`, or a
        # sub-second retry backoff (e.g. `SagaPolicy.initial_interval_seconds`), after about 1 s. Longer timers (our
        # default 1 s backoffs, heartbeat timeouts, approval deadlines) were not affected.
        "history.timerProcessorMaxTimeShift": "10ms",
        # An activity scheduled by a workflow task goes back to the worker in the reply to that task when the
        # worker has a free slot, instead of through the task queue: no dispatch, and at 1,000 concurrent runs
        # a third of the server's CPU per run. On in this server version; stated, so an upgrade cannot drop it.
        "system.enableActivityEagerExecution": True,
    },
    embedded_dynamic_config={
        # The dev server reads the search attributes' definitions from its database at every use unless this is
        # set (without it, it turns the cache off so that an attribute added while it runs is seen at once): a
        # 2-step run read the cluster metadata and the namespace 20 times, 9 of them for ours' search
        # attributes (`python -m bench rpcs`); none with the cache. Ours are registered as the server starts
        # (`--search-attribute`), before any run; one added later is seen once the cache refreshes.
        "system.forceSearchAttributesCacheRefreshOnRead": False,
    },
)

PROFILES = {profile.name: profile for profile in (DEFAULT, TUNED)}


def profile(name: str) -> ServerProfile:
    try:
        return PROFILES[name]
    except KeyError:
        raise ValueError(f"unknown server profile {name!r}; choose one of {', '.join(PROFILES)}") from None
