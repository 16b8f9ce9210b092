"""Live stdio servers, kept per process: starting a server (a Python one imports the SDK) costs seconds, a
call on a running one milliseconds. So a process keeps one running server per stdio `MCPServer`, on an
event loop thread of its own, and every runner in the process (the worker's activities, `agent.run`)
calls through it.

Nothing durable depends on it: a session that breaks is dropped and the call reported retryable — the
runner retries under the same idempotency key, on a new session, here or on another worker. One unused
for `IDLE_SECONDS` is closed, so servers do not pile up.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from typing import Any, TypeVar

from agentic.extras import require_extra

require_extra("mcp")

from mcp import Client, MCPError
from mcp_types import CONNECTION_CLOSED

from agentic.mcp.server import MCPServer

T = TypeVar("T")
IDLE_SECONDS = 60.0
Connect = Callable[[MCPServer], AbstractAsyncContextManager[Client]]


class _Session:
    """One connection, held open by a task of its own (the SDK's task groups must be left by the task that
    entered them); calls are made on it from other tasks of the same loop."""

    def __init__(self) -> None:
        self.client: Client | None = None
        self.used = time.monotonic()
        self.busy = 0  # calls in flight: a session is idle only with none
        self.closing = asyncio.Event()
        self.task: asyncio.Task[None] | None = None

    async def hold(self, opened: AbstractAsyncContextManager[Client], ready: asyncio.Future[None]) -> None:
        try:
            async with opened as client:
                self.client = client
                ready.set_result(None)
                while not self.closing.is_set():
                    try:
                        await asyncio.wait_for(self.closing.wait(), timeout=5.0)
                    except TimeoutError:
                        if not self.busy and time.monotonic() - self.used > IDLE_SECONDS:
                            self.closing.set()
        except BaseException as exc:
            if not ready.done():
                ready.set_exception(exc)
            elif not isinstance(exc, Exception | asyncio.CancelledError):
                raise


class StdioSessions:
    def __init__(self, connect: Connect) -> None:
        self._connect = connect
        self._sessions: dict[tuple[Any, ...], _Session] = {}
        self._opening: dict[tuple[Any, ...], asyncio.Lock] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        self._started = threading.Lock()

    async def run(self, server: MCPServer, use: Callable[[Client], Awaitable[T]]) -> T:
        """`use(client)` on the server's live session, from any event loop; cancellable."""
        future = asyncio.run_coroutine_threadsafe(self._use(server, use), self._background())
        return await asyncio.wrap_future(future)

    def close_all(self) -> None:
        """Stop every live server (tests; a process that exits stops them anyway: their stdin closes)."""
        if self._loop is not None:
            asyncio.run_coroutine_threadsafe(self._close_all(), self._loop).result(timeout=30)

    async def _use(self, server: MCPServer, use: Callable[[Client], Awaitable[T]]) -> T:
        key = (server.name, server.command, server.cwd, tuple(sorted(server.resolve_env().items())))
        async with self._opening.setdefault(key, asyncio.Lock()):  # one server per key, however many callers
            session = self._sessions.get(key)
            if session is None or session.closing.is_set() or session.task is None or session.task.done():
                session = await self._open(key, server)
            session.busy += 1
        assert session.client is not None
        try:
            return await use(session.client)
        except Exception as exc:
            if not (isinstance(exc, MCPError) and exc.code != CONNECTION_CLOSED):
                # Not an answer from the server: the connection may be broken, so the next call starts afresh.
                session.closing.set()
                if self._sessions.get(key) is session:
                    del self._sessions[key]
            raise
        finally:
            session.busy -= 1
            session.used = time.monotonic()

    async def _open(self, key: tuple[Any, ...], server: MCPServer) -> _Session:
        session = _Session()
        ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        session.task = asyncio.create_task(session.hold(self._connect(server), ready))
        await ready
        self._sessions[key] = session
        return session

    async def _close_all(self) -> None:
        sessions, self._sessions = list(self._sessions.values()), {}
        for session in sessions:
            session.closing.set()
        await asyncio.gather(*(s.task for s in sessions if s.task is not None), return_exceptions=True)

    def _background(self) -> asyncio.AbstractEventLoop:
        with self._started:
            if self._loop is None:
                loop = asyncio.new_event_loop()
                threading.Thread(target=loop.run_forever, name="mcp-stdio-sessions", daemon=True).start()
                self._loop = loop
        return self._loop
