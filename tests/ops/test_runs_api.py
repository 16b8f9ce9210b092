"""The runs API, one suite for both engines (`python starter.py serve` over Temporal, `job serve` over the
checkpoint store): the same routes, the same JSON shapes, the same access rules and bad-input answers, each
checked against the engine's own durable state (the effects ledger, the run's view before and after)."""

from __future__ import annotations

import socket
import threading
import uuid
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest

from tests.support.runs_api_stack import (
    APPROVER,
    OTHER_APPROVER,
    VIEWER,
    ApiStack,
    checkpoint_stack,
    eventually,
    finished,
    read_events,
    temporal_stack,
    waiting,
)

# Processes of its own: an API server and workers.
pytestmark = pytest.mark.system


@pytest.fixture(scope="module", params=["temporal", "checkpoints"])
def stack(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ApiStack]:
    tmp = tmp_path_factory.mktemp(f"api-{request.param}")
    built = temporal_stack(tmp) if request.param == "temporal" else checkpoint_stack(tmp)
    try:
        yield built
    finally:
        built.close()


@pytest.fixture
def api(stack: ApiStack) -> Iterator[httpx.Client]:
    with stack.client() as client:
        yield client


def start(api: httpx.Client, agent: str, **fields: Any) -> str:
    response = api.post("/runs", json={"agent": agent, "task": None, "run_id": None} | fields)
    assert response.status_code == 201, response.text
    return str(response.json()["run_id"])


def test_a_running_migration_shows_percent_rising_and_its_stream_every_step_and_the_end(stack, api):
    run_id = start(api, "migration", options={"records": 4, "step_delay": 0.6})
    streamed: list[tuple[str, dict[str, Any]]] = []
    reader = threading.Thread(target=lambda: streamed.extend(read_events(stack.client(), run_id)))
    reader.start()
    seen: list[float] = []

    def ended() -> bool:
        view = api.get(f"/runs/{run_id}").json()
        if view["status"] == "running" and view["percent_complete"] is not None:
            seen.append(view["percent_complete"])
        return view["status"] == "completed"

    eventually(ended, what="the migration to complete")
    reader.join(timeout=60)

    assert len(set(seen)) >= 2 and seen == sorted(seen) and max(seen) < 100, seen  # rising while it runs
    view = api.get(f"/runs/{run_id}").json()
    assert view["engine"] == stack.engine
    assert (view["status"], view["stop"], view["output"]) == ("completed", "answered", "Migrated 4 records.")
    assert view["percent_complete"] == 100.0 and view["progress"]["step"] == view["progress"]["total"] == 9
    assert [s["step_name"] for s in view["steps"]] == ["model_call", "tool:migrate_record"] * 4 + ["model_call"]
    assert all(s["status"] == "completed" and s["started_at"] and s["finished_at"] for s in view["steps"])
    assert view["steps"][3]["label"] == "migrate_record(record=rec-2)"
    assert view["steps"][3]["idempotency_key"] == f"{run_id}:2.1"
    assert view["consumption"]["steps"] == 5 and view["consumption"]["input_tokens"] > 0
    assert view["options"] == {"records": 4, "step_delay": 0.6}

    progress = [data for name, data in streamed if name == "progress"]
    assert all(set(p) == {"step", "total", "label"} for p in progress)
    assert [p["step"] for p in progress] == sorted(p["step"] for p in progress)
    labels = [p["label"] for p in progress]
    for record in range(2, 5):  # every record's step is delivered (the first may be over before the stream)
        assert f"migrate_record(record=rec-{record})" in labels, labels
    assert progress[-1]["step"] == progress[-1]["total"] == 9
    assert streamed[-1][0] == "end" and [name for name, _ in streamed].count("end") == 1
    end = streamed[-1][1]
    assert (end["run_id"], end["status"], end["stop"], end["output"]) == (
        run_id,
        "completed",
        "answered",
        "Migrated 4 records.",
    )
    assert len(stack.effects(run_id)) == 4


