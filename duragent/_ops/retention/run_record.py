"""One closed run as the archive keeps it: one JSON object with everything prune is about to delete.

    run_id, executions, agent, status, temporal_status, started_at, closed_at, kept_days, archived_at
    result       the run's `AgentResult` (a `compensation_failed` run's too, from its failure's details; None
                 when it failed otherwise, was terminated or timed out)
    failure      {type, message} of how it failed (None when it returned a result)
    approvals    the approvals audit (from the result, or from a `compensation_failed` run's failure details;
                 None when the run ended without one: its history still holds every decision)
    transcript   the whole transcript from the store, claim-checked contents restored; `transcript_head` its ref
    blobs        the run's other stored blobs by ref (MCP tool schemas, an attempt the workflow did not keep)
    effects      its effects-ledger rows
    histories    every execution of its continue-as-new chain, oldest first: {run_id, events} in the JSON of
                 `temporal workflow show --output json` (`WorkflowHistory.from_json` replays it); payloads as
                 Temporal stored them (encrypted when the codec is on)

Everything but the histories is decoded: an archive is meant to be read without the cluster (and, for
what the stores held, without the keys) — keep it where the stores' own backups go.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from temporalio.client import Client, WorkflowContinuedAsNewError, WorkflowFailureError, WorkflowHistory
from temporalio.exceptions import ActivityError, ApplicationError, ChildWorkflowError
from temporalio.service import RPCError, RPCStatusCode

from agentic import Message
from duragent._activities.inputs import AgentResult
from duragent._client import AgentClient, RunHandle
from duragent._errors import UnknownRun
from duragent._ops.retention.policy import ClosedRun
from duragent._stores.ledger import PrunableLedger
from duragent._stores.transcripts import EMPTY, TranscriptNotFound, Transcripts, encode, releasable


@dataclass(frozen=True)
class RunRecord:
    record: dict[str, Any]
    executions: list[str]  # Temporal run ids, oldest first: what DeleteWorkflowExecution takes


class TranscriptMissing(Exception):
    """The run's transcript head is not in this store: the workers' store is another one, or a run was pruned
    without its journal entry. Its Temporal run must not be deleted on the strength of this archive."""


class ServerChain(Exception):
    """The run id holds a chain the *server* continues — a cron schedule or a retry policy, which no client of
    ours sets, but any Temporal client may. Its executions are not one run's continue-as-new
    chain, so they are left to an operator (`temporal workflow delete`), said with this reason, and the prune
    goes on with every other run."""

    def __init__(self, run_id: str) -> None:
        super().__init__(
            f"a cron or retry chain: the server started new executions of {run_id} as each one closed, so it"
            " is not one run prune can archive; delete it with `temporal workflow delete` once it is not needed"
        )


class NotOurs(Exception):
    """The run's result or failure cannot be read as an `AgentResult`: a workflow of someone else's under our
    type's name, on a queue of its own, returned something else — or a payload the keys here cannot
    decode. Prune skips it with this reason and goes on with every other run: one such run must not stop
    retention for everybody."""

    def __init__(self, run_id: str, error: BaseException) -> None:
        first = (str(error).strip().splitlines() or [type(error).__name__])[0][:200]
        super().__init__(
            f"its result is not a run's result ({type(error).__name__}: {first}): not an agents' run, or"
            f" encrypted with keys this prune lacks; delete it with `temporal workflow delete` once {run_id}"
            " is not needed"
        )


async def run_record(
    client: Client, run: ClosedRun, transcripts: Transcripts, ledger: PrunableLedger, archived_at: datetime
) -> RunRecord | None:
    """The run's record; None when Temporal no longer has it (deleted meanwhile). `TranscriptMissing` when
    the store does not hold its transcript; `ServerChain` when the server continues the id (cron, retry);
    `NotOurs` when its result is not an `AgentResult`."""
    handle = client.get_workflow_handle(run.run_id, run_id=run.execution, result_type=AgentResult)
    try:
        histories = await RunHandle(AgentClient(client), handle).histories()
    except UnknownRun:
        return None
    except RPCError as exc:
        if exc.status == RPCStatusCode.NOT_FOUND:  # an execution of its chain went meanwhile
            return None
        raise
    if run.execution not in [h.run_id for h in histories] or any(_continued_by_server(h) for h in histories):
        raise ServerChain(run.run_id)
    result: AgentResult | None = None
    failure: dict[str, Any] | None = None
    try:
        result = await handle.result(follow_runs=False)
    except WorkflowFailureError as exc:
        failure, result = _failure(exc)
    except WorkflowContinuedAsNewError:  # the same, seen by the result's own reading of the close
        raise ServerChain(run.run_id) from None
    except (ValueError, TypeError, LookupError) as exc:  # pydantic's ValidationError is a ValueError
        raise NotOurs(run.run_id, exc) from exc
    head = result.transcript_ref if result else await _last_head(client, histories)
    transcript, used = _transcript(transcripts, head, result)
    owned = releasable(transcripts.store).owned_blobs(run.run_id)
    others = [ref for ref in owned if ref not in used]
    record = {
        **run.summary(),
        "started_at": run.started_at.isoformat() if run.started_at else None,
        "executions": [h.run_id for h in histories],
        "archived_at": archived_at.isoformat(),
        "result": result.model_dump(mode="json") if result else None,
        "failure": failure,
        "approvals": [entry.model_dump(mode="json") for entry in result.audit] if result else None,
        "transcript_head": head,
        "transcript": [m.to_dict() for m in transcript],
        "blobs": transcripts.store.get_blobs(others) if others else {},
        "effects": [effect.model_dump(mode="json") for effect in ledger.effects(run.run_id)],
        "histories": [{"run_id": h.run_id, "events": h.to_json_dict().get("events", [])} for h in histories],
    }
    return RunRecord(record, [h.run_id for h in histories])


def _continued_by_server(history: WorkflowHistory) -> bool:
    """Whether this execution's close started another: a cron schedule's next run or a retry. (A run's own
    continue-as-new closes with a continued-as-new event instead, which `histories` follows.)"""
    if not history.events:
        return False
    last = history.events[-1]
    for name in ("completed", "failed", "timed_out"):
        field = f"workflow_execution_{name}_event_attributes"
        if last.HasField(field) and getattr(last, field).new_execution_run_id:
            return True
    return False


def _transcript(
    transcripts: Transcripts, head: str | None, ended: AgentResult | None
) -> tuple[list[Message], set[str]]:
    """The transcript's messages (contents restored) and every blob ref they use."""
    try:
        stubs = transcripts.load(head, expand=False) if head and head != EMPTY else []
        tail = ended.messages if ended and ended.transcript_ref is not None else []
        contents = {m.content_ref for m in [*stubs, *tail] if m.content_ref}
        used = {transcripts.refs.of(encode(m)) for m in stubs} | contents
        if ended is not None:
            return ended.transcript_messages(transcripts), used
        return transcripts.load(head) if head and head != EMPTY else [], used
    except TranscriptNotFound as exc:
        raise TranscriptMissing(f"its transcript is not in this store ({exc})") from exc


