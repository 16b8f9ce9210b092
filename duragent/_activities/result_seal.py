"""What a result's seal covers and where it rides (duragent/_sealed_results.py says why results are sealed): here,
below the workflow side, because activities check seals too — a delegated run's or a turn's result that an
activity reads on the workflow's behalf (duragent/_activities/child_result.py)."""

from __future__ import annotations

import hashlib

from temporalio.api.common.v1 import Payload

from duragent._config.worker_keys import WorkerKeys, sealed_text

RESULT_SEAL = "agent-result-seal"
ACTIVITY_RESULT, CHILD_RESULT = "activity-result", "child-result"
STRANGER_ANSWER = "StrangerAnswer"


def result_text(what: str, name: str, workflow_id: str, run_id: str, bound_to: str, payload: Payload) -> bytes:
    """What a result's seal covers: `what` (an activity's result, a child's) named `name`, for execution `run_id` of
    `workflow_id`, answering `bound_to` (the digest of its schedule's sealed text; a child's id and first execution),
    and the payload."""
    encoding = payload.metadata.get("encoding", b"").decode("ascii", errors="replace")
    digest = hashlib.sha256(payload.data).hexdigest()
    return sealed_text(what, name, workflow_id, run_id, bound_to, [encoding, digest])


def seal_on(payload: Payload) -> str | None:
    raw = payload.metadata.get(RESULT_SEAL)
    if raw is None:
        return None
    try:
        return raw.decode("ascii")
    except UnicodeDecodeError:
        return ""  # present but malformed: a seal that opens nothing


def seal_refusal(keys: WorkerKeys, payload: Payload, text: bytes) -> str | None:
    """Why a sealed result does not verify (None when it does): no seal, or one the keys did not make."""
    seal = seal_on(payload)
    if seal is None:
        return "it carries no seal"
    return None if keys.verifies(seal, text) else "its seal is not the agents' workers'"
