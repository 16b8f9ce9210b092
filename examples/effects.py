"""The one way demo tools make an effect: through the ledger, under the call's idempotency key — what a
real tool does by handing `ctx.idempotency_key` to its provider."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

from agentic import ToolContext, ToolRetry
from duragent._stores.errors import StoreUnavailable
from examples.options import DemoDeps, DemoOptions


def deps_of(ctx: ToolContext) -> DemoDeps:
    if not isinstance(ctx.deps, DemoDeps):
        raise RuntimeError(
            "the demo agents' tools need DemoDeps (an effects ledger) as their deps: "
            "build_worker(agents=examples.agents, deps=examples.make_deps(settings))"
        )
    return ctx.deps


def options_of(ctx: ToolContext) -> DemoOptions:
    return ctx.options if isinstance(ctx.options, DemoOptions) else DemoOptions()


def reference(key: str, prefix: str) -> str:
    """A confirmation number derived from the key, so a repeated effect would be recognisable."""
    return f"{prefix}-{hashlib.sha256(key.encode()).hexdigest()[:8]}"


def record_effect(ctx: ToolContext, tool: str, args: Mapping[str, Any], result: str, *, key: str | None = None) -> str:
    """Record `result` as the effect of this call, once per key; returns the first result for the key.

    `flaky_attempts` raises *after* the effect committed, the worst moment for a retry: the retry must
    find the effect by its key and not make another.
    """
    options = options_of(ctx)
    try:
        recorded, _ = deps_of(ctx).ledger.apply(
            key or ctx.idempotency_key,
            run_id=ctx.run_id,
            tool=tool,
            args=args,
            perform=lambda: result,
            compensates=ctx.compensates,
        )
    except StoreUnavailable as exc:
        # The "provider" is down (a PostgreSQL restart): transient — the retry comes with the same key.
        raise ToolRetry(str(exc)) from exc
    # The window between "the effect happened" and "the runner knows": a crash here is the classic
    # double-charge, and the retry must find the effect by its key.
    ctx.sleep(options.after_effect_delay)
    if ctx.attempt <= options.flaky_attempts:
        raise ToolRetry(f"{tool}: connection reset after the effect (attempt {ctx.attempt})")
    return recorded


def tool_results(messages: Any) -> list[str]:
    """Contents of the tool messages of a transcript, in order — what scripted models read."""
    return [m.content for m in messages if m.role == "tool"]


def undoing(name: str) -> Any:
    """A compensation recorded in the ledger as the effect `name`, once per key (`ctx.idempotency_key` is the
    undo's own key; `ctx.compensates` the original's). An original interrupted by a cancellation may never
    have landed: then there is nothing to undo, and recording an undo would be a lie in the ledger."""

    def undo(args: dict[str, Any], result: str, ctx: ToolContext) -> str:
        if ctx.compensates and deps_of(ctx).ledger.get(ctx.compensates) is None:
            return f"nothing to undo: {ctx.compensates} made no effect"
        return record_effect(ctx, name, args, f"{name.replace('_', ' ')}: {result}")

    undo.__name__ = name
    return undo
