"""The one login flow (duragent/_ops/http/login.py), as every app we serve has it, played over real HTTP on loopback
(tests/support/serving.py): a page on another site can neither sign a browser in as the attacker nor sign it
out, and the session cookie is `Secure` behind a TLS proxy."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from duragent._ops.http.auth import HttpAuth, TokenTable
from duragent._ops.http.base import new_app
from duragent._ops.http.origin import same_origin
from tests.support.serving import Served, serving

VICTIM = "victim-token-0123456789abcdef"
ATTACKER = "attacker-token-0123456789abcdef"
EVIL = "http://evil.example"


@pytest.fixture
def served() -> Iterator[Served]:
    auth = HttpAuth(TokenTable.parse(f"{VICTIM}=maria:approver,{ATTACKER}=eve:viewer"), hosts=["agents.example"])
    with serving(new_app(auth, title="t", home="/")) as running:
        yield running


def browser(served: Served) -> httpx.Client:
    return httpx.Client(base_url=served.url, follow_redirects=False, timeout=10)


def signed_in_as(client: httpx.Client, cookie: str) -> str:
    """Who the login page says the cookie's session belongs to ('' for nobody)."""
    page = client.get("/login", headers={"Cookie": cookie}).text
    return page.split("Signed in as <strong>", 1)[1].split("<", 1)[0] if "Signed in as" in page else ""


def session_of(response: httpx.Response) -> str:
    assert response.status_code == 303, response.text
    return response.headers["set-cookie"].split(";", 1)[0]


# What a browser sends with a form another site's page submits, in each way browsers say so.
CROSS_SITE = [
    {"Origin": EVIL, "Sec-Fetch-Site": "cross-site"},
    {"Origin": EVIL},  # a browser without fetch metadata
    {"Sec-Fetch-Site": "cross-site"},  # a browser that leaves Origin out
    {"Sec-Fetch-Site": "same-site"},  # a sibling subdomain, or another port of localhost
    {"Origin": "null"},  # a sandboxed frame, or a redirect across sites
    {"Origin": "null", "Sec-Fetch-Site": "cross-site"},  # the same in a browser with fetch metadata
    {"Origin": "null", "Sec-Fetch-Site": "same-site"},
    {"Origin": "http://127.0.0.1:1"},  # this host, another port: another origin
]


@pytest.mark.parametrize("headers", CROSS_SITE, ids=lambda h: ",".join(f"{k}={v}" for k, v in h.items()))
def test_a_cross_site_page_can_neither_sign_a_browser_in_nor_out(served: Served, headers: dict[str, str]) -> None:
    own = {"Origin": served.url, "Sec-Fetch-Site": "same-origin"}
    with browser(served) as client:
        victim = session_of(client.post("/login", data={"token": VICTIM}, headers=own))
        assert signed_in_as(client, victim) == "maria"

        # Login CSRF: the attacker's page posts the attacker's own token, the victim's cookie riding along.
        forced = client.post("/login", data={"token": ATTACKER}, headers=headers | {"Cookie": victim})
        assert forced.status_code == 403 and "cross-site request refused" in forced.json()["error"]
        assert "set-cookie" not in forced.headers  # no session of the attacker's for the browser to keep
        # Logout CSRF: the victim's session is not ended.
        out = client.post("/logout", headers=headers | {"Cookie": victim})
        assert out.status_code == 403 and "set-cookie" not in out.headers
        assert signed_in_as(client, victim) == "maria"


def test_same_origin_pages_and_clients_that_send_no_origin_sign_in_and_out(served: Served) -> None:
    port = served.port
    with browser(served) as client:
        for headers in (
            {"Origin": served.url, "Sec-Fetch-Site": "same-origin"},  # the login form, on 127.0.0.1
            {"Origin": f"http://localhost:{port}", "Host": f"localhost:{port}"},  # the same, opened as localhost
            # behind a TLS proxy that rewrites Host to the upstream's and says what the browser asked for
            {"Origin": "https://agents.example", "X-Forwarded-Host": "agents.example", "X-Forwarded-Proto": "https"},
            {"Sec-Fetch-Site": "none"},  # a request the user made (typed, a bookmark)
            {},  # curl, the CLI, a script: no Origin, no fetch metadata, the token their own
        ):
            cookie = session_of(client.post("/login", data={"token": VICTIM}, headers=headers))
            assert signed_in_as(client, cookie) == "maria", headers
            assert client.post("/logout", headers=headers | {"Cookie": cookie}).status_code == 303
            assert signed_in_as(client, cookie) == "", headers


def test_the_session_cookie_is_secure_behind_a_tls_proxy_and_only_there(served: Served) -> None:
    """M35: a proxy that terminates TLS says `X-Forwarded-Proto: https`; the cookie must then never travel over
    plain http. (The proxy forwards the public Host, which the app must allow: `agents.example`.)"""
    behind = {"X-Forwarded-Proto": "https", "Host": "agents.example", "Origin": "https://agents.example"}
    with browser(served) as client:
        secure = client.post("/login", data={"token": VICTIM}, headers=behind)
        assert secure.status_code == 303
        assert "; secure" in secure.headers["set-cookie"].lower()
        cookie = secure.headers["set-cookie"].split(";", 1)[0]
        cleared = client.post("/logout", headers=behind | {"Cookie": cookie})
        assert cleared.status_code == 303 and "; secure" in cleared.headers["set-cookie"].lower()

        plain = client.post("/login", data={"token": VICTIM})
        assert plain.status_code == 303 and "secure" not in plain.headers["set-cookie"].lower()


@pytest.mark.parametrize(
    ("origin", "host", "same"),
    [
        ("https://agents.example:8443", "agents.example", False),  # a Host without a port is the default port only
        ("http://agents.example:8080", "agents.example", False),
        ("https://agents.example", "agents.example", True),
        ("https://agents.example:443", "agents.example", True),
        ("http://agents.example", "agents.example:80", True),
        ("https://agents.example:8443", "agents.example:8443", True),
    ],
)
def test_an_origin_is_the_hosts_only_on_the_port_the_host_names(origin: str, host: str, same: bool) -> None:
    assert same_origin(origin, host) is same
