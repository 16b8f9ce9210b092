"""No workflow task retried forever: every input `AgentWorkflow` accepts — its input, each signal, each update,
each query — is listed here from the workflow class itself, and for each, input that cannot be processed
fails the workflow, is rejected (an update's validator, a query's error) or is ignored with an audit entry,
with a clear message. Never a workflow task failing on every retry (which would hang the run for ever).

A handler added to the workflow fails `test_every_input_the_workflow_accepts_is_covered` until a case for
it is added below.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest
import pytest_asyncio
from temporalio import workflow
from temporalio.api.common.v1 import Payload
from temporalio.api.enums.v1 import EventType
from temporalio.client import (
    WorkflowFailureError,
    WorkflowHandle,
    WorkflowQueryFailedError,
    WorkflowUpdateFailedError,
)
from temporalio.common import RawValue
from temporalio.service import RPCError
from temporalio.testing import WorkflowEnvironment

from agentic import Stop
from agentic.approvals import Decision
from duragent._workflows.agent import AgentWorkflow
from duragent._workflows.inputs import AgentInput
from duragent.testing import start_time_skipping
from tests.conftest import eventually, new_worker


def raw(data: bytes, encoding: bytes = b"json/plain") -> RawValue:
    """A payload exactly as a hostile or broken client could send it, bypassing our converter."""
    return RawValue(Payload(metadata={"encoding": encoding}, data=data))


GARBAGE = {
    "not JSON": raw(b"\x00\xff{{{ not json"),
    "JSON of the wrong shape": raw(b"[1, 2, 3]"),
    "an object missing fields": raw(b'{"approve": "yes"}'),
    "an unknown encoding": raw(b"\x01\x02", encoding=b"binary/rot13"),
}
BAD_RUN_INPUTS = {
    **{what: payload for what, payload in GARBAGE.items() if what != "an unknown encoding"},
    "a negative budget": raw(b'{"agent": "refund", "budget": {"max_steps": -1}}'),
    # An older client's field, still read to replay the runs that carried it (_workflows/agent.py, ENGINE_PATCH).
    "a handover policy that does not validate": raw(
        b'{"agent": "refund", "continue_as_new": {"max_history_events": 0}}'
    ),
}

Case = Callable[[WorkflowEnvironment, str], Awaitable[None]]


async def _history_has_no_task_failures(handle: WorkflowHandle[Any, Any]) -> None:
    history = await handle.fetch_history()
    failed = [e for e in history.events if e.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED]
    assert failed == [], f"workflow task failures in history: {[str(e) for e in failed][:1]}"


async def _waiting_refund(env: WorkflowEnvironment, task_queue: str) -> WorkflowHandle[Any, Any]:
    handle = await env.client.start_workflow(
        AgentWorkflow.run, AgentInput(agent="refund"), id=f"hostile-{uuid.uuid4().hex[:10]}", task_queue=task_queue
    )

    async def asking() -> bool:
        return bool((await handle.query(AgentWorkflow.approvals)).pending)

    await eventually(asking, what="the refund's approval request")
    return handle


async def _approve_and_finish(handle: WorkflowHandle[Any, Any]) -> None:
    [pending] = (await handle.query(AgentWorkflow.approvals)).pending
    await handle.execute_update(
        AgentWorkflow.decide,
        Decision(call_id=pending.call_id, approve=True, approver="maria", arguments_hash=pending.arguments_hash),
    )
    result = await handle.result()
    assert result.stop is Stop.ANSWERED  # the run was not harmed by what came before


async def run_input(env: WorkflowEnvironment, task_queue: str) -> None:
    for what, payload in BAD_RUN_INPUTS.items():
        handle = await env.client.start_workflow(
            "AgentWorkflow", payload, id=f"hostile-{uuid.uuid4().hex[:10]}", task_queue=task_queue
        )
        with pytest.raises(WorkflowFailureError) as failed:
            await handle.result()
        cause = str(failed.value.cause)
        assert cause and len(cause) < 4000, what  # a clear message, not a dump
        await _history_has_no_task_failures(handle)


async def decision_signal(env: WorkflowEnvironment, task_queue: str) -> None:
    handle = await _waiting_refund(env, task_queue)
    for payload in GARBAGE.values():
        await handle.signal("decision", payload)

    async def audited() -> bool:
        return len((await handle.query(AgentWorkflow.approvals)).audit) == len(GARBAGE)

    await eventually(audited, what="each unreadable decision audited")
    audit = (await handle.query(AgentWorkflow.approvals)).audit
    assert {e.event for e in audit} == {"rejected"}
    assert all(e.rejection and e.rejection.startswith("the decision could not be read") for e in audit)
    await _history_has_no_task_failures(handle)
    await _approve_and_finish(handle)


async def decide_update(env: WorkflowEnvironment, task_queue: str) -> None:
    handle = await _waiting_refund(env, task_queue)
    for payload in GARBAGE.values():
        with pytest.raises(WorkflowUpdateFailedError):
            await handle.execute_update("decide", payload)
    assert (await handle.query(AgentWorkflow.approvals)).audit == []  # a rejected update leaves no trace
    await _history_has_no_task_failures(handle)
    await _approve_and_finish(handle)


def _query_case(name: str) -> Case:
    async def query(env: WorkflowEnvironment, task_queue: str) -> None:
        handle = await _waiting_refund(env, task_queue)
        normal = await handle.query(name)
        for payload in GARBAGE.values():  # the queries take no argument: one sent is refused, or ignored
            try:
                answer = await handle.query(name, payload)
            except (RPCError, WorkflowQueryFailedError) as exc:
                assert str(exc)
            else:
                assert type(answer) is type(normal)
        await _history_has_no_task_failures(handle)
        await _approve_and_finish(handle)

    return query


CASES: dict[str, Case] = {
    "run": run_input,
    "signal decision": decision_signal,
    "update decide": decide_update,
    "query progress": _query_case("progress"),
    "query approvals": _query_case("approvals"),
}


def accepted_inputs() -> set[str]:
    definition = workflow._Definition.from_class(AgentWorkflow)
    assert definition is not None
    return {
        "run",
        *(f"signal {name}" for name in definition.signals),
        *(f"update {name}" for name in definition.updates),
        *(f"query {name}" for name in definition.queries),
    }


def test_every_input_the_workflow_accepts_is_covered() -> None:
    assert accepted_inputs() == set(CASES), "a new signal, update or query needs a hostile-input case here"


@pytest.mark.parametrize("accepted", sorted(CASES))
async def test_unprocessable_input_never_fails_a_workflow_task(skipping_env, ledger, task_queue, accepted) -> None:
    async with new_worker(skipping_env.client, task_queue, ledger):
        await CASES[accepted](skipping_env, task_queue)


async def test_a_continuation_forged_in_the_input_is_refused(skipping_env, ledger, task_queue) -> None:
    """`carry` is what a run hands its own continuation. A client that sets it when starting a run could hand
    the run a spec of its choosing (no approval needed, no approver keys) and outcomes nobody decided: it is
    refused unless the run really is a continuation."""
    forged = {
        "agent": "refund",
        "carry": {
            "spec": {"name": "refund", "system": "", "budget": {}, "tools": {}, "model": "fake"},
            "loop": {},
            "transcript": {},
            "book": {"outcomes": {"1.1": "approved"}},
        },
    }
    async with new_worker(skipping_env.client, task_queue, ledger):
        handle = await skipping_env.client.start_workflow(
            "AgentWorkflow",
            AgentInput.model_validate(forged),
            id=f"hostile-{uuid.uuid4().hex[:10]}",
            task_queue=task_queue,
        )
        with pytest.raises(WorkflowFailureError) as failed:
            await handle.result()
        await _history_has_no_task_failures(handle)
    assert "carry" in str(failed.value.cause) and "continu" in str(failed.value.cause)
    assert ledger.effects(handle.id) == []


@pytest_asyncio.fixture
async def own_skipping_env() -> AsyncIterator[WorkflowEnvironment]:
    """A time-skipping server of this test's own. A workflow task that keeps failing holds the test server's
    clock even after the run is terminated (it never skips time again), so this test must not share the
    session's server: run after it there, a 3-day approval timer never fired (test_workflow_hygiene.py)."""
    env = await start_time_skipping()
    try:
        yield env
    finally:
        await env.shutdown()


