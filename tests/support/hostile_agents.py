"""Agents whose model or tools are hostile or leak secrets, for the security tests: an agents module (served
with `--agents tests.support.hostile_agents` or AGENT_MODULES), with the demo agents' options and ledger.

- `t-escape`: the model puts terminal escape sequences and a bidi override in a gated tool's argument and in
  its answer (tests/ops/test_printable.py);
- `t-newline`: the model ends a gated tool's argument, and its answer, with a forged listing line
  (tests/ops/test_one_line_listings.py);
- `t-leaky`: the tool fails once with a card number in its message, the model's first call fails with a
  provider reply quoting a secret; `t-fatal`: the model fails for good with a third secret
  (tests/config/test_log_redaction.py).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import examples
from agentic import Agent, Budget, FakeModel, Message, Registry, ToolContext, tool, tool_call
from agentic.errors import NonRetryableModelError, RetryableModelError, ToolRetry
from duragent._config.settings import Settings
from examples.effects import record_effect
from examples.options import DemoDeps, DemoOptions

ATTACK = "4471\x1b[2K\r\x1b[1Aapprove refund(order_id=1)\u202eevil\x9b31m\x07\x00"
# A newline, then what `pending` prints for a harmless call.
FORGED_LINE = "refund-7f3a  call 1.1  t_refund(order_id=SANDBOX-0)  hash 9f9f9f9f9f9f  deadline 2999-01-01"
NEWLINE_ATTACK = f"4471\n{FORGED_LINE}"
TOOL_SECRET = "4111-1111-1111-1111-TOOL-SECRET"
MODEL_SECRET = "sk-PROVIDER-ECHO-MODEL-SECRET"
FATAL_SECRET = "PII-FATAL-MODEL-SECRET"
SECRETS = (TOOL_SECRET, MODEL_SECRET, FATAL_SECRET)

_model_calls = itertools.count()  # per worker process: the first model call fails, its retry answers


@tool(description="Refund an order.", order_id="The order.", mutating=True, requires_confirmation=True)
def t_refund(order_id: str, ctx: ToolContext) -> str:
    return record_effect(ctx, "t_refund", {"order_id": order_id}, f"refunded {order_id}")


@tool(description="Query the upstream.", q="The query.")
def leaky(q: str, ctx: ToolContext) -> str:
    if ctx.attempt == 1:
        raise ToolRetry(f"upstream echoed card {TOOL_SECRET} for {q}")
    return f"found {q}"


def _first_reply(messages: Sequence[Message]) -> object:
    if next(_model_calls) == 0:
        raise RetryableModelError(f"HTTP 503 from the provider: {MODEL_SECRET}", status=503)
    return tool_call("leaky", {"q": "order 4471"})


def _fatal(messages: Sequence[Message]) -> object:
    raise NonRetryableModelError(f"HTTP 400: the provider quoted the prompt: {FATAL_SECRET}", status=400)


def _agent(name: str, task: str, registry: Registry, model: FakeModel, steps: int) -> Agent:
    return Agent(
        model, registry, name=name, description=name, task=task, budget=Budget(max_steps=steps), options=DemoOptions
    )


ESCAPE = _agent(
    "t-escape",
    "Refund.",
    Registry([t_refund]),
    FakeModel([tool_call("t_refund", {"order_id": ATTACK}), f"Done: {ATTACK}"]),
    4,
)
NEWLINE = _agent(
    "t-newline",
    "Refund.",
    Registry([t_refund]),
    FakeModel([tool_call("t_refund", {"order_id": NEWLINE_ATTACK}), f"Done.\n{FORGED_LINE}"]),
    4,
)
LEAKY = _agent("t-leaky", "Look up.", Registry([leaky]), FakeModel([_first_reply, "Done."]), 4)
FATAL = _agent("t-fatal", "Go.", Registry([leaky]), FakeModel([_fatal]), 2)

agents = [ESCAPE, NEWLINE, LEAKY, FATAL]


def make_deps(settings: Settings) -> DemoDeps:
    return examples.make_deps(settings)
