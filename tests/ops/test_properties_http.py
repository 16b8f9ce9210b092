"""Random requests at the runs API over real HTTP, for both engines (`python starter.py serve` over Temporal,
`job serve` over the checkpoint store): every request gets a 4xx in the API's error shape `{"error": why}`
(or a valid 2xx/3xx when it happened to be a valid request), never a 5xx, a traceback or a token echoed
back, and the runs that existed before — one finished, one waiting for an approval — are unchanged
afterwards unless validly asked (a 2xx cancel or decision by an approver).

The requests are written on a raw socket, so the fuzz reaches the server as sent: paths with dot segments
(`/runs/../x`), percent-encoded bytes and huge ids, any method token, wrong, missing or forged credentials
and content types, random bytes, malformed and every-shape JSON, right-shaped JSON with wrong types, bodies
past the 64 KiB limit (declared or chunked). Every route is drawn: list, start, get, progress (SSE), cancel,
decisions, the pending approvals, the schema, the facts (read, forget) and the inbox pages (whose reflected
text must be escaped).
Only syntactically valid HTTP messages are sent: a malformed request line or header is uvicorn's to refuse.
Three drawn tests (any route; starting a run; cancelling or deciding), then a table that puts every hostile
value alone into every field of every body (hypothesis draws a rare value rarely), then a regression test
for each bug the fuzzing found (docs/design.md, "Property-based tests").
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import socket
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from hypothesis import Phase, currently_in_test_context, event, given, settings
from hypothesis import strategies as st

from tests.support.runs_api_stack import (
    APPROVER,
    VIEWER,
    ApiStack,
    checkpoint_stack,
    eventually,
    finished,
    temporal_stack,
    waiting,
)

# Processes of its own: an API server and workers.
pytestmark = pytest.mark.system

DEEP = os.environ.get("HYPOTHESIS_PROFILE") == "deep"
MAX_BODY = 64 * 1024

# -- the stack and the runs that exist before the fuzzing ----------------------------------------------------


@dataclass
class Target:
    """The server and the runs the fuzz must leave alone: `done` (finished), `waits` (waiting for approval)."""

    stack: ApiStack
    port: int
    done: str
    waits: str
    call_id: str
    arguments_hash: str
    cookie: str
    known: set[str] = field(default_factory=set)  # every run id the server may list: ours, and each 201's

    def api(self) -> httpx.Client:
        return self.stack.client()

    def new_waiting_run(self) -> None:
        """A valid cancel or decision changed `waits` (as asked): the next examples get a new one."""
        with self.api() as api:
            response = api.post("/runs", json={"agent": "refund"})
            assert response.status_code == 201, response.text
            self.waits = response.json()["run_id"]
            self.known.add(self.waits)
            [pending] = waiting(api, self.waits)["pending_approvals"]
        self.call_id, self.arguments_hash = pending["call_id"], pending["arguments_hash"]


@pytest.fixture(scope="module", params=["temporal", "checkpoints"])
def target(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Target]:
    tmp = tmp_path_factory.mktemp(f"http-fuzz-{request.param}")
    # The fact store too in tmp (`job serve` would otherwise open the work tree's .data/facts.db).
    stack = temporal_stack(tmp) if request.param == "temporal" else checkpoint_stack(tmp, {"AGENT_DATA_DIR": str(tmp)})
    try:
        with stack.client() as api:
            done = api.post("/runs", json={"agent": "billing"}).json()["run_id"]
            finished(api, done)
            login = api.post("/login", data={"token": APPROVER}, follow_redirects=False)
            assert login.status_code == 303, login.text
            cookie = login.headers["set-cookie"].split(";", 1)[0]
        built = Target(stack, httpx.URL(stack.url).port or 80, done, "", "", "", cookie, {done})
        built.new_waiting_run()
        yield built
    finally:
        stack.close()


# -- what the fuzz sends -------------------------------------------------------------------------------------


@dataclass
class Request:
    method: str
    target: str  # the request target as written on the wire
    headers: list[tuple[str, str]]
    body: bytes
    chunked: bool = False


@dataclass
class Answer:
    status: int
    headers: http.client.HTTPMessage
    body: bytes

    @property
    def text(self) -> str:
        return self.body.decode("utf-8", errors="replace")

    @property
    def media_type(self) -> str:
        return (self.headers.get("content-type") or "").split(";", 1)[0].strip()


def send(port: int, request: Request, timeout: float = 60) -> Answer:
    """One request on a new connection, written as given; a stream (SSE) is read up to its first event."""
    head = [f"{request.method} {request.target} HTTP/1.1", *(f"{k}: {v}" for k, v in request.headers)]
    if request.chunked:
        head.append("Transfer-Encoding: chunked")
        pieces = [request.body[i : i + 4096] for i in range(0, len(request.body), 4096)]
        body = b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in pieces) + b"0\r\n\r\n"
    else:
        head.append(f"Content-Length: {len(request.body)}")
        body = request.body
    head.append("Connection: close")
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        # The server may answer (413) before reading it all: its answer is still there to read.
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            sock.sendall("\r\n".join(head).encode("latin-1") + b"\r\n\r\n" + body)
        response = http.client.HTTPResponse(sock, method=request.method)
        response.begin()
        if (response.getheader("content-type") or "").startswith("text/event-stream"):
            data = b""
            while b"\n\n" not in data.replace(b"\r\n", b"\n"):
                chunk = response.read1(65536)
                if not chunk:
                    break
                data += chunk
        else:
            data = response.read()
        return Answer(response.status, response.msg, data)


def uniformly(*branches: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """One of the branches, each as often (`st.one_of` favours the first ones in a short run)."""
    return st.sampled_from(branches).flatmap(lambda branch: branch)


# Run ids and call ids: the real ones, near misses, traversal, encoded bytes, markup, huge.
def _segments(real: list[str]) -> st.SearchStrategy[str]:
    printable = st.text(
        st.characters(min_codepoint=0x21, max_codepoint=0x7E, exclude_characters="/?#%"), min_size=1, max_size=30
    )
    return uniformly(
        st.sampled_from(real),
        st.sampled_from(real),
        st.sampled_from(real),
        st.sampled_from(real).map(lambda r: quote(r[0], safe="") + "%" + r[1:2].encode().hex() + r[2:]),
        st.sampled_from(real).map(lambda r: r.upper() + "%00"),
        st.sampled_from(["..", ".", "%2e%2e", "..%2F..%2Fetc%2Fpasswd", "%2F", "%252e", "%", "%zz", "%C0%AE"]),
        st.sampled_from(["<script>alert(1)</script>", "'%3E%3Cimg%20src=x%3E", "x'\"", "1.1", "1.2", "0.0", "-1"]),
        printable,
        st.binary(min_size=1, max_size=40).map(lambda b: quote(b, safe="")),
        st.integers(200, 4000).map(lambda n: "r" * n),  # past Temporal's id limit; the request head stays < 16 KiB
    )


def _query() -> st.SearchStrategy[str]:
    value = st.one_of(
        st.sampled_from(["", "completed", "awaiting_approval", "billing", "1", "0", "-5", "1001", "1e9"]),
        st.sampled_from(['"', "'", '" OR 1=1', "x\" OR WorkflowType != '", "`", "\\"]).map(lambda v: quote(v)),
        st.binary(max_size=30).map(lambda b: quote(b, safe="")),
        st.integers(50, 1500).map(lambda n: "s" * n),
    )
    pair = st.tuples(st.sampled_from(["status", "agent", "limit", "x", "status"]), value)
    return st.lists(pair, max_size=4).map(lambda pairs: "?" + "&".join(f"{k}={v}" for k, v in pairs) if pairs else "")


def _routes(t: Target, only: str | None = None) -> st.SearchStrategy[tuple[str, str]]:
    """(the route's own method, a target aimed at it): every route, those that change something (and check
    the most) three times as often, then junk paths."""
    run = _segments([t.done, t.waits])
    call = _segments([t.call_id, "1.1"])
    namespace = _segments(["orders", "user:maria"])
    start = _query().map(lambda q: ("POST", f"/runs{q}"))
    cancel = run.map(lambda r: ("POST", f"/runs/{r}/cancel"))
    decide = st.tuples(run, call).map(lambda p: ("POST", f"/runs/{p[0]}/approvals/{p[1]}"))
    if only == "start":
        return start
    if only == "act":
        return uniformly(cancel, decide)
    return uniformly(
        *[start, cancel, decide] * 3,
        _query().map(lambda q: ("GET", f"/runs{q}")),
        run.map(lambda r: ("GET", f"/runs/{r}")),
        run.map(lambda r: ("GET", f"/runs/{r}/events")),
        st.sampled_from(["/approvals", "/openapi.json"]).map(lambda p: ("GET", p)),
        st.sampled_from(["/", "/inbox", "/login"]).map(lambda p: ("GET", p)),
        st.sampled_from(["/login", "/logout"]).map(lambda p: ("POST", p)),
        run.map(lambda r: ("GET", f"/inbox/runs/{r}")),
        st.just(("GET", "/facts")),
        st.tuples(namespace, st.sampled_from(["", "/history", "/audit", "/history?key=%00", "/x"])).map(
            lambda p: ("GET", f"/facts/{p[0]}{p[1]}")
        ),
        namespace.map(lambda n: ("POST", f"/facts/{n}/forget")),
        st.tuples(run, st.sampled_from(["/approvals", "/", "/x", "/events/x"])).map(
            lambda p: ("GET", f"/runs/{p[0]}{p[1]}")
        ),
        st.lists(_segments(["runs", "inbox", "approvals"]), min_size=1, max_size=4).map(
            lambda s: ("GET", "/" + "/".join(s))
        ),
    )


# Bodies: nothing, random bytes, text, JSON of every shape, the right shapes with wrong values, huge ones.
texts = st.one_of(st.text(max_size=20), st.text(max_size=5).map(lambda s: s + "\ud800"))  # lone surrogates too
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | texts,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=10,
)
junk_json = uniformly(
    json_values,
    st.integers(1, 4_000).map(lambda n: "x" * n),
    st.sampled_from(["refund", "billing", "migration", "", "../../etc/passwd", "0" * 64, "a" * 64, "\ud800 lone"]),
    st.sampled_from([2**62, 10**23, -(2**63) - 1, 1e308, -0.0, "\udfff", "https://[::1/x", "https://h:99999/"]),
)


def _fields(t: Target) -> dict[str, st.SearchStrategy[Any]]:
    """Each field the routes take (and one they refuse), valid or junk."""
    return {
        "agent": st.one_of(st.sampled_from(["billing", "refund", "nobody"]), junk_json),
        "task": junk_json,
        "run_id": st.one_of(st.sampled_from([t.done, t.waits, "has spaces", "ok-id"]), junk_json),
        "options": st.one_of(
            st.fixed_dictionaries({}, optional={"records": junk_json, "step_delay": junk_json}), junk_json
        ),
        "model": uniformly(st.sampled_from(["local", "nope", "\ud800"]), junk_json),
        "webhook": uniformly(
            st.sampled_from(
                ["http://hooks.example.com/x", "https://h.example/x", "file:///x", "https://[::1/x", "https://h:99999/"]
            ),
            junk_json,
        ),
        "approve": st.one_of(st.booleans(), junk_json),
        "reason": junk_json,
        "arguments_hash": st.one_of(st.sampled_from(["0" * 64, "F" * 64]), junk_json),
        "approver": st.just("eve"),
        "source": junk_json,
        "by": st.just("eve"),
    }


def _shaped(t: Target) -> st.SearchStrategy[Any]:
    """The routes' fields, each present or not, valid or junk."""
    return st.fixed_dictionaries({}, optional=_fields(t))


