"""A message may switch the model for its turn, by a name the worker's catalog declares (never an endpoint): the
turn's run answers with that model on the whole transcript so far, the next message goes back to the
conversation's model, and a name the worker does not declare is refused with one clear error, nothing sent."""

from __future__ import annotations

import uuid
from collections.abc import Sequence

import pytest
from temporalio.service import RPCError

from agentic import FakeModel, Message
from duragent import AgentClient
from duragent._errors import MessageRefused
from duragent._workflows.turns import turn_run_id
from tests.conftest import TEST_AGENTS, new_worker
from tests.support.conversation_agents import CHAT


def seen_by(name: str):
    def reply(messages: Sequence[Message]) -> str:
        users = sum(1 for m in messages if m.role == "user")
        return f"{name} answered {messages[-1].content!r} (turn {users}, {len(messages)} messages)"

    return FakeModel.replying(reply, name=name)


# The worker's catalog: two declared models, as a worker declares `openai:...` names it may answer with.
MODELS = {"openai:fast": seen_by("fast"), "openai:deep": seen_by("deep")}


def undeclared(name: str) -> str:
    # The worker declares the local models of its settings too, then these two.
    return f"model {name!r} is not declared by this worker; it declares: local, local-schema, openai:deep, openai:fast"


def conversation_id() -> str:
    return f"conv-models-{uuid.uuid4().hex[:8]}"


async def test_a_message_switches_the_model_for_its_turn_only(skipping_env, ledger, task_queue):
    agents = AgentClient(skipping_env.client, task_queue=task_queue)
    async with new_worker(skipping_env.client, task_queue, ledger, agents=[*TEST_AGENTS, CHAT], models=MODELS):
        conv = agents.conversation(CHAT, conversation_id())
        assert (await conv.send("hello")).output == "You said 'hello' (turn 1, 2 messages)"  # the agent's own
        # The named model answers this turn, on the whole transcript so far.
        fast = await conv.send("quick one", model="openai:fast")
        assert (fast.status, fast.output) == ("completed", "fast answered 'quick one' (turn 2, 4 messages)")
        assert (await conv.send("and now?")).output == "You said 'and now?' (turn 3, 6 messages)"  # back again
        deep = await conv.send("think", model="openai:deep")
        assert deep.output == "deep answered 'think' (turn 4, 8 messages)"

        # An endpoint, a key-bearing URL or an undeclared name: refused by the validator, no turn, no run.
        for named in ("http://127.0.0.1:9/v1", "openai:gpt-4o", "no-such-model"):
            with pytest.raises(MessageRefused) as refused:
                await conv.send("use this", model=named)
            assert refused.value.kind == "UnknownModel"
            assert str(refused.value) == undeclared(named)
        view = await conv.describe()
        assert (view.turns, view.answered) == (4, 4)
        assert (await conv.send("still here?")).output == "You said 'still here?' (turn 5, 10 messages)"


async def test_the_first_message_naming_an_undeclared_model_gets_a_refused_turn_and_no_run(
    skipping_env, ledger, task_queue
):
    """The first message arrives with the conversation's start, before the worker has said which models it
    declares: it is accepted, and its turn is refused with the same reason; the conversation goes on."""
    agents = AgentClient(skipping_env.client, task_queue=task_queue)
    async with new_worker(skipping_env.client, task_queue, ledger, agents=[*TEST_AGENTS, CHAT], models=MODELS):
        conv = agents.conversation(CHAT, conversation_id())
        first = await conv.send("hello", model="openai:gpt-4o")
        assert (first.turn, first.status, first.run_id) == (1, "refused", None)
        assert first.stop_detail == undeclared("openai:gpt-4o")
        with pytest.raises(RPCError):
            await skipping_env.client.get_workflow_handle(turn_run_id(conv.conversation_id, 1)).describe()
        second = await conv.send("hello again", model="openai:fast")
        # The refused turn added nothing to the transcript: the model sees the system message and this message.
        assert (second.turn, second.output) == (2, "fast answered 'hello again' (turn 1, 2 messages)")
