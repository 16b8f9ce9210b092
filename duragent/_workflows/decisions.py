"""Reading a `decision` signal's payload, bounded or as runs read it before the bounds.

`Decision` bounds every field now; a run whose history took a decision before that replays reading it as it
did then (`workflow.patched(DECISION_BOUNDS_PATCH)`), so a longer reason it accepted then is accepted again.
"""

from __future__ import annotations

from datetime import datetime

from temporalio import workflow
from temporalio.api.common.v1 import Payload

with workflow.unsafe.imports_passed_through():
    from pydantic import Field

    from agentic.approvals import Decision

DECISION_BOUNDS_PATCH = "decision-bounds"


class _UnboundedDecision(Decision):
    """`Decision` as it was read before its fields were bounded."""

    call_id: str
    approver: str = Field(min_length=1)
    reason: str = ""
    arguments_hash: str
    signature: str | None = None
    client: str | None = None
    execution: str | None = None
    deadline: datetime | None = None


def read_decision(payload: Payload) -> Decision:
    """The decision in `payload`; raises (ValueError, the converter's errors) when it cannot be one."""
    if workflow.patched(DECISION_BOUNDS_PATCH):
        return workflow.payload_converter().from_payload(payload, Decision)
    legacy = workflow.payload_converter().from_payload(payload, _UnboundedDecision)
    return Decision.model_construct(**dict(legacy))