def _one_field_off(t: Target, path: str) -> st.SearchStrategy[Any]:
    """The body the route takes, valid but for one field (junk, or a field it refuses): every check after
    the first is reached. A decision starts from a wrong hash, so that a valid one is rare."""
    if path.startswith("/runs/") and "/approvals/" in path:
        base: dict[str, Any] = {"approve": True, "reason": "ok", "arguments_hash": "0" * 64}
        names = ["approve", "reason", "arguments_hash", "approver", "agent"]
    elif path.endswith("/cancel"):
        base, names = {}, ["reason", "approver", "agent"]
    elif path.startswith("/facts/"):
        base, names = {"source": "run-1"}, ["source", "by", "approver"]
    else:
        base, names = {"agent": "billing"}, ["task", "run_id", "options", "model", "webhook", "approver", "approve"]
    fields = _fields(t)
    off = st.sampled_from(names).flatmap(lambda name: fields[name].map(lambda value: {name: value}))
    agent = st.sampled_from(["billing", "migration", "refund"]).map(lambda a: {"agent": a} if "agent" in base else {})
    return st.tuples(agent, off).map(lambda parts: base | parts[0] | parts[1])


def _dumps(value: Any) -> bytes:
    return json.dumps(value, allow_nan=True).encode()


def _bodies(t: Target, path: str) -> st.SearchStrategy[bytes]:
    return uniformly(_one_field_off(t, path).map(_dumps), _junk_bodies(t))  # half near-valid


