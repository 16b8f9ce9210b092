"""What a test needs, as a marker: `pytest -m` selects tests by what they cost (registered in pyproject.toml).

- `unit`: nothing — in-process, no server, no process of its own;
- `temporal`: the time-skipping test server (timers of days in milliseconds);
- `system`: a dev server, or processes the test starts (workers, servers, command lines, SIGKILLs);
- `postgres`: a PostgreSQL server; `browser`: chromium; `llm`: the local model (`make llm`).

The markers come from the shared fixtures a test uses (below); a file that starts servers or processes of its
own says so with `pytestmark` (or, in a file of mostly in-process tests, a mark on the few that do).
tests/support/process_guard.py checks the result: a `unit` or time-skipping test that starts a process fails.
"""

from __future__ import annotations

import pytest

# The session's shared fixtures, by what they start.
NEEDS_OF_FIXTURE = {
    "skipping_env": "temporal",
    "skipping_server": "temporal",
    "dev_env": "system",
    "postgres_admin_url": "postgres",
    "postgres_url": "postgres",
    "own_postgres": "postgres",
    "local_model_server": "llm",
    "own_servers": "llm",
}
# What takes a test out of the inner loop (`make test-fast`: `unit`, and `temporal` without any of these).
OWN_PROCESSES = ("system", "postgres", "browser", "llm")
KINDS = ("unit", "temporal", *OWN_PROCESSES)


def needs(item: pytest.Item) -> set[str]:
    """The kinds a collected test needs: its fixtures' and its own marks'."""
    found = {NEEDS_OF_FIXTURE[name] for name in getattr(item, "fixturenames", ()) if name in NEEDS_OF_FIXTURE}
    callspec = getattr(item, "callspec", None)
    if callspec is not None and callspec.params.get("backend") == "postgres":  # tests/support/backends.py
        found.add("postgres")
    found |= {mark.name for mark in item.iter_markers() if mark.name in OWN_PROCESSES or mark.name == "temporal"}
    return found


def apply(items: list[pytest.Item]) -> None:
    """Mark each test with what it needs, or `unit` when it needs nothing."""
    for item in items:
        for kind in sorted(needs(item)) or ["unit"]:
            item.add_marker(kind)


def in_inner_loop(item: pytest.Item) -> bool:
    """Whether `make test-fast` runs it: no process of its own (the time-skipping server is shared)."""
    return not any(item.get_closest_marker(kind) for kind in OWN_PROCESSES)
