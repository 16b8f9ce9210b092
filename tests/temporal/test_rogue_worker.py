"""Played as the rogue worker: someone who can poll the agents' own task queue (no worker key)
serves it with their own `AgentWorkflow` — the same type name, so every check the activities make of the calling
run (`duragent._activities.caller`: an `AgentWorkflow` on this task queue, the run and keys from `activity.info()`, the
call in its own history) passes. Its run schedules a gated tool with an approval it wrote itself, an ungated
mutating tool, and the undo of that tool.

Without worker keys (today's default) none acts either, as each is in no record of the worker's own (no model reply
it stored proposed the calls, it produced no result for the undo). With `AGENT_WORKER_KEYS` on the agents' workers,
none reaches the tool at all — whether the rogue seals nothing or seals with a key of its own — and the agents' own runs
on the same queue still act and undo. The ledger is the judge. No approver keys here: the seal alone holds."""

from __future__ import annotations

import base64
import os
import uuid
from typing import Any

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client
from temporalio.worker import Worker

from duragent._client import AgentClient
from duragent._config.settings import Settings
from duragent._config.worker_keys import WorkerKeys
from duragent._sealing import Sealing
from duragent._stores.ledger import EffectsLedger
from duragent._stores.transcripts import EMPTY
from duragent._workflows.turns import turn_run_id
from tests.conftest import TEST_AGENTS, eventually, new_worker
from tests.support.conversation_agents import CHAT
from tests.support.outsider import ImpostorAgent
from tests.temporal.test_outsider import approval_of, call

AGENTS_KEYS = WorkerKeys((os.urandom(32),))
ROGUES_KEYS = WorkerKeys((os.urandom(32),))


def plan(queue: str, me: str) -> list[dict[str, Any]]:
    """The rogue run's schedules, in order, all on the agents' queue and all under its own run id and keys."""
    refund = call("refund", "1.1", order_id="ROGUE-777")
    flight = call("book_flight", "2.1", trip="rogue-trip")
    empty = {"head": EMPTY}

    def on(activity: str, input: dict[str, Any]) -> dict[str, Any]:
        return {"activity": activity, "task_queue": queue, "input": input, "timeout": 30}

    return [
        on(  # the gated refund, with an approval the rogue wrote (it holds no approver key; none is required)
            "run_tool",
            {
                "run_id": me,
                "agent": "refund",
                "call": refund,
                "idempotency_key": f"{me}:1.1",
                "transcript": empty,
                "decision": approval_of(refund),
            },
        ),
        on(  # an ungated mutating tool
            "run_tool",
            {"run_id": me, "agent": "trip", "call": flight, "idempotency_key": f"{me}:2.1", "transcript": empty},
        ),
        on(  # its undo: the call is in this run's own history, so the recorded-call check passes
            "compensate",
            {
                "run_id": me,
                "agent": "trip",
                "step": {"call": flight, "result": "booked", "original_key": f"{me}:2.1", "key": f"{me}:2.1:undo"},
            },
        ),
    ]


async def scheduled(client: Client, run_id: str) -> bool:
    events = (await client.get_workflow_handle(run_id).fetch_history()).events
    return any(e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED for e in events)


async def play_the_rogue(
    client: Client,
    task_queue: str,
    ledger: EffectsLedger,
    rogue: Worker,
    schedules: Any = plan,
    me: str | None = None,
    **agents: Any,
):
    """The rogue's worker takes its run's first workflow task alone (its run's later tasks stick to it), then
    the agents' worker joins the queue and serves the activities the rogue scheduled (`schedules(queue, run)`)."""
    me = me or f"rogue-{uuid.uuid4().hex[:8]}"
    async with rogue:
        handle = await client.start_workflow(ImpostorAgent.run, schedules(task_queue, me), id=me, task_queue=task_queue)
        await eventually(lambda: scheduled(client, me), what="the rogue's first schedule")
        async with new_worker(client, task_queue, ledger, approver_keys={}, **agents):
            outcomes = await handle.result()
    return me, outcomes


async def rogue_worker(client: Client, task_queue: str, kind: str) -> Worker:
    """The rogue's worker, on a connection of its own (it is another process: the SDK allows one worker per
    queue and connection), serving its `AgentWorkflow` and no activity. `own-key` seals with our code and a
    key of its own."""
    own = await Client.connect(client.service_client.config.target_host, namespace=client.namespace)
    sealing = [Sealing(ROGUES_KEYS)] if kind == "own-key" else []
    return Worker(own, task_queue=task_queue, workflows=[ImpostorAgent], interceptors=sealing)


async def test_without_worker_keys_a_rogue_worker_acts_on_nothing_the_worker_did_not_record(
    skipping_env, ledger, task_queue
):
    """Today's default (no keys): the rogue's schedules reach the activities, but each effect is decided from what
    the worker itself recorded — its tool calls are in no model reply the worker stored, its undo is of a result the
    worker never produced — so none acts."""
    client = skipping_env.client
    rogue = await rogue_worker(client, task_queue, "no-key")
    me, outcomes = await play_the_rogue(client, task_queue, ledger, rogue)
    assert [(o["ok"], o["type"]) for o in outcomes] == [(False, "CallerRefused")] * 3, outcomes
    assert "in no model reply the agents' workers stored" in outcomes[0]["message"]
    assert "was recorded by the agents' workers" in outcomes[2]["message"]
    assert ledger.effects(me) == []


