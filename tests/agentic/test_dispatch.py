"""Registry.dispatch: every bad input becomes a readable ToolResult with the right status, never a raise."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import pytest

from agentic import Registry, ToolCall, ToolContext, ToolFatal, ToolRetry, tool, tool_call
from agentic.results import DECLINED_TEXT, ToolStatus


def make_registry(confirm: Any = None) -> tuple[Registry, list[tuple[str, Any]]]:
    """Fresh tools per test; `ran` records every execution, so tests can prove a call did not run."""
    ran: list[tuple[str, Any]] = []

    @tool(description="Charge an amount.", invoice="The invoice.", amount="Cents.", mutating=True)
    def charge(invoice: str, amount: int, note: str = "") -> str:
        ran.append(("charge", (invoice, amount, note)))
        return f"charged {invoice} {amount}"

    @tool(description="Fails.", kind="Which failure.")
    def flaky(kind: str) -> str:
        ran.append(("flaky", kind))
        if kind == "retry":
            raise ToolRetry("upstream 503")
        if kind == "fatal":
            raise ToolFatal("account closed")
        raise KeyError("no such row")

    @tool(description="Refund.", order_id="The order.", mutating=True, requires_confirmation=True)
    def refund(order_id: str) -> str:
        ran.append(("refund", order_id))
        return f"refunded {order_id}"

    return Registry([charge, flaky, refund], confirm=confirm), ran


def test_ok() -> None:
    registry, ran = make_registry()
    result = registry.dispatch(tool_call("charge", {"invoice": "inv-1", "amount": 5}, id="c1"))
    assert result.status is ToolStatus.OK
    assert result.ok
    assert (result.call_id, result.name, result.content) == ("c1", "charge", "charged inv-1 5")
    assert ran == [("charge", ("inv-1", 5, ""))]


def test_unknown_tool_lists_the_available_tools() -> None:
    registry, ran = make_registry()
    result = registry.dispatch(tool_call("chrage", {}, id="c1"))
    assert result.status is ToolStatus.UNKNOWN_TOOL
    assert result.call_id == "c1"
    assert "'chrage'" in result.content
    assert "Available tools: charge, flaky, refund." in result.content
    assert ran == []


def test_unknown_tool_in_an_empty_registry() -> None:
    result = Registry().dispatch(tool_call("anything", id="c1"))
    assert result.status is ToolStatus.UNKNOWN_TOOL
    assert "Available tools: none." in result.content


def test_raw_string_arguments_are_invalid() -> None:
    registry, ran = make_registry()
    result = registry.dispatch(ToolCall(id="c1", name="charge", arguments='{"invoice": "inv-1", "amount": '))
    assert result.status is ToolStatus.INVALID_ARGUMENTS
    assert result.content.startswith("Error:")
    assert "not a JSON object" in result.content
    assert '{"invoice": "inv-1", "amount": ' in result.content  # the model sees what it sent
    assert ran == []


def test_raw_string_arguments_are_truncated_in_the_message() -> None:
    registry, _ = make_registry()
    result = registry.dispatch(ToolCall(id="c1", name="charge", arguments="x" * 5000))
    assert result.status is ToolStatus.INVALID_ARGUMENTS
    assert len(result.content) < 400


@pytest.mark.parametrize(
    ("arguments", "words"),
    [
        ({"invoice": "inv-1"}, ["amount", "Field required"]),
        ({"invoice": "inv-1", "amount": 5, "currency": "EUR"}, ["currency", "Extra inputs are not permitted"]),
        ({"invoice": "inv-1", "amount": "lots"}, ["amount", "valid integer"]),
        ({"invoice": 7, "amount": 5}, ["invoice", "valid string"]),
    ],
    ids=["missing", "extra", "wrong-type-int", "wrong-type-str"],
)
def test_invalid_arguments(arguments: dict[str, Any], words: list[str]) -> None:
    registry, ran = make_registry()
    result = registry.dispatch(tool_call("charge", arguments, id="c1"))
    assert result.status is ToolStatus.INVALID_ARGUMENTS
    assert result.content.startswith("Error: invalid arguments for charge:")
    for word in words:
        assert word in result.content
    assert ran == []


def test_every_invalid_argument_is_reported_at_once() -> None:
    registry, _ = make_registry()
    result = registry.dispatch(tool_call("charge", {"amount": "lots", "extra": 1}, id="c1"))
    assert result.status is ToolStatus.INVALID_ARGUMENTS
    for word in ("invoice", "amount", "extra"):
        assert word in result.content


def test_an_ordinary_exception_is_an_error_result() -> None:
    registry, ran = make_registry()
    result = registry.dispatch(tool_call("flaky", {"kind": "boom"}, id="c1"))
    assert result.status is ToolStatus.ERROR
    assert result.content == "Error: flaky raised KeyError: 'no such row'"
    assert ran == [("flaky", "boom")]


def test_tool_retry_is_retryable() -> None:
    registry, _ = make_registry()
    result = registry.dispatch(tool_call("flaky", {"kind": "retry"}, id="c1"))
    assert result.status is ToolStatus.RETRYABLE
    assert "upstream 503" in result.content


def test_tool_fatal_is_fatal() -> None:
    registry, _ = make_registry()
    result = registry.dispatch(tool_call("flaky", {"kind": "fatal"}, id="c1"))
    assert result.status is ToolStatus.FATAL
    assert "account closed" in result.content


def test_confirmation_declined() -> None:
    asked: list[tuple[str, dict[str, Any]]] = []

    def confirm(name: str, args: dict[str, Any]) -> bool:
        asked.append((name, args))
        return False

    registry, ran = make_registry(confirm)
    result = registry.dispatch(tool_call("refund", {"order_id": "4471"}, id="c1"))
    assert result.status is ToolStatus.DECLINED
    assert result.status.blocked
    assert result.content == "Error: the user declined this action."
    assert result.content == DECLINED_TEXT
    assert asked == [("refund", {"order_id": "4471"})]
    assert ran == []


def test_confirmation_granted() -> None:
    registry, ran = make_registry(lambda name, args: args["order_id"] == "4471")
    assert registry.dispatch(tool_call("refund", {"order_id": "4471"}, id="c1")).status is ToolStatus.OK
    assert registry.dispatch(tool_call("refund", {"order_id": "9999"}, id="c2")).status is ToolStatus.DECLINED
    assert ran == [("refund", "4471")]


def test_no_confirm_callback_fails_closed() -> None:
    registry, ran = make_registry(confirm=None)
    result = registry.dispatch(tool_call("refund", {"order_id": "4471"}, id="c1"))
    assert result.status is ToolStatus.DECLINED
    assert result.content == "Error: the user declined this action."
    assert ran == []


def test_a_confirm_callback_that_raises_declines() -> None:
    def broken(name: str, args: dict[str, Any]) -> bool:
        raise RuntimeError("approvals db down")

    registry, ran = make_registry(broken)
    result = registry.dispatch(tool_call("refund", {"order_id": "4471"}, id="c1"))
    assert result.status is ToolStatus.DECLINED
    assert result.content.startswith(DECLINED_TEXT)
    assert "approvals db down" in result.content
    assert ran == []


def test_confirm_is_not_asked_for_tools_that_do_not_require_it() -> None:
    asked: list[str] = []
    registry, _ = make_registry(lambda name, args: asked.append(name) or False)
    assert registry.dispatch(tool_call("charge", {"invoice": "i", "amount": 1}, id="c1")).ok
    assert asked == []


def test_confirm_is_not_asked_for_invalid_arguments() -> None:
    asked: list[str] = []
    registry, _ = make_registry(lambda name, args: asked.append(name) or True)
    result = registry.dispatch(tool_call("refund", {"order": "4471"}, id="c1"))
    assert result.status is ToolStatus.INVALID_ARGUMENTS
    assert asked == []


def test_approved_true_bypasses_confirm() -> None:
    asked: list[str] = []
    registry, ran = make_registry(lambda name, args: asked.append(name) or False)
    result = registry.dispatch(tool_call("refund", {"order_id": "4471"}, id="c1"), approved=True)
    assert result.status is ToolStatus.OK
    assert asked == []
    assert ran == [("refund", "4471")]


def test_approved_false_declines_without_asking() -> None:
    asked: list[str] = []
    registry, ran = make_registry(lambda name, args: asked.append(name) or True)
    result = registry.dispatch(tool_call("refund", {"order_id": "4471"}, id="c1"), approved=False)
    assert result.status is ToolStatus.DECLINED
    assert asked == []
    assert ran == []


def _thread_named(name: str) -> threading.Thread | None:
    return next((t for t in threading.enumerate() if t.name == name), None)


def test_timeout_is_enforced_and_the_tool_is_cancelled() -> None:
    contexts: list[ToolContext] = []
    finished: list[str] = []

    @tool(description="Slow.", timeout=0.2)
    def slow_cooperative(ctx: ToolContext) -> str:
        contexts.append(ctx)
        try:
            ctx.sleep(5)
        finally:
            finished.append("stopped")
        return "done"

    context = ToolContext(run_id="r", call_id="c1", idempotency_key="r:c1")
    result = Registry([slow_cooperative]).dispatch(tool_call("slow_cooperative", {}, id="c1"), context)
    # No elapsed-time bound: had the call waited for the tool, it would have returned "done" (status OK).
    assert result.status is ToolStatus.TIMEOUT
    assert result.content == "Error: slow_cooperative timed out after 0.2s and was abandoned."
    assert contexts == [context]
    assert context.cancelled
    # The cancellation reached the tool: it stops instead of sleeping on for five seconds.
    worker = _thread_named("tool-slow_cooperative")
    if worker is not None:
        worker.join(1.0)
        assert not worker.is_alive()
    assert finished == ["stopped"]


def test_timeout_applies_to_a_tool_that_ignores_cancellation() -> None:
    @tool(description="Blocks.", timeout=0.2)
    def blocking() -> str:
        time.sleep(1.5)
        return "too late"

    result = Registry([blocking]).dispatch(tool_call("blocking", {}, id="c1"))
    assert result.status is ToolStatus.TIMEOUT  # waiting for it would have given "too late" (OK)


def test_a_tool_within_its_timeout_returns_normally() -> None:
    @tool(description="Quick.", x="A number.", timeout=2.0)
    def quick(x: int) -> dict[str, int]:
        return {"x": x}

    @tool(description="Quick failure.", timeout=2.0)
    def quick_fatal() -> str:
        raise ToolFatal("nope")

    registry = Registry([quick, quick_fatal])
    assert registry.dispatch(tool_call("quick", {"x": 3}, id="c1")).content == '{"x":3}'
    assert registry.dispatch(tool_call("quick_fatal", {}, id="c2")).status is ToolStatus.FATAL


def test_a_cancelled_context_stops_the_tool() -> None:
    @tool(description="Waits.")
    def waits(ctx: ToolContext) -> str:
        ctx.sleep(5)
        return "done"

    context = ToolContext(run_id="r", call_id="c1", idempotency_key="r:c1")
    context.cancel()
    result = Registry([waits]).dispatch(tool_call("waits", {}, id="c1"), context)
    assert result.status is ToolStatus.SKIPPED  # it stopped at once: sleeping on would have given "done"


@tool(description="Fetch.", x="A number.")
async def fetch(x: int) -> dict[str, int]:
    await asyncio.sleep(0)
    return {"x": x, "double": 2 * x}


def test_async_tool() -> None:
    result = Registry([fetch]).dispatch(tool_call("fetch", {"x": 4}, id="c1"))
    assert result.status is ToolStatus.OK
    assert result.content == '{"double":8,"x":4}'


def test_async_tool_dispatched_from_inside_a_running_event_loop() -> None:
    # An async caller (an async test, an async activity) still gets the tool run, not an ERROR.
    async def caller() -> Any:
        return Registry([fetch]).dispatch(tool_call("fetch", {"x": 4}, id="c1"))

    result = asyncio.run(caller())
    assert result.status is ToolStatus.OK
    assert result.content == '{"double":8,"x":4}'


def test_async_tool_errors_are_classified() -> None:
    @tool(description="Async fatal.")
    async def async_fatal() -> str:
        raise ToolFatal("gone")

    result = Registry([async_fatal]).dispatch(tool_call("async_fatal", {}, id="c1"))
    assert result.status is ToolStatus.FATAL


def test_async_tool_timeout() -> None:
    @tool(description="Async slow.", timeout=0.2)
    async def async_slow() -> str:
        await asyncio.sleep(1.0)
        return "late"

    result = Registry([async_slow]).dispatch(tool_call("async_slow", {}, id="c1"))
    assert result.status is ToolStatus.TIMEOUT


@pytest.mark.parametrize(
    ("value", "content"),
    [
        ({"b": 1, "a": [1, 2]}, '{"a":[1,2],"b":1}'),
        ([1, "two", None], '[1,"two",null]'),
        ((1, 2), "[1,2]"),
        (42, "42"),
        (1.5, "1.5"),
        (True, "true"),
        (None, "null"),
        ({"name": "é"}, '{"name":"é"}'),
        ("plain text", "plain text"),
    ],
)
def test_return_values_are_rendered(value: Any, content: str) -> None:
    @tool(description="Returns a value.")
    def give() -> Any:
        return value

    assert Registry([give]).dispatch(tool_call("give", {}, id="c1")).content == content


def test_duplicate_tool_names_are_rejected() -> None:
    @tool(description="One.")
    def same() -> str:
        return "1"

    @tool(description="Two.", name="same")
    def other() -> str:
        return "2"

    with pytest.raises(ValueError, match="same"):
        Registry([same, other])


def test_result_to_message() -> None:
    registry, _ = make_registry()
    message = registry.dispatch(tool_call("charge", {"invoice": "i", "amount": 1}, id="c1")).to_message()
    assert (message.role, message.content, message.tool_call_id) == ("tool", "charged i 1", "c1")


# -- compensation ----------------------------------------------------------------------------------------


def _undo(arguments: dict[str, Any], result: str, ctx: ToolContext) -> str:
    if arguments.get("fail"):
        raise ConnectionError("provider down")
    return f"undid {result}"


@tool(description="Book.", fail="Make the undo fail.", mutating=True, compensation=_undo)
def book(fail: bool, ctx: ToolContext) -> str:
    return "booked"


@tool(description="Charge.", mutating=True)
def charge_once(ctx: ToolContext) -> str:
    return "charged"


def test_a_compensation_gets_the_original_arguments_and_result_and_every_failure_is_retryable() -> None:
    registry = Registry([book, charge_once])
    context = ToolContext(run_id="r", call_id="1.1", idempotency_key="r:1.1:undo", compensates="r:1.1")
    done = registry.compensate(tool_call("book", {"fail": False}, id="c1"), "booked B-1", context)
    assert (done.status, done.content) == (ToolStatus.OK, "undid booked B-1")
    failed = registry.compensate(tool_call("book", {"fail": True}, id="c1"), "booked B-1", context)
    assert failed.status is ToolStatus.RETRYABLE and "provider down" in failed.content
    for name in ("charge_once", "gone"):  # no inverse declared, or no such tool: nothing can be done
        impossible = registry.compensate(tool_call(name, {}, id="c1"), "x", context)
        assert impossible.status is ToolStatus.FATAL and "declares no compensation" in impossible.content
