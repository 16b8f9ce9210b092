"""The set of tools an agent may call, and dispatch: one requested call in, one `ToolResult` out.

Dispatch never raises into the loop. An unknown tool, arguments that do not validate, a declined
confirmation, a timeout and an exception inside the tool each come back as a result the model can read
and a status the runner can act on (retry, abandon, or carry on).
"""

from __future__ import annotations

import asyncio
import inspect
import threading
from collections.abc import Callable, Coroutine, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from pydantic import ValidationError

from agentic.errors import ToolFatal, ToolRetry
from agentic.messages import ToolCall, canonical_json
from agentic.models.base import ToolSchema
from agentic.results import ToolResult, ToolStatus
from agentic.tools import Tool, ToolCancelled, ToolContext, ToolSpec

Confirm = Callable[[str, dict[str, Any]], bool]
T = TypeVar("T")


class Registry:
    """Tools by name. `confirm(name, args) -> bool` gates tools declared `requires_confirmation=True`.

    Without a `confirm` callback such tools are declined: an approval gate fails closed.
    """

    def __init__(self, tools: Iterable[Tool] = (), confirm: Confirm | None = None) -> None:
        self._tools: dict[str, Tool] = {}
        for t in tools:
            if t.name in self._tools:
                raise ValueError(f"two tools are named {t.name!r}")
            self._tools[t.name] = t
        self.confirm = confirm

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(self._tools.values())

    def __len__(self) -> int:
        return len(self._tools)

    def get(self, name: str) -> Tool | None:
        return self._tools.get(name)

    @property
    def names(self) -> list[str]:
        return list(self._tools)

    def specs(self) -> dict[str, ToolSpec]:
        return {name: t.spec() for name, t in self._tools.items()}

    def schemas(self) -> list[ToolSchema]:
        return [t.spec().schema() for t in self._tools.values()]

    def dispatch(
        self, call: ToolCall, context: ToolContext | None = None, *, approved: bool | None = None
    ) -> ToolResult:
        """Run one call. `approved` is a decision already taken elsewhere (a durable approval);
        when it is None the registry's `confirm` callback is asked."""
        t = self._tools.get(call.name)
        if t is None:
            known = ", ".join(sorted(self._tools)) or "none"
            return ToolResult.of(
                call, ToolStatus.UNKNOWN_TOOL, f"Error: unknown tool {call.name!r}. Available tools: {known}."
            )
        if isinstance(call.arguments, str):
            return ToolResult.not_json(call)
        try:
            arguments = t.validate(call.arguments)
        except ValidationError as exc:
            return ToolResult.invalid_arguments(call, _describe(exc))
        if t.requires_confirmation:
            denied = self.denied(call, approved)
            if denied is not None:
                return denied
        context = context or _standalone_context(call)
        if t.context_param is not None:
            arguments[t.context_param] = context
        return _execute(t, call, lambda: _invoke(t.fn, arguments), context)

    def compensate(self, call: ToolCall, result: str, context: ToolContext) -> ToolResult:
        """Run the declared inverse of an earlier call, with that call's arguments and result.

        Every failure is reported as retryable: an undo that is abandoned leaves the world half-changed,
        so the runner keeps trying (per its policy) and then says loudly that it could not."""
        t = self._tools.get(call.name)
        if t is None or t.compensation is None:
            return ToolResult.of(call, ToolStatus.FATAL, f"Error: {call.name} declares no compensation.")
        compensation = t.compensation
        arguments = dict(call.arguments) if isinstance(call.arguments, dict) else {}
        outcome = _execute(t, call, lambda: compensation(arguments, result, context), context)
        if outcome.status in (ToolStatus.ERROR, ToolStatus.FATAL, ToolStatus.TIMEOUT):
            return outcome.model_copy(update={"status": ToolStatus.RETRYABLE})
        return outcome

    def denied(self, call: ToolCall, approved: bool | None) -> ToolResult | None:
        """The declined result for a call that needs confirmation and did not get it, else None.
        `approved` is a decision taken elsewhere; when None, the `confirm` callback decides."""
        if approved is None:
            if self.confirm is None:
                approved = False
            else:
                try:
                    approved = bool(self.confirm(call.name, dict(call.arguments)))  # type: ignore[arg-type]
                except Exception as exc:  # a broken gate must not let the action through
                    return ToolResult.declined(call, f"the confirmation check failed ({exc!r})")
        return None if approved else ToolResult.declined(call)


def _execute(t: Tool, call: ToolCall, invoke: Callable[[], Any], context: ToolContext) -> ToolResult:
    try:
        if t.timeout is None:
            value = invoke()
        else:
            value = _invoke_with_deadline(t, invoke, context)
    except _Deadline:
        return ToolResult.of(
            call, ToolStatus.TIMEOUT, f"Error: {call.name} timed out after {t.timeout:g}s and was abandoned."
        )
    except ToolRetry as exc:
        return ToolResult.of(call, ToolStatus.RETRYABLE, f"Error: {call.name} failed transiently: {exc}")
    except ToolFatal as exc:
        return ToolResult.of(call, ToolStatus.FATAL, f"Error: {call.name} failed permanently: {exc}")
    except ToolCancelled as exc:
        return ToolResult.of(call, ToolStatus.SKIPPED, f"Error: {call.name} was cancelled: {exc}")
    except Exception as exc:
        return ToolResult.of(call, ToolStatus.ERROR, f"Error: {call.name} raised {type(exc).__name__}: {exc}")
    return ToolResult.of(call, ToolStatus.OK, _render(value))


class _Deadline(Exception):
    pass


def _invoke(fn: Callable[..., Any], arguments: dict[str, Any]) -> Any:
    if inspect.iscoroutinefunction(fn):
        return run_sync(lambda: fn(**arguments))
    return fn(**arguments)


def run_sync(make: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """Run the coroutine `make()` returns to completion, from synchronous code."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(make())
    # Called from inside an event loop (an async caller): asyncio.run cannot nest there, so the coroutine
    # gets a loop of its own on a helper thread.
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="async-tool") as pool:
        return pool.submit(lambda: asyncio.run(make())).result()


def _invoke_with_deadline(t: Tool, invoke: Callable[[], Any], context: ToolContext) -> Any:
    # Python cannot kill a thread. On timeout the call is abandoned and asked to stop through its
    # context; a tool that ignores cancellation keeps running in the background, which is why mutating
    # tools must still be idempotent on their key.
    outcome: dict[str, Any] = {}

    def target() -> None:
        try:
            outcome["value"] = invoke()
        except BaseException as exc:
            outcome["error"] = exc

    worker = threading.Thread(target=target, name=f"tool-{t.name}", daemon=True)
    worker.start()
    worker.join(t.timeout)
    if worker.is_alive():
        context.cancel()
        raise _Deadline()
    if "error" in outcome:
        raise outcome["error"]
    return outcome.get("value")


def _standalone_context(call: ToolCall) -> ToolContext:
    return ToolContext(run_id="", call_id=call.id, idempotency_key=f"local:{call.id}")


def _render(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping | list | tuple | int | float | bool) or value is None:
        return canonical_json(value)
    return str(value)


def _describe(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors():
        where = ".".join(str(p) for p in err["loc"]) or "arguments"
        parts.append(f"{where}: {err['msg']}")
    return "; ".join(parts)
