"""What a seal binds, checked where the activities check it (the `Sealing` interceptor, before an activity
acts), playing a poller that copies a seal from a run's history: it opens the schedule it was made for and no
other — not the same activity with other arguments, nor the same input in another execution of the run."""

from __future__ import annotations

import asyncio
import dataclasses
import os
from typing import Any

import pytest
from temporalio import activity
from temporalio.api.common.v1 import Payload
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment
from temporalio.worker import ActivityInboundInterceptor, ExecuteActivityInput

from duragent._config.worker_keys import WorkerKeys, sealed_text
from duragent._sealing import HEADER, Sealing

KEYS = WorkerKeys((os.urandom(32),))
RUN, EXECUTION = "refund-1", "exec-0001"
ASKED = [{"run_id": RUN, "call": {"name": "refund", "arguments": {"order_id": "4471"}}}]


class _Acts(ActivityInboundInterceptor):
    """The activity itself: records that it acted."""

    def __init__(self) -> None:
        self.acted: list[list[Any]] = []

    async def execute_activity(self, input: ExecuteActivityInput) -> Any:
        self.acted.append(list(input.args))
        return "acted"


def seal_of(args: list[Any], *, execution: str = EXECUTION) -> dict[str, Payload]:
    """The header the agents' workflow writes when execution `execution` of run RUN schedules `run_tool`."""
    text = sealed_text("activity", "run_tool", RUN, execution, "", args)
    return {HEADER: Payload(metadata={"encoding": b"binary/plain"}, data=KEYS.seal(text).encode())}


def attempt(headers: dict[str, Payload], args: list[Any], *, execution: str = EXECUTION) -> tuple[Any, list[Any]]:
    acts = _Acts()
    verifying = Sealing(KEYS).intercept_activity(acts)
    env = ActivityEnvironment()
    env.info = dataclasses.replace(
        env.info, activity_type="run_tool", workflow_id=RUN, workflow_run_id=execution, workflow_type="AgentWorkflow"
    )

    @activity.defn(name="run_tool")
    async def run_tool() -> Any:
        return await verifying.execute_activity(
            ExecuteActivityInput(fn=run_tool, args=args, executor=None, headers=headers)
        )

    try:
        outcome = asyncio.run(env.run(run_tool))
        # With keys, what the activity answers comes back sealed in turn: what it encodes is the activity's answer.
        return getattr(outcome, "value", outcome), acts.acted
    except (ApplicationError, TypeError) as refused:  # TypeError: a non-ASCII seal, before it was refused plainly
        return refused, acts.acted


def test_a_seal_opens_the_schedule_it_was_made_for() -> None:
    outcome, acted = attempt(seal_of(ASKED), ASKED)
    assert (outcome, acted) == ("acted", [ASKED])


def test_a_seal_copied_onto_other_arguments_opens_nothing() -> None:
    other = [{"run_id": RUN, "call": {"name": "refund", "arguments": {"order_id": "ROGUE-777"}}}]
    outcome, acted = attempt(seal_of(ASKED), other)
    assert acted == [] and isinstance(outcome, ApplicationError) and outcome.type == "CallerRefused"


def test_a_seal_copied_into_another_execution_of_the_run_opens_nothing() -> None:
    outcome, acted = attempt(seal_of(ASKED, execution=EXECUTION), ASKED, execution="exec-0002")
    assert acted == [] and isinstance(outcome, ApplicationError) and outcome.type == "CallerRefused"


@pytest.mark.parametrize("header", [b"\xff\xfe", b"v1:" + b"0" * 64, b""])
def test_a_malformed_or_forged_seal_opens_nothing(header: bytes) -> None:
    forged = {HEADER: Payload(metadata={"encoding": b"binary/plain"}, data=header)}
    outcome, acted = attempt(forged, ASKED)
    assert acted == [] and isinstance(outcome, (ApplicationError, TypeError))
