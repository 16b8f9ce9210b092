"""`starter.py chat` as a person uses it: lines in, answers out, a gated tool asked inline; and `conversations`
lists it. Real processes: the dev server, a worker, the command line."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import uuid

import pytest

from duragent._config.settings import ROOT
from duragent._ops.devstack.worker_process import WorkerProcess
from duragent._stores.ledger import EffectsLedger
from duragent._workflows.turns import turn_run_id
from tests.conftest import dev_settings, eventually

pytestmark = pytest.mark.system

MODULE = "tests.support.conversation_agents"


async def typed(argv: list[str], lines: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """The command with `lines` as its standard input, as a person types them."""
    return await asyncio.to_thread(
        subprocess.run, argv, input=lines, env=env, cwd=ROOT, capture_output=True, text=True, timeout=120
    )


async def test_a_terminal_conversation_asks_the_approver_inline_and_is_listed(dev_env, task_queue, tmp_path):
    settings = dev_settings(dev_env, task_queue, tmp_path)
    conversation = f"cli-{uuid.uuid4().hex[:8]}"
    env = os.environ | {"TEMPORAL_ADDRESS": settings.address, "TEMPORAL_TASK_QUEUE": task_queue}
    chat = [sys.executable, str(ROOT / "starter.py"), "chat", "t-chat", "--agents", MODULE]
    worker = WorkerProcess(settings, log=tmp_path / "worker.log", extra_env={"AGENT_MODULES": MODULE}).wait_ready()
    try:
        done = await typed([*chat, "--conversation", conversation, "--by", "maria"], "hello\npay s-4\ny\nbye\n\n", env)
        assert done.returncode == 0, done.stderr
        assert done.stdout.splitlines()[1:] == [  # each turn's text as it comes, a line per approval and tool call
            "You said 'hello' (turn 1, 2 messages)",
            'waiting for approval: pay {"supplier": "s-4"} (call 1.1)',
            "approved by maria",
            "-> pay(supplier=s-4)",
            "<- pay: ok",
            "Done: paid s-4 (turn 2)",
            "You said 'bye' (turn 3, 8 messages)",
        ]
        again = await typed([*chat, "--conversation", conversation, "--json"], "and?\n", env)  # it goes on
        assert json.loads(again.stdout)["output"] == "You said 'and?' (turn 4, 10 messages)"
        rows: list = []

        async def listed() -> bool:
            done = await typed([sys.executable, str(ROOT / "starter.py"), "conversations", "--json"], "", env)
            rows[:] = json.loads(done.stdout)
            return bool(rows) and rows[0]["turns"] == 4

        await eventually(listed, what="the conversation listed with its 4 turns")
    finally:
        worker.stop()
    assert [(r["conversation_id"], r["agent"], r["status"]) for r in rows] == [(conversation, "t-chat", "open")]
    [paid] = EffectsLedger(settings.ledger_path).effects(turn_run_id(conversation, 2))
    assert paid.tool == "pay"
