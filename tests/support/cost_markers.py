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

import json
from pathlib import Path

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


# What a test of each kind takes, roughly (seconds: the mean per kind in a `--durations=0` run of the suite).
# Used for a file tests/durations.json does not list yet (a new file).
SECONDS_OF_KIND = {"llm": 26.0, "browser": 20.0, "postgres": 10.0, "system": 8.5, "temporal": 1.0, "unit": 0.1}
# Seconds per test file, measured (`python -m tests.support.durations LOG`): the kinds alone are a poor guess
# (a file of 170 one-second bad-input tests on a dev server against one of eight 40-second CLI sessions).
DURATIONS = Path(__file__).parent.parent / "durations.json"


def file_of(item: pytest.Item) -> str:
    return item.nodeid.split("::")[0]


def heaviest_files_first(items: list[pytest.Item]) -> None:
    """Order the files by what they are expected to take, heaviest first, each file's tests in their own
    order. `make test` hands whole files to its workers (`--dist loadfile`) in this order: started last, a
    file of slow system tests would run alone at the end while the other workers sit idle (xdist's own order,
    by number of tests, put the many quick unit files first and the few slow ones last)."""
    measured: dict[str, float] = json.loads(DURATIONS.read_text()) if DURATIONS.exists() else {}
    guessed: dict[str, float] = {}
    for item in items:
        kinds = needs(item) or {"unit"}
        guessed[file_of(item)] = guessed.get(file_of(item), 0.0) + max(SECONDS_OF_KIND[kind] for kind in kinds)
    cost = guessed | {name: seconds for name, seconds in measured.items() if name in guessed}
    position = {id(item): index for index, item in enumerate(items)}
    items.sort(key=lambda item: (-cost[file_of(item)], position[id(item)]))


class HeaviestFilesFirst:
    """The plugin that orders the collected tests (registered by tests/conftest.py), after every other
    plugin has reordered or deselected them: pytest groups the tests of a parametrized fixture wider than a
    test, and that must not split a file again."""

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        heaviest_files_first(items)
