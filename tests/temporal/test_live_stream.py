"""A run's live stream on the real time-skipping server: the model's text in batches as it is written, the
steps, tool calls, approvals and answer as typed events, resumed by offset, across continue-as-new — and
the history of a streamed 500-token answer holding batches, not tokens."""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.testing import WorkflowEnvironment

from agentic import Agent, Message, ModelReply, Registry
from agentic.approvals import Decision
from agentic.errors import RetryableModelError
from agentic.live import (
    Answer,
    ApprovalDecided,
    ApprovalRequested,
    Finished,
    LiveEvent,
    StepFinished,
    StepRestarted,
    StepStarted,
    TextDelta,
    ToolCallArguments,
    ToolCallFinished,
    ToolCallStarted,
    Transcript,
)
from agentic.models.base import ModelDelta
from duragent._activities.inputs import AgentResult, ContinueAsNewPolicy, EngineOptions
from duragent._live import live_events
from duragent._workflows.agent import AgentWorkflow
from duragent._workflows.inputs import AgentInput
from duragent._workflows.names import DECIDE_UPDATE
from examples.options import DemoOptions
from tests.conftest import new_worker
from tests.support.live_agents import AGENTS, LONG_ANSWER
from tests.support.live_batches import batch_bound


async def _collect(env: WorkflowEnvironment, run_id: str, after: int | None = None) -> list[tuple[int, LiveEvent]]:
    return [item async for item in live_events(env.client, run_id, after)]


async def _run(env: WorkflowEnvironment, task_queue: str, agent: str, *, stream: bool) -> str:
    run_id = f"live-{uuid.uuid4().hex[:10]}"
    await env.client.start_workflow(
        AgentWorkflow.run, AgentInput(agent=agent, stream=stream), id=run_id, task_queue=task_queue
    )
    return run_id


async def test_a_streamed_run_shows_text_in_batches_tool_calls_and_the_answer_once(skipping_env, ledger, task_queue):
    async with new_worker(skipping_env.client, task_queue, ledger, agents=AGENTS):
        began = time.monotonic()
        run_id = await _run(skipping_env, task_queue, "live-writer", stream=True)
        events = await _collect(skipping_env, run_id)
        result = await skipping_env.client.get_workflow_handle(run_id, result_type=AgentResult).result()
        bound = await batch_bound(skipping_env.client, run_id, time.monotonic() - began)
    offsets = [offset for offset, _ in events]
    assert offsets == list(range(len(events)))  # every event, in order, once
    kinds = [type(event) for _, event in events]
    assert kinds[0] is StepStarted and kinds[-1] is Finished
    started = next(e for _, e in events if isinstance(e, ToolCallStarted))
    assert (started.call_id, started.name) == ("1.1", "lookup")
    arguments = "".join(e.delta for _, e in events if isinstance(e, ToolCallArguments))
    assert arguments == '{"topic":"invoices"}'
    finished = next(e for _, e in events if isinstance(e, ToolCallFinished))
    assert (finished.call_id, finished.status) == ("1.1", "ok")
    deltas = [e for _, e in events if isinstance(e, TextDelta)]
    assert "".join(d.text for d in deltas) == LONG_ANSWER
    # Batches, as the schedule allows for the time the calls took (a few, never one per token): 500 tokens in one
    # delta each would be far over the bound, and a reply in one delta would not be streaming.
    assert 2 <= len(deltas) <= bound < 500
    view = Transcript()
    for _, event in events:
        view.add(event)
    assert view.text == LONG_ANSWER == view.answer == result.output
    assert [e for _, e in events if isinstance(e, Answer)] == [Answer(text=LONG_ANSWER, stop="answered")]


async def test_a_subscriber_resumes_after_its_last_offset_missing_nothing(skipping_env, ledger, task_queue):
    async with new_worker(skipping_env.client, task_queue, ledger, agents=AGENTS):
        run_id = await _run(skipping_env, task_queue, "live-writer", stream=True)
        first: list[tuple[int, LiveEvent]] = []
        async for item in live_events(skipping_env.client, run_id):  # reads a few, then disconnects
            first.append(item)
            if len(first) == 3:
                break
        rest = await _collect(skipping_env, run_id, after=first[-1][0])
        whole = await _collect(skipping_env, run_id)
    assert first + rest == whole


@pytest.mark.long
async def test_the_stream_is_carried_across_continue_as_new(skipping_env, ledger, task_queue):
    engine = EngineOptions(continue_as_new=ContinueAsNewPolicy(max_history_events=40))
    async with new_worker(skipping_env.client, task_queue, ledger, agents=AGENTS, engine=engine):
        run_id = await _run(skipping_env, task_queue, "live-looper", stream=True)
        events = await _collect(skipping_env, run_id)
        handle = skipping_env.client.get_workflow_handle(run_id, result_type=AgentResult)
        result = await handle.result()
    assert result.continued >= 1  # it did hand over
    assert [offset for offset, _ in events] == list(range(len(events)))
    looked_up = [e for _, e in events if isinstance(e, ToolCallFinished)]
    assert [e.call_id for e in looked_up] == [f"{step}.1" for step in range(1, 7)]  # every call, once
    assert [e for _, e in events if isinstance(e, Answer)] == [Answer(text="All looked up.", stop="answered")]


