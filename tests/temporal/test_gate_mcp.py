"""The approval gate for a tool of an MCP server: the MCP server's `close_account` needs a human's
approval, and with approver keys it takes maria's signature, as the agent's own tools do. A stranger's
workflow that schedules the MCP call itself — with the tool's spec rewritten to say it needs no approval —
is refused before the server is called: the flags of an MCP tool are the run's record, believed only from
the agents' own runs. The CRM server counts its effects."""

from __future__ import annotations

import asyncio
import uuid

import pytest
from temporalio.worker import Worker

from agentic.signing import ApproverKey, parse_public_keys
from duragent._client import AgentClient
from duragent._errors import ApprovalRejected
from duragent._stores.transcripts import EMPTY
from tests.conftest import new_worker
from tests.support import mcp_agents
from tests.support.outsider import ImpostorAgent
from tests.temporal.test_mcp import crm_db, effects

MARIA = ApproverKey.generate("maria")
KEYS = parse_public_keys(MARIA.public_entry())
__all__ = ["crm_db"]  # the fixture, shared with test_mcp.py


async def test_a_gated_mcp_tool_takes_a_signed_approval_and_a_stranger_cannot_call_it(
    dev_env, task_queue, ledger, crm_db
) -> None:
    agent = mcp_agents.crm_agent(mcp_agents.crm_stdio(crm_db))
    spec = agent.list_mcp_tools()["crm__close_account"]
    assert spec.requires_confirmation
    forged = spec.model_copy(update={"requires_confirmation": False}).model_dump(mode="json")
    client = dev_env.client
    own_queue = f"{task_queue}-stranger"
    impostor = f"impostor-{uuid.uuid4().hex[:8]}"
    call = {"id": "x", "name": "crm__close_account", "arguments": {"customer": "ada"}, "uid": "1.1"}
    tool_call = {"run_id": impostor, "agent": "crm", "call": call, "idempotency_key": f"{impostor}:1.1", "tool": forged}
    tool_call["transcript"] = {"head": EMPTY}
    attempt = {"activity": "run_tool", "task_queue": task_queue, "input": tool_call}
    async with new_worker(client, task_queue, ledger, agents=[agent], approver_keys=KEYS):
        async with Worker(client, task_queue=own_queue, workflows=[ImpostorAgent]):
            [outcome] = await client.execute_workflow(ImpostorAgent.run, [attempt], id=impostor, task_queue=own_queue)
        assert not outcome["ok"] and outcome["type"] == "CallerRefused", outcome
        assert effects(crm_db) == []

        run = await AgentClient(client, task_queue=task_queue).start(agent)
        [waiting] = await run.wait_for_approval()
        with pytest.raises(ApprovalRejected, match="not signed"):
            await run.approve(waiting.call_id, by="maria")
        await run.approve(waiting.call_id, by="maria", key=MARIA)
        result = await asyncio.wait_for(run.result(), 60)
    assert result.status == "completed"
    assert effects(crm_db, "close_account") == [f"{run.run_id}:2.1"]
    assert [(a.event, a.signed) for a in result.audit if a.event != "rejected"] == [("approved", True)]
