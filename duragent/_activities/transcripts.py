"""The transcript store as the activities see it.

A head this worker's store does not hold fails the run, at once and saying what to configure — never a retried
task, a hang, or a transcript pieced together wrongly. With the default SQLite stores each worker host has its
own `transcripts.db`; an activity that lands on a host which did not write the run's head cannot read it there,
however often it retries.

Content over the worker's limits is claim-checked into the store (it travels as a preview plus a ref); over
the hard cap it fails without a retry, which would only make the same content again.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TypeVar

from temporalio.exceptions import ApplicationError

from agentic import Message, ToolResult
from duragent._activities.turn_parents import TURN
from duragent._stores.errors import StoreUnavailable
from duragent._stores.transcripts import EMPTY, UNOWNED, PayloadTooLarge, TranscriptNotFound, Transcripts

# The ApplicationError type: non-retryable, and a tool activity failing with it fails the run (_workflows/agent.py).
NOT_IN_THIS_STORE = "TranscriptNotFound"
# The ApplicationError type of a store that cannot be reached or written now (PostgreSQL down, a SQLite file's
# disk full or read-only): retried by the activity's RetryPolicy, the message naming the store.
STORE_UNAVAILABLE = "StoreUnavailable"

Stored = TypeVar("Stored", Message, ToolResult)


def require_readable(transcripts: Transcripts, head: str, run_id: str, conversation: str | None = None) -> None:
    """Refuses a head written for another run (`TranscriptNotFound`: the run fails; nothing is read or called).
    Heads are in histories anyone with frontend access reads, and a run of a stranger's own names whatever head it
    likes: shown to the model, another run's transcript would be told in its answer, and its model replies would
    pass for proposals of the stranger's tool calls. A run reads its own transcript; a conversation's turn, the
    transcript of its `conversation`'s turns (given only once the server's parent link confirmed it). Rows written
    before owners were recorded are anyone's; a head this store does not hold at all is left to the read."""
    if head == EMPTY:
        return
    owners = transcripts.owners_of(head)
    if not owners or run_id in owners or UNOWNED in owners:
        return
    if conversation is not None and any(owner.startswith(f"{conversation}{TURN}") for owner in owners):
        return
    # Not read, as a head this store does not hold: the rows here are other runs' (a run of a stranger's own naming
    # them, or the same content another run wrote on this host while this run's own rows are on another).
    raise TranscriptNotFound(
        f"transcript head {head}, written here only for runs other than {run_id!r}, not found in this worker's store"
    )


@contextmanager
def stored_here() -> Iterator[None]:
    """The transcript store's errors as an activity reports them: a head held elsewhere fails the run; a store
    that cannot be reached or written fails this attempt, retryably (nothing was written: the retry writes the
    same rows once)."""
    try:
        yield
    except StoreUnavailable as exc:
        # `from None`: the message names the store and the fault; the exception chain's tracebacks would only
        # bring the failure nearer the server's 4 KB limit for a retried activity's last failure (model.py).
        raise ApplicationError(str(exc), type=STORE_UNAVAILABLE) from None
    except TranscriptNotFound as exc:
        raise ApplicationError(
            f"{exc}; configure a shared AGENT_DATABASE_URL so that workers on every host read the same"
            " transcripts (the SQLite stores are one host's)",
            type=NOT_IN_THIS_STORE,
            non_retryable=True,
        ) from None


def claim_checked(
    transcripts: Transcripts, item: Stored, threshold: int, hard_cap: int, what: str, run_id: str
) -> Stored:
    """`item` as it travels: whole, or, over `threshold` bytes, a preview whose `content_ref` names the whole
    in the store (written as `run_id`'s rows). Over `hard_cap`: a non-retryable `PayloadTooLarge`."""
    try:
        content, ref = transcripts.claim_check(item.content, threshold, hard_cap, what, run_id)
    except PayloadTooLarge as exc:
        raise ApplicationError(str(exc), type="PayloadTooLarge", non_retryable=True) from exc
    return item if ref is None else item.model_copy(update={"content": content, "content_ref": ref})