def _junk_bodies(t: Target) -> st.SearchStrategy[bytes]:
    return uniformly(
        st.just(b""),
        st.binary(max_size=200),
        st.text(max_size=100).map(str.encode),
        json_values.map(_dumps),
        _shaped(t).map(_dumps),
        _shaped(t).map(lambda v: _dumps(v)[:-1]),  # cut short: malformed
        st.sampled_from(
            [b"{}", b"[]", b"null", b"NaN", b"1e999", b'"\\ud800"', b"\xef\xbb\xbf{}", b"\xff\xfe{\x00}\x00"]
        ),
        st.integers(1000, 8000).map(lambda n: b"[" * n + b"]" * n),  # deep nesting
        st.just(b'{"options": {"records": ' + b"9" * 5000 + b"}}"),  # past Python's int-parsing limit
        st.sampled_from([b"token=" + APPROVER.encode(), b"token=x", b"token=%ff%fe"]),  # the login form
        st.integers(MAX_BODY - 100, MAX_BODY + 5000).map(
            lambda n: b'{"agent": "billing", "task": "' + b"x" * n + b'"}'
        ),
    )


def _headers(t: Target) -> st.SearchStrategy[list[tuple[str, str]]]:
    host = st.one_of(
        *[st.just(f"127.0.0.1:{t.port}")] * 6,
        st.sampled_from(["localhost", f"[::1]:{t.port}", "evil.example", "", "localhost.evil.example:1", "a:b:c"]),
    )
    auth = st.sampled_from(
        [
            *[[("Authorization", f"Bearer {APPROVER}")]] * 8,
            [("Authorization", f"Bearer {VIEWER}")],
            [],
            [("Authorization", "Bearer not-a-token-0123456789")],
            [("Authorization", f"Basic {APPROVER}")],
            [("Authorization", f"bearer   {APPROVER}  ")],
            [("Authorization", "Bearer " + "t" * 3000)],
            [("Authorization", "Bearer \xff\xfe\x80")],
            [("Cookie", t.cookie)],
            [("Cookie", "agent_api_session=forged; other=1")],
            [("Cookie", '=;;agent_api_session="\\x"')],
        ]
    )
    content_type = st.sampled_from(
        [
            *[[("Content-Type", "application/json")]] * 8,
            [],
            [("Content-Type", "text/plain")],
            [("Content-Type", "application/json; charset=latin-1")],
            [("Content-Type", "APPLICATION/JSON ;")],
            [("Content-Type", "application/x-www-form-urlencoded")],
            [("Content-Type", "multipart/form-data; boundary=x")],
            [("Content-Type", "application/vnd.evil+json")],
            [("Content-Type", "application/json"), ("Content-Type", "text/plain")],
            [("Content-Type", "\x7f;;=")],
        ]
    )
    extra = st.lists(
        st.sampled_from(
            [
                ("Origin", "https://evil.example"),
                ("Accept", "text/event-stream"),
                ("X-Forwarded-Proto", "https"),
                ("Content-Encoding", "gzip"),
                ("Expect", "100-continue"),
                ("X-Junk", "\xe9\xff"),
            ]
        ),
        max_size=2,
    )
    noisy = st.tuples(host, auth, content_type, extra).map(lambda h: [("Host", h[0]), *h[1], *h[2], *h[3]])
    clean = [("Host", f"127.0.0.1:{t.port}"), ("Authorization", f"Bearer {APPROVER}")]
    return uniformly(noisy, st.just([*clean, ("Content-Type", "application/json")]))  # half reach the handler


