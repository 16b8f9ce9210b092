"""Durable conversations on the time-skipping server: turns of the one loop, each a run on the transcript so far;
messages by update-with-start, validated, queued in order; budgets per turn and per conversation."""

from __future__ import annotations

import asyncio
import os
import uuid
from datetime import timedelta

import pytest
from temporalio.client import WorkflowFailureError
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.worker import Replayer
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner

from agentic import Budget, Stop
from agentic.conversation import ConversationLimits
from duragent import AgentClient, ContinueAsNewPolicy, EngineOptions
from duragent._config.worker_keys import WorkerKeys
from duragent._errors import MessageRefused, UnknownAgent
from duragent._workflows.agent import AgentWorkflow
from duragent._workflows.conversation import ConversationWorkflow
from duragent._workflows.conversation_inputs import ConversationCarry, ConversationInput, SendMessage
from duragent._workflows.inputs import AgentInput
from duragent._workflows.turns import turn_run_id
from tests.conftest import TEST_AGENTS, eventually, new_worker, transcripts_next_to
from tests.support.conversation_agents import CHAT

AGENTS = [*TEST_AGENTS, CHAT]


def conversation_id() -> str:
    return f"conv-{uuid.uuid4().hex[:10]}"


async def test_three_turns_with_an_approval_mid_turn(skipping_env, ledger, task_queue):
    agents = AgentClient(skipping_env.client, task_queue=task_queue)
    async with new_worker(skipping_env.client, task_queue, ledger, agents=AGENTS):
        conv = agents.conversation(CHAT, conversation_id())
        first = await conv.send("hello")
        assert (first.turn, first.status, first.stop) == (1, "completed", Stop.ANSWERED)
        assert first.output == "You said 'hello' (turn 1, 2 messages)"

        second = await conv.send("pay s-9", wait=False)
        assert second == 2
        [waiting] = await eventually_pending(conv)
        assert (waiting.tool, waiting.run_id) == ("pay", turn_run_id(conv.conversation_id, 2))
        await conv.approve(waiting.call_id, by="maria", arguments_hash=waiting.arguments_hash)
        answered = await conv.wait(2)
        assert answered.output == "Done: paid s-9 (turn 2)"

        third = await conv.send("bye", expect_turn=3)
        # The third turn saw the whole conversation: system, 3 user messages, the tool round trip, the answers.
        assert third.output == "You said 'bye' (turn 3, 8 messages)"
        assert third.consumed.steps == first.usage.steps + answered.usage.steps + third.usage.steps

        page = await conv.history(transcripts=transcripts_next_to(ledger))
        assert [m.role for m in page.messages] == [
            "system",
            "user",
            "assistant",
            "user",
            "assistant",
            "tool",
            "assistant",
            "user",
            "assistant",
        ]
        assert page.total == 9
        view = await conv.describe()
        assert (view.status, view.turns, view.answered, view.consumed) == ("open", 3, 3, third.consumed)
    assert [e.key for e in ledger.effects(turn_run_id(conv.conversation_id, 2))] == [
        f"{turn_run_id(conv.conversation_id, 2)}:1.1"  # the turn's own run id: unique across the conversation
    ]


async def handed_over(conv) -> bool:
    return (await conv.describe()).continued >= 1


async def eventually_pending(conv):
    for _ in range(200):
        waiting = await conv.pending()
        if waiting:
            return waiting
        await asyncio.sleep(0.05)
    raise AssertionError("no approval pending")


async def test_each_refusal_is_one_clear_error(skipping_env, ledger, task_queue):
    agents = AgentClient(skipping_env.client, task_queue=task_queue)
    async with new_worker(skipping_env.client, task_queue, ledger, agents=AGENTS):
        conv = agents.conversation(CHAT, conversation_id(), budget=Budget(max_steps=2))
        with pytest.raises(MessageRefused) as empty:
            await conv.send("   ")
        assert empty.value.kind == "EmptyMessage"
        with pytest.raises(MessageRefused) as long:
            await conv.send("x" * 40_000)
        assert long.value.kind == "MessageTooLong"
        await conv.send("one")
        with pytest.raises(MessageRefused) as stale:
            await conv.send("meant as the first", expect_turn=1)
        assert stale.value.kind == "StaleTurn"
        assert "next turn is 2" in str(stale.value)
        await conv.send("two")  # the second step: the conversation's budget is spent
        with pytest.raises(MessageRefused) as spent:
            await conv.send("three")
        assert spent.value.kind == "OverBudget"
        await conv.close()
        with pytest.raises(MessageRefused) as closed:
            await conv.send("after close")
        assert closed.value.kind == "ConversationClosed"
        assert (await conv.describe()).turns == 2
        again = await conv.close()  # closing a closed conversation changes nothing
        assert (again.status, again.closed_reason) == ("closed", "closed by the caller")


