"""`courier`: durable memory. A run given a ticket remembers the customer's preferred courier; a later run —
on any worker, any day — recalls it, with its source; once an operator forgets that source, the agent no
longer knows.

    starter.py run courier --namespace C-7 --task "Ticket T-1: customer C-7 prefers BlueDart" --wait
    starter.py run courier --namespace C-7 --task "Which courier does C-7 prefer?" --wait   # BlueDart
    starter.py facts forget --namespace C-7 --source "ticket T-1"
    starter.py run courier --namespace C-7 --task "Which courier does C-7 prefer?" --wait   # does not know

The namespace (whose memory) is the run's option, chosen by the caller; the model only names keys.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

from agentic import Agent, Budget, FakeModel, Message, Registry, tool_call
from duragent._stores.memory_tools import MemoryOptions, memory_tools
from examples.effects import tool_results

KEY = "preferred_courier"
_TICKET = re.compile(
    r"ticket\s+(?P<ticket>[\w-]+)\s*:\s*customer\s+(?P<customer>[\w-]+)\s+prefers\s+(?P<courier>\w[\w -]*)", re.I
)
_QUESTION = re.compile(r"which courier does\s+(?P<customer>[\w-]+)\s+prefer", re.I)
_RECALLED = re.compile(rf"{KEY} = (?P<value>.+?) \(source: (?P<source>[^;]+);")


def next_move(messages: Sequence[Message]) -> object:
    """A scripted model (swap in a real one with `--model`): remember what a ticket says, or recall it."""
    task = next(m.content for m in reversed(messages) if m.role == "user")
    results = tool_results(messages)
    if ticket := _TICKET.search(task):
        courier, source = ticket["courier"].strip(), f"ticket {ticket['ticket']}"
        if not results:
            return tool_call("remember", {"key": KEY, "value": courier, "source": source})
        if results[-1].startswith("Remembered"):
            return f"Noted: {ticket['customer']} prefers {courier} (source: {source})."
        return f"I could not remember that: {results[-1]}"
    if question := _QUESTION.search(task):
        if not results:
            return tool_call("recall", {"key": KEY})
        if recalled := _RECALLED.search(results[-1]):
            courier = json.loads(recalled["value"])
            return f"{question['customer']} prefers {courier} (from memory; source: {recalled['source']})."
        return f"I don't know which courier {question['customer']} prefers: nothing is remembered about it."
    return "Tell me a ticket ('Ticket T-1: customer C-7 prefers BlueDart') or ask 'Which courier does C-7 prefer?'."


agent = Agent(
    FakeModel.replying(next_move, name="courier-script"),
    Registry(memory_tools(writer="courier")),
    system=(
        "You keep customers' courier preferences. Remember what tickets say, with the ticket as the source; "
        "answer questions from memory, and say so when nothing is remembered."
    ),
    budget=Budget(max_steps=4),
    name="courier",
    description="Remember a customer's preferred courier from a ticket, recall it in a later run (--namespace).",
    task="Which courier does C-7 prefer?",
    options=MemoryOptions,
    estimate=lambda options: 3,
)