def requests(t: Target, only: str | None = None) -> st.SearchStrategy[Request]:
    """Mostly the route's own method (so the handlers see the junk), sometimes any other method token."""
    other = st.sampled_from(["GET", "POST", "HEAD", "PUT", "DELETE", "PATCH", "OPTIONS", "FOO", "get", "M-SEARCH"])
    aimed = st.tuples(_routes(t, only), st.integers(0, 4)).flatmap(
        lambda r: other.map(lambda m: (m, r[0][1])) if r[1] == 0 else st.just(r[0])
    )
    chunked = st.integers(0, 9).map(lambda n: n == 0)
    with_body = aimed.flatmap(lambda a: st.tuples(st.just(a), _bodies(t, _path(a[1]))))
    return st.tuples(with_body, _headers(t), chunked).map(
        lambda r: Request(
            r[0][0][0], r[0][0][1], r[1], r[0][1] if r[0][0][0] not in ("GET", "HEAD") or r[2] else b"", r[2]
        )
    )


# -- the properties ------------------------------------------------------------------------------------------

API_PREFIXES = ("/runs", "/approvals", "/openapi.json", "/facts")


def _path(target: str) -> str:
    return target.split("?", 1)[0]


def _route(target: str) -> str:
    """The route a target is aimed at, for the statistics (`--hypothesis-show-statistics`)."""
    parts = _path(target).split("/")
    if parts[1:2] == ["runs"] and len(parts) > 2:
        return "/runs/{id}" + "".join(f"/{p}" if p in ("events", "cancel", "approvals") else "/*" for p in parts[3:])
    return "/".join(parts[:3])[:30]