async def test_an_approval_is_requested_and_decided_on_the_stream(skipping_env, ledger, task_queue):
    async with new_worker(skipping_env.client, task_queue, ledger, agents=AGENTS):
        run_id = await _run(skipping_env, task_queue, "live-payer", stream=False)
        seen: list[LiveEvent] = []

        async def watch() -> None:
            async for _, event in live_events(skipping_env.client, run_id):
                seen.append(event)
                if isinstance(event, ApprovalRequested):
                    await skipping_env.client.get_workflow_handle(run_id).execute_update(
                        DECIDE_UPDATE,
                        Decision(
                            call_id=event.call_id, approve=True, approver="maria", arguments_hash=event.arguments_hash
                        ),
                    )

        await asyncio.wait_for(watch(), 60)
    requested = next(e for e in seen if isinstance(e, ApprovalRequested))
    assert (requested.call_id, requested.tool, requested.arguments) == ("1.1", "pay", {"supplier": "s-1"})
    decided = next(e for e in seen if isinstance(e, ApprovalDecided))
    assert (decided.call_id, decided.outcome, decided.approver) == ("1.1", "approved", "maria")
    # Not streamed: no deltas, but each model step's text whole when it finishes.
    assert not any(isinstance(e, TextDelta) for e in seen)
    assert [e.text for e in seen if isinstance(e, StepFinished) and e.kind == "model"] == ["", "Paid s-1."]


async def _history(env: WorkflowEnvironment, run_id: str) -> tuple[int, int, int]:
    """Events, bytes, and signals in the run's history."""
    history = await env.client.get_workflow_handle(run_id).fetch_history()
    events = list(history.events)
    signals = sum(1 for e in events if e.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED)
    return len(events), sum(e.ByteSize() for e in events), signals


async def test_the_history_of_a_streamed_500_token_answer_holds_batches_not_tokens(skipping_env, ledger, task_queue):
    async with new_worker(skipping_env.client, task_queue, ledger, agents=AGENTS):
        plain = await _run(skipping_env, task_queue, "live-writer", stream=False)
        await skipping_env.client.get_workflow_handle(plain).result()
        began = time.monotonic()
        streamed = await _run(skipping_env, task_queue, "live-writer", stream=True)
        await skipping_env.client.get_workflow_handle(streamed).result()
        took = time.monotonic() - began
    plain_events, plain_bytes, plain_signals = await _history(skipping_env, plain)
    events, size, signals = await _history(skipping_env, streamed)
    assert plain_signals == 0
    # A signal per batch, as many as the schedule allows for the time the model calls took, not one per token.
    assert 2 <= signals <= await batch_bound(skipping_env.client, streamed, took) < 500
    assert events <= plain_events + 4 * signals  # each batch: its signal and a workflow task
    # The text travels once more (in the batches), not once per token with an event's overhead each.
    assert size - plain_bytes < 2 * len(LONG_ANSWER) + 2000 * signals


class _FailsMidStreamOnce:
    """Writes half its answer, then fails (as a worker dying mid-stream would look to a watcher); the retry
    writes it whole. Streams only: what it answers does not depend on the attempt."""

    name = "fails-once"

    def __init__(self) -> None:
        self.attempts = 0

    def complete(self, messages, tools=(), *, call_index=None, settings=None, on_delta=None):  # type: ignore[no-untyped-def]
        self.attempts += 1
        words = ["The ", "answer ", "is ", "forty-two."]
        for i, word in enumerate(words):
            if on_delta is not None:
                on_delta(ModelDelta(kind="text", text=word))
            if self.attempts == 1 and i == 1:
                raise RetryableModelError("the server went away")
        return ModelReply(message=Message(role="assistant", content="".join(words)))


async def test_a_retried_model_call_says_to_drop_the_partial_text_and_the_answer_shows_once(
    skipping_env, ledger, task_queue
):
    flaky = Agent(_FailsMidStreamOnce(), Registry([]), name="live-flaky", task="Go.", options=DemoOptions)
    async with new_worker(skipping_env.client, task_queue, ledger, agents=[flaky]):
        run_id = await _run(skipping_env, task_queue, "live-flaky", stream=True)
        events = [event for _, event in await _collect(skipping_env, run_id)]
    restarted = [e for e in events if isinstance(e, StepRestarted)]
    assert restarted == [StepRestarted(step=1, attempt=2)]
    before = events.index(restarted[0])
    assert "".join(e.text for e in events[:before] if isinstance(e, TextDelta)) == "The answer "
    view = Transcript()
    for event in events:
        view.add(event)
        if event is restarted[0]:
            assert view.text == ""  # the partial text is gone at once, before the retry writes again
    assert view.text == "The answer is forty-two." == view.answer


@pytest.mark.long
async def test_subscribers_coming_and_going_add_nothing_to_the_runs_history(skipping_env, ledger, task_queue):
    """Reading the stream is a query, never an update: a browser reconnecting every few minutes through a day's
    approval wait leaves no event in the run's history (and no update in flight, which the server limits)."""
    async with new_worker(skipping_env.client, task_queue, ledger, agents=AGENTS):
        run_id = await _run(skipping_env, task_queue, "live-payer", stream=True)
        handle = skipping_env.client.get_workflow_handle(run_id)

        async def waiting() -> bool:
            return any(isinstance(e, ApprovalRequested) for _, e in await _first(skipping_env, run_id, 6))

        while not await waiting():
            await asyncio.sleep(0.05)
        before = (await handle.describe()).raw_description.workflow_execution_info.history_length
        for _ in range(20):  # each reads what there is, waits a moment for more, and goes away

            async def read_then_leave() -> None:
                async for _ in live_events(skipping_env.client, run_id):
                    pass

            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(read_then_leave(), 0.2)
        after = (await handle.describe()).raw_description.workflow_execution_info.history_length
        await handle.terminate("done")
    assert after == before


async def _first(env: WorkflowEnvironment, run_id: str, n: int) -> list[tuple[int, LiveEvent]]:
    read: list[tuple[int, LiveEvent]] = []
    async for item in live_events(env.client, run_id):
        read.append(item)
        if len(read) == n:
            break
    return read
