"""`trip`: book a flight, a hotel and a car; each booking has a cancellation as its compensation.

`fail_at` makes one booking fail permanently (the car, by default), after the earlier ones committed:
the run is abandoned and the committed bookings are cancelled in reverse order.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agentic import Agent, Budget, FakeModel, Message, Registry, ToolContext, ToolFatal, give_up, tool, tool_call
from examples.effects import deps_of, options_of, record_effect, reference, tool_results
from examples.options import DemoOptions

LEGS = ("flight", "hotel", "car")
# Model calls + bookings + cancellations, by which booking fails.
_ACTIONS = {"none": 7, "flight": 2, "hotel": 5, "car": 8}


def _book(kind: str, trip: str, ctx: ToolContext) -> str:
    options = options_of(ctx)
    ctx.sleep(options.step_delay)
    if options.fail_at == kind:
        raise ToolFatal(f"no {kind} available for {trip}")
    return record_effect(
        ctx, f"book_{kind}", {"trip": trip}, f"booked {kind} for {trip}, ref {reference(ctx.idempotency_key, kind)}"
    )


def _cancel(kind: str) -> Any:
    def cancel(args: dict[str, Any], result: str, ctx: ToolContext) -> str:
        options = options_of(ctx)
        ctx.sleep(options.step_delay)
        # A booking interrupted by a cancellation may never have happened: then there is nothing to undo,
        # and recording an "undo" effect would be a lie in the ledger.
        if ctx.compensates and deps_of(ctx).ledger.get(ctx.compensates) is None:
            return f"nothing to cancel: no {kind} booking was made"
        if ctx.attempt <= options.compensation_failures:
            raise ConnectionError(f"the {kind} provider is unreachable (attempt {ctx.attempt})")
        return record_effect(ctx, f"cancel_{kind}", args, f"cancelled {kind} booking ({result})")

    cancel.__name__ = f"cancel_{kind}"
    return cancel


@tool(description="Book the flight.", trip="The trip id.", mutating=True, compensation=_cancel("flight"))
def book_flight(trip: str, ctx: ToolContext) -> str:
    return _book("flight", trip, ctx)


@tool(description="Book the hotel.", trip="The trip id.", mutating=True, compensation=_cancel("hotel"))
def book_hotel(trip: str, ctx: ToolContext) -> str:
    return _book("hotel", trip, ctx)


@tool(description="Book the rental car.", trip="The trip id.", mutating=True, compensation=_cancel("car"))
def book_car(trip: str, ctx: ToolContext) -> str:
    return _book("car", trip, ctx)


def trip_reply(messages: Sequence[Message]) -> object:
    results = tool_results(messages)
    if results and not results[-1].startswith("booked"):
        return give_up(f"a booking failed: {results[-1]}")
    if len(results) < len(LEGS):
        return tool_call(f"book_{LEGS[len(results)]}", {"trip": "trip-42"})
    return "Trip trip-42 is booked: flight, hotel and car."


agent = Agent(
    FakeModel([trip_reply] * (len(LEGS) + 1), name="trip-script"),
    Registry([book_flight, book_hotel, book_car]),
    system="Book the whole trip or none of it.",
    budget=Budget(max_steps=6),
    name="trip",
    description="Book flight, hotel and car; a failed booking cancels the earlier ones in reverse (saga).",
    task="Book trip trip-42: flight, hotel and car.",
    options=DemoOptions,
    estimate=lambda options: _ACTIONS[options.fail_at],
)
