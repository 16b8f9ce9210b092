"""SIGTERM and SIGHUP end a command the way Ctrl-C does, so its `finally` blocks stop what it started.

The processes our commands start (the Temporal dev server, worker processes) run in their own sessions, so a
Ctrl-C in the terminal does not kill them before we drain them. The price: when *we* are killed with the
default SIGTERM action (`kill PID`, a container stop) or lose our terminal (SIGHUP), they would outlive us,
holding their ports and databases. Raising KeyboardInterrupt instead runs the same cleanup as Ctrl-C.

In a long asyncio program, an exception raised by a signal handler lands wherever the main thread happens to
be — inside the event loop's machinery or a library's callback — and may be swallowed or leave the cleanup
half-done. `until_signalled` instead cancels the awaited work at its current `await`, as any cancellation does,
so each `finally` and `async with` below it runs in order, and only then raises `Stopped`.
"""

from __future__ import annotations

import asyncio
import functools
import signal
from collections.abc import Awaitable, Callable, Iterator
from contextlib import AbstractAsyncContextManager, contextmanager
from types import FrameType
from typing import Any, TypeVar

SIGNALS = (signal.SIGTERM, signal.SIGHUP)

F = TypeVar("F", bound=Callable[..., Any])
T = TypeVar("T")


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


async def until_signalled(work: Awaitable[T], signals: tuple[signal.Signals, ...] = (*SIGNALS, signal.SIGINT)) -> T:
    """Await `work`; the first of `signals` cancels it — its cleanup runs as for any cancellation — and then
    raises `Stopped`. Further signals are ignored while that cleanup runs (it stops processes by pid and must
    not be cut short). The previous handlers are back once this returns."""
    loop = asyncio.get_running_loop()
    task = asyncio.current_task()
    received: list[int] = []

    def cancel(signum: int) -> None:
        if not received and task is not None:
            received.append(signum)
            task.cancel()

    previous = {sig: signal.getsignal(sig) for sig in signals}
    for sig in signals:
        loop.add_signal_handler(sig, cancel, sig)
    try:
        return await work
    except asyncio.CancelledError:
        if received:
            raise Stopped(received[0]) from None
        raise
    finally:
        for sig, handler in previous.items():
            loop.remove_signal_handler(sig)
            signal.signal(sig, handler)


async def serve_until_stopped(worker: AbstractAsyncContextManager[Any], ready: str) -> None:
    """Run `worker` until SIGINT or SIGTERM, printing `ready` once it polls: the contract of every worker process
    (duragent/_ops/devstack/worker_process.py waits for a `worker ready` line; SIGTERM drains it). On the event
    loop's own handlers, so the signal is taken between awaits and the worker's `async with` drains it."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    async with worker:
        print(ready, flush=True)
        await stop.wait()
