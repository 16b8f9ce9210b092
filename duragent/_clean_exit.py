"""`run(main())`: `asyncio.run` for a script that uses Temporal clients, which then exits cleanly.

With `asyncio.run` alone, a short client script aborts at interpreter exit now and then (exit 134,
`Fatal Python error: PyGILState_Release: thread state ... must be current when releasing`, or a segfault,
139) — in about a quarter of runs of a script that connects, lists and ends (sdk-python issue 300). Why:
every SDK call completes on a thread of the runtime's Tokio pool, which takes the GIL to hand the result to
asyncio. The main thread wakes, finishes the script and starts interpreter shutdown while that Tokio thread
is still waiting to take the GIL back; Python 3.11 ends a thread that waits for the GIL at shutdown with
`pthread_exit`, which unwinds through Rust code holding Python state. The default runtime is a module-level
singleton, so its threads live until that moment.

`run` drops the runtimes when `main` is done: the default one (private in temporalio 1.35, which offers no
public way to close a client or a runtime) and, through `gc.collect()` — reference cycles keep them alive —
any the program built itself and no longer references (a worker's `worker_runtime`). A runtime dropped
shuts its Tokio pool down and joins its threads with the GIL released, so none is left to wake during
shutdown. A client or runtime still referenced from a global keeps its threads: keep them in `main`.
"""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Coroutine
from typing import Any, TypeVar

import temporalio.runtime

T = TypeVar("T")


def run(main: Coroutine[Any, Any, T], *, debug: bool | None = None) -> T:
    """`asyncio.run(main)`, then the Temporal runtimes released so that the interpreter exits cleanly."""
    try:
        return asyncio.run(main, debug=debug)
    finally:
        release_runtimes()


def release_runtimes() -> None:
    """Drop the default Temporal runtime and collect unreferenced ones, joining their threads: for the end of
    a program, after its last client and worker are gone (a later client gets a new default runtime)."""
    # Private, and the only handle on the default runtime in temporalio 1.35 (sdk-python issue 300).
    temporalio.runtime._runtime_ref._default_runtime = None
    gc.collect()  # the clients and runtimes of `main` sit in reference cycles: freed only by a collection
