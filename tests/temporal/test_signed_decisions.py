"""Signed decisions: where workers configure approver keys, a decision counts only when
signed by the approver it names, over exactly this run, call, yes/no, reason and arguments hash. Anyone who
can signal the workflow can still send a decision — it just changes nothing, and the audit says why."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from temporalio.client import WorkflowUpdateFailedError

from agentic import ToolCall
from agentic.approvals import ApprovalBook, Decision
from agentic.signing import ApproverKey, ApproverKeyError, parse_public_keys
from duragent._client import AgentClient
from duragent._config.settings import ROOT
from duragent._errors import ApprovalRejected
from duragent._workflows.agent import AgentWorkflow
from tests.conftest import TEST_AGENTS, dev_settings, new_worker
from tests.support import delegation_agents

MARIA = ApproverKey.generate("maria")
BOB = ApproverKey.generate("bob")
KEYS = parse_public_keys(f"{MARIA.public_entry()},{BOB.public_entry()}")
NOW = datetime(2026, 11, 30, tzinfo=UTC)


def book_waiting_for(call: ToolCall, run_id: str = "r1") -> ApprovalBook:
    book = ApprovalBook(run_id=run_id, approver_keys=KEYS)
    book.request(run_id, call, NOW, 3600)
    return book


def test_only_a_decision_signed_by_the_named_approver_counts() -> None:
    call = ToolCall(id="c", name="refund", arguments={"order_id": "4471"}, uid="1.1")
    book = book_waiting_for(call)
    hash_ = book.pending["1.1"].arguments_hash
    decision = Decision(call_id="1.1", approve=True, approver="maria", reason="ok", arguments_hash=hash_)

    assert "not signed" in (book.rejection(decision, NOW) or "")
    assert "not maria's" in (book.rejection(decision.model_copy(update={"signature": BOB.sign(b"x")}), NOW) or "")
    forged = decision.model_copy(update={"approver": "mallory"}).signed("r1", ApproverKey("mallory", MARIA.private))
    assert "not an approver here" in (book.rejection(forged, NOW) or "")
    # Signed for another run, or before the reason was changed: the signature no longer matches.
    assert "not maria's" in (book.rejection(decision.signed("r2", MARIA), NOW) or "")
    tampered = decision.signed("r1", MARIA).model_copy(update={"reason": "changed after signing"})
    assert "not maria's" in (book.rejection(tampered, NOW) or "")

    entry = book.decide(decision.signed("r1", MARIA), NOW)
    assert (entry.event, entry.signed) == ("approved", True)


def test_without_keys_nothing_changes() -> None:
    call = ToolCall(id="c", name="refund", arguments={}, uid="1.1")
    book = ApprovalBook()
    book.request("r1", call, NOW, 60)
    decision = Decision(
        call_id="1.1", approve=True, approver="anyone", arguments_hash=book.pending["1.1"].arguments_hash
    )
    entry = book.decide(decision, NOW)
    assert (entry.event, entry.signed) == ("approved", False)


def test_key_entries_are_checked_and_never_echoed() -> None:
    private = MARIA.entry().split(":", 1)[1]
    with pytest.raises(ApproverKeyError) as bad:
        parse_public_keys(f"maria={private[:10]}")
    assert private[:10] not in str(bad.value)
    with pytest.raises(ApproverKeyError):
        ApproverKey.parse(f"{private}:maria")  # written the wrong way round
    assert ApproverKey.parse(MARIA.entry()).public_entry() == MARIA.public_entry()


async def test_the_workflow_applies_only_signed_decisions(skipping_env, ledger, task_queue) -> None:
    async with new_worker(skipping_env.client, task_queue, ledger, approver_keys=KEYS):
        agents = AgentClient(skipping_env.client, task_queue=task_queue)
        run = await agents.start("refund", run_id=f"signed-{uuid.uuid4().hex[:8]}")
        [waiting] = await run.wait_for_approval()
        with pytest.raises(ApprovalRejected, match="not signed"):
            await run.approve(waiting.call_id, by="maria", arguments_hash=waiting.arguments_hash)
        with pytest.raises(ValueError, match="the key is 'bob''s"):  # the client will not sign as someone else
            await run.approve(waiting.call_id, by="maria", arguments_hash=waiting.arguments_hash, key=BOB)
        # Bypassing the client: bob's signature on maria's name, or maria's signature made for another run,
        # sent as raw updates — each changes nothing.
        claim = Decision(call_id=waiting.call_id, approve=True, approver="maria", arguments_hash=waiting.arguments_hash)
        forged = claim.model_copy(update={"signature": BOB.sign(claim.signed_text(run.run_id))})
        for bad in (forged, claim.signed("another-run", MARIA)):
            with pytest.raises(WorkflowUpdateFailedError) as refused:
                await run.workflow.execute_update(AgentWorkflow.decide, bad)
            assert "not maria's" in str(refused.value.cause)
        assert ledger.effects(run.run_id) == []
        outcome = await run.approve(
            waiting.call_id, by="maria", arguments_hash=waiting.arguments_hash, key=MARIA, reason="checked"
        )
        assert outcome.entry is not None and outcome.entry.signed
        result = await run.result()
    assert result.output == "Refunded order 4471."
    assert [e.tool for e in ledger.effects(run.run_id)] == ["refund"]
    [entry] = [a for a in result.audit if a.event == "approved"]
    assert (entry.approver, entry.signed) == ("maria", True)


async def test_a_signed_decision_routed_down_a_delegation_tree_stays_signed(skipping_env, ledger, task_queue) -> None:
    """Approved through the root, a grandchild's call is decided by the grandchild (the client routes the decision
    to the run that waits): the signature must travel with it, or keys on the workers refuse it there."""
    agents_served = [*TEST_AGENTS, *delegation_agents.agents]
    async with new_worker(skipping_env.client, task_queue, ledger, agents=agents_served, approver_keys=KEYS):
        agents = AgentClient(skipping_env.client, task_queue=task_queue)
        root = await agents.start("d-desk-gated", run_id=f"signed-tree-{uuid.uuid4().hex[:8]}")
        [waiting] = await root.wait_for_approval(timeout=60)
        assert waiting.run_id == f"{root.run_id}~2.1~2.1"  # the grandchild's call, seen from the root
        with pytest.raises(ApprovalRejected, match="not signed"):
            await root.approve(waiting.address, by="maria", arguments_hash=waiting.arguments_hash)
        outcome = await root.approve(waiting.address, by="maria", arguments_hash=waiting.arguments_hash, key=MARIA)
        assert (outcome.run_id, outcome.decision) == (waiting.run_id, "approved")
        assert outcome.entry is not None and outcome.entry.signed
        result = await root.result()
    assert result.output == "Desk: Accounts: Payer: paid acme."
    assert [e.key for e in ledger.effects() if e.tool == "pay"] == [f"{waiting.run_id}:2.1"]


async def test_the_cli_signs_with_the_approvers_key_file(dev_env, task_queue, tmp_path, ledger) -> None:
    settings = dev_settings(dev_env, task_queue, tmp_path)
    key_file = tmp_path / "maria.key"
    key_file.write_text(MARIA.entry())
    env = os.environ | {
        "TEMPORAL_ADDRESS": settings.address,
        "TEMPORAL_NAMESPACE": settings.namespace,
        "TEMPORAL_TASK_QUEUE": task_queue,
    }
    async with new_worker(dev_env.client, task_queue, type(ledger)(settings.ledger_path), approver_keys=KEYS):
        run = await AgentClient(dev_env.client, task_queue=task_queue).start("refund")
        [waiting] = await run.wait_for_approval()
        approve = [sys.executable, str(ROOT / "starter.py"), "approve", run.run_id, "--yes", "--json"]
        # In a thread: the worker shares this test's event loop and must answer the CLI's update meanwhile.
        unsigned = await asyncio.to_thread(
            subprocess.run, [*approve, "--by", "maria"], env=env, capture_output=True, text=True, timeout=60
        )
        assert unsigned.returncode == 1 and "not signed" in unsigned.stderr
        signed = await asyncio.to_thread(
            subprocess.run, [*approve, "--key-file", str(key_file)], env=env, capture_output=True, text=True, timeout=60
        )
        assert signed.returncode == 0, signed.stderr
        assert json.loads(signed.stdout)["entry"]["signed"] is True
        assert (await asyncio.wait_for(run.result(), 60)).output == "Refunded order 4471."
    assert waiting.deadline - waiting.requested_at == timedelta(hours=24)


@pytest.mark.system
def test_python_m_ops_approver_keys_new_prints_a_usable_pair(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "starter.py", "approver-key", "maria"], cwd=ROOT, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    private, public = (line for line in done.stdout.splitlines() if not line.startswith("#"))
    key = ApproverKey.parse(private)
    assert parse_public_keys(public) == {"maria": key.public_entry().split("=", 1)[1]}
