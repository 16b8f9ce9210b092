"""The one way scenario tools make an effect: through the ledger, under the call's idempotency key."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

from agentic import ToolContext, ToolRetry
from scenarios.base import ScenarioDeps


def deps_of(ctx: ToolContext) -> ScenarioDeps:
    if not isinstance(ctx.deps, ScenarioDeps):
        raise RuntimeError("scenario tools need ScenarioDeps (a ledger and options) in ToolContext.deps")
    return ctx.deps


def reference(key: str, prefix: str) -> str:
    """A confirmation number derived from the key, so a repeated effect would be recognisable."""
    return f"{prefix}-{hashlib.sha256(key.encode()).hexdigest()[:8]}"


def record_effect(ctx: ToolContext, tool: str, args: Mapping[str, Any], result: str, *, key: str | None = None) -> str:
    """Record `result` as the effect of this call, once per key; returns the first result for the key.

    `flaky_attempts` raises *after* the effect committed, the worst moment for a retry: the retry must
    find the effect by its key and not make another.
    """
    deps = deps_of(ctx)
    recorded, _ = deps.ledger.apply(
        key or ctx.idempotency_key,
        run_id=ctx.run_id,
        tool=tool,
        args=args,
        perform=lambda: result,
        compensates=ctx.compensates,
    )
    # The window between "the effect happened" and "the runner knows": a crash here is the classic
    # double-charge, and the retry must find the effect by its key.
    ctx.sleep(deps.options.after_effect_delay)
    if ctx.attempt <= deps.options.flaky_attempts:
        raise ToolRetry(f"{tool}: connection reset after the effect (attempt {ctx.attempt})")
    return recorded


def tool_results(messages: Any) -> list[str]:
    """Contents of the tool messages of a transcript, in order — what scripted models read."""
    return [m.content for m in messages if m.role == "tool"]
