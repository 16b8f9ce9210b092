"""The shell of every HTML page we serve (the approvals inbox, the login form): one style, everything shown
escaped, and headers that let only the response's own nonce'd style and script run (Content-Security-Policy)."""

from __future__ import annotations

import html
import secrets
from typing import Any

from starlette.responses import HTMLResponse

from duragent._ops.http.auth import Principal

STYLE = """
body{font:15px/1.4 system-ui,sans-serif;margin:1.5rem 2rem;color:#1d2327}
h1{font-size:1.4rem;margin:0 0 .3rem} .who{color:#555;margin-bottom:1rem}
table{border-collapse:collapse;width:100%} th,td{border-bottom:1px solid #ddd;padding:.45rem .5rem;
text-align:left;vertical-align:top} th{background:#f3f4f6;font-weight:600}
code{font:13px ui-monospace,monospace;background:#f6f8fa;padding:.1rem .25rem;border-radius:3px}
button{padding:.3rem .8rem;margin-right:.3rem;border-radius:4px;border:1px solid #888;cursor:pointer}
button.approve{background:#1f7a3a;color:#fff;border-color:#1f7a3a} button.deny{background:#fff;color:#a4262c}
input[name=reason]{width:11rem;padding:.25rem} .outcome.ok{color:#1f7a3a;font-weight:600}
.outcome.rejected{color:#a4262c;font-weight:600} .left{white-space:nowrap} .empty{color:#555;padding:1rem 0}
form.inline{display:inline}
#chat{max-width:48rem} .msg{margin:.4rem 0;padding:.45rem .7rem;border-radius:8px;white-space:pre-wrap}
.msg.user{background:#e8f0fe;margin-left:6rem} .msg.assistant{background:#f3f4f6;margin-right:6rem}
.msg.streaming{border-left:3px solid #1f7a3a} .msg.tool{color:#555;font-size:13px;padding:.1rem .7rem}
.msg.approval{background:#fff8e1;border:1px solid #e0b400} #send input{width:30rem;padding:.3rem}
"""


def escape(value: Any) -> str:
    return html.escape(str(value), quote=True)


def signed_in(who: Principal) -> str:
    sign_out = "<form class=inline method=post action=/logout><button>Sign out</button></form>"
    return f"<div class=who>Signed in as <strong>{escape(who.name)}</strong> ({escape(who.role)}) {sign_out}</div>"


def html_page(title: str, body: str, *, script: str = "", status: int = 200) -> HTMLResponse:
    """`body` is HTML the caller has escaped; `script`, if any, runs with this response's nonce."""
    nonce = secrets.token_urlsafe(16)
    document = (
        f"<!doctype html><html lang=en><meta charset=utf-8><title>{escape(title)}</title>"
        f"<style nonce='{nonce}'>{STYLE}</style><h1>{escape(title)}</h1>{body}"
        + (f"<script nonce='{nonce}'>{script}</script>" if script else "")
    )
    headers = {
        "content-security-policy": (
            f"default-src 'none'; script-src 'nonce-{nonce}'; style-src 'nonce-{nonce}'; connect-src 'self'; "
            "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
        ),
        "x-content-type-options": "nosniff",
        "referrer-policy": "no-referrer",
        "cache-control": "no-store",
    }
    return HTMLResponse(document, status_code=status, headers=headers)
