"""Conversations over the runs API (Temporal engine), as a stateless front end uses them: real processes on
loopback (a dev server, a worker, `starter.py serve`), the same tokens and roles as runs."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from duragent._workflows.turns import turn_run_id
from tests.support.runs_api_stack import AGENT_MODULES, VIEWER, ApiStack, eventually, temporal_stack

pytestmark = pytest.mark.system


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ApiStack]:
    built = temporal_stack(
        tmp_path_factory.mktemp("api-conversations"), modules=[*AGENT_MODULES, "tests.support.conversation_agents"]
    )
    try:
        yield built
    finally:
        built.close()


def test_a_stateless_front_end_talks_approves_and_reads_a_conversation(stack: ApiStack):
    conversation = "http-conv-1"
    with stack.client() as api, stack.client(VIEWER) as viewer, stack.client(None) as nobody:
        message = {"agent": "t-chat", "text": "hello", "wait": True}
        assert nobody.post(f"/conversations/{conversation}/messages", json=message).status_code == 401
        assert viewer.post(f"/conversations/{conversation}/messages", json=message).status_code == 403

        first = api.post(f"/conversations/{conversation}/messages", json=message)
        assert first.status_code == 200, first.text
        assert first.json()["output"] == "You said 'hello' (turn 1, 2 messages)"

        queued = api.post(f"/conversations/{conversation}/messages", json={"agent": "t-chat", "text": "pay s-3"})
        assert (queued.status_code, queued.json()["turn"]) == (202, 2)
        turn = turn_run_id(conversation, 2)

        def waiting() -> list | None:
            found = [a for a in api.get("/approvals").json() if a["run_id"] == turn]
            return found or None

        [pending] = eventually(waiting, what="the turn's approval in the inbox")
        page = viewer.get(f"/conversations/{conversation}").json()
        assert page["conversation"]["active_run_id"] == turn
        assert [p["call_id"] for p in page["conversation"]["pending_approvals"]] == [pending["call_id"]]
        decided = api.post(
            f"/runs/{turn}/approvals/{pending['call_id']}",
            json={"approve": True, "arguments_hash": pending["arguments_hash"]},
        )
        assert decided.status_code == 200, decided.text
        answer = viewer.get(f"/conversations/{conversation}/turns/2")
        assert answer.json()["output"] == "Done: paid s-3 (turn 2)"

        page = viewer.get(f"/conversations/{conversation}", params={"offset": 1, "limit": 2}).json()
        assert page["conversation"]["turns"] == 2 and page["transcript"]["total"] == 7
        assert [m["content"] for m in page["transcript"]["messages"]] == [
            "hello",
            "You said 'hello' (turn 1, 2 messages)",
        ]
        listed = eventually(
            lambda: [c for c in viewer.get("/conversations").json() if c["conversation_id"] == conversation] or None,
            what="the conversation in visibility",
        )
        assert listed[0]["agent"] == "t-chat"


def test_each_refusal_over_http_is_one_status_and_nothing_is_sent(stack: ApiStack):
    conversation = "http-conv-2"
    with stack.client() as api:
        send = f"/conversations/{conversation}/messages"
        assert api.post(send, json={"agent": "t-chat", "text": " "}).status_code == 422
        assert api.post(send, json={"agent": "nobody", "text": "hi"}).status_code == 422
        assert api.post("/conversations/a~b/messages", json={"agent": "t-chat", "text": "hi"}).status_code == 422
        assert api.get("/conversations/never-started").status_code == 404
        assert api.post(send, json={"agent": "t-chat", "text": "hi", "wait": True}).status_code == 200
        stale = api.post(send, json={"agent": "t-chat", "text": "again", "expect_turn": 1})
        assert stale.status_code == 409 and "StaleTurn" in stale.text
        endpoint = api.post(send, json={"agent": "t-chat", "text": "again", "model": "http://127.0.0.1:9/v1"})
        assert endpoint.status_code == 422 and "is not declared by this worker" in endpoint.text
        assert api.get(f"/conversations/{conversation}").json()["conversation"]["turns"] == 1
