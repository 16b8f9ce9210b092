"""The approvals inbox: a page for the people who approve, served by the runs API itself (no build step).

Signing in is the app's one login flow (duragent/_ops/http/login.py: a token once, then a session cookie naming a
server-side session, never the token). `/inbox` lists every pending approval across runs — agent, run, tool,
arguments, time left to the deadline — with approve / deny and a reason, and shows what became of the
decision (applied, or rejected and why: already decided, expired, wrong hash) and then the run's status;
`/inbox/runs/{id}` is a run's steps and audit trail. The page calls the same JSON API as any client, as the
signed-in person (an approver's name in the audit trail is their token's identity). Everything shown is
escaped (duragent/_ops/http/pages.py); scripts run only with the response's nonce (Content-Security-Policy).
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import quote

from fastapi import FastAPI
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

from duragent._ops.http.auth import HttpAuth, Principal
from duragent._ops.http.engine import Engine
from duragent._ops.http.errors import ApiError
from duragent._ops.http.pages import escape as _e
from duragent._ops.http.pages import html_page, signed_in
from duragent._ops.http.views import InboxItem, RunView

TERMINAL = ["completed", "abandoned", "compensated", "compensation_failed", "failed", "terminated", "timed_out"]

SCRIPT = """
const TERMINAL = __TERMINAL__;
const fmt = s => { s = Math.max(0, Math.floor(s)); const h = Math.floor(s / 3600), m = Math.floor(s % 3600 / 60);
  return h ? `${h}h ${m}m` : m ? `${m}m ${s % 60}s` : `${s % 60}s`; };
function tick() {
  document.querySelectorAll('[data-deadline]').forEach(e => {
    const left = (Date.parse(e.dataset.deadline) - Date.now()) / 1000;
    e.textContent = left > 0 ? fmt(left) + ' left' : 'deadline passed';
  });
}
async function follow(row) {
  const shown = row.querySelector('.run-status');
  for (let i = 0; i < 240; i++) {
    const r = await fetch(`/runs/${encodeURIComponent(row.dataset.run)}`, {credentials: 'same-origin'});
    if (!r.ok) return;
    const run = await r.json();
    shown.textContent = `run ${run.status}` + (run.output ? ` — ${run.output}` : '');
    if (TERMINAL.includes(run.status)) return;
    await new Promise(done => setTimeout(done, 500));
  }
}
async function decide(button, approve) {
  const row = button.closest('tr'), out = row.querySelector('.outcome');
  out.textContent = '…'; out.className = 'outcome';
  const body = {approve, reason: row.querySelector('input[name=reason]').value, arguments_hash: row.dataset.hash};
  const url = `/runs/${encodeURIComponent(row.dataset.run)}/approvals/${encodeURIComponent(row.dataset.call)}`;
  const r = await fetch(url, {method: 'POST', credentials: 'same-origin',
    headers: {'content-type': 'application/json'}, body: JSON.stringify(body)});
  let data = {};
  try { data = await r.json(); } catch (e) { data = {error: `HTTP ${r.status}`}; }
  if (r.ok) {
    out.textContent = data.outcome === 'queued'
      ? 'queued: no worker answered yet' : `${data.outcome} by ${data.approver}`;
    out.className = 'outcome ok';
    follow(row);
  } else {
    out.textContent = `rejected: ${data.error}`;
    out.className = 'outcome rejected';
  }
}
document.querySelectorAll('button.approve').forEach(b => b.addEventListener('click', () => decide(b, true)));
document.querySelectorAll('button.deny').forEach(b => b.addEventListener('click', () => decide(b, false)));
tick(); setInterval(tick, 1000);
""".replace("__TERMINAL__", json.dumps(TERMINAL))


def add_inbox(app: FastAPI, engine: Engine, auth: HttpAuth) -> None:
    """The pages; signing in and out is the app's one login flow (duragent/_ops/http/login.py)."""

    @app.get("/", include_in_schema=False)
    async def root() -> Response:
        return RedirectResponse("/inbox", status_code=303)

    @app.get("/inbox", include_in_schema=False)
    async def inbox(request: Request) -> Response:
        who = auth.identify(request)
        if who is None:
            return RedirectResponse("/login", status_code=303)
        try:
            items = await engine.pending()
        except ApiError as exc:
            return _page("Approvals inbox", who, f"<p class=empty>Cannot list approvals: {_e(exc.message)}</p>")
        return _page("Approvals inbox", who, _inbox_table(items, who), script=True)

    @app.get("/inbox/runs/{run_id}", include_in_schema=False)
    async def run_page(run_id: str, request: Request) -> Response:
        who = auth.identify(request)
        if who is None:
            return RedirectResponse("/login", status_code=303)
        try:
            view = await engine.get_run(run_id)
        except ApiError as exc:
            return _page(f"Run {run_id}", who, f"<p class=empty>{_e(exc.message)}</p>", status=exc.status_code)
        return _page(f"Run {run_id}", who, _run_body(view))


