"""Small agents that exercise one workflow rule each: an agents module, served like a user's own
(`agents` plus `make_deps`), with the demo agents' options and ledger."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import examples
from agentic import Agent, Budget, FakeModel, Message, Registry, ToolContext, give_up, tool, tool_call
from duragent._config.settings import Settings
from examples import trip as trip_module
from examples.effects import options_of, record_effect
from examples.options import DemoDeps, DemoOptions


def _agent(
    name: str,
    description: str,
    system: str,
    task: str,
    registry: Registry,
    script: Callable[[], FakeModel],
    budget: Budget,
) -> Agent:
    return Agent(
        script(),
        registry,
        system=system,
        budget=budget,
        name=name,
        description=description,
        task=task,
        options=DemoOptions,
    )


@tool(description="Look something up.", topic="What to look up.")
def lookup(topic: str) -> str:
    return f"{topic}: 42"


@tool(description="A tool that is broken.", x="Anything.")
def broken(x: int) -> str:
    raise ValueError("the upstream returned garbage")


@tool(description="Write a row.", row="Row id.", mutating=True)
def write_row(row: str, ctx: ToolContext) -> str:
    return record_effect(ctx, "write_row", {"row": row}, f"wrote {row}")


def _results(messages: Sequence[Message]) -> list[str]:
    return [m.content for m in messages if m.role == "tool"]


def _repeat_script() -> FakeModel:
    return FakeModel([tool_call("lookup", {"topic": "x"}), tool_call("lookup", {"topic": "x"}), "never"])


def _error_script() -> FakeModel:
    def answer(messages: Sequence[Message]) -> str:
        return f"The tool failed, so I report: {_results(messages)[-1]}"

    return FakeModel([tool_call("broken", {"x": 1}), tool_call("broken", {"x": "not a number"}), answer])


def _rows_script() -> FakeModel:
    def next_row(messages: Sequence[Message]) -> object:
        done = len(_results(messages))
        return tool_call("write_row", {"row": f"row-{done + 1}"}) if done < 3 else "Wrote 3 rows."

    return FakeModel([next_row] * 4)


def _short_script() -> FakeModel:
    return FakeModel([tool_call("lookup", {"topic": "a"})])  # one reply: a second call exhausts it


REPEAT = _agent("t-repeat", "repeats a call", "", "Look up x.", Registry([lookup]), _repeat_script, Budget(max_steps=5))
ERRORS = _agent(
    "t-errors", "a broken tool", "", "Use the tool.", Registry([broken]), _error_script, Budget(max_steps=5)
)
ROWS = _agent("t-rows", "3 writes", "", "Write 3 rows.", Registry([write_row]), _rows_script, Budget(max_steps=10))
SHORT = _agent("t-short", "script runs out", "", "Go.", Registry([lookup]), _short_script, Budget(max_steps=5))


@tool(description="Pay a supplier.", supplier="Supplier id.", mutating=True, requires_confirmation=True)
def pay(supplier: str, ctx: ToolContext) -> str:
    return record_effect(ctx, "pay", {"supplier": supplier}, f"paid {supplier}")


def _pay_both_at_once() -> FakeModel:
    return FakeModel([[tool_call("pay", {"supplier": "s-1"}), tool_call("pay", {"supplier": "s-2"})], "Paid."])


def _pay_one_after_another() -> FakeModel:
    def next_payment(messages: Sequence[Message]) -> object:
        done = len(_results(messages))
        return tool_call("pay", {"supplier": f"s-{done + 1}"}) if done < 2 else "Done with payments."

    return FakeModel([next_payment] * 3)


PAY_BATCH = _agent(
    "t-pay-batch",
    "two gated calls in one reply",
    "",
    "Pay s-1 and s-2.",
    Registry([pay]),
    _pay_both_at_once,
    Budget(max_steps=4),
)
PAY_SEQUENCE = _agent(
    "t-pay-sequence",
    "two gated calls, one per step",
    "",
    "Pay s-1 then s-2.",
    Registry([pay]),
    _pay_one_after_another,
    Budget(max_steps=4),
)


def _book_then_pay() -> FakeModel:
    def next_move(messages: Sequence[Message]) -> object:
        done = len(_results(messages))
        if done == 0:
            return tool_call("book_flight", {"trip": "t-1"})
        if done == 1:
            return tool_call("pay", {"supplier": "airline"})
        return "Booked and paid."

    return FakeModel([next_move] * 3)


def _book_then_give_up() -> FakeModel:
    def next_move(messages: Sequence[Message]) -> object:
        done = len(_results(messages))
        if done < 2:
            return tool_call(("book_flight", "book_hotel")[done], {"trip": "t-2"})
        return give_up("the customer changed their mind")

    return FakeModel([next_move] * 3)


BOOK_THEN_PAY = _agent(
    "t-book-then-pay",
    "a booking, then a gated payment",
    "",
    "Book and pay.",
    Registry([trip_module.book_flight, pay]),
    _book_then_pay,
    Budget(max_steps=4),
)
GIVE_UP = _agent(
    "t-give-up",
    "books two legs, then gives up",
    "",
    "Book.",
    Registry([trip_module.book_flight, trip_module.book_hotel]),
    _book_then_give_up,
    Budget(max_steps=4),
)


@tool(
    description="Book the hotel, slowly.", trip="The trip id.", mutating=True, compensation=trip_module._cancel("hotel")
)
def slow_book_hotel(trip: str, ctx: ToolContext) -> str:
    ctx.sleep(30.0)  # long enough that a cancellation lands in the middle
    return record_effect(ctx, "book_hotel", {"trip": trip}, f"booked hotel for {trip}")


def _fast_flight_slow_hotel() -> FakeModel:
    def next_move(messages: Sequence[Message]) -> object:
        done = len(_results(messages))
        if done < 2:
            return tool_call(("book_flight", "slow_book_hotel")[done], {"trip": "t-3"})
        return "Booked."

    return FakeModel([next_move] * 3)


SLOW_HOTEL = _agent(
    "t-slow-hotel",
    "a fast booking, then a slow one",
    "",
    "Book.",
    Registry([trip_module.book_flight, slow_book_hotel]),
    _fast_flight_slow_hotel,
    Budget(max_steps=4),
)


@tool(description="Fetch a document.", doc="Which document.")
def fetch_document(doc: str, ctx: ToolContext) -> str:
    return "x" * options_of(ctx).output_bytes


def _read_big_document() -> FakeModel:
    def next_move(messages: Sequence[Message]) -> object:
        results = _results(messages)
        if not results:
            return tool_call("fetch_document", {"doc": "d-1"})
        return f"The document has {len(results[-1])} characters."

    return FakeModel([next_move] * 2)


BIG = _agent(
    "t-big-output",
    "one large tool output (options.output_bytes)",
    "",
    "Read it.",
    Registry([fetch_document]),
    _read_big_document,
    Budget(max_steps=3),
)


def _reused_ids() -> FakeModel:
    """A provider that numbers calls per reply: both payments come with the id `dup`."""

    def next_payment(messages: Sequence[Message]) -> object:
        done = len(_results(messages))
        return tool_call("pay", {"supplier": f"s-{done + 1}"}, id="dup") if done < 2 else "Done with payments."

    return FakeModel([next_payment] * 3)


REUSED_IDS = _agent(
    "t-reused-ids",
    "two gated calls that reuse one provider id",
    "",
    "Pay s-1 then s-2.",
    Registry([pay]),
    _reused_ids,
    Budget(max_steps=4),
)

agents = [REUSED_IDS, REPEAT, ERRORS, ROWS, SHORT, PAY_BATCH, PAY_SEQUENCE, BOOK_THEN_PAY, GIVE_UP, SLOW_HOTEL, BIG]


def make_deps(settings: Settings) -> DemoDeps:
    """The demo agents' deps (the ledger at `settings.ledger_path`), so `job --agents tests.support.agents_for_tests`
    and `worker.py --agents tests.support.agents_for_tests` serve these agents too."""
    return examples.make_deps(settings)