def test_approve_a_refund_once_with_the_caller_as_approver_and_a_second_decision_is_rejected(stack, api):
    run_id = start(api, "refund")
    view = waiting(api, run_id)
    [pending] = view["pending_approvals"]
    assert set(pending) == {"call_id", "tool", "arguments", "arguments_hash", "requested_at", "deadline"}
    assert (pending["tool"], pending["arguments"]) == ("refund", {"order_id": "4471"})
    assert view["status"] == "awaiting_approval"
    listed = eventually(lambda: [i for i in api.get("/approvals").json() if i["run_id"] == run_id], what="inbox")
    assert listed[0]["agent"] == "refund" and listed[0]["arguments_hash"] == pending["arguments_hash"]
    assert (listed[0]["root_run_id"], listed[0]["path"]) == (run_id, [run_id])  # nobody delegated it
    url = f"/runs/{run_id}/approvals/{pending['call_id']}"
    decision = {"approve": True, "reason": "checked", "arguments_hash": pending["arguments_hash"]}

    # The approver is who the token says: a body naming someone else is refused, and nothing happens.
    forged = api.post(url, json=decision | {"approver": "eve"})
    assert forged.status_code == 422 and "approver" in forged.json()["error"]
    with stack.client(VIEWER) as viewer:
        assert viewer.post(url, json=decision).status_code == 403
    assert api.get(f"/runs/{run_id}").json()["pending_approvals"] == [pending]

    approved = api.post(url, json=decision)
    assert approved.status_code == 200, approved.text
    entry = approved.json()
    assert (entry["outcome"], entry["approver"], entry["reason"]) == ("approved", "maria", "checked")
    assert entry["call_id"] == pending["call_id"] and entry["arguments_hash"] == pending["arguments_hash"]

    done = finished(api, run_id)
    assert (done["status"], done["output"]) == ("completed", "Refunded order 4471.")
    assert [(a["outcome"], a["approver"]) for a in done["audit"]] == [("approved", "maria")]
    assert [e.tool for e in stack.effects(run_id)] == ["refund"]

    with stack.client(OTHER_APPROVER) as other:
        again = other.post(url, json=decision)
    assert again.status_code == 409 and "already approved" in again.json()["error"], again.text
    assert [e.tool for e in stack.effects(run_id)] == ["refund"]  # still once
    assert api.get(f"/runs/{run_id}").json()["audit"] == done["audit"]  # the rejection changed nothing


def test_a_delegated_runs_approval_names_its_root_and_path_and_deciding_it_reaches_the_child(stack, api):
    """`support` hands the refund to `billing-desk`, a child run; its approval is listed with the
    root run and the path down to the child, and approving it on the child's run finishes the whole tree."""
    root = start(api, "support")
    child = f"{root}~2.1"  # the child's id is derived from the parent's call (agentic.delegation.child_run_id)

    def listed() -> dict[str, Any] | None:
        return next((i for i in api.get("/approvals").json() if i["root_run_id"] == root), None)

    item = eventually(listed, what="the child's approval in the inbox")
    assert (item["run_id"], item["path"], item["agent"]) == (child, [root, child], "billing-desk")
    assert (item["tool"], item["arguments"]) == ("refund_payment", {"order_id": "4471", "amount_cents": 2500})
    decision = {"approve": True, "reason": "damaged", "arguments_hash": item["arguments_hash"]}
    assert api.post(f"/runs/{child}/approvals/{item['call_id']}", json=decision).status_code == 200

    done = finished(api, root)
    assert done["status"] == "completed" and "Refunded order 4471" in done["output"], done
    assert [e.tool for e in stack.effects(child)] == ["refund_payment"]
    assert [e.tool for e in stack.effects(root)] == ["open_ticket"]
    others = [i for i in api.get("/approvals").json() if i["root_run_id"] != i["run_id"]]
    assert all(i["path"][-1] == i["run_id"] and i["path"][0] == i["root_run_id"] for i in others)