def _credentials(t: Target, request: Request) -> str | None:
    """The role the request's credentials may carry, as the server reads them: a bearer token, or the inbox
    session cookie (maria's, unless a `/logout` in the fuzz ended it: then a 401, which this does not judge)."""
    for name, value in request.headers:
        if name == "Cookie" and value == t.cookie:
            return "approver"
        if name == "Authorization":
            scheme, _, credential = value.partition(" ")
            if scheme.lower() == "bearer":
                return {APPROVER: "approver", VIEWER: "viewer"}.get(credential.strip())
    return None


SSE_LINES = ("id: ", "event: ", "data: ", "retry: ", ":")


def _check_answer(t: Target, request: Request, answer: Answer) -> None:
    if currently_in_test_context():
        event(f"{request.method} {_route(request.target)} {answer.status}")
    assert answer.status < 500, (request, answer.status, answer.text[:2000])
    for leak in ("Traceback", 'File "/', "Internal Server Error", APPROVER, VIEWER):
        assert leak not in answer.text, (leak, request, answer.text[:2000])
    if request.method == "HEAD":
        return
    path = _path(request.target)
    if answer.media_type == "text/html":
        # The inbox pages: whatever the request put in, it is shown escaped.
        assert "<script>alert(1)</script>" not in answer.text and "<img src=x>" not in answer.text
        return
    if 300 <= answer.status < 400:
        assert answer.headers.get("location"), answer.headers
        return
    if answer.status >= 400:
        assert answer.media_type == "application/json", (request, answer.status, answer.text[:500])
        error = json.loads(answer.body)
        assert isinstance(error, dict) and isinstance(error.get("error"), str) and error["error"].strip(), error
        if answer.status == 422 and "fields" in error:
            assert all(set(f) == {"field", "message"} for f in error["fields"]), error
        return
    # A 2xx: a valid request, answered in the documented shape, and only to a caller holding a token.
    if path.startswith(API_PREFIXES):
        role = _credentials(t, request)
        assert role is not None, (request, answer.status)
        if request.method == "POST":
            assert role != "viewer", (request, answer.status)
    if answer.media_type == "text/event-stream":
        # Every line a field of the SSE format (a live stream's events carry ids: `id: OFFSET`) or a comment.
        lines = [line for line in answer.text.split("\n") if line]
        assert lines and all(line.startswith(SSE_LINES) for line in lines), answer.text[:500]
        return
    assert answer.media_type == "application/json", (request, answer.status, answer.text[:500])
    shown = json.loads(answer.body)
    if request.method == "POST" and path == "/runs":
        assert answer.status == 201 and set(shown) == {"run_id"}, shown
        t.known.add(shown["run_id"])
        with t.api() as api:  # a valid start: stopped at once (a migration of 10**23 records is valid too)
            assert api.post(f"/runs/{quote(shown['run_id'], safe='')}/cancel", json={}).status_code in (202, 409)
    elif path.endswith("/cancel"):
        assert answer.status == 202 and shown["cancel_requested"] is True and shown["by"] == "maria", shown
    elif "/approvals/" in path:
        assert shown["approver"] == "maria" and shown["outcome"] in ("approved", "declined", "queued"), shown


