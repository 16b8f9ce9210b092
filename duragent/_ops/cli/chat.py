"""`chat AGENT [--conversation ID]`: a conversation in the terminal, and `conversations`: the conversations there are.

Each line typed is a message (`ConversationHandle.send`); the answer is printed when its turn ends. A gated tool
asks here: the call and its arguments, approve with `y`, anything else declines (the approver's name is
`--by`, default the login name). An empty line or end of input ends the session; the conversation stays open (a
later `chat --conversation ID` continues it) until it is idle for its days.
"""

from __future__ import annotations

import argparse
import asyncio
import getpass
import json
import sys
import uuid

from agentic.approvals import PendingApproval
from duragent._config.agent_modules import find, load_agents
from duragent._config.settings import Settings
from duragent._conversation_live import turn_events
from duragent._conversations import ConversationHandle
from duragent._errors import MessageRefused
from duragent._ops.cli.arguments import add_agents_modules
from duragent._ops.cli.connection import agent_client
from duragent._ops.cli.live_text import LiveText
from duragent._ops.cli.output import emit
from duragent._workflows.conversation_inputs import TurnResult

POLL = 0.3  # seconds between looks for an approval the turn waits for


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("agent", metavar="AGENT", help="the agent, by name (found in --agents MODULE)")
    parser.add_argument("--conversation", metavar="ID", help="continue this conversation (default: a new one)")
    parser.add_argument("--by", default=None, help="the approver's name for decisions made here (default: login)")
    add_agents_modules(parser)


async def cmd_chat(args: argparse.Namespace, settings: Settings) -> int:
    agent = find(load_agents(args.agents), args.agent)
    agents = await agent_client(settings)
    conversation_id = args.conversation or f"{agent.name}-{uuid.uuid4().hex[:8]}"
    conv = agents.conversation(agent, conversation_id)
    by = args.by or getpass.getuser()
    if not args.json:
        print(f"conversation {conversation_id} with {agent.name}; an empty line ends it", flush=True)
    while (text := (await _line("> ", args.json)).strip()) != "":
        try:
            turn = await conv.send(text, wait=False)
        except MessageRefused as exc:
            emit(args.json, {"refused": exc.kind, "reason": exc.reason}, f"({exc.kind}: {exc.reason})")
            continue
        answer, streamed = await _answer(conv, turn, by, args.json)
        shown = (
            answer.output if answer.output is not None else f"({answer.status}: {answer.stop_detail or answer.error})"
        )
        if not streamed or answer.output is None:  # a streamed answer was printed as it was written
            emit(args.json, answer.model_dump(mode="json"), shown)
        sys.stdout.flush()
    return 0


async def _answer(conv: ConversationHandle, turn: int, by: str, as_json: bool) -> tuple[TurnResult, bool]:
    """The turn's answer, asking here for each approval it waits for meanwhile; on a terminal, its text and tool
    calls printed as they happen (and whether any text was)."""
    waiting = asyncio.ensure_future(conv.wait(turn))
    printer = LiveText(sys.stdout)
    printing = None if as_json else asyncio.ensure_future(printer.follow(turn_events(conv, turn)))
    asked: set[str] = set()
    try:
        while not waiting.done():
            for pending in await conv.pending():
                if pending.call_id not in asked:
                    asked.add(pending.call_id)
                    await _decide(conv, pending, by, as_json)
            await asyncio.wait({waiting}, timeout=POLL)
        if printing is not None:  # the turn has ended: its last events are on their way
            await asyncio.wait({printing}, timeout=5)
        return waiting.result(), any(printer.written.values())
    finally:
        waiting.cancel()
        if printing is not None:
            printing.cancel()


async def _decide(conv: ConversationHandle, pending: PendingApproval, by: str, as_json: bool) -> None:
    arguments = (
        json.dumps(pending.arguments, sort_keys=True) if isinstance(pending.arguments, dict) else pending.arguments
    )
    reply = await _line(f"approve {pending.tool} {arguments}? [y/N] ", as_json)
    approve = reply.strip().lower() in ("y", "yes")
    await conv.decide(approve, pending.call_id, by=by, arguments_hash=pending.arguments_hash)


async def _line(prompt: str, as_json: bool) -> str:
    if not as_json and sys.stdin.isatty():
        print(prompt, end="", flush=True)
    return await asyncio.to_thread(sys.stdin.readline)


def add_list_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--status", choices=["open", "closing", "closed"], help="only these")
    parser.add_argument("--agent", help="only this agent's")
    parser.add_argument("--limit", type=int, default=100)


async def cmd_conversations(args: argparse.Namespace, settings: Settings) -> int:
    from duragent._workflows import search_attributes as sa

    agents = await agent_client(settings)
    found = await agents.conversations(status=args.status, agent=args.agent, limit=args.limit)
    rows = [
        {
            "conversation_id": e.id,
            "agent": e.typed_search_attributes.get(sa.AGENT_NAME),
            "status": e.typed_search_attributes.get(sa.AGENT_STATUS),
            "turns": e.typed_search_attributes.get(sa.AGENT_STEP),
            "started_at": e.start_time.isoformat() if e.start_time else None,
        }
        for e in found
    ]
    lines = [f"{r['conversation_id']}  {r['agent']}  {r['status']}  {r['turns']} turns" for r in rows]
    emit(args.json, rows, "\n".join(lines) if lines else "no conversations")
    return 0
