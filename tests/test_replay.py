"""Histories recorded from the demo agents (tests/histories/*.json) replay without non-determinism with
the current workflow code — what a deploy does to every run in flight."""

from __future__ import annotations

from pathlib import Path

import pytest
from temporalio.client import WorkflowHistory
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.worker import Replayer

from workflows.agent import AgentWorkflow

HISTORIES = sorted((Path(__file__).parent / "histories").glob("*.json"))


def test_there_are_recorded_histories():
    assert len(HISTORIES) >= 4


@pytest.mark.parametrize("path", HISTORIES, ids=lambda p: p.stem)
async def test_recorded_history_replays(path: Path):
    history = WorkflowHistory.from_json(f"recorded-{path.stem.split('-run')[0]}", path.read_text())
    replayer = Replayer(workflows=[AgentWorkflow], data_converter=pydantic_data_converter)
    result = await replayer.replay_workflow(history, raise_on_replay_failure=True)
    assert result.replay_failure is None
    assert len(history.events) > 10
