"""Wall time inside our activities, for `python -m bench.activity_timing` (docs/benchmarks-history.md, "The last full
run"): with this directory on PYTHONPATH and BENCH_ACTIVITY_TIMES set to a directory, every Python process
that imports our activity modules (the bench's worker subprocesses) wraps a few methods with a timer and
appends `[name, seconds]` lines to `<dir>/times-<pid>.jsonl`.

The histories say how long an activity took from the server's point of view; this says how much of that was
our own code (the store writes, the model, the tool) and how much the hop to a thread and the SDK around it.
A scratch wrapper, never on in the product: nothing imports it, only PYTHONPATH does.
"""

from __future__ import annotations

import atexit
import functools
import importlib.abc
import importlib.util
import inspect
import json
import os
import sys
import threading
import time
from collections.abc import Callable
from importlib.machinery import ModuleSpec
from pathlib import Path
from types import ModuleType
from typing import Any

_OUT = os.environ.get("BENCH_ACTIVITY_TIMES")
_pending: list[tuple[str, float]] = []
_lock = threading.Lock()
FLUSH_EVERY = 20  # the worker is stopped with SIGTERM; at most this many records a process are lost


def _flush() -> None:
    with _lock:
        lines = _pending[:]
        _pending.clear()
    if lines and _OUT:
        with open(Path(_OUT) / f"times-{os.getpid()}.jsonl", "a") as out:
            out.writelines(json.dumps(line) + "\n" for line in lines)


def _process() -> str:
    """The floor's worker (`python -m bench.floor_worker`) records under its own names, next to ours'. Asked
    when recording: `-m` sets `sys.argv[0]` to the module's path only after this file has run."""
    return "floor: " if sys.argv and "floor_worker" in sys.argv[0] else ""


def _record(name: str, seconds: float) -> None:
    with _lock:
        _pending.append((_process() + name, seconds))
        full = len(_pending) >= FLUSH_EVERY
    if full:
        _flush()


def _timed(cls: type, attr: str, name: str) -> None:
    method: Callable[..., Any] = getattr(cls, attr)
    if inspect.iscoroutinefunction(method):

        @functools.wraps(method)
        async def timed_async(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return await method(*args, **kwargs)
            finally:
                _record(name, time.perf_counter() - start)

        setattr(cls, attr, timed_async)
        return

    @functools.wraps(method)
    def timed(*args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        try:
            return method(*args, **kwargs)
        finally:
            _record(name, time.perf_counter() - start)

    setattr(cls, attr, timed)


# module -> (class, method, record name): the activity as the SDK calls it, its body in the thread, and parts.
TIMED = {
    "duragent._activities.model": [
        ("ModelActivities", "call_model", "model activity"),
        ("ModelActivities", "_call", "model activity: in the thread"),
        ("ModelActivities", "_ask", "model activity: the model"),
    ],
    "duragent._activities.tools": [
        ("ToolActivities", "run_tool", "tool activity"),
        ("ToolActivities", "_run_local", "tool activity: in the thread"),
        ("ToolActivities", "_finish", "tool activity: storing the result"),
    ],
    # The SDK's whole handling of an activity task (decode, interceptors, the activity, encode, the completion
    # handed to the core) and its part up to the activity's result: in ours and in the floor's worker alike.
    "temporalio.worker._activity": [
        ("_ActivityWorker", "_handle_start_activity_task", "SDK: an activity task, start to completion sent"),
        ("_ActivityWorker", "_execute_activity", "SDK: decode, interceptors, the activity"),
    ],
    "duragent._stores.transcripts": [
        ("Transcripts", "append", "transcript append (a store transaction when not empty)"),
        ("Transcripts", "load", "transcript load"),
    ],
}


class _Wrapping(importlib.abc.MetaPathFinder):
    """Finds the modules in TIMED as usual, then wraps their methods once they have run."""

    def find_spec(self, name: str, path: Any, target: ModuleType | None = None) -> ModuleSpec | None:
        if name not in TIMED:
            return None
        sys.meta_path.remove(self)
        try:
            spec = importlib.util.find_spec(name)
        finally:
            sys.meta_path.insert(0, self)
        if spec is None or spec.loader is None:
            return spec
        run_module = spec.loader.exec_module

        def exec_module(module: ModuleType) -> None:
            run_module(module)
            for cls, attr, label in TIMED[name]:
                _timed(getattr(module, cls), attr, label)

        spec.loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


if _OUT:
    sys.meta_path.insert(0, _Wrapping())
    atexit.register(_flush)
