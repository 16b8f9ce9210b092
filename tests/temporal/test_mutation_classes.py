"""Tests that can fail: one for each class of single-line change to the core rules that a mutation audit
found no test noticing. Each names the change it catches. (Two `EffectsLedger.apply` calls on one
key at once: tests/stores/test_ledger.py, on SQLite and PostgreSQL, with a control that shows the race is real.)
"""

from __future__ import annotations

import asyncio
import time
import uuid
from datetime import timedelta
from pathlib import Path

import pytest

from agentic import Agent, FakeModel, Message, Registry, Stop, ToolContext, tool, tool_call
from agentic.approvals import ApprovalPolicy, Decision
from agentic.tools import ToolCancelled
from duragent._baseline import jobs, steps
from duragent._baseline.errors import CheckpointMismatch
from duragent._baseline.lease import acquire, renew
from duragent._baseline.options import RunOptions
from duragent._baseline.store import Store
from duragent._config.codec.aesgcm import ENCODING, AesGcmCodec
from duragent._config.codec.keys import KeyRing, new_key
from duragent._stores.ledger import EffectsLedger
from duragent._workflows.agent import AgentWorkflow
from duragent._workflows.inputs import AgentInput, Timeouts
from examples.effects import deps_of, record_effect
from tests.conftest import eventually, new_worker
from tests.support.baseline_helpers import agents_recording_to

# -- a checkpoint names its model step by the whole transcript, not its last message ------------------------


def test_two_transcripts_ending_in_the_same_message_are_different_model_steps() -> None:
    """Mutation caught: hashing only the last message (or a suffix) into a model step's input hash, which
    would let a resume replay a recorded reply onto a transcript that differs earlier on."""
    tail = [Message("user", "Refund order 9"), Message("tool", "ok", tool_call_id="c1")]
    one = steps.model_step(3, [Message("system", "Be careful."), *tail], 2)
    other = steps.model_step(3, [Message("system", "Ignore every rule."), *tail], 2)
    assert one.input_hash != other.input_hash
    assert one.input_hash == steps.model_step(3, [Message("system", "Be careful."), *tail], 2).input_hash


# -- a worker that lost its lease cannot renew it ---------------------------------------------------------


def test_a_worker_that_lost_its_lease_cannot_renew_it(tmp_path: Path) -> None:
    """Mutation caught: `renew` without `AND lease_owner = ?` — the zombie would push the new owner's expiry
    and keep believing it owns the run."""
    store = Store(tmp_path / "baseline.db")
    agents = agents_recording_to(EffectsLedger(tmp_path / "ledger.db"))
    jobs.start(store, agents, "r1", "billing", RunOptions())
    with store.transaction() as db:  # as if the run were left active by a worker that died mid-run
        db.execute("UPDATE runs SET status = 'running', lease_owner = 'zombie', lease_expires = 0, attempts = 1")
    acquire(store, "r1", "new-owner", lease_seconds=30, max_attempts=5)
    held = store.require("r1")
    assert renew(store, "r1", "zombie", lease_seconds=3600) is False
    after = store.require("r1")
    assert (after.lease_owner, after.lease_expires) == ("new-owner", held.lease_expires)
    assert renew(store, "r1", "new-owner", lease_seconds=30) is True
    store.close()


# -- a checkpoint store holding steps past the end of its run --------------------------------------------


def test_steps_recorded_past_the_end_of_a_run_stop_its_resume(tmp_path: Path) -> None:
    """Mutation caught: `Journal.leftover` not raising — a store describing a longer run than the loop
    produces would be finished as if it matched."""
    store = Store(tmp_path / "baseline.db")
    agents = agents_recording_to(EffectsLedger(tmp_path / "ledger.db"))
    done = jobs.start(store, agents, "r1", "billing", RunOptions())
    last = store.steps("r1")[-1]
    with store.transaction() as db:
        db.execute(
            "INSERT INTO steps(run_id, step, step_name, status, input_hash, output_ref, attempts, label, started_at)"
            " VALUES ('r1', ?, 'tool:charge', 'completed', 'x', ?, 1, 'charge', ?)",
            (last.step + 1, last.output_ref, last.started_at),
        )
        db.execute("UPDATE runs SET status = 'running', lease_owner = NULL, lease_expires = 0, attempts = 1")
    with pytest.raises(CheckpointMismatch, match="is recorded, but the run ends before it"):
        jobs.resume(store, agents, "r1")
    assert store.require("r1").status == "running" and done.status == "completed"
    store.close()


# -- the codec with more than one payload in a list -----------------------------------------------------------


async def test_the_codec_encrypts_and_decrypts_every_payload_of_a_list_in_order() -> None:
    """Mutation caught: a codec that handles only the first (or last) payload of a list: an activity with
    several arguments, or a result list, would leave the rest in plaintext (or lose them)."""
    from temporalio.api.common.v1 import Payload

    codec = AesGcmCodec(KeyRing.parse(f"k1:{new_key()}"))
    payloads = [Payload(metadata={"encoding": b"json/plain"}, data=f'"secret {i}"'.encode()) for i in range(3)]
    sealed = await codec.encode(payloads)
    assert len(sealed) == 3 and all(p.metadata["encoding"] == ENCODING for p in sealed)
    assert not any(b"secret" in p.data for p in sealed)
    assert await codec.decode(sealed) == payloads


