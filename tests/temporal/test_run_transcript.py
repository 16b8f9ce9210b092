"""A durable run's transcript is kept by reference: `RunHandle.messages()` reads it whole from the transcript
store, and says where to read it when this process's store does not hold it (a worker on another host)."""

from __future__ import annotations

import dataclasses
import uuid
from pathlib import Path

import pytest
from temporalio.client import Client

from duragent import AgentClient, DurableAgentsPlugin, TranscriptUnavailable
from duragent._plugin import plugin_of
from duragent._stores.ledger import EffectsLedger
from tests.conftest import agent_named, new_worker, transcripts_next_to


async def test_messages_reads_the_whole_transcript_the_result_keeps_by_reference(
    skipping_env, tmp_path: Path, task_queue: str
) -> None:
    ledger = EffectsLedger(tmp_path / "l.db")
    async with new_worker(skipping_env.client, task_queue, ledger):
        run = await AgentClient(skipping_env.client, task_queue=task_queue).start(
            agent_named("billing"), "Charge invoice 7", run_id=f"transcript-{uuid.uuid4().hex[:8]}"
        )
        result = await run.result()
        messages = await run.messages(transcripts_next_to(ledger))
    assert result.transcript_ref is not None and result.messages == []  # by reference: the tail only
    assert [m.content for m in messages if m.role == "user"] == ["Charge invoice 7"]
    assert [m.role for m in messages][-1] == "assistant" and messages[-1].content == result.output
    assert any(m.role == "tool" for m in messages)


async def test_messages_from_a_process_without_the_workers_store_says_where_to_read_it(
    skipping_env, tmp_path: Path, task_queue: str
) -> None:
    ledger = EffectsLedger(tmp_path / "l.db")  # the worker's store: next to its ledger
    configured = plugin_of(skipping_env.client)
    assert configured is not None
    elsewhere = dataclasses.replace(configured.settings, data_dir=tmp_path / "client")  # another host's settings
    client = await Client.connect(
        skipping_env.client.service_client.config.target_host,
        namespace=skipping_env.client.namespace,
        plugins=[DurableAgentsPlugin(elsewhere)],
    )
    here = elsewhere.data_dir / "transcripts.db"
    async with new_worker(skipping_env.client, task_queue, ledger):
        run = await AgentClient(client, task_queue=task_queue).start(
            agent_named("billing"), "Charge invoice 8", run_id=f"transcript-{uuid.uuid4().hex[:8]}"
        )
        with pytest.raises(TranscriptUnavailable) as unavailable:
            await run.messages()
    assert str(unavailable.value) == (
        f"the transcript of run {run.run_id} is kept by the workers' transcript store, which this process cannot "
        f"read (no {here}): read it with the workers' AGENT_DATABASE_URL or AGENT_DATA_DIR, "
        "or pass their store"
    )
    assert not here.exists()  # asking created nothing
