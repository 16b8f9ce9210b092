"""The inner loop's promise, checked on every run: a test in `make test-fast` (a `unit` test, or a `temporal`
one on the shared time-skipping server) starts no process. One that does fails, naming what it started and the
marker it needs (tests/support/cost_markers.py) — otherwise one forgotten mark makes the one-minute loop slow
and brings back the servers and subprocesses it exists to leave out.

Every way this project starts a process passes through one of the functions wrapped here: `subprocess` (and
asyncio's subprocesses, built on it), `os.fork`/`os.posix_spawn`, multiprocessing's spawn
(`_posixsubprocess.fork_exec`), and the Temporal servers the SDK starts from Rust (`WorkflowEnvironment`).
"""

from __future__ import annotations

import _posixsubprocess
import functools
import os
import subprocess
from collections.abc import Callable
from typing import Any

import pytest
from temporalio.testing import WorkflowEnvironment


class ProcessGuard:
    """While a guarded test's setup or call runs, the processes it starts, named for the failure message."""

    def __init__(self) -> None:
        self.watching: pytest.Item | None = None
        self.may_start_time_skipping = False
        self.started: list[str] = []

    def note(self, what: str) -> None:
        if self.watching is not None:
            self.started.append(what)

    def install(self) -> None:
        """Wrap the functions that start processes (in this pytest process only; it ends with the session)."""
        guard = self

        def named(command: object) -> str:
            argv = [command] if isinstance(command, str | bytes | os.PathLike) else list(command)  # type: ignore[call-overload]
            return " ".join(os.fsdecode(a) if isinstance(a, bytes | os.PathLike) else str(a) for a in argv[:4])[:120]

        def wrap(owner: Any, name: str, describe: Callable[..., str]) -> None:
            original = getattr(owner, name)

            @functools.wraps(original)
            def wrapped(*args: Any, **kwargs: Any) -> Any:
                guard.note(describe(*args, **kwargs))
                return original(*args, **kwargs)

            setattr(owner, name, wrapped)

        wrap(subprocess.Popen, "_execute_child", lambda _self, args, *_a, **_k: named(args))
        wrap(_posixsubprocess, "fork_exec", lambda args, *_a, **_k: named(args or ["a forked process"]))
        wrap(os, "fork", lambda: "os.fork()")
        wrap(os, "posix_spawn", lambda path, argv, *_a, **_k: named(argv))
        wrap(os, "posix_spawnp", lambda path, argv, *_a, **_k: named(argv))

        start_local = WorkflowEnvironment.start_local
        start_time_skipping = WorkflowEnvironment.start_time_skipping

        async def local(*args: Any, **kwargs: Any) -> WorkflowEnvironment:
            guard.note("a Temporal dev server (WorkflowEnvironment.start_local)")
            return await start_local(*args, **kwargs)

        async def time_skipping(*args: Any, **kwargs: Any) -> WorkflowEnvironment:
            if not guard.may_start_time_skipping:
                guard.note("a time-skipping server (WorkflowEnvironment.start_time_skipping)")
            return await start_time_skipping(*args, **kwargs)

        WorkflowEnvironment.start_local = staticmethod(local)  # type: ignore[method-assign,assignment]
        WorkflowEnvironment.start_time_skipping = staticmethod(time_skipping)  # type: ignore[method-assign,assignment]

    def watch(self, item: pytest.Item, *, may_start_time_skipping: bool) -> None:
        self.watching, self.may_start_time_skipping, self.started = item, may_start_time_skipping, []

    def verdict(self) -> str | None:
        """Why the watched test breaks the rule, if it does; stops watching."""
        item, started = self.watching, self.started
        self.watching, self.started = None, []
        if item is None or not started:
            return None
        kind = "a time-skipping (`temporal`)" if self.may_start_time_skipping else "a `unit`"
        listed = "; ".join(dict.fromkeys(started))
        return (
            f"{item.nodeid} is {kind} test, in `make test-fast`, but started a process: {listed}. Mark what it"
            " needs (`system`, `postgres`, `llm`, `browser`; `temporal` for a time-skipping server of its own):"
            " `pytestmark = pytest.mark.system` in its file, or `@pytest.mark.system` on the test"
            " (tests/support/cost_markers.py)."
        )
