"""One loop, many runners: the checkpoint runner produces the in-process agent's transcript and
consumption for the same scenario, and its store's consumption is what the replay adds up to."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from agentic import FakeModel, Message, ToolCall
from agentic.agent_set import AgentSet
from duragent._baseline import jobs
from duragent._baseline.options import RunOptions
from duragent._baseline.runner import transcript
from duragent._baseline.steps import TranscriptHash
from duragent._baseline.store import Store
from duragent._stores.ledger import EffectsLedger
from duragent._stores.transcripts import EMPTY, SqliteTranscriptStore, Transcripts
from examples.options import DemoDeps
from tests.conftest import agent_named
from tests.support.baseline_helpers import agents_recording_to


@pytest.mark.parametrize(
    ("name", "options"),
    [
        ("billing", dict()),
        ("migration", dict(records=4)),
        ("trip", dict(fail_at="none")),
        ("trip", dict(fail_at="car")),
        ("migration", dict(records=2, flaky_attempts=1)),
    ],
)
def test_same_transcript_as_the_in_process_agent(tmp_path: Path, name: str, options: dict[str, Any]) -> None:
    store, ledger = Store(tmp_path / "baseline.db"), EffectsLedger(tmp_path / "ledger.db")
    agents = agents_recording_to(ledger)
    run = jobs.start(store, agents, "same", name, RunOptions(options=options))
    local_deps = DemoDeps(EffectsLedger(tmp_path / "local.db"))
    local = replace(agent_named(name), deps=local_deps).run(run_id="same", options=options)

    replayed = transcript(store, agents, "same")
    assert replayed.messages == local.messages
    assert replayed.loop.state.consumed == local.usage == run.consumed
    assert run.stop == local.stop.value
    assert replayed.loop.state.records == local.records
    store.close()


def test_a_step_budget_stops_and_carries_consumption(tmp_path: Path) -> None:
    store, ledger = Store(tmp_path / "baseline.db"), EffectsLedger(tmp_path / "ledger.db")
    run = jobs.start(store, agents_recording_to(ledger), "budget", "migration", RunOptions(max_steps=2))
    assert (run.status, run.stop) == ("abandoned", "step_budget")  # migrations declare no inverse
    assert run.used_steps == 2
    assert run.not_compensable is not None and "migrate_record" in run.not_compensable
    assert len(ledger.effects("budget")) == 2
    store.close()


def test_a_model_that_cannot_answer_fails_the_run(tmp_path: Path) -> None:
    mute = replace(agent_named("billing"), model=FakeModel([], name="mute"), name="baseline-mute")
    store, ledger = Store(tmp_path / "baseline.db"), EffectsLedger(tmp_path / "ledger.db")
    try:
        run = jobs.start(store, AgentSet([mute], DemoDeps(ledger)), "mute", "baseline-mute", RunOptions())
    finally:
        store.close()
    assert run.status == "failed"
    assert run.error is not None and "model call 1 failed" in run.error
    assert run.lease_owner is None


# -- the model step's input hash: a hash chain, as the Temporal side's transcript store ----------------

TALK = [
    Message("system", "Be brief."),
    Message("user", "Migrate the records."),
    Message("assistant", "", tool_calls=[ToolCall("c1", "migrate_record", {"i": 1})]),
    Message("tool", "migrated 1", tool_call_id="c1"),
    Message("assistant", "Done."),
]


def test_the_model_input_hash_is_the_transcript_stores_head(tmp_path: Path) -> None:
    head = Transcripts(SqliteTranscriptStore(tmp_path / "t.db")).append(EMPTY, TALK)
    assert TranscriptHash().of(TALK) == head


def test_the_chain_extended_step_by_step_equals_the_chain_of_the_whole_transcript() -> None:
    growing: list[Message] = []
    chain = TranscriptHash()
    heads = []
    for message in TALK:
        growing.append(message)  # the runner appends; each call hashes only what is new
        heads.append(chain.of(growing))
    assert heads == [TranscriptHash().of(TALK[: i + 1]) for i in range(len(TALK))]
    assert len(set(heads)) == len(TALK)


def test_a_different_earlier_message_gives_a_different_hash_even_on_a_hasher_that_saw_the_original() -> None:
    chain = TranscriptHash()
    original = chain.of(TALK)
    edited = [TALK[0], Message("user", "Migrate the other records."), *TALK[2:]]
    assert chain.of(edited) == TranscriptHash().of(edited) != original
    assert chain.of(TALK[:2]) == TranscriptHash().of(TALK[:2])  # a shorter list starts over too
