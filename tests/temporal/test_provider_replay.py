"""A run on a provider reached through the model layer records our transcript format, the provider's opaque parts
in it (`Message.provider_parts`), and replays — in the sandbox too — as any history does."""

from __future__ import annotations

import base64
import re
import uuid
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pydantic_ai")
pytest.importorskip("anthropic")

from duragent._config.settings import Settings
from duragent._workflows.agent import AgentWorkflow
from duragent._workflows.inputs import AgentInput
from tests.conftest import agent_named, new_worker
from tests.support.provider_servers import AnthropicServer, text, thinking, tool_use
from tests.temporal.test_replay import _sandboxed_replayer

KEY = "sk-ant-replay-KEY-0001"
PAYLOAD = re.compile(r'"data": "([A-Za-z0-9+/=]+)"')  # a payload's bytes, base64 in the history's JSON


async def test_a_run_with_thinking_blocks_records_them_in_our_format_and_replays(
    skipping_env: Any, ledger: Any, task_queue: str, tmp_path: Path
) -> None:
    with AnthropicServer() as server:
        server.queue_message(
            [thinking("inv-9 is due.", "sig-R1"), tool_use("toolu_1", "charge", {"invoice": "inv-9", "key": "k-1"})]
        )
        server.queue_message([text("Invoice inv-9 is settled.")])
        settings = Settings(anthropic_api_key=KEY, anthropic_base_url=server.base_url, data_dir=tmp_path)
        async with new_worker(
            skipping_env.client, task_queue, ledger, agents=[agent_named("billing")], settings=settings
        ):
            handle = await skipping_env.client.start_workflow(
                AgentWorkflow.run,
                AgentInput(agent="billing", model="anthropic:claude-sonnet-4-5"),
                id=f"replay-anthropic-{uuid.uuid4().hex[:8]}",
                task_queue=task_queue,
            )
            result = await handle.result()
    assert result.output == "Invoice inv-9 is settled."
    history = await handle.fetch_history()
    recorded = "\n".join(base64.b64decode(data).decode(errors="replace") for data in PAYLOAD.findall(history.to_json()))
    # Our format, not the library's: the part as agentic/models/layer_messages.py writes it.
    assert '"provider_parts"' in recorded and "sig-R1" in recorded and "part_kind" not in recorded
    replayed = await _sandboxed_replayer().replay_workflow(history, raise_on_replay_failure=True)
    assert replayed.replay_failure is None
