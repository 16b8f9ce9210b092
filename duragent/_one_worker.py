"""One worker per task queue in a process: Temporal's SDK core refuses a second worker polling the same
namespace, task queue and build in one process, with a Rust backtrace ("Registration of multiple workers with
overlapping worker task types ... not allowed"). The supported way to serve agents next to workflows of your
own is one worker for both: your `Worker(..., plugins=[DurableAgentsPlugin(agents=..., deps=...)])`.

`build_worker` remembers the workers it makes; a second worker on the same queue, in either order, fails at
once with one line saying so instead of the backtrace.
"""

from __future__ import annotations

import weakref
from typing import Any

from temporalio.worker import Worker

Slot = tuple[int, str, str, str]

_BUILT: dict[Slot, weakref.ref[Worker]] = {}
OVERLAP = "overlapping worker task types"  # the SDK core's words for it


class SecondWorker(RuntimeError):
    """A second worker on a task queue that a worker in this process already polls."""


def slot_of(config: Any) -> Slot:
    """(connection, namespace, task queue, build id) of a worker's configuration: what the SDK core allows once
    (each client connection keeps its own set of workers)."""
    client = config["client"]
    deployment = config.get("deployment_config")
    build = deployment.version.build_id if deployment is not None else config.get("build_id") or ""
    return id(client.service_client), client.namespace, config["task_queue"], build


def remember(worker: Worker, slot: Slot) -> None:
    _BUILT[slot] = weakref.ref(worker)


def refuse_second(slot: Slot) -> None:
    """Raises SecondWorker if `build_worker` made a worker for `slot` that is still alive and not shut down."""
    built = _BUILT.get(slot)
    worker = built() if built is not None else None
    if worker is not None and not worker.is_shutdown:
        raise SecondWorker(second_worker_text(slot))


def second_worker_text(slot: Slot) -> str:
    _, namespace, task_queue, _ = slot
    return (
        f"a worker for task queue {task_queue!r} (namespace {namespace!r}) already runs in this process, and "
        "Temporal allows one: serve the agents from your own Worker instead of a second one — "
        "Worker(client, task_queue=..., workflows=[...], activities=[...], "
        "plugins=[DurableAgentsPlugin(agents=[...], deps=...)])"
    )
