"""A conversation in the browser: `/inbox/conversations/{id}` (Temporal engine), part of the approvals inbox.

The transcript so far, then the conversation's live events (`GET /conversations/{id}/events`, an EventSource that
resumes by itself after a disconnect): the answer as it is written, each tool call and its result, and a gated
call's approval inline — Approve / Deny for approvers (`POST /runs/{turn}/approvals/{call}` with the hash of the
arguments shown, as the signed-in person), the request and its outcome for viewers. An approver may also send the
next message (`POST /conversations/{id}/messages`). Everything the page shows of the conversation is set as text
(`textContent`) or escaped: a model's or a user's words never become markup. Scripts run only with the
response's nonce.
"""

from __future__ import annotations

from urllib.parse import quote

from fastapi import FastAPI
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from duragent._ops.http.auth import HttpAuth
from duragent._ops.http.conversations import Conversations
from duragent._ops.http.errors import ApiError
from duragent._ops.http.pages import escape as _e
from duragent._ops.http.pages import html_page, signed_in
from duragent._stores.transcripts import TranscriptNotFound

SCRIPT = """
const chat = document.getElementById('chat'), conv = chat.dataset.conv, approver = chat.dataset.approver === '1';
const bubbles = {}, boxes = {};
const runOf = id => `${conv}~turn-${id.split(':')[0]}`;
function add(cls, text) {
  const d = document.createElement('div'); d.className = 'msg ' + cls; d.textContent = text;
  chat.appendChild(d); return d;
}
function bubble(e, step) {
  const key = e.lastEventId.split(':')[0] + ':' + step;
  return bubbles[key] || (bubbles[key] = add('assistant streaming', ''));
}
const on = (name, f) => events.addEventListener(name, e => f(JSON.parse(e.data), e));
async function decide(box, approve) {
  const out = box.querySelector('output');
  out.textContent = '…';
  const url = `/runs/${encodeURIComponent(box.dataset.run)}/approvals/${encodeURIComponent(box.dataset.call)}`;
  const r = await fetch(url, {method: 'POST', credentials: 'same-origin', headers: {'content-type': 'application/json'},
    body: JSON.stringify({approve, reason: '', arguments_hash: box.dataset.hash})});
  let data = {}; try { data = await r.json(); } catch (err) { data = {error: `HTTP ${r.status}`}; }
  out.textContent = r.ok ? `${data.outcome} by ${data.approver}` : `rejected: ${data.error}`;
  out.className = r.ok ? 'outcome ok' : 'outcome rejected';
  if (r.ok) box.querySelectorAll('button').forEach(b => b.disabled = true);
}
const base = `/conversations/${encodeURIComponent(conv)}`;
const events = new EventSource(`${base}/events?after=${encodeURIComponent(chat.dataset.after)}`);
on('text_delta', (d, e) => { bubble(e, d.step).textContent += d.text; });
on('step_restarted', (d, e) => { bubble(e, d.step).textContent = ''; });
on('step_finished', (d, e) => {
  if (d.kind !== 'model') return;
  if (d.text) { const b = bubble(e, d.step); b.textContent = d.text; b.classList.remove('streaming'); }
});
on('step_started', d => { if (d.kind === 'tool') add('tool', '→ ' + d.label); });
on('tool_call_finished', d => add('tool', `← ${d.name}: ${d.status}`));
on('approval_requested', (d, e) => {
  const box = add('approval', `${d.tool} ${JSON.stringify(d.arguments)} waits for approval`);
  box.dataset.run = runOf(e.lastEventId); box.dataset.call = d.call_id; box.dataset.hash = d.arguments_hash;
  boxes[box.dataset.run + '/' + d.call_id] = box;
  if (approver) {
    for (const [label, yes] of [['Approve', true], ['Deny', false]]) {
      const b = document.createElement('button'); b.textContent = label; b.className = yes ? 'approve' : 'deny';
      b.addEventListener('click', () => decide(box, yes)); box.appendChild(b);
    }
  }
  box.appendChild(document.createElement('output'));
});
on('approval_decided', (d, e) => {
  const box = boxes[runOf(e.lastEventId) + '/' + d.call_id];
  if (!box) return;
  box.querySelector('output').textContent = `${d.outcome} by ${d.approver}`;
  box.querySelectorAll('button').forEach(b => b.disabled = true);
});
on('approval_expired', (d, e) => {
  const box = boxes[runOf(e.lastEventId) + '/' + d.call_id];
  if (!box) return;
  box.querySelector('output').textContent = 'expired';
  box.querySelectorAll('button').forEach(b => b.disabled = true);
});
on('turn_finished', d => { if (d.status !== 'completed') add('tool', `turn ${d.turn}: ${d.status}`); });
const form = document.getElementById('send');
if (form) form.addEventListener('submit', async ev => {
  ev.preventDefault();
  const input = form.querySelector('input'), text = input.value.trim();
  if (!text) return;
  input.value = '';
  add('user', text);
  const r = await fetch(`${base}/messages`, {method: 'POST', credentials: 'same-origin',
    headers: {'content-type': 'application/json'}, body: JSON.stringify({agent: chat.dataset.agent, text})});
  if (r.ok) return;
  let data = {}; try { data = await r.json(); } catch (err) { data = {error: `HTTP ${r.status}`}; }
  add('tool', `not sent: ${data.error}`);
});
"""


def add_conversation_page(app: FastAPI, conversations: Conversations, auth: HttpAuth) -> None:
    @app.get("/inbox/conversations/{conversation_id}", include_in_schema=False)
    async def conversation_page(conversation_id: str, request: Request) -> Response:
        who = auth.identify(request)
        if who is None:
            return RedirectResponse("/login", status_code=303)
        title = f"Conversation {conversation_id}"
        try:
            view = await conversations.describe(conversation_id)
        except ApiError as exc:
            body = f"<p class=empty>{_e(exc.message)}</p>"
            return html_page(title, signed_in(who) + body, status=exc.status_code)
        try:
            messages = (await conversations.get(conversation_id, 0, 500)).transcript.messages
            shown = [
                f"<div class='msg {_e(m.role)}'>{_e(m.content)}</div>"
                for m in messages
                if m.role in ("user", "assistant") and m.content
            ]
        except (ApiError, TranscriptNotFound):  # this server cannot read the workers' store: the new turns only
            shown = ["<p class=empty>The earlier turns' transcript is not readable from this server.</p>"]
        approver = who.may("approver")
        data = (
            f"data-conv='{_e(conversation_id)}' data-agent='{_e(view.agent)}' data-after='{view.answered}:end' "
            f"data-approver='{1 if approver else 0}'"
        )
        send = (
            "<form id=send><input name=text aria-label='message' placeholder='Write a message'> "
            "<button class=approve>Send</button></form>"
            if approver and view.status == "open"
            else ""
        )
        body = (
            f"<p><strong>{_e(view.status)}</strong> · agent {_e(view.agent)} · {view.turns} turns</p>"
            f"<div id=chat {data}>{''.join(shown)}</div>{send}"
            f"<p><a href='/inbox'>← inbox</a> · <a href='/conversations/{quote(conversation_id, safe='')}'>JSON</a></p>"
        )
        return html_page(title, signed_in(who) + body, script=SCRIPT)
