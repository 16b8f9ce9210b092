"""Sealed results: with worker keys, a workflow uses an activity's result, or a delegated run's, only when a worker
holding the keys made it. Whoever else polls the agents' task queue (frontend access, no key) can take an activity
task — any retry, a busy worker — or complete a running one by its id, and answer what it likes; a stranger's
workflow worker can take a delegated run's tasks and complete it with an `AgentResult` of its own. None of that
carries a seal.

- The seal rides in the result payload's metadata (`agent-result-seal`), next to its encoding: the payload's bytes
  are what they always were, so clients, keyless replays and older code read it unchanged. It is an HMAC under the
  first worker key over what binds the answer to its question — the run and execution, the activity's type and the
  digest of what the schedule's seal covers (the whole input; not the seal itself, which a rotation changes), or
  the delegating run and the child's id and first execution — and the payload's bytes.
- An answer that does not verify is never data: it is logged as a stranger's and the workflow schedules the same
  activity again (same input, same retry policy; with eager dispatch the worker that scheduled it takes the new
  attempt), up to `MAX_STRANGER_ANSWERS` times, then the activity fails for good (`StrangerAnswer`). A delegated
  run cannot be asked again: its answer is the child's failure. A local activity is run by the worker that
  schedules it, so a bad seal there is a stranger's history (below).
- Each refusal leaves a marker in history (`workflow.patched`, one id per refusal): on replay, a result that does
  not verify is taken for what it was when recorded — refused when its marker is there; otherwise it was accepted
  live under a key this worker no longer holds, or a stranger's worker wrote that part of the history. Either way
  the workflow task fails, saying so, and the run waits (nothing acts) until a worker holding that key takes it.
- Runs recorded before results were sealed replay their unsealed results, as they always did: the first unsealed
  result a run meets asks `workflow.patched(RESULTS_SEALED_PATCH)` — false only when replaying a history that has no
  marker there. A run that meets one live records the marker and refuses it: an activity stranger who answers in
  the old format gets nothing, as the decision comes from history, never from the payload. (A stranger's *workflow*
  worker that writes a run's first tasks can leave the marker out; docs/operations.md, "Trust model", says what
  that buys it: the effects still take their gates, approvals and undo receipts from the worker, not the run.)
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from temporalio import workflow
from temporalio.api.common.v1 import Payload
from temporalio.common import RawValue
from temporalio.exceptions import ActivityError, ApplicationError, ChildWorkflowError, RetryState

from duragent._activities.caller import AGENT_WORKFLOW as _AGENT
from duragent._activities.result_seal import (
    ACTIVITY_RESULT,
    CHILD_RESULT,
    RESULT_SEAL,
    STRANGER_ANSWER,
    result_text,
    seal_on,
    seal_refusal,
)
from duragent._config.worker_keys import WorkerKeys

# Per schedule: a stranger answering every retry cannot keep a run asking for ever.
MAX_STRANGER_ANSWERS = 5
# Absent from histories recorded before results were sealed: those replay their unsealed results.
RESULTS_SEALED_PATCH = "results-sealed"
_REFUSED_MARKER = "stranger-answer-refused-"


class UnverifiableHistory(RuntimeError):
    """A recorded result this worker cannot verify, that was not refused when recorded: a workflow-task failure
    (retried by the server, so the run resumes once a worker holding the key takes it), never a decision."""


@dataclass(frozen=True)
class Sealed(RawValue):
    """A sealed result's payload, passed through the converter as is; `value` is what it encodes, for this worker's
    own interceptors that read results (the run log's token counts and statuses)."""

    value: Any = None


def sealed(keys: WorkerKeys, payload: Payload, text: bytes, value: Any = None) -> Sealed:
    """`payload` with its seal in its metadata."""
    copy = Payload()
    copy.CopyFrom(payload)
    copy.metadata[RESULT_SEAL] = keys.seal(text).encode()
    return Sealed(copy, value)


def unsealed_allowed() -> bool:
    """Whether this run may take an unsealed result: only when replaying a history recorded before results were
    sealed (asked once per run, at its first unsealed result; its answer holds for the rest of the run)."""
    return not workflow.patched(RESULTS_SEALED_PATCH)


class ResultOpener:
    """The workflow side, one per run (it counts the run's refusals): verifies what the run is answered."""

    def __init__(self, keys: WorkerKeys) -> None:
        self.keys = keys
        self.refusals = 0

    def refusal(self, payload: Payload, text: bytes) -> str | None:
        if seal_on(payload) is None and unsealed_allowed():
            return None
        return seal_refusal(self.keys, payload, text)

    def refused(self, what: str, why: str, *, local: bool = False) -> None:
        """Records a refusal (live), or fails the workflow task when a recorded result that was accepted does not
        verify now (replay). A local activity's result is made by the worker running the run, so one that does not
        verify is always a history this worker cannot trust, never a live answer to refuse."""
        self.refusals += 1
        if not local and workflow.patched(f"{_REFUSED_MARKER}{self.refusals}"):
            workflow.logger.warning(
                "refused %s: %s; whoever else polls this task queue answered it, not the agents' workers", what, why
            )
            return
        info = workflow.info()
        raise UnverifiableHistory(
            f"run {info.workflow_id} ({info.run_id}): the recorded {what} does not verify ({why}) under this "
            "worker's keys (AGENT_WORKER_KEYS), and it was not refused when recorded: it was sealed under a key "
            "since dropped, or a stranger's worker wrote this part of the history. Nothing acts on it; a worker "
            "holding that key resumes the run."
        )

    async def activity(
        self, start: Callable[[Any], Awaitable[RawValue]], input: Any, schedule: str, *, local: bool
    ) -> Any:
        """Awaits the activity `start(input)` schedules and its sealed result, scheduling it again after each
        stranger's answer (a local one never: only its own worker answers it)."""
        wanted = input.ret_type
        input.ret_type = RawValue
        info = workflow.info()
        for _ in range(MAX_STRANGER_ANSWERS):
            payload = (await start(input)).payload
            text = result_text(ACTIVITY_RESULT, input.activity, info.workflow_id, info.run_id, schedule, payload)
            why = self.refusal(payload, text)
            if why is None:
                return workflow.payload_converter().from_payload(payload, wanted)
            self.refused(f"result of {input.activity}", why, local=local)
        raise _stranger_activity(input.activity, why)

    async def child(self, handle: Any, wanted: Any) -> Any:
        payload = (await handle).payload
        info = workflow.info()
        bound_to = f"{handle.id}/{handle.first_execution_run_id}"
        why = self.refusal(payload, result_text(CHILD_RESULT, _AGENT, info.workflow_id, info.run_id, bound_to, payload))
        if why is None:
            return workflow.payload_converter().from_payload(payload, wanted)
        self.refused(f"result of delegated run {handle.id}", why)
        error = ChildWorkflowError(
            "child workflow answered by a stranger",
            namespace=info.namespace,
            workflow_id=handle.id,
            run_id=handle.first_execution_run_id or "",
            workflow_type=_AGENT,
            initiated_event_id=0,
            started_event_id=0,
            retry_state=RetryState.NON_RETRYABLE_FAILURE,
        )
        error.__cause__ = ApplicationError(
            f"delegated run {handle.id} ended with a result the agents' workers did not make ({why})",
            type=STRANGER_ANSWER,
            non_retryable=True,
        )
        raise error


def _stranger_activity(name: str, why: str) -> ActivityError:
    error = ActivityError(
        "activity answered by a stranger",
        scheduled_event_id=0,
        started_event_id=0,
        identity="",
        activity_type=name,
        activity_id="",
        retry_state=RetryState.NON_RETRYABLE_FAILURE,
    )
    error.__cause__ = ApplicationError(
        f"{name} was answered {MAX_STRANGER_ANSWERS} times by a worker without the agents' keys ({why}); "
        "nothing it answered was used",
        type=STRANGER_ANSWER,
        non_retryable=True,
    )
    return error
