"""What every stack runs, and the provider its mutating tool calls.

The script: the task names N (`Run 20 steps.`); the model asks for one tool call per reply — `step(i=1)`,
then `step(i=2)`... — reading how many tool results the transcript holds, and after the N-th answers. Each
stack's scripted model (ours a `FakeModel`, pydantic-ai a `FunctionModel`, the OpenAI SDK a `TestModel`) calls
`next_step`, so all three decide alike from what they are shown; every model call and every tool call is an
activity in all three.

The provider: a SQLite file standing for a payment API that de-duplicates on an idempotency key, as each
stack's tool hands it one (ours `ctx.idempotency_key`; pydantic-ai the model's tool call id, recorded in the
model activity's result; the OpenAI SDK's `activity_as_tool` hands the tool only its arguments, so the key is
the activity's own identity, `workflow id:activity id`, the same on every retry of it). Every execution is
recorded too: executions are what a provider without a key would have done.
"""

from __future__ import annotations

import os
import re
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path

PROVIDER_ENV = "PEERS_PROVIDER"  # the provider's SQLite file, in the workers' environment
# The step whose tool call dawdles after its effect (first attempt only), so a worker can be killed in the
# middle of it: its task names it (`... pause at 3.`).
_TASK = re.compile(r"Run (\d+) steps(?:, pause at (\d+))?\.")
PAUSE_SECONDS = 30.0


def task(steps: int, pause_at: int | None = None) -> str:
    return f"Run {steps} steps" + (f", pause at {pause_at}" if pause_at else "") + "."


def parse(text: str) -> tuple[int, int | None]:
    match = _TASK.search(text)
    if match is None:
        raise ValueError(f"not a peers task: {text[:80]!r}")
    return int(match.group(1)), int(match.group(2)) if match.group(2) else None


def next_call(task_text: str, results: int) -> dict[str, object] | None:
    """The arguments of the next model reply's `step` call, or None: answer now. The call the task names
    carries `pause`, so its tool dawdles after its effect (the tools are told only their arguments)."""
    steps, pause_at = parse(task_text)
    if results >= steps:
        return None
    i = results + 1
    return {"i": i, "pause": True} if i == pause_at else {"i": i}


def answer(task_text: str) -> str:
    return f"Did {parse(task_text)[0]} steps."


class Provider:
    """A provider that makes an effect once per key; every execution is recorded."""

    def __init__(self, path: Path | str | None = None) -> None:
        self.path = Path(path or os.environ[PROVIDER_ENV])
        with self._connect() as db:
            db.execute("CREATE TABLE IF NOT EXISTS effects (key TEXT PRIMARY KEY, stack TEXT, run TEXT, i INTEGER)")
            db.execute("CREATE TABLE IF NOT EXISTS executions (key TEXT, stack TEXT, run TEXT, i INTEGER, at REAL)")

    def _connect(self) -> sqlite3.Connection:
        db = sqlite3.connect(self.path, timeout=30, isolation_level=None)
        db.execute("PRAGMA journal_mode=wal")
        return db

    def apply(self, key: str, *, stack: str, run: str, i: int) -> bool:
        """Makes the effect unless `key` made it already; True if this call made it."""
        with self._connect() as db:
            db.execute("BEGIN IMMEDIATE")
            db.execute("INSERT INTO executions VALUES (?, ?, ?, ?, ?)", (key, stack, run, i, time.time()))
            made = db.execute("INSERT OR IGNORE INTO effects VALUES (?, ?, ?, ?)", (key, stack, run, i)).rowcount
            db.execute("COMMIT")
        return bool(made)

    def counts(self, run: str) -> tuple[int, int]:
        """(effects, executions) of one run."""
        with self._connect() as db:
            effects = db.execute("SELECT count(*) FROM effects WHERE run = ?", (run,)).fetchone()[0]
            executions = db.execute("SELECT count(*) FROM executions WHERE run = ?", (run,)).fetchone()[0]
        return effects, executions

    def executed(self, run: str, i: int) -> bool:
        with self._connect() as db:
            return db.execute("SELECT 1 FROM executions WHERE run = ? AND i = ?", (run, i)).fetchone() is not None


def pause_if_asked(pause: bool, attempt: int, heartbeat: Callable[[], object] | None = None) -> None:
    """The effect is made; a call with `pause` dawdles here on its first attempt (heartbeating), so the bench
    can SIGKILL the worker between the effect and the tool's result reaching the server."""
    if not pause or attempt > 1:
        return
    deadline = time.monotonic() + PAUSE_SECONDS
    while time.monotonic() < deadline:
        if heartbeat is not None:
            heartbeat()
        time.sleep(0.2)
