"""A conversation on the real dev server survives a worker SIGKILLed mid-turn: the turn answers once, its
effect is made once, and the conversation goes on."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import uuid

import pytest

from duragent import AgentClient
from duragent._config.settings import ROOT
from duragent._ops.devstack.worker_process import WorkerProcess
from duragent._stores.ledger import EffectsLedger
from duragent._stores.transcripts import SqliteTranscriptStore, Transcripts
from duragent._workflows.inputs import Timeouts
from duragent._workflows.turns import turn_run_id
from tests.conftest import dev_settings, eventually
from tests.support.conversation_agents import CHAT
from tests.support.docs import code_block_after

pytestmark = pytest.mark.system

MODULES = {"AGENT_MODULES": "tests.support.conversation_agents"}


async def test_a_worker_killed_mid_turn_the_turn_answers_once_and_its_effect_is_made_once(
    dev_env, task_queue, tmp_path
):
    settings = dev_settings(dev_env, task_queue, tmp_path)
    ledger = EffectsLedger(settings.ledger_path)
    agents = AgentClient(dev_env.client, task_queue=task_queue)
    conv = agents.conversation(
        CHAT,
        f"conv-{uuid.uuid4().hex[:8]}",
        options={"after_effect_delay": 4.0},  # the row is written, then the tool takes 4 s to say so
        timeouts=Timeouts(heartbeat_seconds=2.0),
    )
    turn = turn_run_id(conv.conversation_id, 2)
    worker = WorkerProcess(settings, log=tmp_path / "worker1.log", extra_env=MODULES).wait_ready()
    try:
        assert (await conv.send("hello")).output == "You said 'hello' (turn 1, 2 messages)"
        assert await conv.send("row r-1", wait=False) == 2
        await eventually(lambda: len(ledger.effects(turn)) == 1, what="the row written by turn 2")
    finally:
        worker.kill()
    worker = WorkerProcess(settings, log=tmp_path / "worker2.log", extra_env=MODULES).wait_ready()
    try:
        answer = await asyncio.wait_for(conv.wait(2), 120)
        third = await asyncio.wait_for(conv.send("and now?"), 60)
        view = await conv.describe()
        page = await conv.history(transcripts=Transcripts(SqliteTranscriptStore(tmp_path / "transcripts.db")))
    finally:
        worker.stop()
    assert answer.output == "Done: wrote r-1 (turn 2)"
    assert [e.key for e in ledger.effects(turn)] == [f"{turn}:1.1"]  # retried after the kill, not repeated
    assert third.output == "You said 'and now?' (turn 3, 8 messages)"  # the conversation saw turn 2 once
    assert (view.turns, view.answered) == (3, 3)
    assert [m.content for m in page.messages if m.role == "assistant" and m.content.startswith("Done")] == [
        "Done: wrote r-1 (turn 2)"
    ]


def test_the_readmes_conversation_program_is_short_and_runs_as_written(dev_env, tmp_path):
    code = code_block_after("README.md", "## A conversation that lasts days")
    assert len([line for line in code.splitlines() if line.strip()]) <= 25  # lines of code; blank lines are PEP 8's
    script = tmp_path / "conversation.py"
    script.write_text(code)
    env = os.environ | {
        "TEMPORAL_ADDRESS": dev_env.client.service_client.config.target_host,
        "AGENT_DATA_DIR": str(tmp_path),
        "PYTHONPATH": str(ROOT),
    }
    done = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-2:] == ["Refunded A-1.", "You are welcome."]