def test_a_wrong_hash_or_a_denial_decides_nothing_else(stack, api):
    run_id = start(api, "refund")
    [pending] = waiting(api, run_id)["pending_approvals"]
    url = f"/runs/{run_id}/approvals/{pending['call_id']}"
    before = api.get(f"/runs/{run_id}").json()
    wrong = api.post(url, json={"approve": True, "reason": "", "arguments_hash": "0" * 64})
    assert wrong.status_code == 409 and "hash does not match" in wrong.json()["error"]
    after = api.get(f"/runs/{run_id}").json()
    assert (after["pending_approvals"], after["audit"]) == (before["pending_approvals"], before["audit"])

    denied = api.post(url, json={"approve": False, "reason": "already refunded by phone"})
    assert denied.status_code == 200 and denied.json()["outcome"] == "declined"
    done = finished(api, run_id)
    assert done["output"] == "The refund of order 4471 was declined; nothing was refunded."
    assert [(a["outcome"], a["approver"], a["reason"]) for a in done["audit"]] == [
        ("declined", "maria", "already refunded by phone")
    ]
    assert stack.effects(run_id) == []


def test_cancel_stops_the_run_and_a_second_cancel_is_a_conflict(stack, api):
    run_id = start(api, "migration", options={"records": 30, "step_delay": 0.5})
    eventually(lambda: stack.effects(run_id), what="the first record")
    with stack.client(VIEWER) as viewer:
        assert viewer.post(f"/runs/{run_id}/cancel", json={}).status_code == 403
    response = api.post(f"/runs/{run_id}/cancel", json={})
    assert response.status_code == 202 and response.json() == {
        "run_id": run_id,
        "cancel_requested": True,
        "by": "maria",
    }
    done = finished(api, run_id)
    assert (done["status"], done["stop"]) == ("abandoned", "cancelled")
    assert done["cancel_requested"] in (True, False)  # handled by now on the checkpoint engine
    # Stopped part-way: the records migrated are rec-1..rec-k in order, each once, and not all 30.
    landed = [e.args["record"] for e in stack.effects(run_id)]
    assert landed and landed == [f"rec-{i}" for i in range(1, len(landed) + 1)] and len(landed) < 30, landed
    # Records have no undo: the tool is named once, however many landed before the cancel did (agentic/saga.py).
    assert done["not_compensable"] == ["migrate_record"]
    again = api.post(f"/runs/{run_id}/cancel", json={})
    assert again.status_code == 409 and "ended" in again.json()["error"]


def test_listing_filters_by_status_and_agent(stack, api):
    run_id = start(api, "billing")
    finished(api, run_id)

    def listed() -> list[dict[str, Any]]:
        return [r for r in api.get("/runs", params={"agent": "billing", "status": "completed"}).json()]

    rows = eventually(lambda: [r for r in listed() if r["run_id"] == run_id], what="visibility")
    assert rows[0]["agent"] == "billing" and rows[0]["status"] == "completed"
    assert all(r["agent"] == "billing" and r["status"] == "completed" for r in listed())
    assert all(r["agent"] == "refund" for r in api.get("/runs", params={"agent": "refund"}).json())


def test_every_route_needs_a_token_a_viewer_only_reads_and_the_schema_is_for_callers(stack, api):
    routes = [
        ("GET", "/runs"),
        ("POST", "/runs"),
        ("GET", "/runs/x"),
        ("GET", "/runs/x/events"),
        ("POST", "/runs/x/cancel"),
        ("POST", "/runs/x/approvals/1.1"),
        ("GET", "/approvals"),
        ("GET", "/openapi.json"),
    ]
    with stack.client(None) as bare, stack.client(VIEWER) as viewer:
        for method, path in routes:
            for headers in (
                {},
                {"Authorization": "Bearer not-a-token-0123456789"},
                {"Authorization": f"Basic {APPROVER}"},
            ):
                response = bare.request(method, path, headers=headers, json={} if method == "POST" else None)
                assert response.status_code == 401, (method, path, headers)
                assert response.headers["www-authenticate"] == "Bearer"
        for method, path in routes:
            if method == "POST":
                denied = viewer.request(method, path, json={"agent": "billing"})
                assert denied.status_code == 403 and "ops is a viewer" in denied.json()["error"], path
        schema = viewer.get("/openapi.json")
        assert schema.status_code == 200 and "/runs/{run_id}/approvals/{call_id}" in schema.json()["paths"]
        assert viewer.get("/docs").status_code == 404  # no page that would load scripts from elsewhere
        # CORS is off: no origin is ever allowed to read a response or send a preflighted request.
        preflight = bare.options(
            "/runs", headers={"Origin": "https://evil.example", "Access-Control-Request-Method": "POST"}
        )
        assert "access-control-allow-origin" not in preflight.headers
        read = viewer.get("/runs", headers={"Origin": "https://evil.example"})
        assert read.status_code == 200 and "access-control-allow-origin" not in read.headers
        assert viewer.get("/runs", headers={"Host": "rebind.attacker.example"}).status_code == 400


