"""The worker's log lines (duragent/_run_logging.py) say which step each model and tool call belongs to and
which model the run named — read from the activities' own input types, through a real worker: a run resumed
with `consumed=` counts its steps on from the earlier run's."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from agentic import Usage
from duragent._client import AgentClient
from duragent._run_logging import AGENTS_OWN
from examples import billing
from tests.conftest import new_worker


class Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)

    def of(self, run_id: str, message: str) -> list[dict[str, Any]]:
        """The extra fields of `run_id`'s lines saying `message`, in order."""
        found = []
        for record in self.records:
            info = getattr(record, "temporal_activity", None) or getattr(record, "temporal_workflow", None) or {}
            # (The SDK's adapters append the run's details to the message unless JSON logs are configured.)
            if info.get("workflow_id") == run_id and record.getMessage().split(" ({")[0] == message:
                found.append(record.__dict__)
        return found


@pytest.fixture
def lines() -> Iterator[Lines]:
    handler = Lines()
    loggers = [logging.getLogger(name) for name in ("temporalio.activity", "temporalio.workflow")]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)
    try:
        yield handler
    finally:
        for logger, level in zip(loggers, levels, strict=True):
            logger.removeHandler(handler)
            logger.setLevel(level)


async def test_a_resumed_run_logs_its_steps_and_the_model_it_named(skipping_env, ledger, task_queue, lines) -> None:
    """Two earlier steps carried over: the model calls open steps 3 and 4, and the charge is step 3's call."""
    models = {"billing-by-name": billing.agent.model}
    async with new_worker(skipping_env.client, task_queue, ledger, models=models):
        agents = AgentClient(skipping_env.client, task_queue=task_queue)
        run = await agents.start("billing", consumed=Usage(steps=2), model="billing-by-name")
        result = await run.result()
    assert result.usage.steps == 4 and result.trajectory() == ["charge"]
    started = lines.of(run.run_id, "model call started")
    assert [(r["step"], r["call_index"], r["model"]) for r in started] == [
        (3, 0, "billing-by-name"),
        (4, 1, "billing-by-name"),
    ]
    [finished] = lines.of(run.run_id, "model call finished")[:1]
    assert finished["step"] == 3 and finished["input_tokens"] > 0
    [tool] = lines.of(run.run_id, "tool call finished")
    assert (tool["step"], tool["tool"], tool["call_id"], tool["status"]) == (3, "charge", "3.1", "ok")
    assert tool["key"] == f"{run.run_id}:3.1"
    [ended] = lines.of(run.run_id, "run finished")
    assert (ended["status"], ended["stop"], ended["steps"]) == ("completed", "answered", 4)
    [begun] = lines.of(run.run_id, "run started")
    assert begun["agent"] == "billing"


async def test_a_run_on_its_agents_own_model_says_so(skipping_env, ledger, task_queue, lines) -> None:
    async with new_worker(skipping_env.client, task_queue, ledger):
        run = await AgentClient(skipping_env.client, task_queue=task_queue).start("billing", run_id=f"b-{uuid.uuid4()}")
        await run.result()
    started = lines.of(run.run_id, "model call started")
    assert [(r["step"], r["model"]) for r in started] == [(1, AGENTS_OWN), (2, AGENTS_OWN)]
    assert [r["step"] for r in lines.of(run.run_id, "tool call started")] == [1]
