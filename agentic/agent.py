"""`Agent`: the in-process runner — the loop executed directly, with no durability of its own.

Resumption is the caller's: pass the saved transcript as `history=` and the saved consumption as
`consumed=`, so the budget continues counting instead of granting a fresh allowance.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from agentic.budget import Budget, Usage
from agentic.errors import ModelError
from agentic.loop import (
    AgentLoop,
    CallModel,
    Finish,
    LoopState,
    RunTool,
    idempotency_key,
    initial_messages,
    tool_schemas,
)
from agentic.messages import Message
from agentic.models.base import Model, ModelReply
from agentic.registry import Registry
from agentic.results import ToolResult, ToolStatus
from agentic.run import Run
from agentic.tools import ToolContext


@dataclass
class Agent:
    model: Model
    """Any `Model`: a scripted `FakeModel` or the OpenAI-compatible adapter."""
    registry: Registry = field(default_factory=Registry)
    """The tools the model may call; its `confirm` gates tools that require confirmation."""
    system: str = ""
    """The standing instruction, prepended to every run."""
    budget: Budget = field(default_factory=Budget)
    """Limits checked before each model call, against consumption including any carried over."""
    deps: Any = None
    """Services handed to tools through `ToolContext.deps` (a ledger, an HTTP client...)."""
    tool_attempts: int = 3
    """Attempts for a tool that raises `ToolRetry`, with the same idempotency key each time."""
    model_attempts: int = 3
    """Attempts for a model call failing retryably (429, 5xx, timeouts)."""
    max_retry_wait: float = 30.0
    """Cap on a provider's retry-after, so one answer cannot stall the process indefinitely."""

    def __post_init__(self) -> None:
        # Zero attempts would fail mid-run (after a model call was paid for) instead of here.
        if self.tool_attempts < 1 or self.model_attempts < 1:
            raise ValueError("tool_attempts and model_attempts must be at least 1")

    def run(
        self,
        task: str,
        history: Sequence[Message] | None = None,
        *,
        consumed: Usage | None = None,
        run_id: str | None = None,
    ) -> Run:
        run_id = run_id or uuid.uuid4().hex
        loop = AgentLoop(self.budget, self.registry.specs(), LoopState(consumed=consumed or Usage()))
        messages = initial_messages(self.system, task, history)
        schemas = tool_schemas(loop.specs)
        while True:
            step = loop.next_step()
            if isinstance(step, Finish):
                return Run.from_loop(messages, loop.state)
            if isinstance(step, CallModel):
                messages += loop.model_replied(self._complete(messages, schemas))
            elif isinstance(step, RunTool):
                messages += loop.tool_finished(self._dispatch(step, run_id))

    def _complete(self, messages: list[Message], schemas: list[Any]) -> ModelReply:
        for attempt in range(1, self.model_attempts + 1):
            try:
                return self.model.complete(messages, schemas)
            except ModelError as exc:
                if not exc.retryable or attempt == self.model_attempts:
                    raise
                # retry_after=0 means "retry now", not "no hint": only None falls back to backoff.
                wait = exc.retry_after if exc.retry_after is not None else 2 ** (attempt - 1)
                time.sleep(min(wait, self.max_retry_wait))
        raise AssertionError("unreachable")

    def _dispatch(self, step: RunTool, run_id: str) -> ToolResult:
        call = step.call
        context = ToolContext(
            run_id=run_id, call_id=call.id, idempotency_key=idempotency_key(run_id, call.id), deps=self.deps
        )
        for attempt in range(1, self.tool_attempts + 1):
            context.attempt = attempt
            result = self.registry.dispatch(call, context)
            if result.status is not ToolStatus.RETRYABLE:
                break
        return result
