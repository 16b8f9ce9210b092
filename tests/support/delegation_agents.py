"""Agents that delegate, for the delegation tests: a desk (root) hands work to accounts (child), which hands
an entry to a clerk or a payer (grandchild). Every effect goes through the demo ledger under its key and
has a compensation, so the ledger shows what was done and undone, in which order. An agents module, like a
user's own: `worker.py --agents examples --agents tests.support.delegation_agents`."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

import examples
from agentic import Agent, Budget, FakeModel, Message, Registry, ToolContext, give_up, tool, tool_call
from agentic.approvals import ApprovalPolicy
from duragent._config.settings import Settings
from examples.effects import record_effect, tool_results, undoing
from examples.options import DemoDeps, DemoOptions


@tool(description="Open a ticket.", subject="What about.", mutating=True, compensation=undoing("close_ticket"))
def open_ticket(subject: str, ctx: ToolContext) -> str:
    return record_effect(ctx, "open_ticket", {"subject": subject}, f"ticket open: {subject}")


@tool(description="Notify the customer.", text="What to say.", mutating=True, compensation=undoing("retract_notice"))
def notify(text: str, ctx: ToolContext) -> str:
    return record_effect(ctx, "notify", {"text": text}, f"notified: {text}")


@tool(description="Reserve funds.", amount="Cents.", mutating=True, compensation=undoing("release_funds"))
def reserve_funds(amount: int, ctx: ToolContext) -> str:
    return record_effect(ctx, "reserve_funds", {"amount": amount}, f"reserved {amount}")


@tool(description="Post a ledger entry.", entry="The entry.", mutating=True, compensation=undoing("reverse_entry"))
def post_entry(entry: str, ctx: ToolContext) -> str:
    return record_effect(ctx, "post_entry", {"entry": entry}, f"posted {entry}")


@tool(
    description="Pay a payee.",
    payee="Who.",
    mutating=True,
    requires_confirmation=True,
    compensation=undoing("refund_payee"),
)
def pay(payee: str, ctx: ToolContext) -> str:
    return record_effect(ctx, "pay", {"payee": payee}, f"paid {payee}")


def _script(moves: Sequence[Callable[[list[str]], object]]) -> FakeModel:
    """A scripted model that plays `moves[i]` once i tool results are in the transcript."""

    def reply(messages: Sequence[Message]) -> object:
        results = tool_results(messages)
        return moves[min(len(results), len(moves) - 1)](results)

    return FakeModel([reply] * (len(moves) + 2))


def _agent(name: str, tools: list[Any], moves: Sequence[Callable[[list[str]], object]], steps: int) -> Agent:
    return Agent(
        _script(moves),
        Registry(tools),
        name=name,
        task=f"Do the {name} work.",
        budget=Budget(max_steps=steps),
        options=DemoOptions,
    )


CLERK = _agent(
    "d-clerk",
    [post_entry],
    [lambda r: tool_call("post_entry", {"entry": "E-1"}), lambda r: f"Clerk: {r[-1]}."],
    3,
)
# Its approvals wait 2 h (its own rule, not its parents' 24 h default).
PAYER = dataclasses.replace(
    _agent(
        "d-payer",
        [post_entry, pay],
        [
            lambda r: tool_call("post_entry", {"entry": "E-2"}),
            lambda r: tool_call("pay", {"payee": "acme"}),
            lambda r: f"Payer: {r[-1]}.",
        ],
        4,
    ),
    approvals=ApprovalPolicy(timeout_seconds=2 * 3600),
)


def _accounts(name: str, grandchild: Agent, tool_name: str) -> Agent:
    return _agent(
        name,
        [reserve_funds, grandchild.as_tool(tool_name, f"Hand the entry to {grandchild.name}.")],
        [
            lambda r: tool_call("reserve_funds", {"amount": 2500}),
            lambda r: tool_call(tool_name, {"task": "Post the entry for 2500."}),
            lambda r: f"Accounts: {r[-1]}",
        ],
        8,
    )


ACCOUNTS = _accounts("d-accounts", CLERK, "clerk")
ACCOUNTS_GATED = _accounts("d-accounts-gated", PAYER, "payer")


def _desk(name: str, child: Agent, then: Sequence[Callable[[list[str]], object]] = ()) -> Agent:
    return _agent(
        name,
        [open_ticket, notify, child.as_tool("accounts", "Hand the money matters to the accounts agent.")],
        [
            lambda r: tool_call("open_ticket", {"subject": "refund"}),
            lambda r: tool_call("accounts", {"task": "Refund 2500 to acme."}),
            *then,
            lambda r: f"Desk: {r[-1]}",
        ],
        12,
    )


DESK = _desk("d-desk", ACCOUNTS)
DESK_GATED = _desk("d-desk-gated", ACCOUNTS_GATED)
# The child answers, then the desk notifies and gives up: everything is undone, the child as a unit at the
# position of its call — after the notice, before the ticket.
DESK_GIVES_UP = _desk(
    "d-desk-gives-up",
    ACCOUNTS,
    [lambda r: tool_call("notify", {"text": "refund on its way"}), lambda r: give_up("the customer withdrew")],
)
# The child (and its own child) answer, then the desk waits for an approval to pay: closed children under a
# root still open, which may still undo them (tests/ops/test_prune.py).
DESK_THEN_PAYS = _agent(
    "d-desk-then-pays",
    [open_ticket, pay, ACCOUNTS.as_tool("accounts", "Hand the money matters to the accounts agent.")],
    [
        lambda r: tool_call("open_ticket", {"subject": "refund"}),
        lambda r: tool_call("accounts", {"task": "Refund 2500 to acme."}),
        lambda r: tool_call("pay", {"payee": "acme"}),
        lambda r: f"Desk: {r[-1]}",
    ],
    12,
)

# A child that never answers, each step an effect: its reservation (a cap of 2 steps) runs out; it undoes
# its entries, and the manager, told why, goes on and answers itself.
SPENDER = _agent(
    "d-spender",
    [post_entry],
    [lambda r: tool_call("post_entry", {"entry": f"S-{len(r) + 1}"})] * 1,
    50,
)
MANAGER = _agent(
    "d-manager",
    [notify, SPENDER.as_tool("spender", "Spend.", max_steps=2)],
    [
        lambda r: tool_call("spender", {"task": "Post entries until done."}),
        lambda r: tool_call("notify", {"text": f"the spender stopped: {r[-1][:40]}"}),
        lambda r: "Manager: I went on without the spender.",
    ],
    8,
)
# A root with 3 steps left after its first: the child's whole budget is what remains (3), never more.
MANAGER_TIGHT = Agent(
    _script(
        [
            lambda r: tool_call("spender", {"task": "Post entries until done."}),
            lambda r: "Manager: done.",
        ]
    ),
    Registry([SPENDER.as_tool("spender", "Spend.")]),
    name="d-manager-tight",
    task="Manage.",
    budget=Budget(max_steps=4),
    options=DemoOptions,
)

# For the kill test: the child is the slow migration agent (3 records, a second inside each).
SLOW_PARENT = _agent(
    "d-slow-parent",
    [
        open_ticket,
        examples.migration.agent.as_tool("migrate", "Migrate the records.", options={"records": 3, "step_delay": 1.0}),
    ],
    [
        lambda r: tool_call("open_ticket", {"subject": "migration"}),
        lambda r: tool_call("migrate", {"task": "Migrate the 3 records."}),
        lambda r: f"Parent: {r[-1]}",
    ],
    12,
)

# A child that fails: the trip's car cannot be booked and undoing the hotel and flight keeps failing.
TRAVEL = _agent(
    "d-travel",
    [examples.trip.agent.as_tool("trip", "Book the trip.", options={"compensation_failures": 99})],
    [lambda r: tool_call("trip", {"task": "Book trip-42."}), lambda r: f"Travel: {r[-1][:60]}"],
    12,
)

agents = [
    CLERK,
    PAYER,
    ACCOUNTS,
    ACCOUNTS_GATED,
    DESK,
    DESK_GATED,
    DESK_GIVES_UP,
    DESK_THEN_PAYS,
    SPENDER,
    MANAGER,
    MANAGER_TIGHT,
    SLOW_PARENT,
    TRAVEL,
]  # the children of SLOW_PARENT and TRAVEL are demo agents: serve `examples` with this module


def make_deps(settings: Settings) -> DemoDeps:
    return examples.make_deps(settings)