@pytest.mark.parametrize("rogue_kind", ["no-key", "own-key"])
async def test_with_worker_keys_a_rogue_worker_makes_no_effect(skipping_env, ledger, task_queue, rogue_kind):
    client = skipping_env.client
    rogue = await rogue_worker(client, task_queue, rogue_kind)
    me, outcomes = await play_the_rogue(client, task_queue, ledger, rogue, worker_keys=AGENTS_KEYS)

    # Its gated tool, its ungated mutating tool and its undo did nothing, each refused for good (one attempt)
    # and saying why.
    assert ledger.effects(me) == []
    assert [(o["ok"], o["type"]) for o in outcomes] == [(False, "CallerRefused")] * 3
    assert all("is not sealed by the agents' workers" in o["message"] for o in outcomes)

    # The agents' own runs, on the same queue with the same keys, act and undo (the rogue has stopped polling).
    async with new_worker(client, task_queue, ledger, approver_keys={}, worker_keys=AGENTS_KEYS):
        trip = await AgentClient(client, task_queue=task_queue).start("trip", options={"fail_at": "car"})
        assert (await trip.result()).status == "compensated"
    assert [e.tool for e in ledger.effects(trip.run_id)] == [
        "book_flight",
        "book_hotel",
        "cancel_hotel",
        "cancel_flight",
    ]


async def test_worker_keys_a_program_gives_in_its_settings_are_the_workers_keys(
    skipping_env, ledger, task_queue, tmp_path
) -> None:
    """`build_worker(settings=...)` with AGENT_WORKER_KEYS in them, no `worker_keys=`: a program's own worker
    (not the CLI's, which passes its keys itself) seals and verifies too."""
    client = skipping_env.client
    key = base64.b64encode(os.urandom(32)).decode()
    rogue = await rogue_worker(client, task_queue, "no-key")
    settings = Settings(worker_keys=key, data_dir=tmp_path)
    me, outcomes = await play_the_rogue(client, task_queue, ledger, rogue, settings=settings)
    assert ledger.effects(me) == []
    assert [(o["ok"], o["type"]) for o in outcomes] == [(False, "CallerRefused")] * 3
    # Refused by the seal check (without keys the same calls are refused later, by what the worker recorded).
    assert all("is not sealed by the agents' workers" in o["message"] for o in outcomes), outcomes


async def test_without_worker_keys_a_rogue_run_cannot_replay_a_real_runs_proposals(skipping_env, ledger, task_queue):
    """A real run's transcript head is in its history, which frontend access reads; its model replies propose real
    calls. A rogue run naming that head for the same call would pass "a model reply the worker stored proposed it" —
    but that transcript was written for another run, and a run reads only its own: no second booking."""
    client = skipping_env.client
    async with new_worker(client, task_queue, ledger, approver_keys={}):
        victim = await (
            await AgentClient(client, task_queue=task_queue).start("trip", options={"fail_at": "none"})
        ).result()
    flight = next(r.call for r in victim.records if r.call.name == "book_flight")
    assert victim.transcript_ref is not None and len(ledger.effects(victim.run_id)) == 3

    def replay(queue: str, me: str) -> list[dict[str, Any]]:
        head = {"head": victim.transcript_ref}
        tool = {
            "run_id": me,
            "agent": "trip",
            "call": flight.model_dump(),
            "idempotency_key": f"{me}:{flight.identity}",
        }
        return [{"activity": "run_tool", "task_queue": queue, "input": tool | {"transcript": head}, "timeout": 30}]

    rogue = await rogue_worker(client, task_queue, "no-key")
    me, outcomes = await play_the_rogue(client, task_queue, ledger, rogue, replay)
    assert ledger.effects(me) == []
    assert [(o["ok"], o["type"]) for o in outcomes] == [(False, "TranscriptNotFound")], outcomes
    assert "written here only for runs other than" in outcomes[0]["message"]


async def test_a_rogue_run_named_as_a_conversations_turn_reads_none_of_its_transcript(skipping_env, ledger, task_queue):
    """A run id is a name its starter picks: the rogue calls its run `{victim}~turn-99`. Only the server's parent
    link makes a run one of a conversation's turns, allowed to read that conversation's transcript."""
    client = skipping_env.client
    victim = f"conv-{uuid.uuid4().hex[:8]}"
    async with new_worker(client, task_queue, ledger, agents=[*TEST_AGENTS, CHAT]):
        await AgentClient(client, task_queue=task_queue).conversation(CHAT, victim).send("my card is 4111")
        head = (await AgentClient(client, task_queue=task_queue).handle(turn_run_id(victim, 1)).result()).transcript_ref

    def read(queue: str, me: str) -> list[dict[str, Any]]:
        ask = {"run_id": me, "agent": CHAT.name, "transcript": {"head": head}, "call_index": 0}
        return [{"activity": "call_model", "task_queue": queue, "input": ask, "timeout": 30}]

    rogue = await rogue_worker(client, task_queue, "no-key")
    me = turn_run_id(victim, 99)
    _, outcomes = await play_the_rogue(client, task_queue, ledger, rogue, read, me, agents=[*TEST_AGENTS, CHAT])
    assert [(o["ok"], o["type"]) for o in outcomes] == [(False, "TranscriptNotFound")], outcomes
    assert f"written here only for runs other than {me!r}" in outcomes[0]["message"]