def _state(t: Target, run_id: str) -> dict[str, Any]:
    """What must not change: the run's status, steps, approvals and audit, and its effects in the ledger."""
    with t.api() as api:
        view = api.get(f"/runs/{quote(run_id, safe='')}").json()
    return {
        "status": view["status"],
        "stop": view["stop"],
        "output": view["output"],
        "steps": [(s["step_name"], s["status"]) for s in view["steps"] if s["status"] != "in_progress"],
        "pending": view["pending_approvals"],
        "audit": view["audit"],
        "cancel_requested": view["cancel_requested"],
        "effects": [(e.tool, e.key) for e in t.stack.effects(run_id)],
    }


def _json(body: bytes) -> Any:
    try:
        return json.loads(body) if body.strip() else None
    except ValueError:
        return ...  # not JSON


def _validly_changed(
    t: Target, request: Request, answer: Answer, before: dict[str, Any], after: dict[str, Any]
) -> bool:
    """The waiting run changed because an approver asked for exactly that, and was told so (a 2xx)."""
    if not (200 <= answer.status < 300 and request.method == "POST" and _credentials(t, request) == "approver"):
        return False
    path = _path(request.target)
    if path.endswith("/cancel"):
        return _json(request.body) in (None, {})  # no body or `{}`: it ends (abandoned), however far it got
    decided = [a for a in after["audit"] if a not in before["audit"] and a["outcome"] != "rejected"]
    return "/approvals/" in path and [a["approver"] for a in decided] in ([], ["maria"])


# Each a few seconds per engine in the default profile (derandomized: CI and a laptop send the same requests).
FUZZ = settings(max_examples=400 if DEEP else 30, phases=[Phase.explicit, Phase.generate, Phase.shrink])


@FUZZ
@given(data=st.data())
def test_junk_at_any_route_gets_a_4xx_and_changes_no_run(target: Target, data: st.DataObject) -> None:
    _fuzz_once(target, data.draw(requests(target)))


@FUZZ
@given(data=st.data())
def test_junk_starting_a_run_gets_a_4xx_and_starts_nothing(target: Target, data: st.DataObject) -> None:
    """`POST /runs`, where most checks are (agent, options, model, webhook, run id): near-valid bodies."""
    _fuzz_once(target, data.draw(requests(target, only="start")))


@FUZZ
@given(data=st.data())
def test_junk_cancelling_or_deciding_gets_a_4xx_and_changes_no_run(target: Target, data: st.DataObject) -> None:
    """`POST /runs/{id}/cancel` and `/approvals/{call_id}` aimed mostly at the runs that exist."""
    _fuzz_once(target, data.draw(requests(target, only="act")))


def _fuzz_once(t: Target, request: Request) -> None:
    before = {run_id: _state(t, run_id) for run_id in (t.done, t.waits)}
    answer = send(t.port, request)
    _check_answer(t, request, answer)

    assert _state(t, t.done) == before[t.done], request  # a finished run: nothing may change it
    after = _state(t, t.waits)
    if after != before[t.waits]:
        assert _validly_changed(t, request, answer, before[t.waits], after), (request, answer.status, before, after)
        event("a valid cancel or decision")
        t.new_waiting_run()
    with t.api() as api:  # nothing was started but what was answered 201
        listed = {r["run_id"] for r in api.get("/runs", params={"limit": 1000}).json()}
    assert listed <= t.known, (request, listed - t.known)


# Hypothesis draws a rare value rarely: every hostile value is also put, alone, into every field of every body.
HOSTILE: list[Any] = [
    None, True, 0, -1, 2**62, 10**23, -(2**63) - 1, 1e308, float("nan"), "", "\ud800", "x \udfff", "x" * 25_000,
    "https://[::1/x", "https://h.example:99999/", "file:///etc/passwd", "../../etc/passwd", "'; DROP TABLE runs;--",
    [], {}, [1, [2, [3]]], {"records": 10**23}, {"records": "\ud800"}, {"\ud800": 1}, {"a": {"b": None}},
]  # fmt: skip
BODY_FIELDS = {
    "start": ["agent", "task", "run_id", "options", "model", "webhook", "approver"],
    "decide": ["approve", "reason", "arguments_hash", "approver"],
    "cancel": ["reason"],
    "forget": ["source", "by"],
}


