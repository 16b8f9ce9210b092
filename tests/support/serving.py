"""One of our apps served as the commands serve it (duragent/_ops/http/serve.py: the same uvicorn server, protocol and
bounds), in a thread of the test process, on a free loopback port; stopped when the block ends."""

from __future__ import annotations

import argparse
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import uvicorn
from fastapi import FastAPI

from duragent._ops.http.serve import listen, server


@dataclass
class Served:
    url: str
    port: int
    server: uvicorn.Server

    def open_connections(self) -> int:
        """The server's own count of the connections it has accepted and not yet closed."""
        return len(self.server.server_state.connections)

    def vouched_for(self) -> int:
        """How many of them carried an authenticated request (duragent/_ops/http/connections.py)."""
        return sum(1 for c in self.server.server_state.connections if getattr(c, "vouched", False))


@contextmanager
def serving(app: FastAPI, **bounds: Any) -> Iterator[Served]:
    """`bounds`: `max_connections`, `read_timeout` (duragent/_ops/http/serve.py's defaults otherwise)."""
    listener = listen(argparse.Namespace(host="127.0.0.1", port=0))
    port = int(listener.getsockname()[1])
    running = server(app, **bounds)
    thread = threading.Thread(target=running.run, kwargs={"sockets": [listener]}, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 30
        while not running.started:
            assert thread.is_alive() and time.monotonic() < deadline, "the server did not start"
            time.sleep(0.01)
        yield Served(f"http://127.0.0.1:{port}", port, running)
    finally:
        running.should_exit = True
        thread.join(30)
        listener.close()