def _failure(exc: WorkflowFailureError) -> tuple[dict[str, Any], AgentResult | None]:
    """How the run failed — its own failure, not the activity error under it — and the result a
    `compensation_failed` run carries in its failure's details."""
    cause: BaseException | None = exc.cause
    while isinstance(cause, ActivityError | ChildWorkflowError) and cause.cause is not None:
        cause = cause.cause
    kind = cause.type if isinstance(cause, ApplicationError) and cause.type else type(cause or exc).__name__
    carried = None
    if isinstance(cause, ApplicationError) and cause.details:
        try:
            carried = AgentResult.model_validate(cause.details[0])
        except ValueError:
            carried = None
    return {"type": kind, "message": str(cause or exc)}, carried


async def _last_head(client: Client, histories: list[WorkflowHistory]) -> str | None:
    """The transcript head a run without a result last recorded: the newest activity result that carries one,
    else the head its continuation was started with."""
    for history in reversed(histories):
        for event in reversed(history.events):
            if event.HasField("activity_task_completed_event_attributes"):
                value = await _decoded(client, event.activity_task_completed_event_attributes.result.payloads)
                if isinstance(value, dict) and isinstance(value.get("head"), str):
                    return value["head"]
            elif event.HasField("workflow_execution_started_event_attributes"):
                value = await _decoded(client, event.workflow_execution_started_event_attributes.input.payloads)
                carry = value.get("carry") if isinstance(value, dict) else None
                if isinstance(carry, dict) and isinstance(carry.get("transcript"), dict):
                    head = carry["transcript"].get("head")
                    if isinstance(head, str):
                        return head
    return None


async def _decoded(client: Client, payloads: Any) -> Any:
    if not payloads:
        return None
    try:
        [value] = await client.data_converter.decode(list(payloads[:1]))
    except Exception:  # not ours to read (another converter's payload): no head in it
        return None
    if isinstance(value, str | bytes):
        try:
            return json.loads(value)
        except ValueError:
            return None
    return value