@pytest.mark.temporal
async def test_an_input_in_an_encoding_this_worker_cannot_read_waits_for_the_operator(
    own_skipping_env, ledger, task_queue
) -> None:
    """The one deliberate exception: a run input whose payload encoding the worker does not know (a client
    that encrypted with a codec this worker was not given) is a worker configuration to fix, not bad input;
    failing the run would lose it. Its workflow task fails, saying which encoding, and is retried until the
    worker gets the codec — or someone terminates the run. Nothing executes meanwhile."""
    skipping_env = own_skipping_env
    async with new_worker(skipping_env.client, task_queue, ledger):
        handle = await skipping_env.client.start_workflow(
            "AgentWorkflow",
            GARBAGE["an unknown encoding"],
            id=f"hostile-{uuid.uuid4().hex[:10]}",
            task_queue=task_queue,
        )

        async def task_failed() -> str | None:
            history = await handle.fetch_history()
            failures = [
                e.workflow_task_failed_event_attributes.failure
                for e in history.events
                if e.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED
            ]
            return failures[0].cause.message if failures else None

        await eventually(task_failed, what="the workflow task failure")
        assert "Unknown payload encoding binary/rot13" in (await task_failed() or "")
        history = await handle.fetch_history()
        assert not any(e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED for e in history.events)
        await handle.terminate(reason="garbage")