def _arguments(arguments: Any) -> str:
    if isinstance(arguments, dict):
        return ", ".join(f"{_e(k)}=<code>{_e(json.dumps(v))}</code>" for k, v in arguments.items())
    return f"<code>{_e(arguments)}</code>"


def _inbox_table(items: list[InboxItem], who: Principal) -> str:
    if not items:
        return "<p class=empty>Nothing waits for a decision.</p>"
    may = who.may("approver")
    disabled = "" if may else " disabled title='viewers cannot decide'"
    rows = []
    for item in items:
        run_link = f"<a href='/inbox/runs/{quote(item.run_id, safe='')}'>{_e(item.run_id)}</a>"
        if len(item.path) > 1:  # a delegated run: which top-level run waits on this decision, and how
            run_link += f"<br><small class=path>delegated: {' → '.join(_e(r) for r in item.path)}</small>"
        rows.append(
            f"<tr data-run='{_e(item.run_id)}' data-call='{_e(item.call_id)}' data-hash='{_e(item.arguments_hash)}'>"
            f"<td>{_e(item.agent or '?')}</td><td>{run_link}</td><td><strong>{_e(item.tool)}</strong>"
            f"<br><small>call {_e(item.call_id)} · hash <code>{_e(item.arguments_hash[:12])}</code></small></td>"
            f"<td>{_arguments(item.arguments)}</td>"
            f"<td><span class=left data-deadline='{_e(item.deadline)}'>{_e(item.deadline)}</span></td>"
            f"<td><input name=reason placeholder='reason' aria-label='reason'{disabled}> "
            f"<button class=approve{disabled}>Approve</button><button class=deny{disabled}>Deny</button>"
            "<br><output class=outcome></output> <span class=run-status></span></td></tr>"
        )
    head = "<tr><th>Agent</th><th>Run</th><th>Tool</th><th>Arguments</th><th>Time left</th><th>Decision</th></tr>"
    return f"<table><thead>{head}</thead><tbody>{''.join(rows)}</tbody></table>"


def _run_body(view: RunView) -> str:
    progress = view.progress
    percent = f"{view.percent_complete:g} %" if view.percent_complete is not None else "?"
    summary = (
        f"<p><strong>{_e(view.status)}</strong> · agent {_e(view.agent or '?')} · step {progress.step}/"
        f"{_e(progress.total or '?')} ({percent}) · {_e(progress.label)}</p>"
    )
    if view.output:
        summary += f"<p>Output: {_e(view.output)}</p>"
    if view.error:
        summary += f"<p>Error: {_e(view.error)}</p>"
    audit_rows = "".join(
        f"<tr><td>{_e(a.at)}</td><td>{_e(a.call_id)}</td><td>{_e(a.tool or '')}</td><td>{_e(a.outcome)}</td>"
        f"<td>{_e(a.approver or '')}</td><td>{_e(a.reason)}</td><td>{_e(a.rejection or '')}</td></tr>"
        for a in view.audit
    )
    audit = (
        "<h2>Audit trail</h2><table><thead><tr><th>At</th><th>Call</th><th>Tool</th><th>Outcome</th>"
        f"<th>Approver</th><th>Reason</th><th>Rejection</th></tr></thead><tbody>{audit_rows}</tbody></table>"
        if audit_rows
        else "<h2>Audit trail</h2><p class=empty>No decisions yet.</p>"
    )
    step_rows = "".join(
        f"<tr><td>{s.step}</td><td>{_e(s.step_name)}</td><td>{_e(s.status)}</td><td>{_e(s.label)}</td>"
        f"<td>{_e(s.started_at or '')}</td><td>{_e(s.finished_at or '')}</td></tr>"
        for s in view.steps
    )
    steps = (
        "<h2>Steps</h2><table><thead><tr><th>#</th><th>Step</th><th>Status</th><th>Label</th><th>Started</th>"
        f"<th>Finished</th></tr></thead><tbody>{step_rows}</tbody></table>"
    )
    return summary + audit + steps + "<p><a href='/inbox'>← inbox</a></p>"


def _page(title: str, who: Principal, body: str, *, script: bool = False, status: int = 200) -> HTMLResponse:
    return html_page(title, signed_in(who) + body, script=SCRIPT if script else "", status=status)
