"""Any client of the frontend (no approver key) sends a waiting run three rejected decisions with
1.5 MB reasons and 1,000-character approver names. They used to be audited whole, so the history passed the
hand-over mark and the run's handover (its audit inside) exceeded Temporal's 2 MB cap on the new run's input:
every workflow task failed, for good. Played on the time-skipping server: the run continues as new, and a
signed approval still makes it finish — once."""

from __future__ import annotations

import asyncio
import json
import uuid

from temporalio.api.common.v1 import Payload
from temporalio.common import RawValue

from agentic.approvals import REJECTED_PER_CALL, REJECTED_TEXT_MAX, UNREADABLE, PendingApproval
from agentic.signing import ApproverKey, parse_public_keys
from duragent._client import AgentClient
from duragent._stores.ledger import EffectsLedger
from duragent._workflows.names import DECISION_SIGNAL
from tests.conftest import eventually, new_worker

MARIA = ApproverKey.generate("maria")
KEYS = parse_public_keys(MARIA.public_entry())
BIG_REASON = "R" * 1_500_000  # with the rest, under the server's 2 MB limit on one signal


def waiting_decision(waiting: PendingApproval) -> dict[str, object]:
    """An approval of the waiting call with the wrong hash, as anybody may send it."""
    return {"call_id": waiting.call_id, "approve": True, "approver": "mallory", "arguments_hash": "0" * 64}


def raw(body: dict[str, object]) -> RawValue:
    """The decision as an outsider's own client sends it: plain JSON, no converter or key of ours."""
    return RawValue(Payload(metadata={"encoding": b"json/plain"}, data=json.dumps(body).encode()))


async def test_huge_rejected_decisions_neither_wedge_the_handover_nor_block_the_approval(
    skipping_env, ledger: EffectsLedger, task_queue: str
) -> None:
    async with new_worker(skipping_env.client, task_queue, ledger, approver_keys=KEYS):
        run = await AgentClient(skipping_env.client, task_queue=task_queue).start(
            "refund", run_id=f"flood-{uuid.uuid4().hex[:8]}"
        )
        [waiting] = await run.wait_for_approval()
        outsider = skipping_env.client.get_workflow_handle(run.run_id)
        for i in range(REJECTED_PER_CALL + 2):  # small ones with the wrong hash: past the number kept, counted
            await outsider.signal(DECISION_SIGNAL, raw({**dict(waiting_decision(waiting)), "reason": f"no. {i}"}))
        for _ in range(3):
            body = {
                "call_id": waiting.call_id,
                "approve": True,
                "approver": "x" * 1000,
                "reason": BIG_REASON,
                "arguments_hash": waiting.arguments_hash,
            }
            await outsider.signal(DECISION_SIGNAL, raw(body))
        assert ledger.effects(run.run_id) == []  # the decisions changed nothing

        async def counted() -> bool:
            return (await run.approvals()).uncounted == {waiting.call_id: 2}

        await eventually(counted, timeout=10, what="the rejections past the number kept, counted")

        await run.approve(waiting.call_id, by="maria", arguments_hash=waiting.arguments_hash, key=MARIA)
        # The history passed the 4 MB mark: the run hands over, and finishes. (Wedged, it never would: bounded.)
        result = await asyncio.wait_for(run.result(), timeout=60)

    assert result.status == "completed" and result.output == "Refunded order 4471.", result
    assert result.continued >= 1
    assert [e.tool for e in ledger.effects(run.run_id)] == ["refund"]
    floods = [e for e in result.audit if e.call_id == UNREADABLE]
    assert len(floods) == 3 and all(len(e.rejection or "") <= 40 + REJECTED_TEXT_MAX for e in floods)
    assert all("at most 200 characters" in (e.rejection or "") for e in floods), floods[0].rejection
    [approved] = [e for e in result.audit if e.event == "approved"]
    assert (approved.approver, approved.signed) == ("maria", True)