def test_logout_ends_the_session_on_the_server_not_only_in_the_browser(stack):
    """A copy of the cookie (taken before the sign-out) must be worth nothing after it."""
    with stack.client(None) as browser:
        signed_in = browser.post("/login", data={"token": APPROVER}, follow_redirects=False)
        assert signed_in.status_code == 303 and signed_in.headers["location"] == "/inbox"
        cookie = {"Cookie": signed_in.headers["set-cookie"].split(";", 1)[0]}
        assert APPROVER not in cookie["Cookie"]
        assert browser.get("/approvals", headers=cookie).status_code == 200
        assert browser.get("/inbox", headers=cookie).status_code == 200
        signed_out = browser.post("/logout", headers=cookie, follow_redirects=False)
        assert signed_out.status_code == 303 and signed_out.headers["location"] == "/login"
        assert "Max-Age=0" in signed_out.headers["set-cookie"]
        assert browser.get("/approvals", headers=cookie).status_code == 401
        gone = browser.get("/inbox", headers=cookie, follow_redirects=False)
        assert gone.status_code == 303 and gone.headers["location"] == "/login"


def test_a_cross_site_page_cannot_decide_cancel_or_start_with_the_session_cookie(stack, api):
    """Defence in depth: even were a browser to send the SameSite=Strict cookie with another
    site's request, and that request JSON, a change that comes from another site is refused and nothing
    changes; the inbox's own page, same-origin, decides."""
    run_id = start(api, "refund")
    [pending] = waiting(api, run_id)["pending_approvals"]
    url = f"/runs/{run_id}/approvals/{pending['call_id']}"
    decision = {"approve": True, "reason": "csrf", "arguments_hash": pending["arguments_hash"]}
    planted = f"csrf-{uuid.uuid4().hex[:8]}"
    with stack.client(None) as browser:
        cookie = browser.post("/login", data={"token": APPROVER}, follow_redirects=False).headers["set-cookie"]
        session = {"Cookie": cookie.split(";", 1)[0]}
        for from_elsewhere in ({"Origin": "http://evil.example", "Sec-Fetch-Site": "cross-site"}, {"Origin": "null"}):
            headers = session | from_elsewhere
            for path, body in (
                (url, decision),
                (f"/runs/{run_id}/cancel", {}),
                ("/runs", {"agent": "refund", "task": None, "run_id": planted}),
            ):
                refused = browser.post(path, json=body, headers=headers)
                assert refused.status_code == 403 and "cross-site" in refused.json()["error"], (path, refused.text)
        view = api.get(f"/runs/{run_id}").json()
        assert (view["pending_approvals"], view["audit"], view["cancel_requested"]) == ([pending], [], False)
        assert api.get(f"/runs/{planted}").status_code == 404
        assert stack.effects(run_id) == []

        own = session | {"Origin": stack.url, "Sec-Fetch-Site": "same-origin"}
        assert browser.post(url, json=decision, headers=own).status_code == 200
    assert finished(api, run_id)["status"] == "completed"
    assert [e.tool for e in stack.effects(run_id)] == ["refund"]