async def test_concurrent_senders_are_answered_in_the_order_the_server_accepted_them(skipping_env, ledger, task_queue):
    agents = AgentClient(skipping_env.client, task_queue=task_queue)
    async with new_worker(skipping_env.client, task_queue, ledger, agents=AGENTS):
        conv = agents.conversation(CHAT, conversation_id())
        texts = [f"message {i}" for i in range(8)]
        numbers = await asyncio.gather(*(conv.send(text, wait=False) for text in texts))
        assert sorted(numbers) == list(range(1, 9))  # each accepted once, each its own turn
        answers = await asyncio.gather(*(conv.wait(n) for n in numbers))
        for text, number, answer in zip(texts, numbers, answers, strict=True):
            # Turn n saw exactly the n messages accepted before and with it: answered in the accepted order.
            assert answer.turn == number
            assert answer.output == f"You said {text!r} (turn {number}, {2 * number} messages)"
        page = await conv.history(transcripts=transcripts_next_to(ledger))
        users = [m.content for m in page.messages if m.role == "user"]
        assert sorted(users) == sorted(texts) and len(users) == 8  # none lost, none twice
        assert users == [texts[numbers.index(n)] for n in range(1, 9)]


async def test_past_the_queue_bound_a_sender_hears_busy_and_nothing_is_lost(skipping_env, ledger, task_queue):
    agents = AgentClient(skipping_env.client, task_queue=task_queue)
    async with new_worker(skipping_env.client, task_queue, ledger, agents=AGENTS):
        conv = agents.conversation(CHAT, conversation_id(), limits=ConversationLimits(max_queued=2))
        await conv.send("pay s-1", wait=False)  # turn 1 waits for its approval
        [waiting] = await eventually_pending(conv)
        assert await conv.send("queued 1", wait=False) == 2
        assert await conv.send("queued 2", wait=False) == 3
        with pytest.raises(MessageRefused) as busy:
            await conv.send("one too many", wait=False)
        assert busy.value.kind == "ConversationBusy"
        await conv.approve(waiting.call_id, by="maria", arguments_hash=waiting.arguments_hash)
        assert [(await conv.wait(n)).output for n in (1, 2, 3)] == [
            "Done: paid s-1 (turn 1)",
            "You said 'queued 1' (turn 2, 6 messages)",
            "You said 'queued 2' (turn 3, 8 messages)",
        ]


async def test_an_idle_conversation_closes_after_its_days_and_stays_readable(skipping_env, ledger, task_queue):
    agents = AgentClient(skipping_env.client, task_queue=task_queue)
    async with new_worker(skipping_env.client, task_queue, ledger, agents=AGENTS):
        conv = agents.conversation(CHAT, conversation_id(), idle_days=2)
        await conv.send("hello")
        await skipping_env.sleep(timedelta(days=1))
        await conv.send("still here")  # resets the clock
        await skipping_env.sleep(timedelta(days=1, hours=12))
        assert (await conv.describe()).status == "open"
        await skipping_env.sleep(timedelta(days=1))
        view = await conv.describe()
        assert (view.status, view.closed_reason, view.turns) == ("closed", "no message for 2 days", 2)
        with pytest.raises(MessageRefused) as closed:
            await conv.send("back again")
        assert closed.value.kind == "ConversationClosed"
        page = await conv.history(transcripts=transcripts_next_to(ledger))
        assert [m.content for m in page.messages if m.role == "user"] == ["hello", "still here"]
        assert (await conv.wait(2)).output == "You said 'still here' (turn 2, 4 messages)"  # from its run