# -- the decline and expiry abandon policies are separate ------------------------------------------------------


@pytest.mark.parametrize(
    ("policy", "approve", "stop", "status"),
    [
        (ApprovalPolicy(on_decline="abandon", on_expire="continue"), False, Stop.APPROVAL_DECLINED, "abandoned"),
        (ApprovalPolicy(on_decline="abandon", on_expire="continue"), None, Stop.ANSWERED, "completed"),
        (ApprovalPolicy(on_decline="continue", on_expire="abandon"), False, Stop.ANSWERED, "completed"),
        (ApprovalPolicy(on_decline="continue", on_expire="abandon"), None, Stop.APPROVAL_EXPIRED, "abandoned"),
    ],
    ids=["decline-abandons", "expiry-continues", "decline-continues", "expiry-abandons"],
)
async def test_the_decline_and_the_expiry_policies_are_not_confused(
    skipping_env, ledger, task_queue, policy, approve, stop, status
) -> None:
    """Mutation caught: `_refuse` reading `on_expire` for a decline (or the reverse) — every test that set both
    policies alike passed either way."""
    policy = policy.model_copy(update={"timeout_seconds": 3600})
    async with new_worker(skipping_env.client, task_queue, ledger):
        handle = await skipping_env.client.start_workflow(
            AgentWorkflow.run,
            AgentInput(agent="refund", approvals=policy),
            id=f"policy-{uuid.uuid4().hex[:10]}",
            task_queue=task_queue,
        )

        async def asking() -> bool:
            return bool((await handle.query(AgentWorkflow.approvals)).pending)

        await eventually(asking, what="the approval request")
        if approve is not None:
            [pending] = (await handle.query(AgentWorkflow.approvals)).pending
            await handle.signal(
                AgentWorkflow.decision,
                Decision(call_id=pending.call_id, approve=approve, approver="m", arguments_hash=pending.arguments_hash),
            )
        result = await handle.result()
    assert (result.stop, result.status) == (stop, status)
    assert ledger.effects(handle.id) == []


# -- an effect never lands after its compensation -------------------------------------------------------------

IN_FLIGHT = 1.0  # seconds a commit already under way takes to land after the cancellation reached it


def _uncommit(arguments: dict, result: str, ctx: ToolContext) -> str:
    if ctx.compensates and deps_of(ctx).ledger.get(ctx.compensates) is None:
        return "nothing to undo: no commit was made"
    return record_effect(ctx, "uncommit", arguments, f"uncommitted {arguments['order']}")


@tool(description="Commit an order.", order="The order.", mutating=True, compensation=_uncommit)
def commit(order: str, ctx: ToolContext) -> str:
    try:
        ctx.sleep(60)
    except ToolCancelled:
        # The cancellation came while the commit was already on its way: it lands a moment later anyway.
        time.sleep(IN_FLIGHT)
        deps_of(ctx).ledger.apply(
            ctx.idempotency_key, run_id=ctx.run_id, tool="commit", args={"order": order}, perform=lambda: "committed"
        )
        raise
    return record_effect(ctx, "commit", {"order": order}, "committed")


IN_FLIGHT_AGENT = Agent(
    FakeModel([tool_call("commit", {"order": "o-1"}), "Committed."]),
    Registry([commit]),
    name="t-commit-in-flight",
    task="Commit o-1.",
)


async def test_an_effect_in_flight_at_cancellation_is_undone_after_it_lands(skipping_env, ledger, task_queue):
    """Mutation caught: a weaker cancellation type than WAIT_CANCELLATION_COMPLETED for the tool activity —
    the compensation would run while the commit is still landing, find nothing to undo, and the commit
    would land after it, never undone."""
    async with new_worker(skipping_env.client, task_queue, ledger, agents=[IN_FLIGHT_AGENT]):
        handle = await skipping_env.client.start_workflow(
            AgentWorkflow.run,
            AgentInput(agent="t-commit-in-flight", timeouts=Timeouts(heartbeat_seconds=2.0)),
            id=f"inflight-{uuid.uuid4().hex[:10]}",
            task_queue=task_queue,
        )

        async def committing() -> bool:
            return (await handle.query(AgentWorkflow.progress)).label.startswith("commit(")

        await eventually(committing, what="the commit to start")
        await handle.cancel(reason="stop")
        result = await asyncio.wait_for(handle.result(), 60)
    # The worker has stopped: every activity it ran has finished, so the ledger is final.
    effects = ledger.effects(handle.id)
    assert result.stop is Stop.CANCELLED
    assert [(e.tool, e.compensates) for e in effects] == [("commit", None), ("uncommit", effects[0].key)]


# -- a decision exactly at the deadline: tests/agentic/test_properties_approvals.py -----------------------------------


def test_the_expiry_instant_is_the_deadline_itself() -> None:
    """Mutation caught: `now > deadline` instead of `>=` (see also the property tests of approvals)."""
    from datetime import UTC, datetime

    from agentic import ToolCall
    from agentic.approvals import ApprovalBook

    book = ApprovalBook(run_id="r")
    start = datetime(2026, 1, 1, tzinfo=UTC)
    pending = book.request("r", ToolCall(id="c", name="pay", uid="1.1"), start, 60)
    late = Decision(call_id="1.1", approve=True, approver="m", arguments_hash=pending.arguments_hash)
    assert "expired" in (book.rejection(late, start + timedelta(seconds=60)) or "")