def test_every_hostile_value_in_every_field_gets_a_4xx_and_changes_no_run(target: Target) -> None:
    t = target
    before = {run_id: _state(t, run_id) for run_id in (t.done, t.waits)}
    clean = [("Host", f"127.0.0.1:{t.port}"), ("Authorization", f"Bearer {APPROVER}")]
    clean.append(("Content-Type", "application/json"))
    bases = {
        "start": ("/runs", {"agent": "migration", "options": {"records": 1, "step_delay": 0}}),
        "decide": (
            f"/runs/{t.waits}/approvals/{t.call_id}",
            {"approve": True, "reason": "", "arguments_hash": "0" * 64},
        ),
        "cancel": (f"/runs/{t.waits}/cancel", {}),
        "forget": ("/facts/orders/forget", {"source": "run-1"}),
    }
    statuses: dict[int, int] = {}
    for route, (path, base) in bases.items():
        for name in BODY_FIELDS[route]:
            for value in HOSTILE:
                request = Request("POST", path, clean, _dumps(base | {name: value}))
                answer = send(t.port, request)
                _check_answer(t, request, answer)
                statuses[answer.status] = statuses.get(answer.status, 0) + 1
    # 429: `job serve` already drives --max-runs runs; the valid starts here outpace their workers.
    assert {s for s in statuses if s >= 300} <= {409, 413, 422, 429}, statuses
    assert {run_id: _state(t, run_id) for run_id in (t.done, t.waits)} == before
    with t.api() as api:
        assert {r["run_id"] for r in api.get("/runs", params={"limit": 1000}).json()} <= t.known


# -- what the fuzz found, one regression test each -----------------------------------------------------------


def test_an_unknown_route_or_method_is_answered_in_the_api_error_shape(target: Target) -> None:
    """Found fuzzing: the framework's own 404 and 405 were `{"detail": "Not Found"}`, not the API's
    `{"error": why}`."""
    with target.api() as api:
        missing = api.get("/runs/x/nothing-here")
        assert missing.status_code == 404 and missing.json() == {"error": "no such route: GET /runs/x/nothing-here"}
        wrong = api.delete(f"/runs/{target.done}")
        assert wrong.status_code == 405 and wrong.headers["allow"] == "GET"
        assert wrong.json() == {"error": f"DELETE is not allowed on /runs/{target.done} (only GET)"}


def test_a_body_the_json_parser_gives_up_on_is_a_422_saying_why_and_starts_nothing(target: Target) -> None:
    """Found fuzzing: bytes that are not UTF-8, nesting too deep for the parser or a number past Python's
    digit limit were a bare 400 `{"detail": "There was an error parsing the body"}`; now the documented 422
    for malformed JSON, naming why."""
    with target.api() as api:
        runs = len(api.get("/runs", params={"limit": 1000}).json())
        for raw, why in (
            (b'{"agent": "\xff"}', "not UTF-8 (byte 11)"),
            (b"[" * 50_000 + b"]" * 10, "nested too deeply"),
            (b'{"agent": "billing", "options": {"records": ' + b"9" * 5000 + b"}}", "Exceeds the limit (4300 digits)"),
        ):
            response = api.post("/runs", content=raw, headers={"content-type": "application/json"})
            assert response.status_code == 422, (raw[:40], response.text)
            assert response.json()["error"].startswith(f"body: malformed JSON: {why}"), response.text
            assert response.json()["fields"][0]["field"] == "body"
        assert len(api.get("/runs", params={"limit": 1000}).json()) == runs


def test_a_cancel_whose_body_is_not_nothing_or_an_empty_object_is_refused_and_cancels_nothing(target: Target) -> None:
    """Found fuzzing: `POST /runs/{id}/cancel` ignored its body, so random bytes sent as JSON cancelled
    the run. Now only no body or `{}` cancels; anything else is a 422 and the run waits on."""
    url = f"/runs/{target.waits}/cancel"
    before = _state(target, target.waits)
    with target.api() as api:
        for raw in (b"\x00\xff junk", b"[]", b'{"reason": "x"}', b"{", b"7"):
            refused = api.post(url, content=raw, headers={"content-type": "application/json"})
            assert refused.status_code == 422 and refused.json()["fields"], (raw, refused.text)
    assert _state(target, target.waits) == before