# The tests that hand over while a turn runs use the dev server: the time-skipping test server stops skipping time
# for good after a conversation hands over mid-turn (its turn left running, ABANDON, and re-attached to), which
# the dev server and real clusters handle as documented. Their conversations wait for no timer.


def tiny_handover(events: int) -> EngineOptions:
    return EngineOptions(continue_as_new=ContinueAsNewPolicy(max_history_events=events))


async def test_handover_while_an_approval_waits_keeps_its_deadline_and_messages(dev_env, ledger, task_queue):
    agents = AgentClient(dev_env.client, task_queue=task_queue)
    async with new_worker(dev_env.client, task_queue, ledger, agents=AGENTS, engine=tiny_handover(40)):
        conv = agents.conversation(CHAT, conversation_id())
        await conv.send("hello")
        await conv.send("pay s-7", wait=False)
        [before] = await eventually_pending(conv)
        # Messages sent while the turn waits grow the conversation's history past the mark: it hands over mid-turn.
        queued = [await conv.send(f"later {i}", wait=False) for i in range(12)]
        await eventually(lambda: handed_over(conv), what="a handover while turn 2 waits")
        assert (await conv.describe()).active_turn == 2  # it handed over mid-turn
        [after] = await eventually_pending(conv)
        assert (after.call_id, after.deadline) == (before.call_id, before.deadline)  # the original deadline
        assert after.requested_at == before.requested_at
        await conv.approve(after.call_id, by="maria", arguments_hash=after.arguments_hash)
        assert (await conv.wait(2)).output == "Done: paid s-7 (turn 2)"
        answers = [await conv.wait(n) for n in queued]
        assert [a.turn for a in answers] == queued
        page = await conv.history(transcripts=transcripts_next_to(ledger))
        users = [m.content for m in page.messages if m.role == "user"]
        assert users == ["hello", "pay s-7", *[f"later {i}" for i in range(12)]]  # each once, in order
    assert len(ledger.effects(turn_run_id(conv.conversation_id, 2))) == 1


async def test_a_message_sent_while_the_conversation_hands_over_is_answered_once(dev_env, ledger, task_queue):
    agents = AgentClient(dev_env.client, task_queue=task_queue)
    async with new_worker(dev_env.client, task_queue, ledger, agents=AGENTS, engine=tiny_handover(30)):
        conv = agents.conversation(CHAT, conversation_id(), limits=ConversationLimits(max_queued=64))
        # Senders race the handovers the tiny mark forces after nearly every turn.
        numbers = await asyncio.gather(*(conv.send(f"m{i}", wait=False) for i in range(24)))
        answers = await asyncio.gather(*(conv.wait(n) for n in numbers))
        view = await conv.describe()
        assert view.continued >= 3
        assert sorted(numbers) == list(range(1, 25)) and view.answered == 24
        assert [a.turn for a in answers] == numbers
        page = await conv.history(transcripts=transcripts_next_to(ledger))
        users = [m.content for m in page.messages if m.role == "user"]
        assert sorted(users) == sorted(f"m{i}" for i in range(24)) and len(users) == 24


async def histories_of(client, workflow_id: str) -> list:
    """Every execution of a workflow's continue-as-new chain, oldest first."""
    description = await client.get_workflow_handle(workflow_id).describe()
    run_id, found = description.raw_description.workflow_execution_info.first_run_id, []
    while run_id:
        history = await client.get_workflow_handle(workflow_id, run_id=run_id).fetch_history()
        found.append(history)
        last = history.events[-1]
        continued = last.HasField("workflow_execution_continued_as_new_event_attributes")
        run_id = last.workflow_execution_continued_as_new_event_attributes.new_execution_run_id if continued else ""
    return found


