"""The transcript store as the activities see it: a head this worker's store does not hold fails the run,
at once and saying what to configure — never a retried task, a hang, or a transcript pieced together wrongly.

With the default SQLite stores each worker host has its own `transcripts.db`; an activity that lands on a
host which did not write the run's head cannot read it there, however often it retries.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from temporalio.exceptions import ApplicationError

from stores.transcripts import TranscriptNotFound

# The ApplicationError type: non-retryable, and a tool activity failing with it fails the run (workflows/agent.py).
NOT_IN_THIS_STORE = "TranscriptNotFound"


@contextmanager
def stored_here() -> Iterator[None]:
    try:
        yield
    except TranscriptNotFound as exc:
        raise ApplicationError(
            f"{exc}; configure a shared AGENT_DATABASE_URL so that workers on every host read the same"
            " transcripts (the SQLite stores are one host's)",
            type=NOT_IN_THIS_STORE,
            non_retryable=True,
        ) from None