def test_text_json_can_spell_but_nothing_can_store_is_a_422_naming_the_field(target: Target) -> None:
    """Found fuzzing: a lone surrogate (`"\\ud800"`) in a field without a length limit (`model`, inside
    `options`) passed validation, then failed the Temporal payload encoding: a 500."""
    before = _state(target, target.waits)
    with target.api() as api:
        runs = len(api.get("/runs", params={"limit": 1000}).json())
        for raw, field in (
            (b'{"agent": "billing", "model": "\\ud800"}', "body.model"),
            (b'{"agent": "billing", "options": {"note": ["\\udfff"]}}', "body.options"),
            (b'{"agent": "billing", "task": "a\\ud800"}', "body.task"),
        ):
            response = api.post("/runs", content=raw, headers={"content-type": "application/json"})
            assert response.status_code == 422 and response.json()["fields"][0]["field"] == field, response.text
        assert len(api.get("/runs", params={"limit": 1000}).json()) == runs
        decision = b'{"approve": false, "reason": "\\ud800"}'
        url = f"/runs/{target.waits}/approvals/{target.call_id}"
        response = api.post(url, content=decision, headers={"content-type": "application/json"})
        assert response.status_code == 422 and "body.reason" in response.json()["error"], response.text
    assert _state(target, target.waits) == before


def test_a_webhook_url_that_cannot_be_parsed_is_a_422_and_starts_nothing(target: Target) -> None:
    """Found fuzzing: `https://[::1/x` made the URL check itself raise (ValueError: Invalid IPv6 URL): a
    500 from both engines. A port out of range raised only when read, at delivery."""
    with target.api() as api:
        runs = len(api.get("/runs", params={"limit": 1000}).json())
        for url, why in (("https://[::1/x", "Invalid IPv6 URL"), ("https://h.example:99999/x", "Port out of range")):
            response = api.post("/runs", json={"agent": "billing", "webhook": url})
            assert response.status_code == 422, response.text
            error = response.json()["error"]
            assert error.startswith("webhook: the URL cannot be parsed (") and why in error, error
        assert len(api.get("/runs", params={"limit": 1000}).json()) == runs


def test_an_option_too_large_for_the_checkpoint_store_is_a_422(target: Target) -> None:
    """Found fuzzing: `{"records": 10**23}` gave the migration an estimate past SQLite's 64-bit
    integers, and `job serve` answered 500 (OverflowError) — the CLI's `job run` too. Temporal has no such
    limit: there the run is valid (its budget ends it), so it is started and cancelled."""
    with target.api() as api:
        response = api.post("/runs", json={"agent": "migration", "options": {"records": 10**23}})
        if target.stack.engine == "temporal":
            assert response.status_code == 201, response.text
            target.known.add(response.json()["run_id"])
            assert api.post(f"/runs/{response.json()['run_id']}/cancel", json={}).status_code == 202
        else:
            assert response.status_code == 422, response.text
            assert response.json()["error"] == (
                "options: an option of agent migration is too large: 200000000000000000000001 actions"
            )


def test_a_bad_filter_value_names_the_filter_it_was_given_in(target: Target) -> None:
    """Found fuzzing (Temporal): `?status=\\` was refused naming `agent` (only a quote was told apart)."""
    with target.api() as api:
        for name in ("status", "agent"):
            response = api.get("/runs", params={name: "\\"})
            if target.stack.engine == "temporal":  # a visibility query refuses what it cannot quote
                assert response.status_code == 422 and response.json()["error"].startswith(f"{name}: "), response.text
            else:
                assert response.status_code == 200 and response.json() == []


def test_afterwards_the_server_lists_exactly_the_runs_it_said_it_started(target: Target) -> None:
    """Run last in the module (per engine): visibility may list a started run late, never an unknown one."""
    with target.api() as api:

        def listed() -> set[str]:
            return {r["run_id"] for r in api.get("/runs", params={"limit": 1000}).json()}

        eventually(lambda: listed() == target.known, 30, "the runs answered 201 to be listed")
        for run_id in target.known:
            assert api.get(f"/runs/{quote(run_id, safe='')}").status_code == 200