async def many_turns(env, ledger, task_queue, turns: int) -> None:
    agents = AgentClient(env.client, task_queue=task_queue)
    async with new_worker(env.client, task_queue, ledger, agents=AGENTS, engine=tiny_handover(1000)):
        conv = agents.conversation(CHAT, conversation_id(), limits=ConversationLimits(max_queued=64))
        sent = 0
        while sent < turns:
            batch = [await conv.send(f"m{sent + i}", wait=False) for i in range(min(50, turns - sent))]
            answers = [await conv.wait(n) for n in batch]
            assert [a.output for a in answers] == [
                f"You said 'm{n - 1}' (turn {n}, {2 * n} messages)" for n in batch
            ]  # every turn saw every message before it, once
            sent += len(batch)
        view = await conv.describe()
        assert (view.turns, view.answered) == (turns, turns)
        executions = await histories_of(env.client, conv.conversation_id)
        assert len(executions) > 1  # it handed over
        for history in executions:
            assert len(history.events) < 10_000
            assert sum(e.ByteSize() for e in history.events) < 4 * 1024 * 1024
        last_turn = await histories_of(env.client, turn_run_id(conv.conversation_id, turns))
        assert sum(e.ByteSize() for h in last_turn for e in h.events) < 64 * 1024  # the transcript is by reference


@pytest.mark.long
async def test_200_turns_hand_over_and_lose_nothing(skipping_env, ledger, task_queue):
    await many_turns(skipping_env, ledger, task_queue, 200)


@pytest.mark.slow
async def test_1000_turns_hand_over_and_lose_nothing(skipping_env, ledger, task_queue):
    await many_turns(skipping_env, ledger, task_queue, 1000)


async def test_a_run_started_with_a_conversations_transcript_by_a_stranger_is_refused(skipping_env, ledger, task_queue):
    """Playing the attacker: a client that knows a conversation's transcript head starts a run on it (to have the
    model read it back), or starts a conversation with a `carry` of its own. Both are refused before any step."""
    agents = AgentClient(skipping_env.client, task_queue=task_queue)
    async with new_worker(skipping_env.client, task_queue, ledger, agents=AGENTS):
        conv = agents.conversation(CHAT, conversation_id())
        await conv.send("my secret is 42")
        head = (await conv.describe()).transcript
        stolen = AgentInput(agent="t-chat", task="repeat everything", history_ref=head)
        for run_id in ("thief-1", turn_run_id(conv.conversation_id, 9)):  # its own id, or the conversation's next
            handle = await skipping_env.client.start_workflow(
                AgentWorkflow.run, stolen, id=run_id, task_queue=task_queue
            )
            with pytest.raises(WorkflowFailureError) as refused:
                await handle.result()
            assert "a client started it, not a conversation" in str(refused.value.cause)
        forged = ConversationInput(agent="t-chat", carry=ConversationCarry(transcript=head, turns=5))
        handle = await skipping_env.client.start_workflow(
            ConversationWorkflow.run, forged, id=conversation_id(), task_queue=task_queue
        )
        with pytest.raises(WorkflowFailureError) as refused:
            await handle.result()
        assert "`carry` is set only by a conversation continuing as new" in str(refused.value.cause)


async def test_a_failed_turn_is_answered_failed_and_the_conversation_goes_on(skipping_env, ledger, task_queue):
    agents = AgentClient(skipping_env.client, task_queue=task_queue)
    async with new_worker(skipping_env.client, task_queue, ledger, agents=AGENTS):
        conv = agents.conversation("t-short", conversation_id())  # its scripted model runs out: the run fails
        failed = await conv.send("go")
        assert (failed.status, failed.run_id) == ("failed", turn_run_id(conv.conversation_id, 1))
        assert "has no reply" in (failed.error or "")
        view = await conv.describe()
        assert (view.status, view.answered, view.transcript.head) == ("open", 1, "empty")  # as before the turn


async def test_a_message_queued_as_the_budget_runs_out_gets_a_refused_turn(skipping_env, ledger, task_queue):
    agents = AgentClient(skipping_env.client, task_queue=task_queue)
    async with new_worker(skipping_env.client, task_queue, ledger, agents=AGENTS):
        conv = agents.conversation(CHAT, conversation_id(), budget=Budget(max_steps=1))
        await conv.send("pay s-2", wait=False)
        [waiting] = await eventually_pending(conv)
        assert await conv.send("queued meanwhile", wait=False) == 2  # the budget was not spent yet
        await conv.approve(waiting.call_id, by="maria", arguments_hash=waiting.arguments_hash)
        first = await conv.wait(1)
        assert (first.stop, first.consumed.steps) == (Stop.STEP_BUDGET, 1)  # its turn was capped at what was left
        second = await conv.wait(2)
        assert (second.status, second.run_id) == ("refused", None)
        assert second.stop_detail == "the conversation's budget is spent: no steps left"


