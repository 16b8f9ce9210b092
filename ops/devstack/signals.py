"""SIGTERM and SIGHUP end a command the way Ctrl-C does, so its `finally` blocks stop what it started.

The processes our commands start (the Temporal dev server, worker processes) run in their own sessions, so a
Ctrl-C in the terminal does not kill them before we drain them. The price: when *we* are killed with the
default SIGTERM action (`kill PID`, a container stop) or lose our terminal (SIGHUP), they would outlive us,
holding their ports and databases. Raising KeyboardInterrupt instead runs the same cleanup as Ctrl-C.
"""

from __future__ import annotations

import asyncio
import functools
import signal
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any, TypeVar

SIGNALS = (signal.SIGTERM, signal.SIGHUP)

F = TypeVar("F", bound=Callable[..., Any])


class Stopped(KeyboardInterrupt):
    """Raised by SIGTERM or SIGHUP: a KeyboardInterrupt, so code that handles Ctrl-C handles these too."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


@contextmanager
def stop_on_signals() -> Iterator[None]:
    """Within the block, SIGTERM and SIGHUP raise `Stopped` (once: a second signal must not interrupt the
    cleanup the first one started). Only the main thread can install handlers; elsewhere this does nothing."""

    def interrupt(signum: int, frame: FrameType | None) -> None:
        for sig in SIGNALS:
            signal.signal(sig, signal.SIG_IGN)
        raise Stopped(signum)

    try:
        previous = {sig: signal.signal(sig, interrupt) for sig in SIGNALS}
    except ValueError:  # not the main thread
        yield
        return
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def stops_on_signals(function: F) -> F:
    """`stop_on_signals` around a command's handler, sync or async."""
    if asyncio.iscoroutinefunction(function):

        @functools.wraps(function)
        async def run_async(*args: Any, **kwargs: Any) -> Any:
            with stop_on_signals():
                return await function(*args, **kwargs)

        return run_async  # type: ignore[return-value]

    @functools.wraps(function)
    def run(*args: Any, **kwargs: Any) -> Any:
        with stop_on_signals():
            return function(*args, **kwargs)

    return run  # type: ignore[return-value]