def test_bad_input_gets_a_clear_status_and_changes_nothing(stack, api):
    done_id = start(api, "billing")
    finished(api, done_id)
    before_runs = {r["run_id"] for r in api.get("/runs", params={"limit": 1000}).json()}
    asked_from = api.get(f"/runs/{done_id}").json()["created_at"]
    before_view = api.get(f"/runs/{done_id}").json()
    effects_before = len(stack.effects(done_id))

    for method, path in (
        ("GET", "/runs/nope"),
        ("GET", "/runs/nope/events"),
        ("POST", "/runs/nope/cancel"),
        ("POST", "/runs/nope/approvals/1.1"),
    ):
        body = {"approve": False, "reason": ""} if "approvals" in path else ({} if method == "POST" else None)
        response = api.request(method, path, json=body)
        assert response.status_code == 404 and response.json() == {"error": "unknown run id 'nope'"}, path

    cases = [
        (b'{"agent": "billing"', "body"),  # malformed JSON
        (b'{"agent": 7}', "body.agent"),
        (b'{"task": "x"}', "body.agent"),
        (b'{"agent": "billing", "options": []}', "body.options"),
        (b'{"agent": "billing", "colour": "red"}', "body.colour"),
        (b'{"agent": "billing", "run_id": "has spaces"}', "body.run_id"),
    ]
    for raw, field in cases:
        response = api.post("/runs", content=raw, headers={"content-type": "application/json"})
        assert response.status_code == 422, raw
        assert field in [f["field"] for f in response.json()["fields"]], (raw, response.text)
    for body, why in (
        ({"agent": "nobody"}, "agent: unknown agent"),
        ({"agent": "migration", "options": {"records": "many"}}, "records"),
        ({"agent": "billing", "webhook": "http://hooks.example.com/x"}, "https"),
    ):
        response = api.post("/runs", json=body)
        assert response.status_code == 422 and why in response.json()["error"], response.text
    exists = api.post("/runs", json={"agent": "billing", "run_id": done_id})
    assert exists.status_code == 409 and "never reused" in exists.json()["error"]

    url = f"/runs/{done_id}/approvals/1.1"
    for body, field in (
        ({"approve": "yes", "reason": ""}, "body.approve"),
        ({"approve": True, "reason": 3, "arguments_hash": "0" * 64}, "body.reason"),
        ({"approve": True, "reason": "ok"}, "arguments_hash"),
        ({"approve": True, "arguments_hash": "not-a-hash"}, "body.arguments_hash"),
    ):
        response = api.post(url, json=body)
        assert response.status_code == 422 and field in response.text, (body, response.text)
    not_waiting = api.post(url, json={"approve": True, "reason": "", "arguments_hash": "0" * 64})
    assert not_waiting.status_code == 409 and "already ended" in not_waiting.json()["error"], not_waiting.text
    ended = api.post(f"/runs/{done_id}/cancel", json={})
    assert ended.status_code == 409

    huge = declared_only(stack.url, "/runs", 70_000)
    assert huge.startswith(b"HTTP/1.1 413 ") and b"larger than" in huge, huge
    plain = api.post("/runs", content=b'{"agent": "billing"}', headers={"content-type": "text/plain"})
    assert plain.status_code == 415

    # Nothing started: a run listed now and not before is an earlier test's that visibility (eventually
    # consistent) had not listed yet, never one created by the bad requests above.
    after_runs = api.get("/runs", params={"limit": 1000}).json()
    late = [r for r in after_runs if r["run_id"] not in before_runs]
    assert all(r["created_at"] < asked_from for r in late), late
    after_view = api.get(f"/runs/{done_id}").json()
    assert {k: after_view[k] for k in ("status", "audit", "steps", "output")} == {
        k: before_view[k] for k in ("status", "audit", "steps", "output")
    }
    assert len(stack.effects(done_id)) == effects_before


def declared_only(url: str, path: str, length: int) -> bytes:
    """The answer to a POST that declares a body of `length` bytes and sends none of it. The server answers a
    body past its bound from the declared length, at once, and closes: a client that sends the whole body first
    (httpx does) may meet a reset before it reads that answer, so the outsider here sends only the headers."""
    parts = urlsplit(url)
    head = (
        f"POST {path} HTTP/1.1\r\nHost: {parts.netloc}\r\nAuthorization: Bearer {APPROVER}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {length}\r\n\r\n"
    )
    with socket.create_connection((parts.hostname, parts.port), timeout=30) as connection:
        connection.sendall(head.encode())
        answer = b""
        while chunk := connection.recv(65536):  # until the server closes (it says `connection: close`)
            answer += chunk
    return answer