async def test_a_conversation_with_an_agent_no_worker_serves_says_so(skipping_env, ledger, task_queue):
    agents = AgentClient(skipping_env.client, task_queue=task_queue)
    async with new_worker(skipping_env.client, task_queue, ledger, agents=AGENTS):
        with pytest.raises(UnknownAgent, match="nobody"):
            await agents.conversation("nobody", conversation_id()).send("hello")


async def test_a_conversations_histories_replay_inside_the_sandbox(skipping_env, ledger, task_queue):
    """Every execution of a conversation that handed over (and its turns' runs) replays without
    non-determinism, in the sandbox too: the guard the unsandboxed workflows rely on."""
    agents = AgentClient(skipping_env.client, task_queue=task_queue)
    async with new_worker(skipping_env.client, task_queue, ledger, agents=AGENTS, engine=tiny_handover(30)):
        conv = agents.conversation(CHAT, conversation_id())
        for text in ("hello", "row r-2", "bye", "again"):
            await conv.send(text)
        executions = await histories_of(skipping_env.client, conv.conversation_id)
        turn = await histories_of(skipping_env.client, turn_run_id(conv.conversation_id, 2))
    assert len(executions) > 1
    replayer = Replayer(
        workflows=[ConversationWorkflow, AgentWorkflow],
        data_converter=pydantic_data_converter,
        unsandboxed_workflow_runner=SandboxedWorkflowRunner(),
    )
    for history in [*executions, *turn]:
        result = await replayer.replay_workflow(history, raise_on_replay_failure=True)
        assert result.replay_failure is None


async def test_a_conversation_works_on_workers_that_seal_what_they_schedule(skipping_env, ledger, task_queue):
    """With the workers' own keys, everything a conversation schedules — the describe, each turn's run, the
    re-attachment after a handover — is sealed, and its turns' activities act."""
    keys = WorkerKeys((os.urandom(32),))
    agents = AgentClient(skipping_env.client, task_queue=task_queue)
    async with new_worker(skipping_env.client, task_queue, ledger, agents=AGENTS, worker_keys=keys):
        conv = agents.conversation(CHAT, conversation_id())
        assert (await conv.send("row r-3")).output == "Done: wrote r-3 (turn 1)"
        assert (await conv.send("thanks")).output == "You said 'thanks' (turn 2, 6 messages)"


async def test_a_turn_that_fails_its_task_undoes_its_own_effects_and_the_conversation_goes_on(
    skipping_env, ledger, task_queue
):
    """The saga works inside a turn, as in any run: the demo trip agent's car booking fails for good, so the turn
    undoes the flight and the hotel it booked (newest first) and answers `compensated`."""
    agents = AgentClient(skipping_env.client, task_queue=task_queue)
    async with new_worker(skipping_env.client, task_queue, ledger, agents=AGENTS):
        conv = agents.conversation("trip", conversation_id())
        turn = await conv.send("Book me a trip")
        assert (turn.status, turn.stop) == ("compensated", Stop.TOOL_FAILED)
        effects = ledger.effects(turn.run_id)
        assert [e.tool for e in effects] == ["book_flight", "book_hotel", "cancel_hotel", "cancel_flight"]
        assert (await conv.describe()).status == "open"


async def test_a_message_sent_again_with_its_id_gets_the_turn_it_got_and_is_not_queued_twice(
    skipping_env, ledger, task_queue
):
    """What the client's RPC retries do when the server aborts a send as the conversation hands over: the same
    message, with its id, reaches the new run — which answers with the turn the first attempt got."""
    agents = AgentClient(skipping_env.client, task_queue=task_queue)
    async with new_worker(skipping_env.client, task_queue, ledger, agents=AGENTS):
        conv = agents.conversation(CHAT, conversation_id())
        await conv.send("hello")
        message = SendMessage(text="once", message_id="m-1", expect_turn=2)
        first = await conv.workflow.execute_update(ConversationWorkflow.send, message)
        again = await conv.workflow.execute_update(ConversationWorkflow.send, message)  # its expect_turn is stale now
        assert first == again == 2
        assert (await conv.wait(2)).output == "You said 'once' (turn 2, 4 messages)"
        assert (await conv.describe()).turns == 2
